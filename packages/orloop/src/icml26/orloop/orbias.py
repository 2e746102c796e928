"""ORBias: newsvendor decisions, their closed-form optimum, bias and ID→OOD drift.

The newsvendor orders ``q`` before demand ``D ~ F`` is seen; with underage cost
``c_u = p − c`` (price minus cost) and overage cost ``c_o = c − v`` (cost minus
salvage) the optimum is the critical fractile ``q* = F⁻¹(c_u / (c_u + c_o))``.
ORBias (paper §4, v1 abstract) scores a decision agent by its relative bias
``(q − q*) / q*`` and by the drift ``bias_OOD − bias_ID`` from in-distribution to
out-of-distribution instances. The pull-to-centre effect — under-ordering
high-margin items, over-ordering low-margin ones — is the agent
``q = α·μ + (1 − α)·q*``; :func:`pull_to_centre_alpha` recovers ``α`` from decisions.

The instance generator is reconstructed (the paper's is not released): Normal,
Uniform and Poisson demand; prices drawn so that the critical ratio spans a range;
in-distribution = Normal/Uniform demand with ratios in [0.3, 0.7];
out-of-distribution = Poisson demand (an unseen distribution) with high-margin
ratios in [0.7, 0.95] (an unseen range), where the pull to the centre shows as
under-ordering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import special, stats

DISTRIBUTIONS = ("normal", "uniform", "poisson")


@dataclass(frozen=True)
class Newsvendor:
    """One instance: demand distribution (``mean``, ``sd``), price, unit cost, salvage value."""

    distribution: str
    mean: float
    sd: float
    price: float
    cost: float
    salvage: float

    def __post_init__(self) -> None:
        if self.distribution not in DISTRIBUTIONS:
            raise ValueError(
                f"distribution must be one of {DISTRIBUTIONS}, got {self.distribution!r}"
            )
        if not self.price > self.cost > self.salvage >= 0:
            raise ValueError(
                f"need price > cost > salvage >= 0, got {self.price}, {self.cost}, {self.salvage}"
            )
        if not (self.mean > 0 and self.sd > 0):
            raise ValueError(f"demand mean and sd must be positive, got {self.mean}, {self.sd}")
        if self.distribution == "uniform" and self.mean - np.sqrt(3) * self.sd < 0:
            raise ValueError("a uniform demand must stay non-negative (mean >= sqrt(3)·sd)")

    @property
    def critical_ratio(self) -> float:
        cu, co = self.price - self.cost, self.cost - self.salvage
        return cu / (cu + co)

    def frozen(self) -> stats.rv_continuous | stats.rv_discrete:
        if self.distribution == "normal":
            return stats.norm(self.mean, self.sd)
        if self.distribution == "uniform":
            half = np.sqrt(3) * self.sd
            return stats.uniform(self.mean - half, 2 * half)
        return stats.poisson(self.mean)

    def optimal_quantity(self) -> float:
        """``q* = F⁻¹(c_u / (c_u + c_o))`` (for Poisson, the smallest q with ``F(q) >= ratio``)."""
        r = self.critical_ratio
        if self.distribution == "normal":
            return float(self.mean + self.sd * special.ndtri(r))
        if self.distribution == "uniform":
            half = np.sqrt(3) * self.sd
            return float(self.mean - half + 2 * half * r)
        return float(stats.poisson.ppf(r, self.mean))

    def expected_profit(self, q: float) -> float:
        """``E[p·min(q, D) + v·(q − D)⁺] − c·q`` (numerically, by quadrature or summation)."""
        d = self.frozen()
        if self.distribution == "poisson":
            k = np.arange(0, int(d.ppf(1 - 1e-12)) + 1)
            sales = np.minimum(q, k)
            pmf = d.pmf(k)
        else:
            k = np.linspace(*d.ppf([1e-9, 1 - 1e-9]), 4001)
            sales = np.minimum(q, k)
            pmf = d.pdf(k) * (k[1] - k[0])
        left = np.maximum(q - k, 0.0)
        return float(((self.price * sales + self.salvage * left) * pmf).sum() - self.cost * q)

    def describe(self) -> str:
        return (
            f"A retailer orders a product once before the season. Demand is {self.distribution} "
            f"with mean {self.mean:.1f} and standard deviation {self.sd:.1f}. It sells at "
            f"{self.price:.2f} per unit, costs {self.cost:.2f} per unit, and leftover units "
            f"are salvaged at {self.salvage:.2f}."
        )


def sample_newsvendors(
    rng: np.random.Generator,
    n: int,
    *,
    distributions: Sequence[str] = ("normal", "uniform"),
    ratio_ranges: Sequence[tuple[float, float]] = ((0.3, 0.7),),
) -> list[Newsvendor]:
    """``n`` instances whose critical ratio is drawn uniformly from ``ratio_ranges``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    for lo, hi in ratio_ranges:
        if not 0 < lo < hi < 1:
            raise ValueError(f"a critical-ratio range must satisfy 0 < lo < hi < 1, got {(lo, hi)}")
    out = []
    for _ in range(n):
        dist = str(rng.choice(list(distributions)))
        lo, hi = ratio_ranges[int(rng.integers(len(ratio_ranges)))]
        ratio = rng.uniform(lo, hi)
        mean = rng.uniform(20, 200)
        sd = np.sqrt(mean) if dist == "poisson" else mean * rng.uniform(0.1, 0.3)
        cost = rng.uniform(2, 10)
        salvage = cost * rng.uniform(0.0, 0.5)
        # ratio = (p − c) / (p − v)  =>  p = (c − ratio·v) / (1 − ratio)
        price = (cost - ratio * salvage) / (1 - ratio)
        out.append(
            Newsvendor(dist, float(mean), float(sd), float(price), float(cost), float(salvage))
        )
    return out


