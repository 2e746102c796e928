"""icml26.cure — CURE: Consistency-under-Unified Semantic Regularization for Generalized
Category Discovery (ICML 2026), reconstructed, with exact SimGCD and GCD baselines.

Every CURE formula is a reconstruction from the abstract and the public reviews (the
official repository publishes no loss code); SimGCD's losses follow CVMI-Lab/SimGCD.
"""

from icml26.cure.baselines import GCD, SimGCD, SimGCDConfig, kmeans_raw, semi_supervised_kmeans
from icml26.cure.cure import CURE, CUREConfig, NetConfig
from icml26.cure.data import (
    GCDData,
    digits_split,
    hierarchical_mixture,
    load_cub,
    load_features_npz,
    load_ssb_splits,
    make_gcd_data,
    save_features_npz,
    views,
)
from icml26.cure.evaluation import gcd_accuracy, prototype_similarity, sibling_cosine
from icml26.cure.objectives import (
    distill_loss,
    info_nce_logits,
    js_consistency,
    memax_loss,
    supcon_loss,
    teacher_temperatures,
)
from icml26.cure.prototypes import GCDNet, cosine_logits, estimate_n_clusters
from icml26.cure.see import mean_offdiagonal_cosine, prototype_energy, sample_energy, see_term
from icml26.cure.stage1 import Stage1Config
from icml26.cure.stage2 import Stage2Config, initialise_prototypes
from icml26.cure.training import TrainConfig

__all__ = [
    "CURE",
    "GCD",
    "CUREConfig",
    "GCDData",
    "GCDNet",
    "NetConfig",
    "SimGCD",
    "SimGCDConfig",
    "Stage1Config",
    "Stage2Config",
    "TrainConfig",
    "cosine_logits",
    "digits_split",
    "distill_loss",
    "estimate_n_clusters",
    "gcd_accuracy",
    "hierarchical_mixture",
    "info_nce_logits",
    "initialise_prototypes",
    "js_consistency",
    "kmeans_raw",
    "load_cub",
    "load_features_npz",
    "load_ssb_splits",
    "make_gcd_data",
    "mean_offdiagonal_cosine",
    "memax_loss",
    "prototype_energy",
    "prototype_similarity",
    "sample_energy",
    "save_features_npz",
    "see_term",
    "semi_supervised_kmeans",
    "sibling_cosine",
    "supcon_loss",
    "teacher_temperatures",
    "views",
]
