"""The paper's rewards: the environment reward and the composite training reward.

Environment reward (official ``reward.py``, ``RewardConfig``):

- terminal: +100 when the model is OPTIMAL, −50 otherwise;
- an action that does not parse or cannot be executed: −50;
- every step: −1;
- a repair that shrinks the IIS: +10 × (old size − new size) (an OPTIMAL model has
  IIS size 0);
- a repair that is not a drop and keeps the constraint count: +5.

The faithfulness penalties (−20, −10) are placeholders in the official code and are
left out here.

Composite training reward (official ``composite_reward.py``):
``R = 0.5·R_outcome + 0.3·R_diag + 0.2·R_eff`` with ``R_outcome`` +100 OPTIMAL /
−50 otherwise, ``R_diag = 20 × Jaccard(diagnosed rows, IIS rows)`` and
``R_eff`` +10 for <= 2 steps, +5 for 3–5, −2 per step beyond 5. With
``graded=True`` the success reward is scaled by optimality preservation
(``100 × OP``): the graded outcome the brief recommends against reward-variance
collapse (an addition, off by default).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class RewardConfig:
    """Values of the environment reward (official defaults)."""

    success: float = 100.0
    failure: float = -50.0
    syntax_error: float = -50.0
    iis_reduction: float = 10.0
    step_penalty: float = -1.0
    constraint_preserved: float = 5.0


@dataclass(frozen=True)
class CompositeWeights:
    """Weights and values of the composite training reward (official defaults)."""

    outcome: float = 0.5
    diagnosis: float = 0.3
    efficiency: float = 0.2
    success: float = 100.0
    failure: float = -50.0
    max_diagnosis: float = 20.0
    fast: float = 10.0
    moderate: float = 5.0
    slow_per_step: float = -2.0


def step_reward(
    config: RewardConfig,
    *,
    valid: bool,
    is_repair: bool,
    is_drop: bool,
    old_iis_size: int,
    new_iis_size: int,
    old_n_rows: int,
    new_n_rows: int,
    terminal: bool,
    optimal: bool,
) -> dict[str, float]:
    """The environment reward of one transition, by component (``total`` included)."""
    outcome = 0.0
    if terminal:
        outcome = config.success if optimal else config.failure
    process = config.step_penalty
    if not valid:
        process += config.syntax_error
    elif is_repair:
        if new_iis_size < old_iis_size:
            process += config.iis_reduction * (old_iis_size - new_iis_size)
        if not is_drop and new_n_rows >= old_n_rows:
            process += config.constraint_preserved
    return {"outcome": outcome, "process": process, "total": outcome + process}


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    sa, sb = set(a), set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 0.0


def outcome_reward(
    status: str, *, op: float | None = None, graded: bool = False, w: CompositeWeights | None = None
) -> float:
    w = w or CompositeWeights()
    if status != "OPTIMAL":
        return w.failure
    if graded:
        if op is None:
            raise ValueError("a graded outcome reward needs the optimality preservation op")
        return w.success * op
    return w.success


def efficiency_reward(steps: int, w: CompositeWeights | None = None) -> float:
    w = w or CompositeWeights()
    if steps < 0:
        raise ValueError(f"steps must be non-negative, got {steps}")
    if steps <= 2:
        return w.fast
    if steps <= 5:
        return w.moderate
    return w.slow_per_step * (steps - 5)


def composite_reward(
    status: str,
    diagnosed: Iterable[str],
    iis_rows: Iterable[str],
    steps: int,
    *,
    op: float | None = None,
    graded: bool = False,
    weights: CompositeWeights | None = None,
) -> dict[str, float]:
    """``0.5·R_outcome + 0.3·R_diag + 0.2·R_eff`` with its parts."""
    w = weights or CompositeWeights()
    iis_rows = list(iis_rows)
    # the official code scores an instance without ground-truth IIS as a neutral 0.5
    da = jaccard(diagnosed, iis_rows) if iis_rows else 0.5
    r_out = outcome_reward(status, op=op, graded=graded, w=w)
    r_diag = w.max_diagnosis * da
    r_eff = efficiency_reward(steps, w)
    total = w.outcome * r_out + w.diagnosis * r_diag + w.efficiency * r_eff
    return {
        "outcome": r_out,
        "diagnosis": r_diag,
        "efficiency": r_eff,
        "jaccard": da,
        "total": total,
    }
