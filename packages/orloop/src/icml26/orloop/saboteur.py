"""The Saboteur: seed LP/MILP families, the nine error types A–I, difficulty tiers, validation.

Follows the official generator (``saboteur_agent.py``, ``generate_dataset.py``):

- **Seed models** (``create_simple_lp`` / ``create_simple_mip``): maximise ``c·x``,
  ``c ~ U(0.5, 1.5)``, ``x ∈ [0, 10]``; half the rows ``a·x <= sum(5a)·U(0.8, 1.2)``,
  half ``a·x >= sum(2a)·U(0.5, 0.9)``, ``a ~ U(0.5, 2)``; a key pair
  ``k·x <= sum(5k)``, ``k·x >= 0.5·sum(5k)`` (MILP: 0.4), ``k ~ U(1, 2)``.
  LP: 5–10 variables, 3–8 rows (+2); MILP: 8–15 variables, 5–12 rows, 30–50 %
  integer variables with upper bound 15, ``<=`` rows ``U(0.9, 1.3)``, ``>=`` rows
  ``U(0.4, 0.8)``.
- **Error types** (the "robust" variants of the official code):
  A flip a row's sense (10 tightest rows, kept only if the flipped row is in the IIS);
  B integer → binary plus a forcing row ``x >= 2`` (official), or a true integrality
  conflict ``2·x_i + 2·x_j = odd`` whose LP relaxation is feasible (added here, see
  the brief's pitfall); C remove a term / flip a sign / scale a coefficient, and a
  row-wide unit error (×10) when those keep the model feasible (reconstructed);
  D a contradicting copy of a row (easy) or a cycle of auxiliary chain rows (hard);
  E two interlocked rows on ``x_a + x_b``; F an auxiliary variable linked to ``x_t``
  carrying an impossible bound row; G a cascading pair ``x <= v-5``, ``x >= v+5``;
  H a lower bound raised past the upper bound behind a symptom row (official: the
  IIS is the bound alone), and H2 the same with the bound kept below the upper one
  (this package's variant); I a box whose upper row is
  tightened below its lower row (several repairs work, one keeps the objective).
- **Difficulty** by IIS size (rows + bounds): easy <= 2, medium 3–5, hard >= 6.
- **Validation**: the intended model is OPTIMAL, the sabotaged one INFEASIBLE, and the
  ground-truth fix (a list of :class:`~icml26.orloop.edits.Edit`) restores it, with
  the intended objective.

Injected rows and columns get neutral random names (``c_3fa2c1``), as the official
code does for types G–I, so that a name never gives the error away.
HiGHS (1.16) solves a crossed box ``lb > ub`` as INFEASIBLE and returns the bound as
the IIS, so the official H is kept as it is.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse

from icml26.orloop.edits import Edit, apply_edits
from icml26.orloop.iis import IIS, compute_iis, iis_is_irreducible
from icml26.orloop.model import INF, Model, Solution
from icml26.shared import numpy_rng

log = logging.getLogger(__name__)

ERROR_TYPES = ("A", "B", "C", "D", "E", "F", "G", "H", "I")
# variants kept next to the paper's nine: H2 is H with the raised bound below the upper one
VARIANT_TYPES = ("H2",)
ALL_TYPES = (*ERROR_TYPES, *VARIANT_TYPES)
LP_TYPES = ("A", "C", "D", "E", "F", "G", "H", "I")
MILP_TYPES = ("B", "A", "D")
ERROR_NAMES = {
    "A": "flipped constraint sense",
    "B": "changed variable type",
    "C": "removed term / changed coefficient",
    "D": "contradicting constraint",
    "E": "interlocked pair (two fixes)",
    "F": "hidden dependency",
    "G": "cascading conflict",
    "H": "IIS shows the symptom, not the root-cause bound",
    "H2": "root-cause bound below the upper bound (variant of H)",
    "I": "several repairs, one keeps the objective",
}
TIERS = ("easy", "medium", "hard")


def difficulty(iis_size: int) -> str:
    """The paper's tiers by IIS size: easy <= 2, medium 3–5, hard >= 6."""
    if iis_size < 0:
        raise ValueError(f"IIS size must be non-negative, got {iis_size}")
    return "easy" if iis_size <= 2 else "medium" if iis_size <= 5 else "hard"


