"""What the collision tests share: a scene of free bodies with one shape each, a pose from
a position and a rotation vector, contacts as sorted rows, and the swap-symmetry fact of a
pair of shapes."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from contactlab import se3
from contactlab.collision import ContactSet, collide
from contactlab.scene import Body, ContactParams, Scene
from contactlab.shapes import Shape

#: The contact margin of the scenes [m].
MARGIN = 0.005


def scene_of(
    *shapes: Shape,
    static: Sequence[Shape] = (),
    margin: float = MARGIN,
    contact: ContactParams | None = None,
) -> Scene:
    """One free unit-mass body per shape (``b0``, ``b1``, ...), ``static`` shapes in the
    world, contact parameters ``contact`` or the default ones with ``margin``."""
    bodies = tuple(Body(f"b{k}", 1.0, [1.0, 1.0, 1.0], shapes=(s,)) for k, s in enumerate(shapes))
    params = contact or ContactParams(margin=margin)
    return Scene("t", bodies, static_shapes=tuple(static), contact=params)


def T(p: Sequence[float], w: Sequence[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """The pose at position ``p`` rotated by the rotation vector ``w``."""
    return se3.make_transform(se3.exp_so3(np.asarray(w, float)), np.asarray(p, float))


def rows(x: np.ndarray, decimals: int = 8) -> np.ndarray:
    """The rows of ``x`` rounded to ``decimals`` and sorted (order-free comparison)."""
    x = np.round(np.asarray(x, float), decimals) + 0.0
    return x[np.lexsort(x.T[::-1])]


def _unit_normals(c: ContactSet) -> None:
    assert np.allclose(np.linalg.norm(c.normal, axis=1), 1.0)


def check_swap_symmetry(
    sa: Shape,
    sb: Shape,
    reach: float,
    seed: int,
    atol: float,
    decimals: int = 8,
    check: Callable[[ContactSet], None] = _unit_normals,
) -> None:
    """Swapping the shapes of a pair gives the same contacts with opposite normals.

    60 random poses with ``sb`` at about ``reach`` from ``sa`` (0.8 to 1.1 times; at
    least 20 of them in contact, margin 0.05): each contact set passes ``check``, the
    two sets agree to ``atol`` (rows rounded to ``decimals``), and for a separated pair
    the closest contact's plane separates the shapes (the normal points from B to A).
    """
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(60):
        Ea = se3.make_transform(se3.random_rotation(rng), rng.normal(size=3) * 0.1)
        d = rng.normal(size=3)
        Eb = se3.make_transform(
            se3.random_rotation(rng), d / np.linalg.norm(d) * reach * rng.uniform(0.8, 1.1)
        )
        c1 = collide(scene_of(sa, sb, margin=0.05), np.stack([Ea, Eb]))
        c2 = collide(scene_of(sb, sa, margin=0.05), np.stack([Eb, Ea]))
        assert len(c1) == len(c2)
        if not len(c1):
            continue
        hits += 1
        check(c1)
        # normals oriented toward the shape `sa` (body 0 in c1, body 1 in c2)
        n1 = c1.normal * np.where(c1.body_a == 0, 1.0, -1.0)[:, None]
        n2 = c2.normal * np.where(c2.body_a == 1, 1.0, -1.0)[:, None]
        a = np.hstack([c1.point, n1, c1.distance[:, None]])
        b = np.hstack([c2.point, n2, c2.distance[:, None]])
        assert np.allclose(rows(a, decimals), rows(b, decimals), atol=atol)
        if c1.distance.min() >= 0:
            k = int(np.argmin(c1.distance))
            centre_a = np.stack([Ea, Eb])[c1.body_a[k], :3, 3]
            assert (centre_a - c1.point[k]) @ c1.normal[k] > 0
    assert hits >= 20


def check_sphere_contact(
    c: ContactSet,
    centre: Sequence[float],
    radius: float,
    distance: float | None,
    normal: Sequence[float] | None,
    tol: float,
) -> None:
    """The contacts of a sphere (``centre``, ``radius``) with one other shape: none when
    ``distance`` is ``None`` (beyond the margin); else one, at ``distance`` along the unit
    ``normal`` (from the other shape toward the sphere), at the midpoint of the two
    surface points, all within ``tol``."""
    if distance is None:
        assert len(c) == 0
        return
    assert len(c) == 1
    assert abs(c.distance[0] - distance) <= tol
    n = np.asarray(normal, float)
    assert np.allclose(c.normal[0], n, atol=tol)
    on_sphere = np.asarray(centre, float) - radius * n
    assert np.allclose(c.point[0], on_sphere - 0.5 * distance * n, atol=tol)
