"""icml26.merdg — MER-DG: Modality-Entropy Regularization for Multimodal Domain Generalization.

Yarici & AlRegib, ICML 2026 (arXiv:2605.01967); official code olivesgatech/MER-DG.

- :func:`mer_penalty` / :func:`mer_loss` — the per-modality loss (variance floor plus
  −logdet of the standardised feature correlation), added to any multimodal objective;
- :class:`MultimodalNet` — per-modality encoders with late fusion, SimMMDG-lite, the
  unimodal ensemble, or MBCD's fusion with uni-modal branches (:mod:`icml26.merdg.mbcd`);
  :func:`train_method` trains one recipe of :data:`METHODS` on a leave-one-domain-out
  split with the :class:`BalancedDomainSampler`;
  :func:`train_many` trains many (split, method) runs at once on stacked parameters;
- :func:`probe_model` — the frozen-encoder probe, feature log-det and effective rank;
- :func:`simulate_cooccurrence` — the CoOcc-MMDG simulator of "Fusion Overfitting";
  loaders for per-modality feature arrays keyed to HAC / EPIC split files.
"""

from icml26.merdg.baselines import BASELINES, MAIN_METHODS, lightly_variance_floor
from icml26.merdg.batched import Job, train_many
from icml26.merdg.data import (
    CoOccConfig,
    LODOSplit,
    MultimodalData,
    load_epic_split,
    load_features,
    load_hac_split,
    load_split_features,
    lodo_split,
    simulate_cooccurrence,
    simulate_digits,
)
from icml26.merdg.mbcd import MBCDConfig
from icml26.merdg.mer import (
    MERConfig,
    correlation_matrix,
    mer_loss,
    mer_penalty,
    spectral_entropy_loss,
    variance_floor_loss,
)
from icml26.merdg.models import ModelConfig, MultimodalNet, supcon_loss
from icml26.merdg.probe import ProbeConfig, effective_rank, feature_logdet, probe_model
from icml26.merdg.sampler import BalancedDomainSampler
from icml26.merdg.train import (
    LARS,
    METHODS,
    Method,
    TrainConfig,
    TrainResult,
    evaluate,
    train_method,
)

__all__ = [
    "BASELINES",
    "LARS",
    "MAIN_METHODS",
    "METHODS",
    "BalancedDomainSampler",
    "CoOccConfig",
    "Job",
    "LODOSplit",
    "MBCDConfig",
    "MERConfig",
    "Method",
    "ModelConfig",
    "MultimodalData",
    "MultimodalNet",
    "ProbeConfig",
    "TrainConfig",
    "TrainResult",
    "correlation_matrix",
    "effective_rank",
    "evaluate",
    "feature_logdet",
    "lightly_variance_floor",
    "load_epic_split",
    "load_features",
    "load_hac_split",
    "load_split_features",
    "lodo_split",
    "mer_loss",
    "mer_penalty",
    "probe_model",
    "simulate_cooccurrence",
    "simulate_digits",
    "spectral_entropy_loss",
    "supcon_loss",
    "train_many",
    "train_method",
    "variance_floor_loss",
]

__version__ = "0.3.0"
