"""The friction benchmark's pairs run as ``contactlab run`` runs them.

Facts: every pair's :class:`RunSpec` builds (through :meth:`RunSpec.simulator`,
the entry point of ``contactlab run``) a model with exactly the options and the
inner-solve tolerance the pair asks for, while the spec carries only the options
that differ from the defaults a user gets; the pairs measured at the defaults
name no option, the others name theirs; and the command line a row reports
parses (by the real argument parser) back to the same scenario parameters and
model options.
"""

from __future__ import annotations

import shlex

import pytest

from benchmarks.bench_friction import (
    BASE,
    BASE_LOOSE,
    ON_REQUEST,
    PAIRS,
    command_line,
    named_options,
    pair_spec,
)
from contactlab import cli
from contactlab.commands import parse_assignments, parse_option_value
from contactlab.models.base import make_model, model_class
from contactlab.runspec import build_simulator

H = 5e-3  # the benchmark's step, box-pile's own


@pytest.mark.parametrize("pair", PAIRS + ON_REQUEST, ids=lambda p: p[0])
def test_each_pair_is_the_run_a_user_makes_with_the_named_options(pair) -> None:
    label, model, solver, options, _ = pair
    spec = pair_spec(10, False, model, solver, options, H)
    assert spec.scenario == "box-pile" and spec.dt is None  # the scene's own step
    wanted = make_model(model, solver, **options)
    built = build_simulator(spec).model
    # the same options (an unset solver_tol is the default request, compared as a tolerance)
    assert {k: v for k, v in built.options.items() if k != "solver_tol"} == {
        k: v for k, v in wanted.options.items() if k != "solver_tol"
    }, label
    assert built.tol == wanted.tol, label
    # the spec holds only what differs from the defaults
    cls = model_class(model)
    defaults = {**cls.merged_options(), "solver_tol": cls.default_tolerance(solver)}
    for key, value in spec.model_options.items():
        assert defaults[key] != value, (label, key)

    argv = shlex.split(command_line(spec))
    assert argv[:3] == ["contactlab", "run", "box-pile"]
    args = cli.build_parser().parse_args(argv[1:])
    assert (args.model, args.solver, args.dt) == (model, solver, None)
    parsed = {
        k: parse_option_value(v)
        for k, v in parse_assignments(args.model_options, "--model-option").items()
    }
    assert parsed == dict(spec.model_options)
    assert {k: int(v) for k, v in parse_assignments(args.params, "--set").items()} == {"n": 10}


def test_the_baselines_are_the_defaults_and_the_loosened_one_says_so() -> None:
    by_label = {p[0]: p for p in PAIRS}
    _, model, solver, options, _ = by_label[BASE]
    assert named_options(pair_spec(10, False, model, solver, options, H)) == ""
    _, model, solver, options, _ = by_label[BASE_LOOSE]
    assert named_options(pair_spec(10, False, model, solver, options, H)) == (
        "--model-option solver_tol=0.0001"
    )
    # ipm's default request is the benchmark's 1e-6; Anitescu-Hart's exact cone is a choice
    _, model, solver, options, _ = by_label["anitescu-hart soc / ipm"]
    assert options["solver_tol"] == 1e-6
    assert named_options(pair_spec(10, False, model, solver, options, H)) == (
        "--model-option cone=soc"
    )
    _, model, solver, options, _ = by_label["coulomb / ipm"]
    assert named_options(pair_spec(10, False, model, solver, options, H)) == ""
    _, model, solver, options, _ = by_label["anitescu-hart pyramid / ipm"]
    # a step other than the scene's is named too
    assert "--dt 0.001" in named_options(pair_spec(10, False, model, solver, options, 1e-3))
