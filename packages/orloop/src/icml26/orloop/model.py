"""A small LP/MILP model with named rows and columns, solved and stored through HiGHS.

The model is the object every part of ORLoopBench passes around: the saboteur edits
it, the repair environment applies actions to it, the IIS finders inspect it. Rows
are ranges ``row_lower <= A x <= row_upper`` (HiGHS's form); a ``<=`` row has
``row_lower = -inf``, a ``>=`` row ``row_upper = +inf``, an equality has both equal.

Files: MPS (fixed or free) and CPLEX LP, read and written by ``highspy``
(``Highs.readModel`` / ``Highs.writeModel``). MPS files are checked line by line
first so that a malformed file gives an error naming the file and the line.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import highspy
import numpy as np
from scipy import sparse

from icml26.orloop.mps_check import check_mps_file

log = logging.getLogger(__name__)

INF = math.inf
STATUS_NAMES = {
    "kOptimal": "OPTIMAL",
    "kInfeasible": "INFEASIBLE",
    "kUnbounded": "UNBOUNDED",
    "kUnboundedOrInfeasible": "INF_OR_UNBD",
    "kTimeLimit": "TIME_LIMIT",
    "kIterationLimit": "ITERATION_LIMIT",
    "kObjectiveBound": "OBJECTIVE_BOUND",
    "kObjectiveTarget": "OBJECTIVE_TARGET",
    "kSolutionLimit": "SOLUTION_LIMIT",
    "kInterrupt": "INTERRUPT",
    "kModelEmpty": "MODEL_EMPTY",
    "kNotset": "NOT_SET",
}

_BANNER_LOCK = threading.Lock()
_BANNER_SHOWN = False


def new_highs(**options: Any) -> highspy.Highs:
    """A silent ``Highs`` instance with ``options`` set.

    HiGHS prints a copyright banner to the C-level stdout on the first construction
    in a process; a library must not print, so that first construction runs with
    file descriptor 1 pointed at ``/dev/null``.
    """
    global _BANNER_SHOWN
    if not _BANNER_SHOWN:
        with _BANNER_LOCK:
            if not _BANNER_SHOWN:
                saved = os.dup(1)
                devnull = os.open(os.devnull, os.O_WRONLY)
                try:
                    os.dup2(devnull, 1)
                    h = highspy.Highs()
                finally:
                    os.dup2(saved, 1)
                    os.close(saved)
                    os.close(devnull)
                _BANNER_SHOWN = True
                return _configure(h, options)
    return _configure(highspy.Highs(), options)


def _configure(h: highspy.Highs, options: Mapping[str, Any]) -> highspy.Highs:
    h.setOptionValue("output_flag", False)
    for key, value in options.items():
        status = h.setOptionValue(key, value)
        if status != highspy.HighsStatus.kOk:
            raise ValueError(f"HiGHS rejected option {key}={value!r}")
    return h


@dataclass(frozen=True)
class Solution:
    """The outcome of one solve: status name, objective, primal values and row duals."""

    status: str
    objective: float | None = None
    x: np.ndarray | None = None
    row_activity: np.ndarray | None = None
    row_dual: np.ndarray | None = None
    seconds: float = 0.0

    @property
    def optimal(self) -> bool:
        return self.status == "OPTIMAL"

    @property
    def infeasible(self) -> bool:
        return self.status == "INFEASIBLE"


def status_name(model_status: Any) -> str:
    """``HighsModelStatus.kOptimal`` -> ``"OPTIMAL"`` (the paper's status vocabulary)."""
    raw = str(model_status).split(".")[-1]
    return STATUS_NAMES.get(raw, raw.removeprefix("k").upper())


def _names(names: Iterable[str], n: int, what: str) -> list[str]:
    out = [str(s) for s in names]
    if len(out) != n:
        raise ValueError(f"expected {n} {what} names, got {len(out)}")
    if len(set(out)) != n:
        dup = sorted({s for s in out if out.count(s) > 1})[:5]
        raise ValueError(f"{what} names must be unique; repeated: {dup}")
    for s in out:
        if not s or any(ch.isspace() for ch in s):
            raise ValueError(f"{what} name {s!r} is empty or contains white space")
    return out


def _vec(x: Any, n: int, what: str, *, allow_inf: bool) -> np.ndarray:
    arr = np.asarray(x, dtype=float).reshape(-1)
    if arr.shape != (n,):
        raise ValueError(f"{what} must have {n} entries, got shape {np.shape(x)}")
    if np.isnan(arr).any() or (not allow_inf and not np.isfinite(arr).all()):
        raise ValueError(f"{what} contains NaN{'' if allow_inf else ' or inf'}")
    return arr.copy()


@dataclass
class Model:
    """``max|min c·x + offset  s.t.  row_lower <= A x <= row_upper, col_lower <= x <= col_upper``.

    Some columns may be integer (``integrality``). Rows and columns are addressed by
    name in every editing method; names are unique and contain no white space
    (MPS needs that).
    """

    col_names: list[str]
    row_names: list[str]
    cost: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    a: sparse.csr_matrix
    row_lower: np.ndarray
    row_upper: np.ndarray
    integrality: np.ndarray = field(default=None)  # type: ignore[assignment]
    sense: str = "max"
    offset: float = 0.0
    name: str = "model"

    def __post_init__(self) -> None:
        n, m = len(self.col_names), len(self.row_names)
        self.col_names = _names(self.col_names, n, "column")
        self.row_names = _names(self.row_names, m, "row")
        self.cost = _vec(self.cost, n, "cost", allow_inf=False)
        self.col_lower = _vec(self.col_lower, n, "col_lower", allow_inf=True)
        self.col_upper = _vec(self.col_upper, n, "col_upper", allow_inf=True)
        self.row_lower = _vec(self.row_lower, m, "row_lower", allow_inf=True)
        self.row_upper = _vec(self.row_upper, m, "row_upper", allow_inf=True)
        a = sparse.csr_matrix(self.a, dtype=float)
        if a.shape != (m, n):
            raise ValueError(f"constraint matrix must be {m}x{n}, got {a.shape[0]}x{a.shape[1]}")
        if a.nnz and not np.isfinite(a.data).all():
            raise ValueError("constraint matrix contains NaN or inf")
        self.a = a
        if self.integrality is None:
            self.integrality = np.zeros(n, dtype=bool)
        self.integrality = np.asarray(self.integrality, dtype=bool).reshape(-1).copy()
        if self.integrality.shape != (n,):
            raise ValueError(f"integrality must have {n} entries")
        if self.sense not in ("max", "min"):
            raise ValueError(f"sense must be 'max' or 'min', got {self.sense!r}")
        if not math.isfinite(self.offset):
            raise ValueError("objective offset must be finite")
        self._index_names()

    def _index_names(self) -> None:
        self._col_index = {s: j for j, s in enumerate(self.col_names)}
        self._row_index = {s: i for i, s in enumerate(self.row_names)}

    # -- construction -----------------------------------------------------------------
    @classmethod
    def empty(cls, *, sense: str = "max", name: str = "model") -> Model:
        return cls([], [], [], [], [], sparse.csr_matrix((0, 0)), [], [], sense=sense, name=name)

    def copy(self) -> Model:
        return Model(
            list(self.col_names),
            list(self.row_names),
            self.cost.copy(),
            self.col_lower.copy(),
            self.col_upper.copy(),
            self.a.copy(),
            self.row_lower.copy(),
            self.row_upper.copy(),
            self.integrality.copy(),
            self.sense,
            self.offset,
            self.name,
        )

    # -- shape and lookup ---------------------------------------------------------------
    @property
    def n_cols(self) -> int:
        return len(self.col_names)

    @property
    def n_rows(self) -> int:
        return len(self.row_names)

    @property
    def is_mip(self) -> bool:
        return bool(self.integrality.any())

    def row(self, name: str) -> int:
        """Index of row ``name``; an unknown name raises ``KeyError`` naming the rows."""
        try:
            return self._row_index[name]
        except KeyError:
            raise KeyError(f"no row named {name!r}; rows: {_preview(self.row_names)}") from None

    def col(self, name: str) -> int:
        try:
            return self._col_index[name]
        except KeyError:
            raise KeyError(
                f"no column named {name!r}; columns: {_preview(self.col_names)}"
            ) from None

    def has_row(self, name: str) -> bool:
        return name in self._row_index

    def has_col(self, name: str) -> bool:
        return name in self._col_index

    def row_terms(self, name: str) -> dict[str, float]:
        """``{column: coefficient}`` of row ``name``."""
        i = self.row(name)
        lo, hi = self.a.indptr[i], self.a.indptr[i + 1]
        return {
            self.col_names[j]: float(v)
            for j, v in zip(self.a.indices[lo:hi], self.a.data[lo:hi], strict=True)
        }

    def row_sense(self, name: str) -> str:
        """``"<="``, ``">="``, ``"="``, ``"range"`` or ``"free"``."""
        i = self.row(name)
        return _sense(self.row_lower[i], self.row_upper[i])

    def row_rhs(self, name: str) -> float:
        """The right-hand side of a one-sided row or equality (the finite bound)."""
        i = self.row(name)
        lo, hi = self.row_lower[i], self.row_upper[i]
        return float(hi if math.isfinite(hi) else lo)

    # -- edits (each returns self so that edits chain) -----------------------------------
    def add_col(
        self,
        name: str,
        *,
        lower: float = 0.0,
        upper: float = INF,
        cost: float = 0.0,
        integer: bool = False,
    ) -> Model:
        if name in self._col_index:
            raise ValueError(f"column {name!r} already exists")
        self.col_names.append(_names([name], 1, "column")[0])
        self.cost = np.append(self.cost, float(cost))
        self.col_lower = np.append(self.col_lower, float(lower))
        self.col_upper = np.append(self.col_upper, float(upper))
        self.integrality = np.append(self.integrality, bool(integer))
        self.a = sparse.hstack([self.a, sparse.csr_matrix((self.n_rows, 1))], format="csr")
        self._index_names()
        return self

    def add_row(
        self, name: str, terms: Mapping[str, float], *, lower: float = -INF, upper: float = INF
    ) -> Model:
        """Append ``lower <= sum(terms[c] * x[c]) <= upper``."""
        if name in self._row_index:
            raise ValueError(f"row {name!r} already exists")
        if math.isnan(lower) or math.isnan(upper) or lower > upper:
            raise ValueError(f"row {name!r}: need lower <= upper, got [{lower}, {upper}]")
        cols = [self.col(c) for c in terms]
        vals = [float(v) for v in terms.values()]
        if not all(math.isfinite(v) for v in vals):
            raise ValueError(f"row {name!r} has a NaN or infinite coefficient")
        new = sparse.csr_matrix(
            (vals, ([0] * len(cols), cols)), shape=(1, self.n_cols), dtype=float
        )
        self.a = sparse.vstack([self.a, new], format="csr")
        self.row_names.append(_names([name], 1, "row")[0])
        self.row_lower = np.append(self.row_lower, float(lower))
        self.row_upper = np.append(self.row_upper, float(upper))
        self._index_names()
        return self

    def drop_rows(self, names: Iterable[str]) -> Model:
        drop = {self.row(s) for s in names}
        keep = np.array([i for i in range(self.n_rows) if i not in drop], dtype=int)
        self.a = self.a[keep] if keep.size else sparse.csr_matrix((0, self.n_cols))
        self.row_names = [self.row_names[i] for i in keep]
        self.row_lower = self.row_lower[keep]
        self.row_upper = self.row_upper[keep]
        self._index_names()
        return self

    def set_row_bounds(self, name: str, lower: float, upper: float) -> Model:
        if math.isnan(lower) or math.isnan(upper) or lower > upper:
            raise ValueError(f"row {name!r}: need lower <= upper, got [{lower}, {upper}]")
        i = self.row(name)
        self.row_lower[i], self.row_upper[i] = float(lower), float(upper)
        return self

    def set_col_bounds(self, name: str, lower: float, upper: float) -> Model:
        if math.isnan(lower) or math.isnan(upper) or lower > upper:
            raise ValueError(f"column {name!r}: need lower <= upper, got [{lower}, {upper}]")
        j = self.col(name)
        self.col_lower[j], self.col_upper[j] = float(lower), float(upper)
        return self

    def set_coefficient(self, row: str, col: str, value: float) -> Model:
        if not math.isfinite(value):
            raise ValueError(f"coefficient of {col!r} in {row!r} must be finite, got {value}")
        a = self.a.tolil()
        a[self.row(row), self.col(col)] = float(value)
        self.a = a.tocsr()
        self.a.eliminate_zeros()
        return self

    def set_integrality(self, col: str, integer: bool) -> Model:
        self.integrality[self.col(col)] = bool(integer)
        return self

    # -- HiGHS bridge ---------------------------------------------------------------------
    def to_highs_lp(self) -> highspy.HighsLp:
        lp = highspy.HighsLp()
        lp.num_col_ = self.n_cols
        lp.num_row_ = self.n_rows
        lp.col_cost_ = self.cost
        lp.col_lower_ = _to_highs_inf(self.col_lower)
        lp.col_upper_ = _to_highs_inf(self.col_upper)
        lp.row_lower_ = _to_highs_inf(self.row_lower)
        lp.row_upper_ = _to_highs_inf(self.row_upper)
        lp.offset_ = self.offset
        lp.sense_ = (
            highspy.ObjSense.kMaximize if self.sense == "max" else highspy.ObjSense.kMinimize
        )
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = self.a.indptr.astype(np.int32)
        lp.a_matrix_.index_ = self.a.indices.astype(np.int32)
        lp.a_matrix_.value_ = self.a.data
        lp.a_matrix_.num_row_ = self.n_rows
        lp.a_matrix_.num_col_ = self.n_cols
        lp.col_names_ = list(self.col_names)
        lp.row_names_ = list(self.row_names)
        if self.is_mip:
            lp.integrality_ = [
                highspy.HighsVarType.kInteger if z else highspy.HighsVarType.kContinuous
                for z in self.integrality
            ]
        return lp

    def to_highs(self, **options: Any) -> highspy.Highs:
        """A fresh silent ``Highs`` holding this model."""
        h = new_highs(**options)
        status = h.passModel(self.to_highs_lp())
        if status == highspy.HighsStatus.kError:
            raise ValueError(f"HiGHS rejected model {self.name!r}")
        return h

    @classmethod
    def from_highs(cls, h: highspy.Highs, *, name: str = "model") -> Model:
        lp = h.getLp()
        n, m = lp.num_col_, lp.num_row_
        mat = lp.a_matrix_
        start = np.asarray(mat.start_, dtype=int)
        index = np.asarray(mat.index_, dtype=int)
        value = np.asarray(mat.value_, dtype=float)
        if mat.format_ == highspy.MatrixFormat.kColwise:
            a = sparse.csc_matrix((value, index, start), shape=(m, n)).tocsr()
        else:
            a = sparse.csr_matrix((value, index, start), shape=(m, n))
        cols = list(lp.col_names_) if len(lp.col_names_) == n else [f"x{j}" for j in range(n)]
        rows = list(lp.row_names_) if len(lp.row_names_) == m else [f"r{i}" for i in range(m)]
        integ = np.zeros(n, dtype=bool)
        if len(lp.integrality_) == n:
            integ = np.array([t != highspy.HighsVarType.kContinuous for t in lp.integrality_])
        return cls(
            cols,
            rows,
            np.asarray(lp.col_cost_, dtype=float),
            _from_highs_inf(lp.col_lower_),
            _from_highs_inf(lp.col_upper_),
            a,
            _from_highs_inf(lp.row_lower_),
            _from_highs_inf(lp.row_upper_),
            integ,
            "max" if lp.sense_ == highspy.ObjSense.kMaximize else "min",
            float(lp.offset_),
            name,
        )

    # -- files ------------------------------------------------------------------------------
    @classmethod
    def read(cls, path: str | Path) -> Model:
        """Read an ``.mps`` (fixed or free, optionally ``.gz``) or ``.lp`` file."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no model file at {path}")
        suffixes = "".join(path.suffixes[-2:]).lower()
        if not any(suffixes.endswith(s) for s in (".mps", ".lp", ".mps.gz", ".lp.gz")):
            raise ValueError(f"{path}: expected a .mps or .lp file, got suffix {path.suffix!r}")
        if suffixes.endswith(".mps"):
            check_mps_file(path)  # line-numbered errors for malformed files
        h = new_highs()
        with tempfile.NamedTemporaryFile("r", suffix=".log") as logf:
            h.setOptionValue("log_file", logf.name)
            h.setOptionValue("output_flag", True)
            h.setOptionValue("log_to_console", False)
            status = h.readModel(str(path))
            h.setOptionValue("output_flag", False)
            message = logf.read().strip()
        if status == highspy.HighsStatus.kError:
            detail = message.splitlines()[-1] if message else "HiGHS could not parse it"
            raise ValueError(f"{path}: not a readable model file: {detail}")
        return cls.from_highs(h, name=path.name.split(".")[0])

    def write(self, path: str | Path) -> Path:
        """Write the model as ``.mps`` or ``.lp`` (chosen by the suffix)."""
        path = Path(path)
        if path.suffix.lower() not in (".mps", ".lp"):
            raise ValueError(f"{path}: the suffix must be .mps or .lp")
        path.parent.mkdir(parents=True, exist_ok=True)
        h = self.to_highs()
        if h.writeModel(str(path)) == highspy.HighsStatus.kError:
            raise OSError(f"HiGHS could not write {path}")
        return path

    # -- solving ----------------------------------------------------------------------------
    def solve(
        self, *, time_limit: float | None = None, relax_integrality: bool = False
    ) -> Solution:
        """Solve with HiGHS; ``time_limit`` in seconds."""
        if self.n_cols == 0:
            return Solution("OPTIMAL", float(self.offset), np.zeros(0), np.zeros(self.n_rows))
        opts: dict[str, Any] = {}
        if time_limit is not None:
            if time_limit <= 0:
                raise ValueError(f"time_limit must be positive, got {time_limit}")
            opts["time_limit"] = float(time_limit)
        if relax_integrality:
            opts["solve_relaxation"] = True
        h = self.to_highs(**opts)
        return solve_highs(h, with_duals=not self.is_mip or relax_integrality)

    def is_infeasible(self, *, exact: bool = True) -> bool:
        """True when the model has no feasible point.

        Solves the feasibility problem (objective zero). The LP relaxation is tried
        first: when it is infeasible, so is the MILP. With ``exact=False`` a MILP
        whose relaxation is feasible counts as feasible without a MIP solve (a cheap
        sufficient test, used where a construction is infeasible through its rows).
        """
        probe = self.copy()
        probe.cost = np.zeros(self.n_cols)
        relaxed = probe.solve(relax_integrality=True).status
        if relaxed == "INFEASIBLE":
            return True
        if not self.is_mip or not exact:
            return False
        return probe.solve().status == "INFEASIBLE"

    def objective_of(self, x: np.ndarray) -> float:
        return float(self.cost @ np.asarray(x, dtype=float) + self.offset)

    def describe(self, max_rows: int = 40) -> str:
        """The model as readable algebra (for prompts and logs)."""
        lines = [
            f"{'maximize' if self.sense == 'max' else 'minimize'} "
            + _expr(dict(zip(self.col_names, self.cost, strict=True)))
        ]
        lines.append("subject to")
        for name in self.row_names[:max_rows]:
            i = self.row(name)
            lines.append(
                f"  {name}: "
                + _row_text(self.row_terms(name), self.row_lower[i], self.row_upper[i])
            )
        if self.n_rows > max_rows:
            lines.append(f"  ... {self.n_rows - max_rows} more rows")
        lines.append("bounds")
        for j, c in enumerate(self.col_names):
            kind = " integer" if self.integrality[j] else ""
            lines.append(f"  {self.col_lower[j]:g} <= {c} <= {self.col_upper[j]:g}{kind}")
        return "\n".join(lines)


def solve_highs(h: highspy.Highs, *, with_duals: bool = True) -> Solution:
    """Run ``h`` and read back a :class:`Solution`."""
    t0 = time.perf_counter()
    h.run()
    seconds = time.perf_counter() - t0
    status = status_name(h.getModelStatus())
    if status != "OPTIMAL":
        return Solution(status, seconds=seconds)
    sol = h.getSolution()
    x = np.asarray(sol.col_value, dtype=float)
    act = np.asarray(sol.row_value, dtype=float)
    dual = np.asarray(sol.row_dual, dtype=float) if with_duals and sol.dual_valid else None
    return Solution(
        status, float(h.getInfo().objective_function_value), x, act, dual, seconds=seconds
    )


def _sense(lo: float, hi: float) -> str:
    if math.isinf(lo) and math.isinf(hi):
        return "free"
    if math.isinf(lo):
        return "<="
    if math.isinf(hi):
        return ">="
    return "=" if lo == hi else "range"


def _to_highs_inf(arr: np.ndarray) -> np.ndarray:
    return np.clip(arr, -highspy.kHighsInf, highspy.kHighsInf)


def _from_highs_inf(arr: Any) -> np.ndarray:
    out = np.asarray(arr, dtype=float).copy()
    out[out >= highspy.kHighsInf] = INF
    out[out <= -highspy.kHighsInf] = -INF
    return out


def _expr(terms: Mapping[str, float]) -> str:
    parts = [f"{v:+.4g} {c}" for c, v in terms.items() if v != 0]
    return " ".join(parts).lstrip("+") or "0"


def _row_text(terms: Mapping[str, float], lo: float, hi: float) -> str:
    sense = _sense(lo, hi)
    e = _expr(terms)
    if sense == "<=":
        return f"{e} <= {hi:.6g}"
    if sense == ">=":
        return f"{e} >= {lo:.6g}"
    if sense == "=":
        return f"{e} = {hi:.6g}"
    if sense == "range":
        return f"{lo:.6g} <= {e} <= {hi:.6g}"
    return f"{e} (free)"


def _preview(names: list[str], k: int = 8) -> str:
    head = ", ".join(names[:k])
    return head + (f", ... ({len(names)} in all)" if len(names) > k else "")
