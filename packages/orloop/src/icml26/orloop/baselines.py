"""Scripted repair agents: the official baselines and the reconstructed ones.

Official (``baseline_agents.py``):

- :class:`RandomAgent` — uniform over GET_IIS, CHECK_SLACK on the first 10 rows,
  DROP on the IIS rows (the first 5 rows when no IIS is known) and SUBMIT;
- :class:`HeuristicAgent` — GET_IIS, then drop the first IIS row;
- :class:`GreedyDropAgent` — drop IIS rows one by one, recomputing the IIS;
- :class:`DoNothingAgent` — SUBMIT at once.

Reconstructed (the brief's additional baselines):

- :class:`CopyIISAgent` — blame the IIS shown, repair as GreedyDrop (the DA ceiling
  when the IIS is revealed, zero when it is not);
- :class:`PhaseOneBlameAgent` — blame the rows priced by the phase-1 dual before any
  IIS is seen (the scripted reference for DA without the IIS);
- :class:`RegenerateAgent` — rebuild the model without the IIS rows in one step, the
  analogue of whole-model code regeneration (v3's semantic-drift finding);
- :class:`MinimalRepairAgent` — IIS-guided minimal repair: for every IIS row and
  bound the smallest shift that restores feasibility (an elastic program), a sense
  flipped back or a bound put back to its default, and the candidate with the best
  optimality preservation (OP).
"""

from __future__ import annotations

import math

import numpy as np

from icml26.orloop.candidates import candidate_repairs
from icml26.orloop.elastic import phase_one
from icml26.orloop.env import Action, ActionType, DebugState, apply_repair
from icml26.orloop.metrics import optimality_preservation
from icml26.orloop.model import INF, Model


class DoNothingAgent:
    name = "DoNothing"

    def reset(self) -> None:
        pass

    def act(self, state: DebugState) -> Action:
        return Action(ActionType.SUBMIT)


class RandomAgent:
    """Uniform over a small valid action set (official ``RandomAgent``)."""

    name = "Random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)

    def reset(self) -> None:
        pass  # the stream continues across episodes, as in the official agent

    def act(self, state: DebugState) -> Action:
        actions = [Action(ActionType.GET_IIS)]
        actions += [Action(ActionType.CHECK_SLACK, target=c) for c in state.constraint_names[:10]]
        targets = state.iis_constraints or state.constraint_names[:5]
        actions += [Action(ActionType.DROP_CONSTRAINT, target=c) for c in targets]
        actions.append(Action(ActionType.SUBMIT))
        return actions[int(self.rng.integers(len(actions)))]


class HeuristicAgent:
    """GET_IIS, then drop the first IIS row (official ``HeuristicAgent``)."""

    name = "Heuristic"

    def __init__(self) -> None:
        self.asked = False

    def reset(self) -> None:
        self.asked = False

    def act(self, state: DebugState) -> Action:
        if state.is_optimal():
            return Action(ActionType.SUBMIT)
        if state.is_infeasible() and not self.asked:
            self.asked = True
            return Action(ActionType.GET_IIS)
        if state.iis_constraints:
            return Action(ActionType.DROP_CONSTRAINT, target=state.iis_constraints[0])
        if state.iis_bounds:
            for col, _ in state.iis_bounds:
                for row in state.constraint_names:
                    if col.lower() in row.lower():
                        return Action(ActionType.DROP_CONSTRAINT, target=row)
            if state.constraint_names:
                return Action(ActionType.DROP_CONSTRAINT, target=state.constraint_names[0])
        if state.is_infeasible():
            return Action(ActionType.GET_IIS)
        return Action(ActionType.SUBMIT)


class GreedyDropAgent:
    """Drop IIS rows one by one until feasible (official ``GreedyDropAgent``)."""

    name = "GreedyDrop"

    def __init__(self) -> None:
        self.dropped: list[str] = []

    def reset(self) -> None:
        self.dropped = []

    def act(self, state: DebugState) -> Action:
        if state.is_optimal():
            return Action(ActionType.SUBMIT)
        if state.is_infeasible() and not state.iis_constraints:
            return Action(ActionType.GET_IIS)
        for row in state.iis_constraints:
            if row not in self.dropped:
                self.dropped.append(row)
                return Action(ActionType.DROP_CONSTRAINT, target=row)
        if state.is_infeasible():
            return Action(ActionType.GET_IIS)
        return Action(ActionType.SUBMIT)


class CopyIISAgent(GreedyDropAgent):
    """Blame exactly the IIS the solver shows, then repair as GreedyDrop does.

    The ceiling of DA when the IIS is in the observation (it scores 1 by copying),
    and zero DA before any IIS is shown: the reference that makes a diagnosis claim
    one that learning has to earn.
    """

    name = "CopyIIS"

    def act(self, state: DebugState) -> Action:
        base = super().act(state)
        shown = (*state.iis_constraints, *(c for c, _ in state.iis_bounds))
        if not shown:
            return base
        return Action(
            base.type,
            target=base.target,
            value=base.value,
            value2=base.value2,
            drop=base.drop,
            reasoning="the solver's IIS",
            diagnosis=shown,
        )