# -- seed families -----------------------------------------------------------------------------
def _seed_model(
    rng: np.random.Generator,
    n_vars: int,
    n_rows: int,
    *,
    n_integer: int,
    le_range: tuple[float, float],
    ge_range: tuple[float, float],
    key_lower: float,
    name: str,
) -> Model:
    ub = np.where(np.arange(n_vars) < n_integer, 15.0, 10.0)
    a = rng.uniform(0.5, 2.0, size=(n_rows, n_vars))
    lo = np.full(n_rows, -INF)
    hi = np.full(n_rows, INF)
    n_le = n_rows // 2
    hi[:n_le] = (a[:n_le] * 5).sum(1) * rng.uniform(*le_range, size=n_le)
    lo[n_le:] = (a[n_le:] * 2).sum(1) * rng.uniform(*ge_range, size=n_rows - n_le)
    key = rng.uniform(1.0, 2.0, size=n_vars)
    key_rhs = float((key * 5).sum())
    a = np.vstack([a, key, key])
    lo = np.concatenate([lo, [-INF, key_lower * key_rhs]])
    hi = np.concatenate([hi, [key_rhs, INF]])
    cost = rng.uniform(0.5, 1.5, size=n_vars)
    rows = [f"c{i}" for i in range(n_rows)] + ["c_key_upper", "c_key_lower"]
    return Model(
        [f"x{j}" for j in range(n_vars)],
        rows,
        cost,
        np.zeros(n_vars),
        ub,
        sparse.csr_matrix(a),
        lo,
        hi,
        np.arange(n_vars) < n_integer,
        "max",
        0.0,
        name,
    )


def make_seed_lp(rng: np.random.Generator, *, name: str = "lp") -> Model:
    """A random tight feasible LP (official ``create_simple_lp``)."""
    return _seed_model(
        rng,
        int(rng.integers(5, 11)),
        int(rng.integers(3, 9)),
        n_integer=0,
        le_range=(0.8, 1.2),
        ge_range=(0.5, 0.9),
        key_lower=0.5,
        name=name,
    )


def make_seed_milp(rng: np.random.Generator, *, name: str = "milp") -> Model:
    """A random tight feasible MILP (official ``create_simple_mip``)."""
    n_vars = int(rng.integers(8, 16))
    n_int = max(1, int(n_vars * rng.uniform(0.3, 0.5)))
    return _seed_model(
        rng,
        n_vars,
        int(rng.integers(5, 13)),
        n_integer=n_int,
        le_range=(0.9, 1.3),
        ge_range=(0.4, 0.8),
        key_lower=0.4,
        name=name,
    )


# -- injections ----------------------------------------------------------------------------
@dataclass
class Sabotage:
    """What an injection did: the intended (reference) model, the broken one, the fix."""

    error_type: str
    reference: Model
    model: Model
    fix: list[Edit]
    target: str
    description: str
    meta: dict[str, Any] = field(default_factory=dict)


def _hex(rng: np.random.Generator) -> str:
    return f"{int(rng.integers(0, 16**6)):06x}"


def _fresh(model: Model, rng: np.random.Generator, prefix: str) -> str:
    while True:
        name = f"{prefix}_{_hex(rng)}"
        if not model.has_row(name) and not model.has_col(name):
            return name


def _flip(lo: float, hi: float) -> tuple[float, float]:
    return (hi, INF) if math.isinf(lo) else (-INF, lo)


