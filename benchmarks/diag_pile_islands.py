"""Alternative finishes of the compiled box-pile step, measured on a drop's landing islands.

Steps ``box-pile`` (``--boxes`` cubes, layout ``drop``) by the default route for
``--steps`` steps, keeps every call of the compiled step's kernel and rebuilds each
step's islands exactly as :func:`contactlab.maximal._pile_kernels._solve_islands` cuts
them (rows, bodies, warm start).  Every island whose default solve
(:func:`contactlab.maximal._pile_kernels._solve`: Gauss--Seidel, the subspace finish, the
dense and block finishes) takes at least ``--min-work`` sweeps and products with ``W`` is
then solved from the same warm start by three prototypes (dense ``W = C M^-1 C^T`` and
``q`` formed from the island's rows; the work counted in sweeps plus products with ``W``,
which cost about one sweep each through the bodies' twists):

* ``mprgp``: PGS-SM with the subspace solve replaced by Dostal's MPRGP (modified
  proportioning with reduced gradient projections, fixed step ``1.9 / |W|``) on the
  bound-constrained QP with the friction bounds frozen at ``+-mu z_n`` of the round's
  start; rounds of 16 sweeps and at most 120 products after 128 plain sweeps, as the
  default finish;
* ``frozen``: the frozen-bound QPs solved by MPRGP (to 1e-8, at most 3000 products each),
  the bounds then moved to the new ``+-mu z_n``, after 128 plain sweeps;
* ``staggered``: staggered projections, the normal QP (friction held) then the friction QP
  (bounds ``+-mu z_n``), each by MPRGP to 1e-8, after 128 plain sweeps;
* ``prox``: MPRGP on the proximal QPs ``min 1/2 z'(W + rho I) z + (q - rho z_k)'z`` with
  the bounds of ``z_k`` (``rho = 1e-3 max W_ii``; a fixed point is a solution of the
  box-friction LCP), after 128 plain sweeps;
* ``pairs``: block Gauss--Seidel with one block per pair of bodies (a face--face
  contact's four corners, twelve rows, solved exactly by Lemke's method,
  :func:`contactlab.maximal._pile_kernels._box_lemke`, with the other impulses held),
  after 128 plain sweeps; its work is in block sweeps (one costs 100 or more sweeps).

Each prints its work and natural-map residual (the kernel's stopping test, tolerance as
the step's) per island and in total.  Run:
``python -m benchmarks.diag_pile_islands --boxes 200 --steps 100``
(numbers quoted in ``docs/guide/contact-models.md``, compiled box-pile step).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from contactlab.maximal import _pile_kernels as K
from contactlab.maximal._island_rows import island_rows
from contactlab.maximal.assembly import _midpoint_free_momentum
from contactlab.models.delassus import carried_impulses

Island = dict[str, Any]
#: sweeps and products with ``W`` a prototype may spend (the step's cap)
BUDGET = 10000


def record_calls(boxes: int, steps: int) -> list[tuple[Any, ...]]:
    """The arguments of every call of the compiled step's kernel along the drop."""
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    calls: list[tuple[Any, ...]] = []
    kernel = K.contact_step

    def recording(*args: Any) -> Any:
        calls.append(tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args))
        return kernel(*args)

    scene = get_scenario("box-pile").build(n=boxes, layout="drop")
    sim = Simulator(scene)
    assert sim.compiled is not None, "the default route of box-pile is the compiled step"
    K.contact_step = recording
    try:
        state = sim.initial_state()
        for i in range(steps):
            state, _ = sim.step(state, i)
    finally:
        K.contact_step = kernel
    return calls


