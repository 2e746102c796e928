"""icml26.smoothie — Smoothie: Smoothing Diffusion on Token Embeddings for Text Generation.

A. Shabalin, V. Meshchaninov, D. Vetrov (arXiv:2505.18853, ICML 2026). Diffusion in a
latent of negative squared distances to every token embedding, whose Gaussian-kernel
bandwidth grows with t so that probability mass spreads over semantically close tokens
first; the embedding and TESS simplex spaces as drop-in ablations on one network and one
sampler; masked diffusion and an autoregressive model as baselines.
"""

from icml26.smoothie.baselines import (
    Autoregressive,
    MaskedDiffusion,
    copy_source,
    retrieve_target,
)
from icml26.smoothie.corpus import (
    docstring_corpus,
    faker_corpus,
    ppmi_svd_embeddings,
    sentence_pairs,
    train_tokenizer,
)
from icml26.smoothie.d3pm import D3PM
from icml26.smoothie.data import (
    PAPER_HALF_INFORMATION_T,
    Seq2Seq,
    SynonymTask,
    Vocabulary,
    fit_coef_d,
    fit_sigmas,
    load_embeddings,
    normalize_embeddings,
    read_delimited_pairs,
    read_jsonl_pairs,
    read_jsonl_splits,
    synonym_task,
)
from icml26.smoothie.diffusion_lm import DiffusionLM
from icml26.smoothie.ensemble import train_diffusion_ensemble
from icml26.smoothie.evaluation import (
    concept_accuracy,
    corpus_bleu,
    distinct_rate,
    generative_perplexity,
    half_information_time,
    input_information,
    library_scores,
    self_bleu,
    synonym_mass_ratio,
    token_recovery,
)
from icml26.smoothie.model import (
    Denoiser,
    DenoiserConfig,
    TrainConfig,
    join_launched_group,
    load_checkpoint,
    save_checkpoint,
    train_diffusion,
)
from icml26.smoothie.sample import cut_at_eos, mbr_select, sample
from icml26.smoothie.space import (
    ArctanSchedule,
    CosineSDSchedule,
    DiffusionSpace,
    EmbeddingSpace,
    SimplexSpace,
    SmoothieSpace,
    TessSchedule,
    pairwise_sq_distances,
)

__all__ = [
    "D3PM",
    "PAPER_HALF_INFORMATION_T",
    "ArctanSchedule",
    "Autoregressive",
    "CosineSDSchedule",
    "Denoiser",
    "DenoiserConfig",
    "DiffusionLM",
    "DiffusionSpace",
    "EmbeddingSpace",
    "MaskedDiffusion",
    "Seq2Seq",
    "SimplexSpace",
    "SmoothieSpace",
    "SynonymTask",
    "TessSchedule",
    "TrainConfig",
    "Vocabulary",
    "concept_accuracy",
    "copy_source",
    "corpus_bleu",
    "cut_at_eos",
    "distinct_rate",
    "docstring_corpus",
    "faker_corpus",
    "fit_coef_d",
    "fit_sigmas",
    "generative_perplexity",
    "half_information_time",
    "input_information",
    "join_launched_group",
    "library_scores",
    "load_checkpoint",
    "load_embeddings",
    "mbr_select",
    "normalize_embeddings",
    "pairwise_sq_distances",
    "ppmi_svd_embeddings",
    "read_delimited_pairs",
    "read_jsonl_pairs",
    "read_jsonl_splits",
    "retrieve_target",
    "sample",
    "save_checkpoint",
    "self_bleu",
    "sentence_pairs",
    "synonym_mass_ratio",
    "synonym_task",
    "token_recovery",
    "train_diffusion",
    "train_diffusion_ensemble",
    "train_tokenizer",
]

__version__ = "0.9.0"