class PhaseOneBlameAgent(GreedyDropAgent):
    """Blame the rows with a nonzero phase-1 dual price before asking for the IIS.

    The strongest scripted diagnosis under the learned policy's information (the
    model and one elastic solve, no IIS): the Farkas support of the phase-1 LP is an
    infeasible subsystem. Afterwards it repairs as GreedyDrop does (reconstructed).
    """

    name = "Phase-1 blame"

    def __init__(self) -> None:
        super().__init__()
        self.declared = False

    def reset(self) -> None:
        super().reset()
        self.declared = False

    def act(self, state: DebugState) -> Action:
        base = super().act(state)
        if self.declared or state.model is None or state.is_optimal():
            return base
        self.declared = True
        _, dual = phase_one(state.model)
        blamed = tuple(r for r, d in zip(state.model.row_names, dual, strict=True) if d > 1e-9)
        return Action(
            base.type,
            target=base.target,
            value=base.value,
            value2=base.value2,
            drop=base.drop,
            reasoning="rows priced by the phase-1 dual",
            diagnosis=blamed,
        )


class RegenerateAgent:
    """Rebuild the model without every IIS row, in one step (reconstructed)."""

    name = "Regenerate"

    def reset(self) -> None:
        pass

    def act(self, state: DebugState) -> Action:
        if state.is_optimal():
            return Action(ActionType.SUBMIT)
        if state.iis_constraints:
            return Action(
                ActionType.REGENERATE,
                drop=tuple(state.iis_constraints),
                reasoning="rewrite the model without the conflicting constraints",
            )
        if state.is_infeasible():
            return Action(ActionType.GET_IIS)
        return Action(ActionType.SUBMIT)


class MinimalRepairAgent:
    """IIS-guided minimal repair, picked by optimality preservation (reconstructed).

    For every IIS row: the smallest right-hand-side shift that restores feasibility
    (an elastic program) and, for a one-sided row, the sense flipped back; for every
    IIS bound: the smallest bound shift and the bound put back to the MPS default
    (lower 0, upper +inf). Each candidate is probed with one solve; among those that
    make the model OPTIMAL the agent takes the best OP against the intended objective
    the state carries (``DebugState.intended_objective``, from the instance record),
    and the smallest relative shift when no intended objective is known. The
    intended objective makes this an oracle on OP: the learned policy does not see it.
    """

    name = "MinimalRepair"

    def reset(self) -> None:
        pass

    def act(self, state: DebugState) -> Action:
        if state.is_optimal():
            return Action(ActionType.SUBMIT)
        if not (state.iis_constraints or state.iis_bounds) or state.model is None:
            return (
                Action(ActionType.GET_IIS) if state.is_infeasible() else Action(ActionType.SUBMIT)
            )
        model = state.model
        options: list[tuple[float, str, Action]] = []
        for c in candidate_repairs(
            model,
            state.iis_constraints,
            [tuple(b) for b in state.iis_bounds],
            probe=False,
            include_drops=False,
        ):
            options.append((c.shift.relative, c.name, c.action))  # type: ignore[union-attr]
        for row in state.iis_constraints:
            flip = _flip_back(model, row)
            if flip is not None:
                options.append((math.inf, row, flip))
        for col, side in (tuple(b) for b in state.iis_bounds):
            if model.has_col(col):
                options += [(math.inf, col, a) for a in _default_bounds(model, col, side)]
        best: tuple[float, float, str] | None = None
        pick: Action | None = None
        for rel, name, act in options:
            try:
                sol = apply_repair(model.copy(), act).solve()
            except (KeyError, ValueError):
                continue
            if not sol.optimal:
                continue
            z = state.intended_objective
            op = optimality_preservation(sol.objective, z) if z is not None else 0.0
            key = (-op, rel, name)
            if best is None or key < best:
                best, pick = key, act
        if pick is not None:
            return pick
        if options:  # nothing restores feasibility in one step: take the smallest shift
            return min(options, key=lambda o: (o[0], o[1]))[2]
        if state.iis_constraints:
            return Action(ActionType.DROP_CONSTRAINT, target=state.iis_constraints[0])
        return Action(ActionType.SUBMIT)


def _flip_back(model: Model, row: str) -> Action | None:
    """``UPDATE_RHS`` cannot flip a sense, so the flip is a bounds edit: ``a·x <= b`` ↔ ``>= b``."""
    if not model.has_row(row):
        return None
    sense = model.row_sense(row)
    if sense not in ("<=", ">="):
        return None
    return Action(ActionType.FLIP_SENSE, target=row, reasoning=f"flip {row} back from {sense}")


def _default_bounds(model: Model, col: str, side: str) -> list[Action]:
    j = model.col(col)
    lb, ub = float(model.col_lower[j]), float(model.col_upper[j])
    out = []
    if side in ("lower", "boxed") and lb != 0.0:
        out.append(Action(ActionType.UPDATE_BOUNDS, target=col, value=min(0.0, ub), value2=ub))
    if side in ("upper", "boxed") and math.isfinite(ub):
        out.append(Action(ActionType.UPDATE_BOUNDS, target=col, value=lb, value2=INF))
    return out
