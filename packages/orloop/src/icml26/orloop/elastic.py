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
    """The smallest move of ``col``'s ``side`` bound (``"lower"``, ``"upper"`` or ``"boxed"``)."""
    if side not in ("lower", "upper", "boxed"):
        raise ValueError(f"side must be 'lower', 'upper' or 'boxed', got {side!r}")
    j = model.col(col)
    lb, ub = model.col_lower[j], model.col_upper[j]
    el = model.copy()
    el.cost = np.zeros(el.n_cols)
    el.sense = "min"
    el.set_col_bounds(col, -INF if side != "upper" else lb, INF if side != "lower" else ub)
    t_lo, t_hi = "__t_lo__", "__t_hi__"
    el.add_col(t_lo, lower=0.0, upper=INF, cost=1.0)
    el.add_col(t_hi, lower=0.0, upper=INF, cost=1.0)
    terms = {col: 1.0, t_lo: 1.0, t_hi: -1.0}
    el.add_row(
        "__bound__",
        terms,
        lower=lb if side != "upper" else -INF,
        upper=ub if side != "lower" else INF,
    )
    sol = el.solve()
    if not sol.optimal:
        return None
    d_lo = float(sol.x[el.col(t_lo)])
    d_hi = float(sol.x[el.col(t_hi)])
    new_lb = lb - (d_lo + tol if d_lo > 0 else 0.0)
    new_ub = ub + (d_hi + tol if d_hi > 0 else 0.0)
    return Shift("bound", col, d_lo + d_hi, new_lb, new_ub)