def _inject_a(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    act = sol.row_activity
    slack = []
    for i, name in enumerate(model.row_names):
        lo, hi = model.row_lower[i], model.row_upper[i]
        if math.isinf(lo) == math.isinf(hi):
            continue  # equality, range or free rows have no sense to flip
        bound = hi if math.isinf(lo) else lo
        slack.append((abs(bound - act[i]), name))
    for _, name in sorted(slack)[:10]:
        i = model.row(name)
        lo, hi = model.row_lower[i], model.row_upper[i]
        broken = model.copy().set_row_bounds(name, *_flip(lo, hi))
        if not broken.is_infeasible(exact=False):
            continue
        iis = compute_iis(broken)
        if iis.valid and name in iis.rows:
            old, new = model.row_sense(name), broken.row_sense(name)
            return Sabotage(
                "A",
                model,
                broken,
                [Edit("set_row_bounds", row=name, lower=lo, upper=hi)],
                name,
                f"Change {name} from {new} back to {old}",
                {"original_sense": old},
            )
    return None


def _inject_b(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    ints = [j for j in range(model.n_cols) if model.integrality[j]]
    if not ints:
        return None
    if rng.random() < 0.5:  # true integrality conflict: LP relaxation feasible
        x = sol.x
        pairs = [(i, j) for i in ints for j in ints if i < j]
        rng.shuffle(pairs)
        for i, j in pairs[:6]:
            ci, cj = model.col_names[i], model.col_names[j]
            base = 2 * (round(x[i]) + round(x[j]))
            for rhs in (base + 1, base - 1):
                name = _fresh(model, rng, "c")
                broken = model.copy().add_row(name, {ci: 2.0, cj: 2.0}, lower=rhs, upper=rhs)
                if not broken.solve(relax_integrality=True).optimal:
                    continue  # must be feasible as an LP: the conflict is integrality alone
                if not broken.is_infeasible(exact=True):
                    continue
                return Sabotage(
                    "B",
                    model,
                    broken,
                    [Edit("drop_row", row=name)],
                    name,
                    f"Remove {name}: 2·{ci} + 2·{cj} = {rhs} has no integer solution",
                    {"variant": "integrality", "columns": [ci, cj]},
                )
        return None
    for j in rng.permutation(ints):
        col = model.col_names[j]
        if model.col_upper[j] <= 1:
            continue
        name = _fresh(model, rng, "c")
        broken = model.copy().set_col_bounds(col, 0.0, 1.0).add_row(name, {col: 1.0}, lower=2.0)
        if broken.is_infeasible(exact=False):
            lo, hi = model.col_lower[j], model.col_upper[j]
            return Sabotage(
                "B",
                model,
                broken,
                [Edit("set_col_bounds", col=col, lower=lo, upper=hi), Edit("drop_row", row=name)],
                col,
                f"Change {col} back to integer with upper bound {hi:g} and remove {name}",
                {"variant": "binary_forcing", "forcing_row": name},
            )
    return None


def _inject_c(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    dual = sol.row_dual if sol.row_dual is not None else np.zeros(model.n_rows)
    order = sorted(range(model.n_rows), key=lambda i: -abs(dual[i]))
    tries: list[tuple[str, str, float, str]] = []
    for i in order:  # 1: >= rows, drop the largest positive terms
        if math.isinf(model.row_upper[i]) and math.isfinite(model.row_lower[i]):
            terms = model.row_terms(model.row_names[i])
            for c, v in sorted(terms.items(), key=lambda t: -t[1])[:2]:
                if v > 0:
                    tries.append((model.row_names[i], c, 0.0, "removal"))
    for i in order:  # 2: <= rows, flip positive signs
        if math.isinf(model.row_lower[i]) and math.isfinite(model.row_upper[i]):
            terms = model.row_terms(model.row_names[i])
            for c, v in sorted(terms.items(), key=lambda t: -abs(t[1]))[:2]:
                if v > 0:
                    tries.append((model.row_names[i], c, -v, "sign_flip"))
    for i in order[:5]:  # 3: scale a coefficient up by 10
        terms = model.row_terms(model.row_names[i])
        for c, v in list(terms.items())[:2]:
            if abs(v) >= 0.1:
                tries.append((model.row_names[i], c, 10 * v, "scale_up"))
    for row, col, new, kind in tries[:12]:
        old = model.row_terms(row)[col]
        broken = model.copy().set_coefficient(row, col, new)
        if broken.is_infeasible(exact=False):
            return Sabotage(
                "C",
                model,
                broken,
                [Edit("set_coefficient", row=row, col=col, value=old)],
                row,
                f"Restore the coefficient of {col} in {row} from {new:g} to {old:g}",
                {"variant": kind, "column": col, "original": old, "modified": new},
            )
    # 4 (reconstructed): a unit error, every coefficient of a <= row scaled by 10
    le_rows = [
        model.row_names[i]
        for i in order
        if math.isinf(model.row_lower[i]) and math.isfinite(model.row_upper[i])
    ]
    for row in le_rows[:4]:
        terms = model.row_terms(row)
        broken = model.copy()
        for c, v in terms.items():
            broken.set_coefficient(row, c, 10 * v)
        if broken.is_infeasible(exact=False):
            return Sabotage(
                "C",
                model,
                broken,
                [Edit("set_coefficient", row=row, col=c, value=v) for c, v in terms.items()],
                row,
                f"Restore the coefficients of {row} (each was multiplied by 10)",
                {"variant": "unit_error"},
            )
    return None


def _inject_d(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    if rng.random() < 0.5:  # easy: a contradicting copy of a row
        row = model.row_names[int(rng.integers(model.n_rows))]
        i = model.row(row)
        lo, hi = model.row_lower[i], model.row_upper[i]
        rhs = model.row_rhs(row)
        delta = abs(rhs) + 10 if rhs != 0 else 10
        name = _fresh(model, rng, "c")
        if math.isinf(lo):
            bounds = {"lower": rhs + delta}
        elif math.isinf(hi):
            bounds = {"upper": rhs - delta}
        else:
            bounds = {"lower": rhs + delta}
        broken = model.copy().add_row(name, model.row_terms(row), **bounds)
        if not broken.is_infeasible(exact=False):
            return None
        return Sabotage(
            "D",
            model,
            broken,
            [Edit("drop_row", row=name)],
            name,
            f"Remove the contradicting constraint {name} (a copy of {row})",
            {"variant": "simple", "copied_row": row},
        )
    length = int(rng.integers(3, 9))  # hard: a cycle y_i >= y_{i-1} + 10, y_0 >= y_last + 10
    reference = model.copy()
    ys = []
    for _ in range(length):
        y = _fresh(reference, rng, "y")
        reference.add_col(y, lower=0.0, upper=100.0)
        ys.append(y)
    broken = reference.copy()
    rows = []
    for k in range(length):
        name = _fresh(broken, rng, "c")
        broken.add_row(name, {ys[k]: 1.0, ys[k - 1]: -1.0}, lower=10.0)
        rows.append(name)
    if not broken.is_infeasible(exact=False):
        return None
    return Sabotage(
        "D",
        reference,
        broken,
        [Edit("drop_row", row=r) for r in rows],
        rows[0],
        f"Remove the chain constraints {', '.join(rows)}",
        {"variant": "chain", "chain_length": length, "chain_rows": rows},
    )


def _positive_var(model: Model, sol: Solution, lo: float, hi: float) -> int | None:
    for j, v in enumerate(sol.x):
        if lo < abs(v) < hi:
            return j
    return None


def _inject_e(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    nz = [j for j, v in enumerate(sol.x) if abs(v) > 0.01]
    if len(nz) < 2:
        return None
    a, b = nz[0], nz[1]
    ca, cb = model.col_names[a], model.col_names[b]
    total = float(sol.x[a] + sol.x[b])
    margin = max(1.0, abs(total) * 0.1)
    up, low = _fresh(model, rng, "c"), None
    broken = model.copy().add_row(up, {ca: 1.0, cb: 1.0}, upper=total - margin)
    low = _fresh(broken, rng, "c")
    broken.add_row(low, {ca: 1.0, cb: 1.0}, lower=total + margin)
    if not broken.is_infeasible(exact=False):
        return None
    return Sabotage(
        "E",
        model,
        broken,
        [Edit("drop_row", row=up), Edit("drop_row", row=low)],
        f"{up},{low}",
        f"Remove both {up} and {low}; fixing one alone does not restore the model",
        {"rows": [up, low], "columns": [ca, cb], "sum": total},
    )


def _inject_f(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    j = _positive_var(model, sol, 0.1, 100)
    if j is None:
        return None
    col, v = model.col_names[j], float(sol.x[j])
    reference = model.copy()
    aux = _fresh(reference, rng, "y")
    reference.add_col(aux, lower=-INF, upper=INF)
    link = _fresh(reference, rng, "c")
    reference.add_row(link, {aux: 1.0, col: -1.0}, lower=0.0, upper=0.0)
    root = _fresh(reference, rng, "c")
    bound = abs(v) * 20 + 50
    broken = reference.copy().add_row(root, {aux: 1.0}, lower=bound)
    if not broken.is_infeasible(exact=False):
        return None
    return Sabotage(
        "F",
        reference,
        broken,
        [Edit("drop_row", row=root)],
        root,
        f"The root cause is {root} ({aux} >= {bound:g}) while {aux} = {col}; remove it",
        {"root_row": root, "link_row": link, "aux": aux, "column": col},
    )


def _inject_g(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    j = _positive_var(model, sol, 1, 50)
    if j is None:
        return None
    col, v = model.col_names[j], float(sol.x[j])
    g1 = _fresh(model, rng, "c")
    broken = model.copy().add_row(g1, {col: 1.0}, upper=v - 5)
    g2 = _fresh(broken, rng, "c")
    broken.add_row(g2, {col: 1.0}, lower=v + 5)
    if not broken.is_infeasible(exact=False):
        return None
    return Sabotage(
        "G",
        model,
        broken,
        [Edit("drop_row", row=g1), Edit("drop_row", row=g2)],
        f"{g1},{g2}",
        f"Cascading conflict: removing {g1} alone reveals {g2}; remove both",
        {"rows": [g1, g2], "column": col, "value": v},
    )


def _inject_h(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    """Type H as the official ``inject_type_h_robust``: a bound-only IIS.

    The first variable with ``0 < x* < 50`` and ``lb >= 0`` gets a symptom row
    ``x <= x* + 5`` and its lower bound raised to ``max(5·x*, 50)``. With the seed
    models' upper bound 10 (15 for integers) the box is crossed (``lb > ub``), so the
    IIS is the variable's bound alone: no row to drop restores the model, only
    putting the bound back does.
    """
    for j, v in enumerate(sol.x):
        lo, hi = model.col_lower[j], model.col_upper[j]
        if not (0 < v < 50 and lo >= 0):
            continue
        col = model.col_names[j]
        reference = model.copy()
        symptom = _fresh(reference, rng, "c")
        reference.add_row(symptom, {col: 1.0}, upper=v + 5)
        new_lb = max(5 * v, 50.0)
        broken = reference.copy()
        broken.col_lower[j] = new_lb  # may cross the upper bound, as in the official code
        if not broken.is_infeasible(exact=False):
            continue
        return Sabotage(
            "H",
            reference,
            broken,
            [Edit("set_col_bounds", col=col, lower=lo, upper=hi)],
            col,
            f"IIS-INCOMPLETE: the symptom constraint {symptom} appears to be the problem, but "
            f"the root cause is the tightened lower bound on {col} (changed from {lo:g} to "
            f"{new_lb:g}). Restore {col}.LB = {lo:g}, do not just drop {symptom}.",
            {
                "variant": "official",
                "symptom_row": symptom,
                "column": col,
                "original_lb": lo,
                "new_lb": new_lb,
                "crossed_box": bool(new_lb > hi),
            },
        )
    return None


def _inject_h2(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    """Type H2 (this package's variant of H): the raised lower bound stays below the upper one.

    The lower bound moves to between the symptom row's right-hand side and the upper
    bound, so the IIS holds the symptom row and the bound and dropping the row
    "works" while moving the objective.
    """
    for j, v in enumerate(sol.x):
        lo, hi = model.col_lower[j], model.col_upper[j]
        if not (0 < v < 50 and lo >= 0 and hi - (v + 5) > 0.5):
            continue
        col = model.col_names[j]
        reference = model.copy()
        symptom = _fresh(reference, rng, "c")
        reference.add_row(symptom, {col: 1.0}, upper=v + 5)
        new_lb = v + 5 + (hi - v - 5) * rng.uniform(0.3, 1.0)
        broken = reference.copy().set_col_bounds(col, new_lb, hi)
        if not broken.is_infeasible(exact=False):
            continue
        return Sabotage(
            "H2",
            reference,
            broken,
            [Edit("set_col_bounds", col=col, lower=lo, upper=hi)],
            col,
            f"The root cause is the lower bound of {col} (raised from {lo:g} to {new_lb:.4g}), "
            f"not the symptom row {symptom}",
            {
                "variant": "below_upper",
                "symptom_row": symptom,
                "column": col,
                "original_lb": lo,
                "new_lb": new_lb,
            },
        )
    return None


def _inject_i(model: Model, sol: Solution, rng: np.random.Generator) -> Sabotage | None:
    j = _positive_var(model, sol, 1.0, 100)
    if j is None:
        return None
    col, v = model.col_names[j], float(sol.x[j])
    margin = max(0.5, abs(v) * 0.1)
    reference = model.copy()
    lower = _fresh(reference, rng, "c")
    reference.add_row(lower, {col: 1.0}, lower=v - margin)
    upper = _fresh(reference, rng, "c")
    reference.add_row(upper, {col: 1.0}, upper=v + margin)
    broken = reference.copy().set_row_bounds(upper, -INF, v - 3 * margin)
    if not broken.is_infeasible(exact=False):
        return None
    return Sabotage(
        "I",
        reference,
        broken,
        [Edit("set_row_bounds", row=upper, lower=-INF, upper=v + margin)],
        upper,
        f"{upper} was tightened from {v + margin:.4g} to {v - 3 * margin:.4g}; restore it "
        f"(dropping {lower} or over-relaxing also restores feasibility but moves the objective)",
        {"lower_row": lower, "upper_row": upper, "column": col, "value": v},
    )


INJECTORS: dict[str, Callable[[Model, Solution, np.random.Generator], Sabotage | None]] = {
    "A": _inject_a,
    "B": _inject_b,
    "C": _inject_c,
    "D": _inject_d,
    "E": _inject_e,
    "F": _inject_f,
    "G": _inject_g,
    "H": _inject_h,
    "H2": _inject_h2,
    "I": _inject_i,
}


def inject(
    model: Model,
    error_type: str,
    rng: np.random.Generator,
    *,
    solution: Solution | None = None,
) -> Sabotage | None:
    """Inject ``error_type`` into a feasible ``model``; None when this model does not admit it.

    ``solution`` is the model's optimal solution when already known.
    """
    if error_type not in INJECTORS:
        raise ValueError(f"unknown error type {error_type!r}; expected one of {ALL_TYPES}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    sol = solution if solution is not None else model.solve()
    if not sol.optimal:
        raise ValueError(f"model {model.name!r} must be OPTIMAL before sabotage, is {sol.status}")
    if sol.row_dual is None and error_type == "C":
        relaxed = model.solve(relax_integrality=True)
        sol = Solution(sol.status, sol.objective, sol.x, sol.row_activity, relaxed.row_dual)
    return INJECTORS[error_type](model, sol, rng)


# -- instances -------------------------------------------------------------------------------
@dataclass
class Instance:
    """One ORDebug-style repair instance and its record fields."""

    problem_id: str
    family: str
    error_type: str
    model: Model
    fix: list[Edit]
    ground_truth_fix: str
    target_name: str
    iis: IIS
    original_objective: float | None
    original_constraints: list[str]
    problem_nl: str
    meta: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None

    @property
    def difficulty(self) -> str:
        return difficulty(self.iis.size)

    @property
    def reference(self) -> Model:
        """The intended model: the sabotaged model with the ground-truth fix applied."""
        return apply_edits(self.model, self.fix)

    def to_record(self, model_file: str | None = None) -> dict[str, Any]:
        """The JSONL record (the official fields plus the fix as edits)."""
        return {
            "problem_id": self.problem_id,
            "model_file": model_file,
            "family": self.family,
            "problem_nl": self.problem_nl,
            "error_type": self.error_type,
            "ground_truth_fix": self.ground_truth_fix,
            "fix": [e.to_dict() for e in self.fix],
            "target_name": self.target_name,
            "iis_constraints": list(self.iis.rows),
            "iis_bounds": [list(b) for b in self.iis.bounds],
            "iis_size": self.iis.size,
            "iis_method": self.iis.method,
            "difficulty": self.difficulty,
            "original_objective": self.original_objective,
            "original_constraints": list(self.original_constraints),
            "sense": self.model.sense,
            "n_variables": self.model.n_cols,
            "n_constraints": self.model.n_rows,
            "seed": self.seed,
            "meta": self.meta,
        }


@dataclass(frozen=True)
class Validation:
    """The three-way check of an instance, by re-solving.

    ``original_optimal`` and ``fix_restores`` are None for a record that carries no
    replayable fix (the authors' released records): they cannot be checked.
    """

    original_optimal: bool | None
    sabotaged_infeasible: bool
    fix_restores: bool | None
    iis_valid: bool

    @property
    def ok(self) -> bool:
        return (
            self.original_optimal is not False
            and self.sabotaged_infeasible
            and self.fix_restores is not False
            and self.iis_valid
        )


def validate(instance: Instance, *, rtol: float = 1e-6) -> Validation:
    """Re-solve: intended model OPTIMAL with the recorded objective, sabotaged INFEASIBLE,
    and the recorded IIS still infeasible and irreducible (checked by re-solving with
    each member relaxed in turn; the stored ``valid`` flag is not trusted)."""
    broken = instance.model.solve()
    iis_ok = iis_is_irreducible(instance.model, instance.iis)
    if not instance.fix:
        return Validation(None, broken.infeasible, None, iis_ok)
    ref = instance.reference.solve()
    z = instance.original_objective
    restores = bool(
        ref.optimal and z is not None and math.isclose(ref.objective, z, rel_tol=rtol, abs_tol=1e-7)
    )
    return Validation(ref.optimal, broken.infeasible, restores, iis_ok)


def problem_text(model: Model, error_type: str) -> str:
    """A template sentence describing the model (the record's ``problem_nl``)."""
    n_int = int(model.integrality.sum())
    kind = (
        f"a mixed-integer program with {n_int} integer variables" if n_int else "a linear program"
    )
    return (
        f"A production planner maximises profit over {model.n_cols} activities with "
        f"{model.n_rows} capacity and demand constraints, written as {kind}. "
        "The model reports INFEASIBLE; find and repair the faulty part while keeping the "
        "intended problem."
    )


def make_instance(
    rng: np.random.Generator,
    error_type: str,
    *,
    family: str | None = None,
    problem_id: str = "instance",
    max_tries: int = 20,
) -> Instance:
    """A validated instance of ``error_type``; draws new seed models until one works."""
    if error_type not in ALL_TYPES:
        raise ValueError(f"unknown error type {error_type!r}; expected one of {ALL_TYPES}")
    family = family or ("milp" if error_type == "B" else "lp")
    if family not in ("lp", "milp"):
        raise ValueError(f"family must be 'lp' or 'milp', got {family!r}")
    if error_type == "B" and family != "milp":
        raise ValueError("error type B changes a variable type and needs the MILP family")
    for _ in range(max_tries):
        seed_model = (make_seed_lp if family == "lp" else make_seed_milp)(rng, name=problem_id)
        orig = seed_model.solve()
        if not orig.optimal:
            continue
        sab = inject(seed_model, error_type, rng, solution=orig)
        if sab is None:
            continue
        fixed = apply_edits(sab.model, sab.fix)
        if fixed.row_names != sab.reference.row_names:  # the fix must rebuild the intended model
            continue
        fixed_sol = fixed.solve()
        if not fixed_sol.optimal:
            continue
        iis = compute_iis(sab.model)
        if not iis.valid:
            continue
        return Instance(
            problem_id=problem_id,
            family=family,
            error_type=error_type,
            model=sab.model,
            fix=sab.fix,
            ground_truth_fix=sab.description,
            target_name=sab.target,
            iis=iis,
            original_objective=float(fixed_sol.objective),
            original_constraints=list(sab.reference.row_names),
            problem_nl=problem_text(sab.model, error_type),
            meta=sab.meta,
        )
    raise RuntimeError(
        f"no valid {family} instance of type {error_type} after {max_tries} seed models"
    )


def generate(
    n: int,
    *,
    seed: int = 0,
    lp_types: Sequence[str] = LP_TYPES,
    milp_types: Sequence[str] = MILP_TYPES,
    milp_fraction: float = 0.3,
    stream: str = "orloop",
) -> Iterator[Instance]:
    """``n`` validated instances: a ``milp_fraction`` share of MILPs, types in turn.

    Instance ``k`` draws from its own stream ``numpy_rng(seed, stream, k)``, so any
    instance can be regenerated alone and generation can be split across processes.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    if not 0 <= milp_fraction <= 1:
        raise ValueError(f"milp_fraction must lie in [0, 1], got {milp_fraction}")
    for t in (*lp_types, *milp_types):
        if t not in ALL_TYPES:
            raise ValueError(f"unknown error type {t!r}")
    if "B" in lp_types:
        raise ValueError("error type B needs the MILP family; leave it out of lp_types")
    if (milp_fraction < 1 and not lp_types) or (milp_fraction > 0 and not milp_types):
        raise ValueError("a family with a positive share needs at least one error type")
    n_milp = round(n * milp_fraction)
    k_lp = k_milp = 0
    for k in range(n):
        # spread the MILPs evenly through the sequence
        is_milp = n_milp > 0 and (k * n_milp) // n != ((k + 1) * n_milp) // n
        if is_milp:
            family, etype = "milp", milp_types[k_milp % len(milp_types)]
            k_milp += 1
        else:
            family, etype = "lp", lp_types[k_lp % len(lp_types)]
            k_lp += 1
        inst = make_instance(
            numpy_rng(seed, stream, k),
            etype,
            family=family,
            problem_id=f"{family}_{etype}_{k:05d}",
        )
        inst.seed = seed
        yield inst
