"""Evaluation rollouts (the only environment calls) and the normalised return."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from icml26.paws.data import PointMass, expert_action

__all__ = ["Evaluation", "evaluate_policy", "normalised_return", "reference_returns"]


@dataclass(frozen=True)
class Evaluation:
    """Per-episode returns (NaN for an episode that failed) and the failures' errors."""

    returns: np.ndarray
    errors: list[str] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return int(np.count_nonzero(~np.isfinite(self.returns)))

    @property
    def mean(self) -> float:
        ok = self.returns[np.isfinite(self.returns)]
        return float(ok.mean()) if ok.size else float("nan")


def evaluate_policy(
    act: Callable[[np.ndarray], np.ndarray], env: PointMass, starts: np.ndarray
) -> Evaluation:
    """Roll ``act`` out from every start. If the batched rollout fails, each episode is
    rerun alone and an episode whose policy raises (or returns NaN actions) is reported
    as a failure with its error, never as a crash of the whole evaluation."""
    starts = np.asarray(starts, dtype=float)
    try:
        return Evaluation(returns=env.rollout(act, starts).returns.astype(float))
    except Exception:  # isolate the failing episodes below
        pass
    returns = np.full(starts.shape[0], np.nan)
    errors: list[str] = []
    for i in range(starts.shape[0]):
        try:
            returns[i] = float(env.rollout(act, starts[i : i + 1]).returns[0])
        except Exception as err:  # a model error is data, not a crash
            errors.append(f"episode {i}: {type(err).__name__}: {err}")
    return Evaluation(returns=returns, errors=errors)


def reference_returns(env: PointMass, starts: np.ndarray, seed: int) -> tuple[float, float]:
    """Mean return of uniform random actions and of the scripted expert on ``starts``."""
    rng = np.random.default_rng(seed)
    rand = env.rollout(lambda o: rng.uniform(-1.0, 1.0, (o.shape[0], 2)), starts).returns
    expert = env.rollout(lambda o: expert_action(o, env.config.step), starts).returns
    return float(rand.mean()), float(expert.mean())


def normalised_return(value: float, random: float, expert: float) -> float:
    """(R − R_random) / (R_expert − R_random): 0 is random, 1 the scripted expert."""
    if not expert > random:
        raise ValueError(f"the expert's return {expert} must exceed random's {random}")
    return (value - random) / (expert - random)
