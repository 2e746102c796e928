"""Elastic programs: the smallest right-hand-side or bound change that restores feasibility.

For one row ``lo <= a·x <= hi`` the elastic program adds ``s_lo, s_hi >= 0``,
``lo - s_lo <= a·x <= hi + s_hi``, keeps every other row and bound, and minimises
``s_lo + s_hi`` (the phase-1 / ``feasRelax`` idea, Gurobi's feasibility relaxation
restricted to one member). For a variable bound ``x_j >= l`` it minimises ``t`` with
``x_j >= l - t`` (and likewise for an upper bound). Integer columns stay integer, so
the shift found for a MILP restores MILP feasibility.

This is the engine of the IIS-guided minimal repair baseline (reconstructed; the
paper names no algorithm for it) and of the learned policy's candidate repairs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from icml26.orloop.model import INF, Model


@dataclass(frozen=True)
class Shift:
    """A member of the model moved by ``delta`` (>= 0) to new bounds ``[lower, upper]``."""

    kind: str  # "row" or "bound"
    name: str
    delta: float
    lower: float
    upper: float

    @property
    def relative(self) -> float:
        """``delta`` relative to the size of the bound it moves (at least 1)."""
        ref = (
            max(abs(v) for v in (self.lower, self.upper) if math.isfinite(v))
            if any(math.isfinite(v) for v in (self.lower, self.upper))
            else 1.0
        )
        return self.delta / max(1.0, ref)


def _elastic_solve(model: Model) -> float | None:
    sol = model.solve()
    if not sol.optimal:
        return None
    return max(0.0, float(sol.objective))


def minimal_row_shift(model: Model, row: str, *, tol: float = 1e-7) -> Shift | None:
    """The smallest move of ``row``'s bounds that makes ``model`` feasible (None if none does)."""
    i = model.row(row)
    lo, hi = model.row_lower[i], model.row_upper[i]
    el = model.copy()
    el.cost = np.zeros(el.n_cols)
    el.sense = "min"
    s_lo, s_hi = "__s_lo__", "__s_hi__"
    el.add_col(s_lo, lower=0.0, upper=INF if math.isfinite(lo) else 0.0, cost=1.0)
    el.add_col(s_hi, lower=0.0, upper=INF if math.isfinite(hi) else 0.0, cost=1.0)
    a = el.a.tolil()
    a[i, el.col(s_lo)] = 1.0
    a[i, el.col(s_hi)] = -1.0
    el.a = a.tocsr()
    sol = el.solve()
    if not sol.optimal:
        return None
    d_lo = float(sol.x[el.col(s_lo)])
    d_hi = float(sol.x[el.col(s_hi)])
    new_lo = lo - (d_lo + tol if d_lo > 0 else 0.0)
    new_hi = hi + (d_hi + tol if d_hi > 0 else 0.0)
    return Shift("row", row, d_lo + d_hi, new_lo, new_hi)


def minimal_bound_shift(model: Model, col: str, side: str, *, tol: float = 1e-7) -> Shift | None:
    """The smallest move of ``col``'s ``side`` bound (``"lower"``, ``"upper"`` or ``"boxed"``).

    The lower and upper bounds get separate elastic rows, ``x_j + t_lo >= l`` and
    ``x_j - t_hi <= u``, so a crossed box (``l > u``, an IIS made of the bound alone)
    is handled like any other; the new bounds always satisfy ``lower <= upper``.
    """
    if side not in ("lower", "upper", "boxed"):
        raise ValueError(f"side must be 'lower', 'upper' or 'boxed', got {side!r}")
    j = model.col(col)
    lb, ub = float(model.col_lower[j]), float(model.col_upper[j])
    move_lo = side != "upper" or lb > ub
    move_hi = side != "lower" or lb > ub
    el = model.copy()
    el.cost = np.zeros(el.n_cols)
    el.sense = "min"
    # the column keeps only the bounds that are not elastic
    el.col_lower[j] = -INF if move_lo else lb
    el.col_upper[j] = INF if move_hi else ub
    t_lo, t_hi = "__t_lo__", "__t_hi__"
    el.add_col(t_lo, lower=0.0, upper=INF if move_lo and math.isfinite(lb) else 0.0, cost=1.0)
    el.add_col(t_hi, lower=0.0, upper=INF if move_hi and math.isfinite(ub) else 0.0, cost=1.0)
    if move_lo and math.isfinite(lb):
        el.add_row("__bound_lower__", {col: 1.0, t_lo: 1.0}, lower=lb)
    if move_hi and math.isfinite(ub):
        el.add_row("__bound_upper__", {col: 1.0, t_hi: -1.0}, upper=ub)
    sol = el.solve()
    if not sol.optimal:
        return None
    d_lo = float(sol.x[el.col(t_lo)])
    d_hi = float(sol.x[el.col(t_hi)])
    new_lb = lb - (d_lo + tol if d_lo > 0 else 0.0)
    new_ub = ub + (d_hi + tol if d_hi > 0 else 0.0)
    if new_lb > new_ub:  # rounding on a crossed box: meet at the elastic solution
        x = float(sol.x[j])
        new_lb, new_ub = min(new_lb, x), max(new_ub, x)
    return Shift("bound", col, d_lo + d_hi, new_lb, new_ub)


def phase_one(model: Model) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the violation and the normalised ``|dual|`` of the phase-1 elastic LP.

    ``min Σ (s_lo + s_hi)`` over ``lo − s_lo <= a·x <= hi + s_hi`` with the column
    bounds kept and integrality relaxed. The rows with a nonzero dual price form an
    infeasible subsystem (the Farkas certificate); the violated ones are where the
    cheapest fix would move. Both are zero when the bounds alone conflict.
    """
    m, n = model.n_rows, model.n_cols
    zeros = np.zeros(m), np.zeros(m)
    if m == 0:
        return zeros
    eye = sparse.identity(m, format="csr")
    a = sparse.hstack([model.a, eye, -eye], format="csr")
    fin_lo = np.isfinite(model.row_lower)
    fin_hi = np.isfinite(model.row_upper)
    el = Model(
        [*model.col_names, *(f"__slo{i}__" for i in range(m)), *(f"__shi{i}__" for i in range(m))],
        list(model.row_names),
        np.concatenate([np.zeros(n), np.ones(2 * m)]),
        np.concatenate([model.col_lower, np.zeros(2 * m)]),
        np.concatenate([model.col_upper, np.where(fin_lo, INF, 0.0), np.where(fin_hi, INF, 0.0)]),
        a,
        model.row_lower,
        model.row_upper,
        None,
        "min",
    )
    if np.any(model.col_lower > model.col_upper):
        return zeros
    sol = el.solve()
    if not sol.optimal or sol.row_dual is None:
        return zeros
    viol = sol.x[n : n + m] + sol.x[n + m :]
    dual = np.abs(np.asarray(sol.row_dual, float))
    top = dual.max()
    return (viol > 1e-7).astype(float), dual / top if top > 1e-12 else dual
