"""Irreducible infeasible subsystems (IIS) of a :class:`~icml26.orloop.model.Model`.

An IIS is a set of rows and variable bounds that is infeasible while every proper
subset is feasible: the solver's explanation of *why* a model has no solution, and
the feedback of the repair MDP after every action (paper §3, ``GET_IIS``).

- :func:`highs_iis` asks HiGHS (``Highs.getIis``) with ``iis_strategy = 4``, the
  true irreducible IIS. The HiGHS default (0, "light test") silently returns an
  empty IIS on a plain row conflict, so the option is always set here.
- :func:`deletion_filter` is Chinneck's deletion filter (reconstructed; the paper's
  code used Gurobi's ``computeIIS``): drop each row in turn and re-solve; a row
  whose removal leaves the model infeasible is left out for good, the others form
  the IIS; then the same over finite variable bounds. It works for MILPs that are
  infeasible only through integrality, where HiGHS reports no valid IIS because the
  LP relaxation is feasible.
- :func:`compute_iis` tries HiGHS and falls back to the deletion filter for such
  MILPs; the result says which method produced it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import highspy
import numpy as np

from icml26.orloop.model import Model, status_name

IIS_STRATEGY_IRREDUCIBLE = 4
_BOUND_NAMES = {2: "lower", 3: "upper", 4: "boxed"}


@dataclass(frozen=True)
class IIS:
    """The rows and variable bounds of an IIS, by name.

    ``bounds`` holds ``(column, side)`` with side ``"lower"``, ``"upper"`` or
    ``"boxed"`` (both). ``method`` is ``"highs"`` or ``"deletion_filter"``;
    ``valid`` is False when no IIS could be established (feasible model, time out,
    or HiGHS on an integrality-only conflict).
    """

    rows: tuple[str, ...]
    bounds: tuple[tuple[str, str], ...]
    method: str
    valid: bool
    seconds: float = 0.0
    solves: int = 0

    @property
    def size(self) -> int:
        """Rows plus bounded columns, as the paper counts IIS size."""
        return len(self.rows) + len(self.bounds)

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for c, _ in self.bounds)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": list(self.rows),
            "bounds": [list(b) for b in self.bounds],
            "method": self.method,
            "valid": self.valid,
            "size": self.size,
            "seconds": self.seconds,
        }


def highs_iis(model: Model, *, time_limit: float | None = None) -> IIS:
    """The IIS HiGHS finds with ``iis_strategy = 4`` (true irreducible IIS)."""
    t0 = time.perf_counter()
    opts: dict[str, Any] = {"iis_strategy": IIS_STRATEGY_IRREDUCIBLE}
    if time_limit is not None:
        opts["iis_time_limit"] = float(time_limit)
        opts["time_limit"] = float(time_limit)
    h = model.to_highs(**opts)
    status, iis = h.getIis()
    seconds = time.perf_counter() - t0
    solves = int(getattr(iis.info_, "num_lp_solved", 0)) if hasattr(iis, "info_") else 0
    if status == highspy.HighsStatus.kError or not iis.valid_:
        return IIS((), (), "highs", False, seconds, solves)
    rows = tuple(
        model.row_names[i]
        for i, b in zip(iis.row_index_, iis.row_bound_, strict=True)
        if int(b) in _BOUND_NAMES
    )
    bounds = tuple(
        (model.col_names[j], _BOUND_NAMES[int(b)])
        for j, b in zip(iis.col_index_, iis.col_bound_, strict=True)
        if int(b) in _BOUND_NAMES
    )
    if not rows and not bounds:  # HiGHS returned no members: not an explanation
        return IIS((), (), "highs", False, seconds, solves)
    return IIS(rows, bounds, "highs", True, seconds, solves)


def deletion_filter(
    model: Model, *, include_bounds: bool = True, time_limit: float | None = None
) -> IIS:
    """Chinneck's deletion filter over rows (then bounds), solving with HiGHS.

    The objective is replaced by zero, so every test solve answers only "feasible or
    not"; for a MILP each test is a MIP solve. A test that ends without a verdict
    (time limit) keeps the member and marks the IIS not valid.
    """
    t0 = time.perf_counter()
    opts: dict[str, Any] = {}
    if time_limit is not None:
        opts["time_limit"] = float(time_limit)
    h = model.to_highs(**opts)
    h.changeColsCost(model.n_cols, np.arange(model.n_cols, dtype=np.int32), np.zeros(model.n_cols))
    solves = 0

    def infeasible() -> bool | None:
        nonlocal solves
        solves += 1
        h.run()
        status = status_name(h.getModelStatus())
        if status == "INFEASIBLE":
            return True
        if status in ("OPTIMAL", "UNBOUNDED"):
            return False
        return None

    first = infeasible()
    if first is not True:
        return IIS((), (), "deletion_filter", False, time.perf_counter() - t0, solves)

    inf = highspy.kHighsInf
    certain = True
    rows: list[str] = []
    for i, name in enumerate(model.row_names):
        lo, hi = model.row_lower[i], model.row_upper[i]
        h.changeRowBounds(i, -inf, inf)
        verdict = infeasible()
        if verdict is True:
            continue  # still infeasible without it: not needed
        if verdict is None:
            certain = False
        h.changeRowBounds(i, _h(lo), _h(hi))
        rows.append(name)

    bounds: list[tuple[str, str]] = []
    if include_bounds:
        cur_lo, cur_hi = model.col_lower.copy(), model.col_upper.copy()
        for j, name in enumerate(model.col_names):
            sides = []
            for side, arr, free in (("lower", cur_lo, -math.inf), ("upper", cur_hi, math.inf)):
                value = arr[j]
                if not math.isfinite(value):
                    continue
                arr[j] = free
                h.changeColBounds(j, _h(cur_lo[j]), _h(cur_hi[j]))
                verdict = infeasible()
                if verdict is True:
                    continue  # the bound is not needed: leave it relaxed
                if verdict is None:
                    certain = False
                arr[j] = value
                h.changeColBounds(j, _h(cur_lo[j]), _h(cur_hi[j]))
                sides.append(side)
            if sides:
                bounds.append((name, "boxed" if len(sides) == 2 else sides[0]))
    return IIS(
        tuple(rows), tuple(bounds), "deletion_filter", certain, time.perf_counter() - t0, solves
    )


def compute_iis(model: Model, *, method: str = "auto", time_limit: float | None = None) -> IIS:
    """An IIS by ``method``: ``"highs"``, ``"deletion_filter"`` or ``"auto"``.

    ``"auto"`` asks HiGHS first and, for a MILP where HiGHS finds no valid IIS (an
    integrality-only conflict), falls back to the deletion filter.
    """
    if method not in ("auto", "highs", "deletion_filter"):
        raise ValueError(f"method must be 'auto', 'highs' or 'deletion_filter', got {method!r}")
    if method == "deletion_filter":
        return deletion_filter(model, time_limit=time_limit)
    found = highs_iis(model, time_limit=time_limit)
    if method == "auto" and not found.valid and model.is_mip:
        return deletion_filter(model, time_limit=time_limit)
    return found


def iis_submodel(model: Model, iis: IIS) -> Model:
    """The model cut down to the IIS: other rows free, other column bounds infinite."""
    sub = model.copy()
    keep_rows = set(iis.rows)
    for i, name in enumerate(sub.row_names):
        if name not in keep_rows:
            sub.row_lower[i], sub.row_upper[i] = -math.inf, math.inf
    sides = dict(iis.bounds)
    for j, name in enumerate(sub.col_names):
        side = sides.get(name)
        if side not in ("lower", "boxed"):
            sub.col_lower[j] = -math.inf
        if side not in ("upper", "boxed"):
            sub.col_upper[j] = math.inf
    sub.cost = np.zeros(sub.n_cols)
    return sub


def iis_is_irreducible(model: Model, iis: IIS) -> bool:
    """Re-check an IIS by solving: the subsystem is infeasible, and relaxing any one
    member (a row, or a column's bound) makes it feasible. Names the model lacks fail."""
    if not iis.valid or iis.size == 0:
        return False
    if any(not model.has_row(r) for r in iis.rows) or any(
        not model.has_col(c) for c in iis.columns
    ):
        return False
    sub = iis_submodel(model, iis)
    if not sub.is_infeasible(exact=True):
        return False
    for r in iis.rows:
        rest = IIS(tuple(x for x in iis.rows if x != r), iis.bounds, iis.method, True)
        if iis_submodel(model, rest).is_infeasible(exact=True):
            return False
    for c, _ in iis.bounds:
        rest = IIS(iis.rows, tuple(b for b in iis.bounds if b[0] != c), iis.method, True)
        if iis_submodel(model, rest).is_infeasible(exact=True):
            return False
    return True


def write_iis_model(model: Model, path: str | Path) -> Path:
    """Write the IIS sub-model HiGHS finds (``Highs.writeIisModel``) to ``.lp`` or ``.mps``."""
    path = Path(path)
    if path.suffix.lower() not in (".lp", ".mps"):
        raise ValueError(f"{path}: the suffix must be .lp or .mps")
    h = model.to_highs(iis_strategy=IIS_STRATEGY_IRREDUCIBLE)
    status, iis = h.getIis()
    if status == highspy.HighsStatus.kError or not iis.valid_:
        raise ValueError(f"model {model.name!r} has no HiGHS IIS to write (is it infeasible?)")
    path.parent.mkdir(parents=True, exist_ok=True)
    if h.writeIisModel(str(path)) == highspy.HighsStatus.kError:
        raise OSError(f"HiGHS could not write {path}")
    return path


def _h(value: float | None) -> float:
    if value is None or value == math.inf:
        return highspy.kHighsInf
    if value == -math.inf:
        return -highspy.kHighsInf
    return float(value)
