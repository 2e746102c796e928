"""icml26.paws — PAWS: Preference Learning with Advantage-Weighted Segments (ICML 2026).

Taranovic, Celik, Freymuth, Li, Thilges, Le, Hoang, Rayyes, Neumann; arXiv 2606.11982.
Offline preference-based RL: a segment advantage model A_φ(τ) = Σ_t A_φ(s_t, a_t) learnt
from segment preferences and queried only on whole segments, then REPS-style weighted
maximum likelihood where every step of a segment shares exp(A_φ(τ)/λ), λ set by a target
effective sample size.
"""

from icml26.paws.advantage import (
    AdvantageConfig,
    AdvantageFit,
    SegmentAdvantage,
    fit_advantage,
    preference_bce,
)
from icml26.paws.baselines import (
    CPLConfig,
    PIQLConfig,
    behaviour_cloning,
    biased_bce,
    cpl,
    filtered_bc,
    piql_lite,
)
from icml26.paws.data import (
    Episodes,
    PointMass,
    PointMassConfig,
    behaviour_episodes,
    cut_segments,
    expert_action,
    load_cpl_npz,
    make_preferences,
    save_cpl_npz,
)
from icml26.paws.evaluation import (
    Evaluation,
    evaluate_policy,
    normalised_return,
    reference_returns,
)
from icml26.paws.paws import PAWSConfig, PAWSResult, fit_paws, weighted_segments
from icml26.paws.policy import (
    PolicyConfig,
    PolicyFit,
    TanhGaussianPolicy,
    fit_weighted_mle,
    load_policy,
    save_policy,
)
from icml26.paws.preferences import SegmentPairs, oracle_labels
from icml26.paws.weights import (
    Temperature,
    effective_sample_size,
    implied_epsilon,
    log_weights,
    neff_target,
    solve_temperature,
)

__all__ = [
    "AdvantageConfig",
    "AdvantageFit",
    "CPLConfig",
    "Episodes",
    "Evaluation",
    "PAWSConfig",
    "PAWSResult",
    "PIQLConfig",
    "PointMass",
    "PointMassConfig",
    "PolicyConfig",
    "PolicyFit",
    "SegmentAdvantage",
    "SegmentPairs",
    "TanhGaussianPolicy",
    "Temperature",
    "behaviour_cloning",
    "behaviour_episodes",
    "biased_bce",
    "cpl",
    "cut_segments",
    "effective_sample_size",
    "evaluate_policy",
    "expert_action",
    "filtered_bc",
    "fit_advantage",
    "fit_paws",
    "fit_weighted_mle",
    "implied_epsilon",
    "load_cpl_npz",
    "load_policy",
    "log_weights",
    "make_preferences",
    "neff_target",
    "normalised_return",
    "oracle_labels",
    "piql_lite",
    "preference_bce",
    "reference_returns",
    "save_cpl_npz",
    "save_policy",
    "solve_temperature",
    "weighted_segments",
]

__version__ = "0.1.0"
