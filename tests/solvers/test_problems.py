"""Validation of the problem forms: every error names the field and what was expected."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import LCP, QP, FrictionBlocks, ProblemError, SOCBlocks


def test_qp_rejects_bad_shapes_and_values() -> None:
    I2 = np.eye(2)
    with pytest.raises(ProblemError, match=r"^P: has shape \(3, 3\), expected \(2, 2\)"):
        QP(np.eye(3), np.zeros(2))
    with pytest.raises(ProblemError, match="^P: must be symmetric"):
        QP(np.array([[1.0, 1.0], [0.0, 1.0]]), np.zeros(2))
    with pytest.raises(ProblemError, match="^q: contains infinite"):
        QP(I2, np.array([1.0, np.inf]))
    with pytest.raises(ProblemError, match="^A: contains NaN"):
        QP(I2, np.zeros(2), np.array([[np.nan, 0.0]]), [0.0], [1.0])
    with pytest.raises(ProblemError, match=r"^l/u: l\[0\] = 2.0 exceeds u\[0\] = 1.0"):
        QP(I2, np.zeros(2), np.array([[1.0, 0.0]]), [2.0], [1.0])
    with pytest.raises(ProblemError, match="^A: has 3 columns, expected n = 2"):
        QP(I2, np.zeros(2), np.ones((1, 3)), [0.0], [1.0])
    with pytest.raises(ProblemError, match="^soc.tangent"):
        QP(
            np.eye(3),
            np.zeros(3),
            soc=SOCBlocks(np.array([0]), np.array([[1, 5]]), np.array([0.5])),
        )


def test_qp_from_standard_stacks_rows_in_documented_order() -> None:
    G = np.array([[1.0, 1.0]])
    qp = QP.from_standard(
        np.eye(2),
        np.zeros(2),
        G=G,
        h=[1.0],
        A=np.array([[1.0, -1.0]]),
        b=[0.0],
        lb=[-1.0, -2.0],
        ub=[3.0, np.inf],
    )
    assert qp.m == 4
    np.testing.assert_array_equal(qp.A.toarray(), [[1, 1], [1, -1], [1, 0], [0, 1]])
    np.testing.assert_array_equal(qp.l, [-np.inf, 0.0, -1.0, -2.0])
    np.testing.assert_array_equal(qp.u, [1.0, 0.0, 3.0, np.inf])
    assert QP(np.eye(2), np.zeros(2), sp.identity(2), [0, 0], [1, 1]).bound_rows() is not None
    assert qp.bound_rows() is None


def test_lcp_defaults_and_friction_blocks() -> None:
    lcp = LCP(np.eye(3), np.ones(3))
    assert lcp.is_standard and lcp.free_rows.size == 0
    blk = FrictionBlocks(np.array([0]), np.array([[1, 2]]), np.array([0.5]), "disc")
    lcp = LCP(np.eye(3), np.ones(3), blocks=blk)
    assert not lcp.is_standard
    assert np.all(np.isinf(lcp.lo[1:])), "tangent-row bounds come from the block"
    with pytest.raises(ProblemError, match="^blocks.tangent: cone='disc' needs 2"):
        LCP(
            np.eye(4),
            np.ones(4),
            blocks=FrictionBlocks(np.array([0]), np.array([[1, 2, 3]]), np.array([0.5]), "disc"),
        )
    with pytest.raises(ProblemError, match="^blocks.mu"):
        LCP(
            np.eye(3),
            np.ones(3),
            blocks=FrictionBlocks(np.array([0]), np.array([[1, 2]]), np.array([-0.5])),
        )
    with pytest.raises(ProblemError, match="^lo: normal rows"):
        LCP(np.eye(3), np.ones(3), lo=-np.ones(3), blocks=blk)
