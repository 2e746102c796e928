"""icml26.scldm — scLDM: latent diffusion for single-cell gene expression.

Reference implementation of *Scalable Single-Cell Gene Expression Generation with
Latent Diffusion Models* (Palla, Babu, Dibaeinia, Pearce, Li, Khan, Karaletsos,
Tomczak; ICML 2026; arXiv:2511.02986; official code ``czi-ai/scldm``).

A cell is an exchangeable set of (gene, count) pairs. An MCAB autoencoder pools the
expressed genes into a fixed m × D latent (permutation-invariant) and unpools it to a
negative-binomial distribution over any gene panel (permutation-equivariant); a
Diffusion Transformer trained by flow matching on a linear interpolant replaces the
Gaussian prior, with multi-conditional classifier-free guidance.

scverse style — AnnData in, AnnData out::

    from icml26.scldm import ScLDM, simulate_counts

    adata = simulate_counts(2000, 200, n_cell_types=5, seed=0)
    model = ScLDM().fit(adata, condition_keys=("cell_type",))
    new = model.generate(500, {"cell_type": "type_2"}, guidance=1.0)
    model.embed(adata, key_added="X_scldm")
"""

from icml26.scldm.autoencoder import AutoencoderConfig, MCABAutoencoder
from icml26.scldm.baselines import (
    MLPVAE,
    GaussianPriorScLDM,
    LatentGaussianConditioner,
    MLPVAEModule,
    ScviBaseline,
    scvi_available,
)
from icml26.scldm.data import (
    BackedCounts,
    ConditionVocabulary,
    LibrarySizeModel,
    counts_matrix,
    pbmc68k_counts,
    read_h5ad,
)
from icml26.scldm.diffusion import flow_matching_loss, guided_velocity, solve_ode
from icml26.scldm.dit import DiT, DiTConfig
from icml26.scldm.likelihood import NegativeBinomialHead, nb_log_prob, sample_negative_binomial
from icml26.scldm.mcab import MCAB, CrossAttention
from icml26.scldm.metrics import (
    CellTypeClassifier,
    EvaluationSpace,
    correlation_error,
    generation_metrics,
    log_normalize,
    mmd_rbf,
    r2_means,
    r2_variances,
    real_vs_generated_accuracy,
    sinkhorn_wasserstein,
)
from icml26.scldm.model import ScLDM, TrainingConfig
from icml26.scldm.simulate import simulate_counts
from icml26.scldm.training import EMA, OptimConfig, run_training, wsd_schedule

__all__ = [
    "EMA",
    "MCAB",
    "MLPVAE",
    "AutoencoderConfig",
    "BackedCounts",
    "CellTypeClassifier",
    "ConditionVocabulary",
    "CrossAttention",
    "DiT",
    "DiTConfig",
    "EvaluationSpace",
    "GaussianPriorScLDM",
    "LatentGaussianConditioner",
    "LibrarySizeModel",
    "MCABAutoencoder",
    "MLPVAEModule",
    "NegativeBinomialHead",
    "OptimConfig",
    "ScLDM",
    "ScviBaseline",
    "TrainingConfig",
    "correlation_error",
    "counts_matrix",
    "flow_matching_loss",
    "generation_metrics",
    "guided_velocity",
    "log_normalize",
    "mmd_rbf",
    "nb_log_prob",
    "pbmc68k_counts",
    "r2_means",
    "r2_variances",
    "read_h5ad",
    "real_vs_generated_accuracy",
    "run_training",
    "sample_negative_binomial",
    "scvi_available",
    "simulate_counts",
    "sinkhorn_wasserstein",
    "solve_ode",
    "wsd_schedule",
]

__version__ = "0.7.0"
