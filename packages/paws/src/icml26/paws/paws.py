"""PAWS end to end: A_φ from preferences → λ from the n_eff target → segment-weighted MLE.

1. :func:`~icml26.paws.advantage.fit_advantage` learns A_φ(τ) = Σ_t A_φ(s_t, a_t) by the
   preference BCE (the paper's step 1);
2. every weighted segment τ_i gets A_φ(τ_i), queried on the whole segment; λ is set by
   bisection so that the weights exp(A_φ(τ_i)/λ) reach the n_eff target (step 4,
   reconstructed), the implied ε = KL(p* ‖ p_D) is reported (step 2);
3. π_θ maximises Σ_τ exp(A_φ(τ)/λ) Σ_{t∈τ} log π_θ(a_t | s_t) (step 3).

Switches ([inferred] choices, all exposed): which segments are weighted (both members of
every pair, or those plus unlabelled behaviour segments cut on the same grid); the n_eff
target as a fraction of the number of preferences; a fixed λ instead (the ablation grid);
``weighting="step"`` gives every step its own exp(A_φ(s_t, a_t)/λ) — the per-step
ablation, i.e. the train/inference mismatch the paper diagnoses. λ is computed once on the
whole weighted set: A_φ is frozen before the projection, so a per-epoch recomputation on
the same set would return the same λ.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import torch

from icml26.paws.advantage import AdvantageConfig, AdvantageFit, SegmentAdvantage, fit_advantage
from icml26.paws.data import Episodes, cut_segments
from icml26.paws.policy import PolicyConfig, PolicyFit, fit_weighted_mle
from icml26.paws.preferences import SegmentPairs
from icml26.paws.weights import Temperature, neff_target, solve_temperature

__all__ = ["PAWSConfig", "PAWSResult", "fit_paws", "weighted_segments"]


@dataclass(frozen=True)
class PAWSConfig:
    """PAWS's knobs (defaults: the paper's 10% n_eff rule, segment-shared weights)."""

    neff_fraction: float = 0.1  # target n_eff = fraction × number of preferences
    segments: Literal["pairs", "pairs+unlabelled"] = "pairs"
    weighting: Literal["segment", "step"] = "segment"
    fixed_lambda: float | None = None  # a fixed λ replaces the n_eff rule (ablation)
    advantage: AdvantageConfig = field(default_factory=AdvantageConfig)
    policy: PolicyConfig = field(default_factory=PolicyConfig)

    def __post_init__(self) -> None:
        neff_target(self.neff_fraction, 1)  # validates the fraction
        if self.segments not in ("pairs", "pairs+unlabelled"):
            raise ValueError(
                f"segments must be 'pairs' or 'pairs+unlabelled', got {self.segments!r}"
            )
        if self.weighting not in ("segment", "step"):
            raise ValueError(f"weighting must be 'segment' or 'step', got {self.weighting!r}")
        if self.fixed_lambda is not None and not self.fixed_lambda > 0:
            raise ValueError(f"a fixed λ must be positive, got {self.fixed_lambda}")


@dataclass
class PAWSResult:
    policy: torch.nn.Module
    temperature: Temperature
    advantage: AdvantageFit
    policy_fit: PolicyFit
    n_segments: int
    weight_per_step_sd_within_segment: float
    step_weights: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    def act(self, obs: np.ndarray) -> np.ndarray:
        return self.policy.act(obs)


def weighted_segments(
    pairs: SegmentPairs, episodes: Episodes | None, which: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The segments the projection weights: (obs (M, N, d), act (M, N, a), starts (M,))."""
    obs, act = pairs.segments()
    starts = np.concatenate([pairs.start[:, 0], pairs.start[:, 1]])
    if which == "pairs+unlabelled":
        if episodes is None:
            raise ValueError("segments='pairs+unlabelled' needs the behaviour episodes")
        cut = cut_segments(episodes, pairs.length, alignment=pairs.alignment or pairs.length)
        obs = np.concatenate([obs, cut["obs"]])
        act = np.concatenate([act, cut["act"]])
        starts = np.concatenate([starts, cut["start"]])
    return obs, act, starts


def _temperature(adv: np.ndarray, target: float, fixed: float | None) -> Temperature:
    if fixed is None:
        return solve_temperature(adv, target)
    from icml26.paws.weights import effective_sample_size, implied_epsilon, log_weights

    lw = log_weights(adv, fixed)
    w = np.exp(lw)
    return Temperature(
        lam=fixed, n_eff=effective_sample_size(lw), target=float("nan"),
        epsilon=implied_epsilon(lw), weights=w / w.mean(), iterations=0,
    )  # fmt: skip


def fit_paws(
    pairs: SegmentPairs,
    config: PAWSConfig | None = None,
    *,
    episodes: Episodes | None = None,
    advantage: AdvantageFit | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
) -> PAWSResult:
    """Train PAWS on ``pairs`` (and, if asked, unlabelled ``episodes``).

    ``advantage`` reuses an A_φ already trained on the same pairs (the ablations share it).
    """
    if not isinstance(pairs, SegmentPairs):
        raise TypeError(f"pairs must be SegmentPairs, got {type(pairs).__name__}")
    c = config or PAWSConfig()
    fit = advantage or fit_advantage(pairs, c.advantage, seed=seed, device=device)
    model: SegmentAdvantage = fit.model
    obs, act, starts = weighted_segments(pairs, episodes, c.segments)
    m, length = obs.shape[0], obs.shape[1]
    if c.weighting == "segment":
        adv = model.segment(obs, act, start=starts)  # the guard checks length and grid
        temp = _temperature(adv, neff_target(c.neff_fraction, len(pairs)), c.fixed_lambda)
        step_w = np.repeat(temp.weights, length)
        spread = 0.0
    else:
        adv = model.per_step(obs, act).reshape(-1)
        target = neff_target(c.neff_fraction, len(pairs) * length)
        temp = _temperature(adv, target, c.fixed_lambda)
        step_w = temp.weights
        spread = float(np.mean(np.std(step_w.reshape(m, length), axis=1)))
    pol = fit_weighted_mle(
        obs.reshape(m * length, -1), act.reshape(m * length, -1), step_w, c.policy,
        seed=seed, device=device,
    )  # fmt: skip
    return PAWSResult(
        policy=pol.policy, temperature=temp, advantage=fit, policy_fit=pol, n_segments=m,
        weight_per_step_sd_within_segment=spread,
        step_weights=step_w.reshape(m, length),
    )  # fmt: skip
