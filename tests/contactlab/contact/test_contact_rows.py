"""Facts about the contact rows (Sueda's notes eqs. 1.75–1.78) and the friction data (1.85–1.86).

The rows are checked against an independent computation: the material
points of both bodies at the contact point are moved with ``E exp(t [phi])``
(the SE(3) update) and their world velocity is taken by central differences
with step ``eps = 1e-6`` (truncation ``O(eps^2)``, round-off
``O(1e-16 / eps)``: both below ``1e-8`` for unit-scale data, hence the
``1e-7`` tolerance).
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.collision import ContactSet, collide
from contactlab.contact import (
    box_bounds,
    contact_rhs,
    contact_rows,
    direction_sum,
    pyramid_directions,
    pyramid_matrix,
    pyramid_rows,
    tangent_basis,
)
from contactlab.errors import ConfigurationError, StateError
from contactlab.scene import Body, ContactParams, Scene
from contactlab.shapes import Box, Plane

EPS = 1e-6
FD_TOL = 1e-7


def random_contacts(rng, nb, nc):
    a = rng.integers(0, nb, nc)
    b = rng.integers(-1, nb, nc)
    b = np.where(b == a, -1, b)
    n = rng.normal(size=(nc, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    n[0] = [0, 0, -1]  # the one normal where the tangent formula switches branch
    zi = np.zeros(nc, dtype=np.int64)
    return ContactSet(
        point=rng.normal(size=(nc, 3)),
        normal=n,
        distance=rng.uniform(-0.01, 0.005, nc),
        body_a=a.astype(np.int64),
        body_b=b.astype(np.int64),
        shape_a=zi,
        shape_b=zi.copy(),
        mu=rng.uniform(0, 1, nc),
    )


def material_velocity(E, phi, body, point):
    """World velocity of the material point of ``body`` now at ``point`` (FD)."""
    if body < 0:
        return np.zeros(3)
    x_local = se3.transform_points(se3.inverse(E[body]), point)
    plus = se3.transform_points(E[body] @ se3.exp_se3(EPS * phi[body]), x_local)
    minus = se3.transform_points(E[body] @ se3.exp_se3(-EPS * phi[body]), x_local)
    return (plus - minus) / (2 * EPS)


def test_rows_give_the_relative_velocity_of_the_material_points():
    rng = np.random.default_rng(0)
    nb, nc = 4, 30
    E = se3.random_transform(rng, nb)
    phi = rng.normal(size=(nb, 6))
    contacts = random_contacts(rng, nb, nc)
    N, c, T, mu = contact_rows(contacts, E, nb, 1e-3, ContactParams())
    assert N.shape == (nc, 6 * nb) and T.shape == (2 * nc, 6 * nb)
    vn, vt = N @ phi.reshape(-1), T @ phi.reshape(-1)
    t1, t2 = tangent_basis(contacts.normal)
    for i in range(nc):
        rel = material_velocity(E, phi, contacts.body_a[i], contacts.point[i]) - material_velocity(
            E, phi, contacts.body_b[i], contacts.point[i]
        )
        assert vn[i] == pytest.approx(contacts.normal[i] @ rel, abs=FD_TOL)
        assert vt[2 * i] == pytest.approx(t1[i] @ rel, abs=FD_TOL)
        assert vt[2 * i + 1] == pytest.approx(t2[i] @ rel, abs=FD_TOL)
    # 6 entries per body on each row: 12 for body-body contacts, 6 against the world
    per_row = np.diff(N.indptr)
    assert np.array_equal(per_row, np.where(contacts.body_b >= 0, 12, 6))
    assert np.array_equal(mu, contacts.mu)
    # canonical CSR: sorted column indices, no duplicates
    for A in (N, T):
        B = A.copy()
        B.sort_indices()
        assert np.array_equal(A.indices, B.indices)
        B.sum_duplicates()
        assert B.nnz == A.nnz


def test_tangent_basis_is_orthonormal_right_handed_and_aligned_with_the_axes():
    rng = np.random.default_rng(1)
    n = rng.normal(size=(500, 3))
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    n[:3] = [[0, 0, 1], [0, 0, -1], [1, 0, 0]]
    t1, t2 = tangent_basis(n)
    basis = np.stack([t1, t2, n], axis=1)
    assert np.allclose(basis @ np.swapaxes(basis, 1, 2), np.eye(3), atol=1e-12)
    assert np.allclose(np.cross(t1, t2), n, atol=1e-12)
    assert np.allclose(t1[0], [1, 0, 0]) and np.allclose(t2[0], [0, 1, 0])
    # a plane tilted about y: t1 lies along the slope (in the x-z plane)
    th = 0.3
    t1s, _ = tangent_basis(np.array([[np.sin(th), 0.0, np.cos(th)]]))
    assert np.allclose(t1s[0], [np.cos(th), 0.0, -np.sin(th)], atol=1e-12)


def test_resting_box_rows_measure_vertical_and_horizontal_velocity():
    box = Body("box", 2.0, [1, 1, 1], shapes=(Box(half_extents=[0.3, 0.2, 0.1]),))
    scene = Scene("t", (box,), static_shapes=(Plane(),))
    E = se3.make_transform(p=[0.5, 0.0, 0.1])[None]
    contacts = collide(scene, E)
    N, _, T, _ = contact_rows(contacts, E, 1, 1e-3, scene.contact)
    up = np.array([0, 0, 0, 0, 0, 0.7])
    assert np.allclose(N @ up, 0.7)
    slide = np.array([0, 0, 0, 1.5, -0.5, 0])
    assert np.allclose(T @ slide, np.tile([1.5, -0.5], 4))
    # spinning about the vertical axis moves each corner tangentially: w x r
    spin = np.array([0, 0, 2.0, 0, 0, 0])
    r = contacts.point - E[0, :3, 3]
    expect = np.cross([0, 0, 2.0], r)[:, :2].reshape(-1)
    assert np.allclose(T @ spin, expect)


def test_right_hand_side_gap_and_penetration_feedback():
    h = 0.01
    d = np.array([0.004, 0.0, -0.001, -1.0])
    default = contact_rhs(d, h, ContactParams(max_correction=1.0))
    # gap: approach allowed up to the gap in one step; penetration: 0.2/h feedback, capped
    assert np.allclose(default, [-0.4, 0.0, 0.2 * 0.001 / h, 1.0])
    explicit = contact_rhs(d, h, ContactParams(stabilization=5.0, max_correction=0.5))
    assert np.allclose(explicit, [-0.4, 0.0, 0.005, 0.5])
    with pytest.raises(ConfigurationError, match="stabilization"):
        contact_rhs(d, h, ContactParams(stabilization=-1.0))


def test_gap_rhs_lands_a_falling_point_exactly_on_the_surface():
    """With c = -d/h the slowest admissible approach closes the gap in one step."""
    h, d = 1e-3, 0.004
    v = contact_rhs(np.array([d]), h, ContactParams())[0]
    assert d + h * v == pytest.approx(0.0, abs=1e-15)


def test_empty_and_bad_input():
    N, c, T, mu = contact_rows(
        ContactSet.empty(), np.tile(np.eye(4), (2, 1, 1)), 2, 1e-3, ContactParams()
    )
    assert N.shape == (0, 12) and T.shape == (0, 12) and c.size == 0 and mu.size == 0
    with pytest.raises(StateError, match="shape"):
        contact_rows(ContactSet.empty(), np.eye(4), 2, 1e-3, ContactParams())


# ----------------------------------------------------------------------------
# pyramid
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("k", [4, 6, 8, 16])
def test_pyramid_directions_are_unit_and_symmetric(k):
    D = pyramid_directions(k)
    assert np.allclose(np.linalg.norm(D, axis=1), 1.0)
    assert np.allclose(D[k // 2 :], -D[: k // 2])  # every direction has its opposite
    rng = np.random.default_rng(k)
    nb, nc = 3, 7
    E = se3.random_transform(rng, nb)
    contacts = random_contacts(rng, nb, nc)
    _, _, T, _ = contact_rows(contacts, E, nb, 1e-3, ContactParams())
    Dr = pyramid_rows(T, k)
    phi = rng.normal(size=6 * nb)
    vt = (T @ phi).reshape(nc, 2)
    assert np.allclose((Dr @ phi).reshape(nc, k), vt @ D.T)
    # each pyramid row is a unit world direction in the tangent plane
    t1, t2 = tangent_basis(contacts.normal)
    dirs = D[None, :, :1] * t1[:, None, :] + D[None, :, 1:] * t2[:, None, :]
    assert np.allclose(np.linalg.norm(dirs, axis=2), 1.0)
    assert np.allclose(np.einsum("nkj,nj->nk", dirs, contacts.normal), 0.0)


def test_pyramid_matrix_is_seed_eq_1_86():
    mu = np.array([0.3, 0.7])
    E = pyramid_matrix(mu, 4).toarray()
    expect = np.array(
        [
            [0.3, 0, -1, -1, -1, -1, 0, 0, 0, 0],
            [0, 0.7, 0, 0, 0, 0, -1, -1, -1, -1],
        ]
    )
    assert np.array_equal(E, expect)
    assert np.array_equal(direction_sum(2, 4).toarray(), -expect[:, 2:].T)
    # E lambda >= 0 holds exactly when sum(beta) <= mu alpha
    lam = np.array([1.0, 2.0, 0.1, 0.1, 0.05, 0.05, 0.5, 0.5, 0.2, 0.2])
    assert np.all(E @ lam >= -1e-15)
    lam[6] = 0.6
    assert (E @ lam)[1] < 0


def test_box_bounds_and_k_validation():
    lo, hi = box_bounds(np.array([0.5, 0.2]), np.array([2.0, -1.0]))
    assert np.array_equal(hi, [1.0, 1.0, 0.0, 0.0]) and np.array_equal(lo, -hi)
    for k in (3, 2, 5):
        with pytest.raises(ConfigurationError, match="even number of directions"):
            pyramid_directions(k)
