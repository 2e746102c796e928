"""Scripted repair agents: the official baselines and the reconstructed ones.

Official (``baseline_agents.py``):

- :class:`RandomAgent` — uniform over GET_IIS, CHECK_SLACK on the first 10 rows,
  DROP on the IIS rows (the first 5 rows when no IIS is known) and SUBMIT;
- :class:`HeuristicAgent` — GET_IIS, then drop the first IIS row;
- :class:`GreedyDropAgent` — drop IIS rows one by one, recomputing the IIS;
- :class:`DoNothingAgent` — SUBMIT at once.

Reconstructed (the brief's additional baselines):

- :class:`RegenerateAgent` — rebuild the model without the IIS rows in one step, the
  analogue of whole-model code regeneration (v3's semantic-drift finding);
- :class:`MinimalRepairAgent` — IIS-guided minimal repair: for every IIS row and
  bound the smallest shift that restores feasibility (an elastic program), and the
  candidate that changes the model least (relative to the bound it moves).
"""

from __future__ import annotations

import numpy as np

from icml26.orloop.candidates import candidate_repairs
from icml26.orloop.env import Action, ActionType, DebugState


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
    """The smallest relative RHS or bound shift among the IIS members (reconstructed)."""

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
        cands = candidate_repairs(
            state.model,
            state.iis_constraints,
            [tuple(b) for b in state.iis_bounds],
            probe=False,
            include_drops=False,
        )
        if not cands:
            target = state.iis_constraints[0] if state.iis_constraints else None
            if target is None:
                return Action(ActionType.SUBMIT)
            return Action(ActionType.DROP_CONSTRAINT, target=target)
        best = min(cands, key=lambda c: (c.shift.relative, c.name))  # type: ignore[union-attr]
        return best.action
