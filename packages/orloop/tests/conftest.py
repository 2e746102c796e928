"""Small hand-made models shared by the tests."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import sparse

from icml26.orloop import Model

INF = math.inf


def make(
    rows, lower, upper, *, cost=None, col_lower=None, col_upper=None, integer=None, names=None
):
    a = np.atleast_2d(np.asarray(rows, dtype=float))
    m, n = a.shape
    return Model(
        [f"x{j}" for j in range(n)],
        names or [f"r{i}" for i in range(m)],
        np.ones(n) if cost is None else cost,
        np.zeros(n) if col_lower is None else col_lower,
        np.full(n, 10.0) if col_upper is None else col_upper,
        sparse.csr_matrix(a),
        lower,
        upper,
        integer,
        "max",
    )


@pytest.fixture
def row_conflict() -> Model:
    """x0 + x1 <= 1 and x0 >= 2 conflict; two more rows are irrelevant."""
    return make([[1, 1], [1, 0], [1, 1], [0, 1]], [-INF, 2, -INF, 0], [1, INF, 100, INF])


@pytest.fixture
def bound_conflict() -> Model:
    """x0 >= 12 against the bound x0 <= 10."""
    return make([[1, 0], [0, 1]], [12, -INF], [INF, 5])


@pytest.fixture
def integrality_conflict() -> Model:
    """2·x = 1 with x integer: the LP relaxation is feasible, the MILP is not."""
    return make([[2.0]], [1.0], [1.0], integer=[True])