def islands_of(args: tuple[Any, ...]) -> list[Island]:
    """The islands of one kernel call, cut as :func:`K._solve_islands` cuts them."""
    (mdiag, E, phi, gravity, h, iterations, a, b, point, normal, dist, mu, beta, max_corr,
     carry, old_ids, old_order, old_normal, old_friction, ids, origin,
     tol, max_iter, _, _, _, _, _, _) = args  # fmt: skip
    nb, nc = mdiag.shape[0], a.shape[0]
    m3 = 3 * nc
    if nc == 0:
        return []
    f = _midpoint_free_momentum(mdiag, phi, E, gravity, h, iterations)
    dinv = (1.0 / mdiag).reshape(-1)
    J, DJ, A, t1, t2 = K._rows(a, b, E, point, normal, dinv)
    rhs = np.where(dist > 0.0, -dist / h, np.minimum(beta * -dist, max_corr))
    rhs = np.stack([rhs, np.zeros(nc), np.zeros(nc)], axis=1).reshape(-1)
    diag = A[:, [0, 4, 8]].reshape(-1)
    mu3 = np.repeat(mu, 3)
    coupling = np.maximum(np.abs(A[:, 1]), np.abs(A[:, 2]))
    unit = (mu * coupling > K.COUPLING * A[:, 0]) & (mu > 0.0)
    up = np.argsort(point[:, 2], kind="mergesort")
    z = np.zeros(m3)
    if carry:
        zn, zt = carried_impulses(old_ids, old_order, old_normal, old_friction, ids, origin, t1, t2)
        z[0::3] = np.maximum(zn, 0.0)
        z[1::3], z[2::3] = zt[0::2], zt[1::2]
    count, off, members, order = K.island_contacts(a, b, nb, up)
    slot = np.full(nb, -1, dtype=np.int64)
    out = []
    for k in range(count):
        pick = members[off[k] : off[k + 1]]
        Jk, DJk, Ak, rk, _, zk, fk, dk, cak, cbk = island_rows(
            pick, a, b, J, DJ, A, rhs, mu3[1::3], z, f, dinv, slot
        )
        rows = (3 * pick[:, None] + np.arange(3)).reshape(-1)
        out.append({
            "J": Jk, "DJ": DJk, "A": Ak, "ca": cak, "cb": cbk, "rhs": rk, "diag": diag[rows],
            "mu3": mu3[rows], "unit": unit[pick], "up": order[off[k] : off[k + 1]].copy(),
            "f": fk, "dinv": dk, "z": zk, "tol": float(tol), "max_iter": int(max_iter),
        })  # fmt: skip
    return out


def twists(d: Island, z: np.ndarray) -> np.ndarray:
    """``v = M^-1 (f + C^T z)`` of the island (the world's zero slot last)."""
    v = np.empty(d["f"].size + 6)
    K._velocity(d["J"], d["ca"], d["cb"], d["f"], d["dinv"], z, v)
    return v


def kernel_solve(d: Island) -> tuple[int, float, float]:
    """The default solve of the island: its work, residual and thread CPU seconds."""
    z = d["z"].copy()
    v = twists(d, z)
    t0 = time.thread_time()
    _, work, res = K._solve(
        d["J"], d["DJ"], d["A"], d["ca"], d["cb"], d["rhs"], d["diag"], d["mu3"], d["unit"],
        d["up"], d["f"], d["dinv"], v, z, 1.0, d["tol"], d["max_iter"], 8, True,
    )  # fmt: skip
    return int(work), float(res), time.thread_time() - t0


def sweeps(d: Island, z: np.ndarray, count: int) -> None:
    """``count`` of the kernel's projected Gauss--Seidel sweeps on ``z`` in place."""
    v = twists(d, z)
    K._sweeps(
        d["J"], d["DJ"], d["A"], d["ca"], d["cb"], d["rhs"], d["diag"], d["mu3"], d["unit"],
        d["up"], v, z, 1.0, count,
    )  # fmt: skip


