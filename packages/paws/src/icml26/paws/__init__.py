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
    IPLConfig,
    PIQLConfig,
    behaviour_cloning,
    biased_bce,
    cpl,
    filtered_bc,
    ipl,
    piql,
    piql_lite,
    pt_iql,
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
from icml26.paws.iql import IQLConfig, fit_iql, iql_policy, transitions
from icml26.paws.paws import PAWSConfig, PAWSResult, fit_paws, weighted_segments
from icml26.paws.policy import (
    GaussianPolicy,
    PolicyConfig,
    PolicyFit,
    TanhGaussianPolicy,
    fit_weighted_mle,
    load_policy,
    save_policy,
)
from icml26.paws.preference_transformer import PreferenceTransformer, relabel_episodes
from icml26.paws.preferences import SegmentPairs, oracle_labels
from icml26.paws.teacher import (
    TEACHERS,
    OracleCritic,
    OracleCriticConfig,
    discounted_returns_to_go,
    fit_oracle_critic,
    segment_regret,
)
from icml26.paws.weights import (
    Temperature,
    effective_sample_size,
    implied_epsilon,
    log_weights,
    neff_target,
    solve_temperature,
)

__all__ = [
    "TEACHERS",
    "AdvantageConfig",
    "AdvantageFit",
    "CPLConfig",
    "Episodes",
    "Evaluation",
    "GaussianPolicy",
    "IPLConfig",
    "IQLConfig",
    "OracleCritic",
    "OracleCriticConfig",
    "PAWSConfig",
    "PAWSResult",
    "PIQLConfig",
    "PointMass",
    "PointMassConfig",
    "PolicyConfig",
    "PolicyFit",
    "PreferenceTransformer",
    "SegmentAdvantage",
    "SegmentPairs",
    "TanhGaussianPolicy",
    "Temperature",
    "behaviour_cloning",
    "behaviour_episodes",
    "biased_bce",
    "cpl",
    "cut_segments",
    "discounted_returns_to_go",
    "effective_sample_size",
    "evaluate_policy",
    "expert_action",
    "filtered_bc",
    "fit_advantage",
    "fit_iql",
    "fit_oracle_critic",
    "fit_paws",
    "fit_weighted_mle",
    "implied_epsilon",
    "ipl",
    "iql_policy",
    "load_cpl_npz",
    "load_policy",
    "log_weights",
    "make_preferences",
    "neff_target",
    "normalised_return",
    "oracle_labels",
    "piql",
    "piql_lite",
    "preference_bce",
    "pt_iql",
    "reference_returns",
    "relabel_episodes",
    "save_cpl_npz",
    "save_policy",
    "segment_regret",
    "solve_temperature",
    "transitions",
    "weighted_segments",
]

__version__ = "0.9.0"
