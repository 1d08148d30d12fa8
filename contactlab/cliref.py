"""The command reference (``docs/commands.md``), generated from the argument parsers.

``python -m contactlab.cliref docs/commands.md`` rewrites the page (``make docs``
does it before building), so the reference lists exactly the commands and
options the installed ``contactlab`` accepts; a test checks that the committed
page is current.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HEADER = """# Command reference

Generated from the argument parsers by `python -m contactlab.cliref docs/commands.md`
(`make docs` regenerates it); do not edit by hand.  `python -m contactlab ...` is the
same program as `contactlab ...`.  Every mistake ends with one line on stderr naming
the problem and the fix, and exit code 2.

## Exit codes

- **0**: done; every run reached its end and every step met its solver tolerance.
- **1**: `sweep`: some runs did not finish (a crashed worker); run the same command again.
- **2**: an error, one line on stderr: bad input, or for `run` a failed step, a diverged
  state, or with `--strict` the first step that missed its tolerance; no folder is left.
- **3**: results written, but not every step met its tolerance. `run`: steps were kept
  unconverged (status `max_iterations`, `stalled`, `time_limit` or `optimal_inaccurate`,
  each with its best iterate and residual; counted under `unconverged` in `summary.json`
  and printed). `compare` and `sweep`: a run has such steps, or failed or diverged (the
  table's `status`, `unconverged_steps` and `message` say which). `optimize`: the
  trajectory was written but its status is not `optimal` (`max_iterations`, `infeasible`).
- **130**: interrupted (Ctrl-C, also while the program is still starting); what was
  finished is kept where the message says.

`--strict` (on `run`, `compare`, `sweep`; `strict = true` in a sweep specification;
`RunSpec(strict=True)`, `simulate(..., strict=True)` in Python) makes the first step
that misses its tolerance stop its run (docs/reliability.md, "Unconverged steps").
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def command_reference() -> str:
    """The Markdown page: one section per subcommand with its usage and options."""
    from contactlab.cli import build_parser

    parser = build_parser()
    parts = [HEADER]
    for name, sub in sorted(_subparsers(parser).items()):
        sub.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=90)
        text = sub.format_help().rstrip()
        parts.append(f"## `contactlab {name}`\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m contactlab.cliref OUTPUT.md", file=sys.stderr)
        return 2
    Path(args[0]).write_text(command_reference())
    print(args[0])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