def sample_splits(
    rng: np.random.Generator, n_id: int, n_ood: int
) -> tuple[list[Newsvendor], list[Newsvendor]]:
    """The default in-distribution and out-of-distribution splits."""
    return (
        sample_newsvendors(rng, n_id),
        sample_newsvendors(rng, n_ood, distributions=("poisson",), ratio_ranges=((0.7, 0.95),)),
    )


def expected_pull_bias(instances: Sequence[Newsvendor], alpha: float) -> float:
    """Mean bias that ``q = α·μ + (1 − α)·q*`` has by construction on ``instances``."""
    qs = np.array([it.optimal_quantity() for it in instances])
    mu = np.array([it.mean for it in instances])
    return float(alpha * np.mean((mu - qs) / qs))


class DecisionAgent(Protocol):
    """Anything that orders a quantity for a newsvendor instance."""

    name: str

    def decide(self, instance: Newsvendor) -> float: ...


class RationalAgent:
    name = "rational"

    def decide(self, instance: Newsvendor) -> float:
        return instance.optimal_quantity()


class PullToCentreAgent:
    """``q = α·μ + (1 − α)·q*``, times optional lognormal decision noise."""

    def __init__(self, alpha: float, *, noise: float = 0.0, seed: int = 0) -> None:
        if not 0 <= alpha <= 1:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        if noise < 0:
            raise ValueError(f"noise must be non-negative, got {noise}")
        self.alpha, self.noise = float(alpha), float(noise)
        self.rng = np.random.default_rng(seed)
        self.name = f"pull-to-centre (α={alpha:g})"

    def decide(self, instance: Newsvendor) -> float:
        q = self.alpha * instance.mean + (1 - self.alpha) * instance.optimal_quantity()
        if self.noise:
            q *= float(np.exp(self.rng.normal(0.0, self.noise)))
        return q


@dataclass(frozen=True)
class BiasReport:
    bias_id: float
    bias_ood: float
    drift: float
    abs_bias_id: float
    abs_bias_ood: float
    alpha_id: float
    alpha_ood: float
    alpha: float  # fitted on both splits together
    n_failed: int = 0  # decisions that were not a finite number


def relative_bias(q: Sequence[float], q_star: Sequence[float]) -> np.ndarray:
    """``(q − q*) / q*`` per decision."""
    q, qs = np.asarray(q, float), np.asarray(q_star, float)
    if q.shape != qs.shape:
        raise ValueError(f"q and q* differ in shape: {q.shape} vs {qs.shape}")
    if np.any(qs <= 0) or not np.all(np.isfinite(q)):
        raise ValueError("q* must be positive and q finite")
    return (q - qs) / qs


def pull_to_centre_fit(
    q: Sequence[float], q_star: Sequence[float], mean: Sequence[float]
) -> tuple[float, float]:
    """Least squares ``(q − q*)/q* = β + α·(μ − q*)/q*``: the pull ``α`` and an intercept ``β``.

    The intercept takes up a level bias that does not depend on the distance to
    mean demand (for instance the ``exp(σ²/2) − 1`` of multiplicative decision noise),
    which a fit through the origin would fold into ``α``.
    """
    b = relative_bias(q, q_star)
    g = (np.asarray(mean, float) - np.asarray(q_star, float)) / np.asarray(q_star, float)
    if g.size < 2 or float(np.ptp(g)) <= 1e-12:
        raise ValueError(
            "α is not identifiable: (μ − q*)/q* must take at least two distinct values"
        )
    x = np.column_stack([np.ones_like(g), g])
    (beta, alpha), *_ = np.linalg.lstsq(x, b, rcond=None)
    return float(alpha), float(beta)


def pull_to_centre_alpha(
    q: Sequence[float], q_star: Sequence[float], mean: Sequence[float]
) -> float:
    """The pull ``α`` of :func:`pull_to_centre_fit` (least squares with an intercept)."""
    return pull_to_centre_fit(q, q_star, mean)[0]


def evaluate_bias(
    agent: DecisionAgent, in_dist: Sequence[Newsvendor], out_dist: Sequence[Newsvendor]
) -> BiasReport:
    """Mean relative bias in- and out-of-distribution, the drift, and the fitted ``α``.

    A decision that is not a finite number (an LLM that gave no usable answer) is
    left out of the scores and counted in ``n_failed``.
    """
    failed = 0

    def run(items: Sequence[Newsvendor]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        nonlocal failed
        if not items:
            raise ValueError("evaluate_bias needs instances in both splits")
        qs = np.array([it.optimal_quantity() for it in items])
        q = np.array([agent.decide(it) for it in items], dtype=float)
        mu = np.array([it.mean for it in items])
        ok = np.isfinite(q)
        failed += int((~ok).sum())
        if ok.sum() < 2:
            raise ValueError(f"{agent.name} gave fewer than two usable decisions in a split")
        q, qs, mu = q[ok], qs[ok], mu[ok]
        return relative_bias(q, qs), q, qs, mu

    b_id, *d_id = run(in_dist)
    b_ood, *d_ood = run(out_dist)
    a_id, a_ood = pull_to_centre_alpha(*d_id), pull_to_centre_alpha(*d_ood)
    pooled = [np.concatenate([x, y]) for x, y in zip(d_id, d_ood, strict=True)]
    return BiasReport(
        bias_id=float(b_id.mean()),
        bias_ood=float(b_ood.mean()),
        drift=float(b_ood.mean() - b_id.mean()),
        abs_bias_id=float(np.abs(b_id).mean()),
        abs_bias_ood=float(np.abs(b_ood).mean()),
        alpha_id=a_id,
        alpha_ood=a_ood,
        alpha=pull_to_centre_alpha(*pooled),
        n_failed=failed,
    )
