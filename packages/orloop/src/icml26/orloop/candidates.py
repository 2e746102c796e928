"""Candidate repairs of an infeasible state, and the features a learned policy scores them by.

At a state with IIS rows ``R`` and IIS bounds ``B`` the candidates are: drop each row
of ``R``; move each row of ``R`` by its minimal elastic shift
(:func:`~icml26.orloop.elastic.minimal_row_shift`); move each bound of ``B`` by its
minimal shift. Each candidate is an :class:`~icml26.orloop.env.Action` plus a feature
vector built from the model structure (reconstructed from the brief: slack/shift
size, row type, how the row looks next to the others) and, optionally, one probe
solve of the repaired model (does it become OPTIMAL, and how much does it loosen
the objective compared with the most conservative repair that works). Probe
solves are the agent's own tool calls, not environment steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from icml26.orloop.elastic import Shift, minimal_bound_shift, minimal_row_shift
from icml26.orloop.env import Action, ActionType, apply_repair
from icml26.orloop.model import Model

FEATURES = (
    "bias",
    "is_drop",
    "is_relax",
    "is_bound",
    "log_rel_shift",
    "density",
    "zero_cost_share",
    "is_ge_or_lower",
    "is_equality",
    "has_twin",
    "restores",
    "objective_loosening",
    "integer_share",
    "single_column",
)


@dataclass(frozen=True)
class Candidate:
    action: Action
    kind: str  # "drop", "relax" or "bound"
    name: str
    shift: Shift | None
    features: np.ndarray


def _row_features(model: Model, row: str, supports: dict[str, frozenset[str]]) -> list[float]:
    terms = model.row_terms(row)
    cols = [model.col(c) for c in terms]
    n = max(1, model.n_cols)
    zero_cost = float(np.mean([model.cost[j] == 0 for j in cols])) if cols else 0.0
    integer = float(np.mean([model.integrality[j] for j in cols])) if cols else 0.0
    sense = model.row_sense(row)
    twin = any(s == supports[row] for r, s in supports.items() if r != row)
    return [
        len(cols) / n,
        zero_cost,
        float(sense == ">="),
        float(sense == "="),
        float(twin),
        integer,
        float(len(cols) == 1),
    ]


def candidate_repairs(
    model: Model,
    iis_rows: list[str] | tuple[str, ...],
    iis_bounds: list[tuple[str, str]] | list[list[str]] | tuple[tuple[str, str], ...],
    *,
    probe: bool = True,
    include_drops: bool = True,
) -> list[Candidate]:
    """The candidate repairs of an infeasible ``model`` whose IIS is given."""
    supports = {r: frozenset(model.row_terms(r)) for r in model.row_names}
    out: list[tuple[Action, str, str, Shift | None, list[float]]] = []
    for row in iis_rows:
        if not model.has_row(row):
            continue
        base = _row_features(model, row, supports)
        if include_drops:
            out.append(
                (
                    Action(ActionType.DROP_CONSTRAINT, target=row),
                    "drop",
                    row,
                    None,
                    [1, 0, 0, 0, *base],
                )
            )
        shift = minimal_row_shift(model, row)
        if shift is not None and shift.delta > 0:
            i = model.row(row)
            up_moved = shift.upper > model.row_upper[i]
            value = (
                shift.upper - model.row_upper[i] if up_moved else shift.lower - model.row_lower[i]
            )
            act = Action(ActionType.RELAX_CONSTRAINT, target=row, value=float(value))
            out.append((act, "relax", row, shift, [0, 1, 0, math.log1p(shift.relative), *base]))
    for col, side in (tuple(b) for b in iis_bounds):
        if not model.has_col(col):
            continue
        shift = minimal_bound_shift(model, col, side)
        if shift is None or shift.delta <= 0:
            continue
        j = model.col(col)
        act = Action(ActionType.UPDATE_BOUNDS, target=col, value=shift.lower, value2=shift.upper)
        feats = [
            0,
            0,
            1,
            math.log1p(shift.relative),
            1 / max(1, model.n_cols),
            float(model.cost[j] == 0),
            float(side != "upper"),
            0.0,
            0.0,
            float(model.integrality[j]),
            1.0,
        ]
        out.append((act, "bound", col, shift, feats))
    probes = _probe([a for a, *_ in out], model) if probe else [(0.0, 0.0)] * len(out)
    cands = []
    for (act, kind, name, shift, f), (restores, loosen) in zip(out, probes, strict=True):
        # layout: bias, is_drop, is_relax, is_bound, log_rel_shift, density, zero_cost,
        # is_ge, is_eq, twin, restores, loosening, integer_share, single_column
        kind_part, rest = f[:4], f[4:]
        density, zero_cost, is_ge, is_eq, twin, integer, single = rest
        vec = np.array(
            [
                1.0,
                *kind_part,
                density,
                zero_cost,
                is_ge,
                is_eq,
                twin,
                restores,
                loosen,
                integer,
                single,
            ]
        )
        cands.append(Candidate(act, kind, name, shift, vec))
    return cands


def apply_candidate(model: Model, action: Action) -> Model:
    """A copy of ``model`` with a candidate's action applied (the environment's semantics)."""
    return apply_repair(model.copy(), action)


def _probe(actions: list[Action], model: Model) -> list[tuple[float, float]]:
    """Per action: (repaired model OPTIMAL?, objective loosening vs the tightest repair)."""
    objs: list[float | None] = []
    for act in actions:
        sol = apply_candidate(model, act).solve()
        objs.append(float(sol.objective) if sol.optimal else None)
    ok = [z for z in objs if z is not None]
    if not ok:
        return [(0.0, 0.0)] * len(actions)
    sign = 1.0 if model.sense == "max" else -1.0
    tight = min(sign * z for z in ok)
    return [
        (0.0, 0.0) if z is None else (1.0, (sign * z - tight) / max(1.0, abs(tight))) for z in objs
    ]