def dense(d: Island) -> tuple[np.ndarray, np.ndarray]:
    """The island's dense ``W = C M^-1 C^T`` and ``q = C M^-1 f - b``."""
    J, ca, cb, f = d["J"], d["ca"], d["cb"], d["f"]
    m3, n = J.shape[0], f.size
    C = np.zeros((m3, n + 6))
    for r in range(m3):
        C[r, ca[r] : ca[r] + 6] += J[r, :6]
        C[r, cb[r] : cb[r] + 6] += J[r, 6:]
    C = C[:, :n]
    return (C * d["dinv"]) @ C.T, C @ (d["dinv"] * f) - d["rhs"]


def bounds(z: np.ndarray, mu3: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The box-friction bounds at ``z``: ``[0, inf)`` on normal rows, ``+-mu z_n``."""
    lo, hi = np.zeros(z.size), np.full(z.size, np.inf)
    zn = np.maximum(z[0::3], 0.0)
    for e in (1, 2):
        hi[e::3] = mu3[e::3] * zn
        lo[e::3] = -hi[e::3]
    return lo, hi


def natural(W: np.ndarray, q: np.ndarray, z: np.ndarray, mu3: np.ndarray) -> float:
    """``max |z - Pi(z - w)|``, the kernel's stopping test."""
    lo, hi = bounds(z, mu3)
    return float(np.abs(z - np.clip(z - (W @ z + q), lo, hi)).max())


def mprgp(W: np.ndarray, q: np.ndarray, x: np.ndarray, lo: np.ndarray, hi: np.ndarray,
          tol: float, products: int, step: float) -> tuple[np.ndarray, int]:  # fmt: skip
    """Dostal's MPRGP on ``min 1/2 x'Wx + q'x``, ``lo <= x <= hi`` (``W`` positive
    semidefinite): conjugate gradients on the free rows while the chopped gradient is
    at most the reduced free gradient (proportional iterates), an expansion step
    ``P(x - step phi)`` when a conjugate-gradient step would leave the box (along a
    null-space direction of ``W_FF`` that is every step: the move to the next bound),
    a proportioning step along the chopped gradient otherwise.  Stops when the natural
    map is within ``tol`` or after ``products`` products with ``W``."""
    fixed = lo >= hi
    x = np.clip(x, lo, hi)
    g = W @ x + q
    used = 1

    def split(x: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        low, high = x <= lo, x >= hi
        free = ~(low | high)
        chopped = np.where(low, np.minimum(g, 0.0), 0.0) + np.where(high, np.maximum(g, 0.0), 0.0)
        chopped[fixed] = 0.0
        return np.where(free, g, 0.0), chopped, free

    phi, beta, free = split(x, g)
    p = phi.copy()
    while used < products and np.abs(x - np.clip(x - g, lo, hi)).max() > tol:
        with np.errstate(invalid="ignore", divide="ignore"):
            room = np.where(
                phi > 0, np.minimum((x - lo) / step, phi), np.maximum((x - hi) / step, phi)
            )
        room = np.where(free, room, 0.0)
        if beta @ beta <= room @ phi:
            Ap = W @ p
            used += 1
            pAp = float(p @ Ap)
            alpha = float(g @ p) / pAp if pAp > 1e-300 else np.inf
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = np.where(p > 0, (x - lo) / p, np.where(p < 0, (x - hi) / p, np.inf))
            feasible = float(ratio.min())
            if alpha <= feasible:
                x, g = x - alpha * p, g - alpha * Ap
                phi, beta, free = split(x, g)
                p = phi - (float(phi @ Ap) / pAp) * p
            else:  # expansion: to the bound, then a projected gradient step
                x, g = x - feasible * p, g - feasible * Ap
                phi, beta, free = split(x, g)
                x = np.clip(x - step * phi, lo, hi)
                g = W @ x + q
                used += 1
                phi, beta, free = split(x, g)
                p = phi.copy()
        else:  # proportioning: release rows along the chopped gradient
            Ad = W @ beta
            dAd = float(beta @ Ad)
            alpha = float(g @ beta) / dAd if dAd > 1e-300 else 0.0
            x = np.clip(x - alpha * beta, lo, hi)
            g = W @ x + q
            used += 2
            phi, beta, free = split(x, g)
            p = phi.copy()
    return x, used


def proto_mprgp(
    d: Island, W: np.ndarray, q: np.ndarray, products: int = K.SM_PRODUCTS
) -> tuple[int, float]:
    """PGS-SM with MPRGP on the frozen-bound QP as its subspace step (at most
    ``products`` products with ``W`` a round)."""
    z, mu3, tol = d["z"].copy(), d["mu3"], d["tol"]
    step = 1.9 / float(np.linalg.eigvalsh(W)[-1])
    sweeps(d, z, K.PLAIN_SWEEPS)
    work, res = K.PLAIN_SWEEPS, natural(W, q, z, mu3)
    while res > tol and work < BUDGET:
        sweeps(d, z, K.SM_SWEEPS)
        work += K.SM_SWEEPS
        res = natural(W, q, z, mu3)
        if res <= tol:
            break
        lo, hi = bounds(z, mu3)
        z, used = mprgp(W, q, z, lo, hi, 0.3 * tol, products, step)
        lo, hi = bounds(z, mu3)
        z = np.clip(z, lo, hi)
        work += used
        res = natural(W, q, z, mu3)
    return work, res


def proto_prox(d: Island, W: np.ndarray, q: np.ndarray, c: float = 1e-3) -> tuple[int, float]:
    """Proximal point iterations, each QP (bounds of the last iterate) by MPRGP."""
    z, mu3, tol = d["z"].copy(), d["mu3"], d["tol"]
    rho = c * float(W.diagonal().max())
    Wr = W + rho * np.eye(W.shape[0])
    step = 1.9 / float(np.linalg.eigvalsh(Wr)[-1])
    sweeps(d, z, K.PLAIN_SWEEPS)
    work, res = K.PLAIN_SWEEPS, natural(W, q, z, mu3)
    while res > tol and work < BUDGET:
        lo, hi = bounds(z, mu3)
        z, used = mprgp(Wr, q - rho * z, z, lo, hi, 0.1 * tol, 3000, step)
        work += used
        res = natural(W, q, z, mu3)
    return work, res


def proto_pairs(d: Island, W: np.ndarray, q: np.ndarray, most: int = 2000) -> tuple[int, float]:
    """Block Gauss--Seidel, one exact block per pair of bodies, in the height order."""
    z, mu3, tol = d["z"].copy(), d["mu3"], d["tol"]
    sweeps(d, z, K.PLAIN_SWEEPS)
    groups: dict[tuple[int, int], list[int]] = {}
    for i in d["up"]:
        groups.setdefault((int(d["ca"][3 * i]), int(d["cb"][3 * i])), []).append(int(i))
    blocks = [
        (3 * np.sort(np.array(g))[:, None] + np.arange(3)).reshape(-1) for g in groups.values()
    ]
    w = W @ z + q
    res = natural(W, q, z, mu3)
    done = 0
    while res > tol and done < most:
        for rows in blocks:
            Wb = W[np.ix_(rows, rows)]
            zb = z[rows].copy()
            new = zb.copy()
            solved, _ = K._box_lemke(Wb, w[rows] - Wb @ zb, mu3[rows].copy(), new, 1e-9)
            if solved:
                z[rows] = new
                w += W[:, rows] @ (new - zb)
        done += 1
        res = natural(W, q, z, mu3)
    return done, res


def proto_frozen(d: Island, W: np.ndarray, q: np.ndarray) -> tuple[int, float]:
    """Frozen-bound QPs each solved by MPRGP (to 1e-8, at most 3000 products), the bounds
    then moved to the new ``+-mu z_n``: the fixed-point iteration of the bounds."""
    z, mu3, tol = d["z"].copy(), d["mu3"], d["tol"]
    step = 1.9 / float(np.linalg.eigvalsh(W)[-1])
    sweeps(d, z, K.PLAIN_SWEEPS)
    work, res = K.PLAIN_SWEEPS, natural(W, q, z, mu3)
    while res > tol and work < BUDGET:
        lo, hi = bounds(z, mu3)
        z, used = mprgp(W, q, z, lo, hi, 1e-8, 3000, step)
        work += used
        res = natural(W, q, z, mu3)
    return work, res


def proto_staggered(d: Island, W: np.ndarray, q: np.ndarray) -> tuple[int, float]:
    """Staggered projections: the normal QP (``z_n >= 0``, friction held), then the
    friction QP (bounds ``+-mu z_n``, normals held), each by MPRGP to 1e-8."""
    z, mu3, tol = d["z"].copy(), d["mu3"], d["tol"]
    sweeps(d, z, K.PLAIN_SWEEPS)
    N = np.arange(0, z.size, 3)
    T = np.setdiff1d(np.arange(z.size), N)
    Wnn, Wtt, Wnt = W[np.ix_(N, N)], W[np.ix_(T, T)], W[np.ix_(N, T)]
    sn = 1.9 / float(np.linalg.eigvalsh(Wnn)[-1])
    st = 1.9 / float(np.linalg.eigvalsh(Wtt)[-1])
    work, res = K.PLAIN_SWEEPS, natural(W, q, z, mu3)
    while res > tol and work < BUDGET:
        zero, inf = np.zeros(N.size), np.full(N.size, np.inf)
        z[N], used_n = mprgp(Wnn, q[N] + Wnt @ z[T], z[N], zero, inf, 1e-8, 3000, sn)
        hi = mu3[T] * np.repeat(np.maximum(z[N], 0.0), 2)
        z[T], used_t = mprgp(Wtt, q[T] + Wnt.T @ z[N], z[T], -hi, hi, 1e-8, 3000, st)
        work += used_n + used_t
        res = natural(W, q, z, mu3)
    return work, res


PROTOTYPES: dict[str, Callable[[Island, np.ndarray, np.ndarray], tuple[int, float]]] = {
    "mprgp": proto_mprgp, "frozen": proto_frozen, "staggered": proto_staggered,
    "prox": proto_prox, "pairs": proto_pairs,
}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--boxes", type=int, default=200)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--min-work", type=int, default=1000)
    ap.add_argument("--only", nargs="*", default=list(PROTOTYPES), choices=list(PROTOTYPES))
    ap.add_argument("--products", type=int, default=K.SM_PRODUCTS, help="of a round of mprgp")
    args = ap.parse_args(argv)
    methods = dict(PROTOTYPES)
    methods["mprgp"] = partial(proto_mprgp, products=args.products)
    calls = record_calls(args.boxes, args.steps)
    print("| step | island rows | rank of W | default: work, residual, CPU | "
          + " | ".join(f"{name}: work, residual" for name in args.only) + " |")  # fmt: skip
    print("| ---: | ---: | ---: | ---: |" + " ---: |" * len(args.only))
    totals = {name: [0, 0] for name in ["default", *args.only]}
    for step, call in enumerate(calls):
        for d in islands_of(call):
            work, res, cpu = kernel_solve(d)
            if work < args.min_work:
                continue
            W, q = dense(d)
            eig = np.linalg.eigvalsh(W)
            rank = int((eig > 1e-10 * eig[-1]).sum())
            cells = [f"{work}, {res:.1e}, {1e3 * cpu:.1f} ms"]
            totals["default"][0] += work
            totals["default"][1] += int(res > d["tol"])
            for name in args.only:
                w_, r_ = methods[name](d, W, q)
                cells.append(f"{w_}, {r_:.1e}")
                totals[name][0] += w_
                totals[name][1] += int(r_ > d["tol"])
            print(f"| {step} | {d['z'].size} | {rank} | " + " | ".join(cells) + " |", flush=True)
    for name, (work, unsolved) in totals.items():
        print(f"{name}: work {work}, not within the tolerance {unsolved}")


if __name__ == "__main__":
    main()
