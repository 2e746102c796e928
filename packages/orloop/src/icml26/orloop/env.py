"""The solver-in-the-loop repair MDP (paper §3; official ``solver_gym.py``, ``action.py``).

State ``s_t`` = (problem text, solver status, IIS rows and bounds, row and column
names, history of (action, result), step count, objective). Actions:

- diagnosis: ``GET_IIS``, ``CHECK_SLACK(c)``;
- repair: ``RELAX_CONSTRAINT(c, eps)`` (loosen the row's bound by ``|eps|``: ``<=``
  rows ``rhs += |eps|``, ``>=`` rows ``rhs -= |eps|``, equalities ``rhs += eps``),
  ``DROP_CONSTRAINT(c)``, ``UPDATE_RHS(c, v)``, ``UPDATE_BOUNDS(x, lb, ub)``,
  ``FLIP_SENSE(c)`` (``a·x <= b`` ↔ ``a·x >= b``: the repair type A's ground-truth
  fix names, which the official action set cannot express; added here), and
  ``REGENERATE`` (rebuild the model leaving out the rows in ``drop``; the analogue
  of the v3 whole-model code regeneration, reconstructed);
- meta: ``RESET``, ``SUBMIT``.

After every repair the solver re-runs and the IIS is recomputed. The episode ends
(``terminated``) on OPTIMAL or SUBMIT, and is ``truncated`` at ``max_steps``. The
interface is gymnasium's: ``reset() -> (state, info)``,
``step(action) -> (state, reward, terminated, truncated, info)``.

An action is an :class:`Action`, a dict, or the JSON text an LLM emits
(``{"reasoning", "action", "target", "value", "value2"}``, plus optional
``"diagnosis"`` — the rows the agent blames — and ``"drop"`` for REGENERATE). A
malformed action, or one on an unknown name, is answered with an error in the
observation and the syntax-error reward; it never raises.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from icml26.orloop.iis import IIS, compute_iis
from icml26.orloop.metrics import EpisodeResult
from icml26.orloop.model import INF, Model, Solution
from icml26.orloop.rewards import RewardConfig, step_reward
from icml26.orloop.saboteur import Instance, difficulty

HIGHS_INF = 1e20  # HiGHS reads any bound of this size as infinite


class ActionType(StrEnum):
    GET_IIS = "GET_IIS"
    CHECK_SLACK = "CHECK_SLACK"
    RELAX_CONSTRAINT = "RELAX_CONSTRAINT"
    DROP_CONSTRAINT = "DROP_CONSTRAINT"
    UPDATE_RHS = "UPDATE_RHS"
    UPDATE_BOUNDS = "UPDATE_BOUNDS"
    FLIP_SENSE = "FLIP_SENSE"
    REGENERATE = "REGENERATE"
    RESET = "RESET"
    SUBMIT = "SUBMIT"

    @property
    def is_repair(self) -> bool:
        return self in REPAIRS


REPAIRS = frozenset(
    {
        ActionType.RELAX_CONSTRAINT,
        ActionType.DROP_CONSTRAINT,
        ActionType.UPDATE_RHS,
        ActionType.UPDATE_BOUNDS,
        ActionType.FLIP_SENSE,
        ActionType.REGENERATE,
    }
)
NEEDS_TARGET = frozenset(
    {
        ActionType.CHECK_SLACK,
        ActionType.RELAX_CONSTRAINT,
        ActionType.DROP_CONSTRAINT,
        ActionType.UPDATE_RHS,
        ActionType.UPDATE_BOUNDS,
        ActionType.FLIP_SENSE,
    }
)
NEEDS_VALUE = frozenset(
    {ActionType.RELAX_CONSTRAINT, ActionType.UPDATE_RHS, ActionType.UPDATE_BOUNDS}
)


class ActionFormatError(ValueError):
    """An action that does not parse or lacks a required field."""


@dataclass(frozen=True)
class Action:
    """One action of the repair MDP."""

    type: ActionType
    target: str | None = None
    value: float | None = None
    value2: float | None = None
    reasoning: str = ""
    diagnosis: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.type, ActionType):
            raise ActionFormatError(f"action type must be an ActionType, got {self.type!r}")
        if self.type in NEEDS_TARGET and not self.target:
            raise ActionFormatError(f"{self.type.value} needs a target")
        if self.type in NEEDS_VALUE and self.value is None:
            raise ActionFormatError(f"{self.type.value} needs a value")
        if self.type is ActionType.UPDATE_BOUNDS and self.value2 is None:
            raise ActionFormatError("UPDATE_BOUNDS needs value (lower) and value2 (upper)")
        if self.type is ActionType.REGENERATE and not self.drop:
            raise ActionFormatError("REGENERATE needs the rows to leave out in 'drop'")
        for v in (self.value, self.value2):
            if v is not None and math.isnan(v):
                raise ActionFormatError("action values must not be NaN")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"action": self.type.value}
        if self.reasoning:
            out["reasoning"] = self.reasoning
        if self.target is not None:
            out["target"] = self.target
        for key in ("value", "value2"):
            v = getattr(self, key)
            if v is not None:
                out[key] = v if math.isfinite(v) else ("inf" if v > 0 else "-inf")
        if self.diagnosis:
            out["diagnosis"] = list(self.diagnosis)
        if self.drop:
            out["drop"] = list(self.drop)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def parse(cls, obj: Action | Mapping[str, Any] | str) -> Action:
        """An :class:`Action` from a dict or from text holding one JSON object.

        Raises :class:`ActionFormatError` (a ``ValueError``) saying what is wrong.
        """
        if isinstance(obj, Action):
            return obj
        if isinstance(obj, str):
            obj = _json_object(obj)
        if not isinstance(obj, Mapping):
            raise ActionFormatError(f"an action is a JSON object, got {type(obj).__name__}")
        name = obj.get("action", obj.get("action_type"))
        if not isinstance(name, str):
            raise ActionFormatError("the action object needs an 'action' name")
        try:
            kind = ActionType(name.strip().upper())
        except ValueError:
            known = ", ".join(a.value for a in ActionType)
            raise ActionFormatError(f"unknown action {name!r}; known: {known}") from None
        target = obj.get("target")
        if target is not None and not isinstance(target, str):
            raise ActionFormatError(f"'target' must be a name, got {target!r}")
        kind_needs_values = kind in NEEDS_VALUE
        return cls(
            type=kind,
            target=target.strip() if isinstance(target, str) and target.strip() else None,
            value=_number(obj.get("value"), "value") if kind_needs_values else None,
            value2=_number(obj.get("value2"), "value2")
            if kind is ActionType.UPDATE_BOUNDS
            else None,
            reasoning=str(obj.get("reasoning", "")),
            diagnosis=_names(obj.get("diagnosis"), "diagnosis"),
            drop=_names(obj.get("drop"), "drop"),
        )


def _json_object(text: str) -> Any:
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    candidate = fenced.group(1) if fenced else None
    if candidate is None:
        start, end = text.find("{"), text.rfind("}")
        if start < 0 or end <= start:
            raise ActionFormatError("no JSON object found in the reply")
        candidate = text[start : end + 1]
    try:
        return json.loads(candidate)
    except json.JSONDecodeError as err:
        raise ActionFormatError(f"the action is not valid JSON: {err.msg} at {err.pos}") from None


def _number(v: Any, key: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, bool):
        raise ActionFormatError(f"'{key}' must be a number, got {v!r}")
    if isinstance(v, str) and v.strip().lower() in ("inf", "+inf", "infinity", "-inf", "-infinity"):
        return -INF if v.strip().startswith("-") else INF
    try:
        out = float(v)
    except (TypeError, ValueError):
        raise ActionFormatError(f"'{key}' must be a number, got {v!r}") from None
    if math.isnan(out):
        raise ActionFormatError(f"'{key}' must not be NaN")
    return out


def _names(v: Any, key: str) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, str):
        v = [s for s in re.split(r"[,\s]+", v) if s]
    if not isinstance(v, list | tuple) or not all(isinstance(s, str) for s in v):
        raise ActionFormatError(f"'{key}' must be a list of names, got {v!r}")
    return tuple(dict.fromkeys(s.strip() for s in v if s.strip()))


def apply_repair(model: Model, act: Action) -> Model:
    """Apply a repair action to ``model`` in place, with the environment's semantics.

    Raises ``KeyError`` for an unknown name and ``ValueError`` for a value the
    model cannot take.
    """
    if not act.type.is_repair:
        raise ValueError(f"{act.type.value} is not a repair action")
    m, t = model, act.type
    if t is ActionType.DROP_CONSTRAINT:
        m.drop_rows([act.target])  # type: ignore[list-item]
    elif t is ActionType.REGENERATE:
        missing = [r for r in act.drop if not m.has_row(r)]
        if missing:
            raise KeyError(f"no rows named {missing}")
        m.drop_rows(act.drop)
    elif t is ActionType.UPDATE_BOUNDS:
        for v in (act.value, act.value2):
            if v is not None and math.isfinite(v) and abs(v) >= HIGHS_INF:
                raise ValueError(f"bound {v:g} is at or beyond HiGHS's infinity (1e20)")
        m.set_col_bounds(act.target, act.value, act.value2)  # type: ignore[arg-type]
    elif t is ActionType.FLIP_SENSE:
        i = m.row(act.target)  # type: ignore[arg-type]
        lo, hi = m.row_lower[i], m.row_upper[i]
        if math.isinf(lo) == math.isinf(hi):
            raise ValueError(f"{act.target} is not a one-sided (<= or >=) row; no sense to flip")
        m.set_row_bounds(act.target, *((hi, INF) if math.isinf(lo) else (-INF, lo)))  # type: ignore[arg-type]
    else:
        i = m.row(act.target)  # type: ignore[arg-type]
        lo, hi = m.row_lower[i], m.row_upper[i]
        v = float(act.value)  # type: ignore[arg-type]
        if not math.isfinite(v) or abs(v) >= HIGHS_INF:
            raise ValueError(f"{t.value} needs a finite value below 1e20, got {v:g}")
        sense = m.row_sense(act.target)  # type: ignore[arg-type]
        if t is ActionType.RELAX_CONSTRAINT:
            eps = abs(v)
            lo, hi = {
                "<=": (lo, hi + eps),
                ">=": (lo - eps, hi),
                "=": (lo + v, hi + v),
                "range": (lo - eps, hi + eps),
                "free": (lo, hi),
            }[sense]
        else:  # UPDATE_RHS
            lo, hi = {
                "<=": (lo, v),
                ">=": (v, hi),
                "=": (v, v),
                "range": (lo, v),
                "free": (lo, hi),
            }[sense]
            if lo > hi:
                raise ValueError(f"UPDATE_RHS would make {act.target} empty ([{lo}, {hi}])")
        m.set_row_bounds(act.target, lo, hi)  # type: ignore[arg-type]
    return model


@dataclass
class DebugState:
    """The observation: what the agent sees after each step."""

    problem_nl: str
    solver_status: str
    iis_constraints: list[str]
    iis_bounds: list[list[str]]
    iis_method: str
    constraint_names: list[str]
    variable_names: list[str]
    step_count: int
    objective: float | None
    history: list[dict[str, Any]] = field(default_factory=list)
    last_result: dict[str, Any] = field(default_factory=dict)
    model: Model | None = field(default=None, repr=False, compare=False)
    # the intended model's optimum from the instance record (``original_objective``);
    # not in the prompt: only agents that are told to use it (MinimalRepair's oracle) do
    intended_objective: float | None = None

    @property
    def iis_size(self) -> int:
        return len(self.iis_constraints) + len(self.iis_bounds)

    def is_optimal(self) -> bool:
        return self.solver_status == "OPTIMAL"

    def is_infeasible(self) -> bool:
        return self.solver_status == "INFEASIBLE"

    def to_dict(self) -> dict[str, Any]:
        return {
            "problem_nl": self.problem_nl,
            "solver_status": self.solver_status,
            "iis_constraints": list(self.iis_constraints),
            "iis_bounds": [list(b) for b in self.iis_bounds],
            "iis_method": self.iis_method,
            "constraint_names": list(self.constraint_names),
            "variable_names": list(self.variable_names),
            "step_count": self.step_count,
            "objective": self.objective,
            "history": list(self.history),
            "last_result": dict(self.last_result),
        }

    def to_prompt(self, *, max_names: int = 40) -> str:
        """The state as text for an LLM (official ``format_state``), with the model."""
        lines = [
            "## Problem",
            self.problem_nl,
            "",
            "## Current State",
            f"- Solver Status: {self.solver_status}",
            f"- Step: {self.step_count}",
        ]
        if self.iis_constraints or self.iis_bounds:
            lines += ["", f"## IIS ({self.iis_method})"]
            lines.append(f"- Conflicting Constraints: {self.iis_constraints}")
            if self.iis_bounds:
                lines.append(f"- Conflicting Bounds: {self.iis_bounds}")
        elif self.is_infeasible():
            lines += ["", "## IIS", "- Not yet computed. Use GET_IIS to identify conflicts."]
        if self.model is not None:
            lines += ["", "## Model", self.model.describe(max_rows=max_names)]
        else:
            lines += ["", f"- Constraint Names: {self.constraint_names[:max_names]}"]
        if self.history:
            lines += ["", "## Recent Actions"]
            for h in self.history[-5:]:
                lines.append(f"  Step {h['step']}: {h['action']} -> {h['result']}")
        if self.objective is not None:
            lines += ["", f"## Objective Value: {self.objective}"]
        lines += ["", "What action should be taken next? Answer with one JSON object."]
        return "\n".join(lines)


def diagnosis_target(iis: IIS) -> list[str]:
    """What DA scores against: the IIS rows, or its columns when it has no rows.

    The official DA compares blamed constraints with the IIS constraints; a
    bound-only IIS (the official type H) names the variable instead.
    """
    return list(iis.rows) if iis.rows else list(iis.columns)


class RepairEnv:
    """Gymnasium-style environment over one infeasible model.

    ``source`` is an :class:`~icml26.orloop.saboteur.Instance` (which also gives the
    intended objective and rows for OP/FP, and its stored IIS as the first
    observation) or a bare :class:`~icml26.orloop.model.Model`.
    """

    def __init__(
        self,
        source: Instance | Model,
        *,
        max_steps: int = 10,
        reward: RewardConfig | None = None,
        time_limit: float | None = 30.0,
        iis_method: str = "auto",
        reveal_iis: bool = True,
    ) -> None:
        if isinstance(source, Instance):
            self.instance: Instance | None = source
            self.base = source.model
        elif isinstance(source, Model):
            self.instance = None
            self.base = source
        else:
            raise TypeError(f"source must be an Instance or a Model, got {type(source).__name__}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.max_steps = int(max_steps)
        self.reward_config = reward or RewardConfig()
        self.time_limit = time_limit
        self.iis_method = iis_method
        self.reveal_iis = reveal_iis
        self.model: Model = self.base.copy()
        self.state: DebugState | None = None
        self.done = True
        self._reset_state: tuple[Solution, IIS | None] | None = None

    # -- gymnasium interface ---------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[DebugState, dict[str, Any]]:
        del seed, options  # the environment is deterministic
        self.model = self.base.copy()
        if self._reset_state is None:
            sol = self._solve(self.model)
            iis = None
            if sol.infeasible:
                if self.instance is not None:
                    iis = self.instance.iis
                else:
                    iis = compute_iis(self.model, method=self.iis_method)
            self._reset_state = (sol, iis)
        sol, iis = self._reset_state
        self.solution, self.iis = sol, iis
        self.steps = 0
        self.success_at_step: int | None = 0 if sol.optimal else None
        self.diagnosed: list[str] = []
        self.diagnosed_blind: list[str] = []
        self.history: list[dict[str, Any]] = []
        self.actions: list[dict[str, Any]] = []
        self.total_reward = 0.0
        self._iis_requested = False
        self.done = sol.optimal
        shown = iis if self.reveal_iis else None
        self.state = self._observe(shown, {})
        return self.state, {"solver_status": sol.status, "iis_size": iis.size if iis else 0}

    def step(
        self, action: Action | Mapping[str, Any] | str
    ) -> tuple[DebugState, float, bool, bool, dict[str, Any]]:
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        if self.done:
            raise RuntimeError("the episode has ended; call reset()")
        self.steps += 1
        old_iis = self.iis.size if self.iis is not None else 0
        old_rows = self.model.n_rows
        try:
            act = Action.parse(action)
        except ActionFormatError as err:
            act, result = None, {"success": False, "error": str(err)}
        else:
            result = self._execute(act)
        valid = act is not None and "error" not in result
        if act is not None:
            self._record_diagnosis(act, valid)
            self.actions.append(act.to_dict())
        else:
            self.actions.append({"action": "INVALID", "raw": str(action)[:200]})
        if act is not None and act.type is ActionType.GET_IIS and valid:
            self._iis_requested = True
        shown = self.iis if (self.reveal_iis or self._iis_requested) else None
        if self.solution.optimal and self.success_at_step is None:
            self.success_at_step = self.steps
        terminated = self.solution.optimal or (
            act is not None and act.type is ActionType.SUBMIT and valid
        )
        truncated = not terminated and self.steps >= self.max_steps
        self.done = terminated or truncated
        new_iis = self.iis.size if (self.iis is not None and not self.solution.optimal) else 0
        parts = step_reward(
            self.reward_config,
            valid=valid,
            is_repair=act is not None and act.type.is_repair,
            is_drop=act is not None
            and act.type in (ActionType.DROP_CONSTRAINT, ActionType.REGENERATE),
            old_iis_size=old_iis,
            new_iis_size=new_iis,
            old_n_rows=old_rows,
            new_n_rows=self.model.n_rows,
            terminal=self.done,
            optimal=self.solution.optimal,
        )
        self.total_reward += parts["total"]
        self.history.append(
            {
                "step": self.steps,
                "action": act.to_dict() if act else {"action": "INVALID"},
                "result": result,
            }
        )
        self.state = self._observe(shown, result)
        info = {
            "action_result": result,
            "solver_status": self.solution.status,
            "iis_size": new_iis,
            "reward_breakdown": parts,
        }
        return self.state, parts["total"], terminated, truncated, info

    # -- actions -----------------------------------------------------------------------------
    def _execute(self, act: Action) -> dict[str, Any]:
        t = act.type
        try:
            if t is ActionType.GET_IIS:
                if not self.solution.infeasible:
                    return {"success": False, "error": f"the model is {self.solution.status}"}
                if self.iis is None:
                    self.iis = compute_iis(self.model, method=self.iis_method)
                return {"success": True, **self.iis.to_dict()}
            if t is ActionType.CHECK_SLACK:
                return self._check_slack(act.target)  # type: ignore[arg-type]
            if t is ActionType.SUBMIT:
                return {
                    "success": self.solution.optimal,
                    "status": self.solution.status,
                    "objective": self.solution.objective,
                }
            if t is ActionType.RESET:
                self.model = self.base.copy()
                sol, iis = self._reset_state  # type: ignore[misc]
                self.solution, self.iis = sol, iis
                return {"success": True}
        except (KeyError, ValueError) as err:
            return {"success": False, "error": str(err).strip("\"'")}
        # a repair: apply it and re-solve; anything the model or the solver rejects
        # (a value HiGHS refuses, a NaN, a name that does not exist) rolls the step back
        saved = (self.model, self.solution, self.iis)
        try:
            self.model = self.model.copy()
            self._repair(act)
            self._resolve()
        except (KeyError, ValueError, TypeError, OverflowError, RuntimeError) as err:
            self.model, self.solution, self.iis = saved
            return {"success": False, "error": str(err).strip("\"'")}
        return {"success": True, "status": self.solution.status}

    def _repair(self, act: Action) -> None:
        apply_repair(self.model, act)

    def _check_slack(self, name: str) -> dict[str, Any]:
        m = self.model
        if m.has_col(name) and not m.has_row(name):
            j = m.col(name)
            return {
                "success": True,
                "variable": name,
                "lower": m.col_lower[j],
                "upper": m.col_upper[j],
                "integer": bool(m.integrality[j]),
                "in_iis": bool(self._iis_visible and self.iis and name in self.iis.columns),
            }
        i = m.row(name)
        out: dict[str, Any] = {
            "success": True,
            "constraint": name,
            "sense": m.row_sense(name),
            "rhs": m.row_rhs(name),
            "terms": m.row_terms(name),
            "in_iis": bool(self._iis_visible and self.iis and name in self.iis.rows),
            "slack": None,
        }
        if self.solution.optimal and self.solution.row_activity is not None:
            act = self.solution.row_activity[i]
            out["slack"] = float(min(m.row_upper[i] - act, act - m.row_lower[i]))
        return out

    @property
    def _iis_visible(self) -> bool:
        return self.reveal_iis or self._iis_requested

    def _record_diagnosis(self, act: Action, valid: bool) -> None:
        if not (self.reveal_iis or self._iis_requested):  # no IIS seen yet
            for n in act.diagnosis:
                if n and n not in self.diagnosed_blind:
                    self.diagnosed_blind.append(n)
        names = list(act.diagnosis)
        if valid and act.type.is_repair:
            names += list(act.drop) if act.type is ActionType.REGENERATE else [act.target]
        for n in names:
            if n and n not in self.diagnosed:
                self.diagnosed.append(n)

    # -- solver ---------------------------------------------------------------------------
    def _solve(self, model: Model) -> Solution:
        if model.is_mip and model.is_infeasible(exact=False):  # cheap LP-relaxation verdict
            return Solution("INFEASIBLE")
        return model.solve(time_limit=self.time_limit)

    def _resolve(self) -> None:
        self.solution = self._solve(self.model)
        self.iis = (
            compute_iis(self.model, method=self.iis_method) if self.solution.infeasible else None
        )

    def _observe(self, iis: IIS | None, result: dict[str, Any]) -> DebugState:
        return DebugState(
            problem_nl=self.instance.problem_nl if self.instance else "",
            solver_status=self.solution.status,
            iis_constraints=list(iis.rows) if iis else [],
            iis_bounds=[list(b) for b in iis.bounds] if iis else [],
            iis_method=iis.method if iis else "",
            constraint_names=list(self.model.row_names),
            variable_names=list(self.model.col_names),
            step_count=self.steps,
            objective=self.solution.objective,
            history=list(self.history),
            last_result=result,
            model=self.model,
            intended_objective=self.instance.original_objective if self.instance else None,
        )

    # -- outcome ------------------------------------------------------------------------------
    def result(self, agent: str = "") -> EpisodeResult:
        """The :class:`~icml26.orloop.metrics.EpisodeResult` of the episode so far."""
        inst = self.instance
        iis_sets = [diagnosis_target(inst.iis)] if inst else []
        return EpisodeResult(
            problem_id=inst.problem_id if inst else self.base.name,
            agent=agent,
            success=self.solution.optimal,
            final_status=self.solution.status,
            steps=self.steps,
            success_at_step=self.success_at_step,
            objective=self.solution.objective,
            original_objective=inst.original_objective if inst else None,
            remaining_constraints=list(self.model.row_names),
            original_constraints=list(inst.original_constraints) if inst else [],
            diagnosed=list(self.diagnosed),
            diagnosed_blind=list(self.diagnosed_blind),
            iis_sets=iis_sets,
            total_reward=self.total_reward,
            error_type=inst.error_type if inst else "",
            difficulty=difficulty(inst.iis.size) if inst else "",
            family=inst.family if inst else "",
            actions=list(self.actions),
        )
