"""icml26.prism — PRISM, a germline-aware antibody language model.

Reference implementation of "Explicit representation of germline and non-germline
residues improves antibody language modeling" (PRISM, Romero Lab, ICML 2026; arXiv id
not known; official code RomeroLab/PRISM). PRISM factorises each residue into
identity × origin over a 53-token vocabulary (20 germline uppercase + 20 non-germline
lowercase amino acids + ESM-2 specials) with an origin head, a detached conditioning,
an α-gate and focal losses; it scores region- and origin-resolved pseudo-perplexity,
zero-shot binding (wt-centred NGL log-probability) and GL/NGL-directed generation.
Models are trained from scratch; the matched PRISM-less ablation is included.
"""

from icml26.prism.adamw import AdamW
from icml26.prism.baselines import blosum_scores, prismless, prismless_scores
from icml26.prism.checkpoint import load_checkpoint, save_checkpoint
from icml26.prism.conditioning import Conditioning
from icml26.prism.data import (
    MutationalScan,
    Repertoire,
    SimConfig,
    Simulation,
    germline_identity,
    read_airr,
    read_dms_csv,
    read_fasta,
    read_oas_csv,
    simulate_repertoire,
    write_airr,
)
from icml26.prism.generate import MaskedLogProbs, Variant, generate, masked_log_probs
from icml26.prism.germline import (
    REGION_NAMES,
    Assignment,
    GermlineSet,
    assign_germline,
    assign_with_riot,
    cased,
    imgt_region,
    ngl_labels,
    translate_alignment,
)
from icml26.prism.losses import LossWeights, binary_focal_loss, focal_loss, prism_loss
from icml26.prism.masking import MaskingConfig, mask_tokens
from icml26.prism.model import (
    ModelConfig,
    PrismLessModel,
    PrismModel,
    PrismOutput,
    build_model,
    gated_logits,
)
from icml26.prism.probe import linear_probe, residue_embeddings
from icml26.prism.score import (
    MODES,
    PLLResult,
    pseudo_log_likelihood,
    pseudo_log_likelihood_loop,
    score_variants,
)
from icml26.prism.site_profile import SiteProfile
from icml26.prism.train import TrainConfig, encode_repertoire, train
from icml26.prism.vocab import AA_ORDER, TOKENS, VOCAB_SIZE, Encoding, Tokenizer

__all__ = [
    "AA_ORDER",
    "MODES",
    "REGION_NAMES",
    "TOKENS",
    "VOCAB_SIZE",
    "AdamW",
    "Assignment",
    "Conditioning",
    "Encoding",
    "GermlineSet",
    "LossWeights",
    "MaskedLogProbs",
    "MaskingConfig",
    "ModelConfig",
    "MutationalScan",
    "PLLResult",
    "PrismLessModel",
    "PrismModel",
    "PrismOutput",
    "Repertoire",
    "SimConfig",
    "Simulation",
    "SiteProfile",
    "Tokenizer",
    "TrainConfig",
    "Variant",
    "assign_germline",
    "assign_with_riot",
    "binary_focal_loss",
    "blosum_scores",
    "build_model",
    "cased",
    "encode_repertoire",
    "focal_loss",
    "gated_logits",
    "generate",
    "germline_identity",
    "imgt_region",
    "linear_probe",
    "load_checkpoint",
    "mask_tokens",
    "masked_log_probs",
    "ngl_labels",
    "prism_loss",
    "prismless",
    "prismless_scores",
    "pseudo_log_likelihood",
    "pseudo_log_likelihood_loop",
    "read_airr",
    "read_dms_csv",
    "read_fasta",
    "read_oas_csv",
    "residue_embeddings",
    "save_checkpoint",
    "score_variants",
    "simulate_repertoire",
    "train",
    "translate_alignment",
    "write_airr",
]

__version__ = "0.1.0"
