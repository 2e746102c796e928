"""icml26.charperturb — "Understanding the Ability of LLMs to Handle Character-Level
Perturbation" (Zhuo, Ning, Li, Zhu, Wang, Lu; ICML 2026, arXiv 2510.14365).

Exact, seeded character-level perturbations (UCC-Inj invisible characters after every
character, in-word typos, in-word shuffling) with full metadata; tokenizer
fragmentation; set-aware and one-line ``unicodedata`` sanitisers; log-likelihood
backends (local ``transformers`` SmolLM2, OpenAI-compatible HTTP); and quantified
implicit-denoising probes (attention mass on noise, KL, linear CKA, restoration edit
distance) validated on a trained char-level fixture.
"""

from icml26.charperturb.charsets import CHARSETS, CharSet, get_charset
from icml26.charperturb.invisible import VISIBLE_NOISE, inject_invisible, inject_visible
from icml26.charperturb.perturbation import Perturbed
from icml26.charperturb.sanitize import (
    BASELINE_SANITIZERS,
    nfkc,
    spell_correct,
    strip_cf,
    strip_cf_co_cn,
    strip_cf_vs,
    strip_charset,
)
from icml26.charperturb.shuffle import hamming_edits, shuffle_words
from icml26.charperturb.typos import add_typos, random_replacement

__all__ = [
    "BASELINE_SANITIZERS",
    "CHARSETS",
    "VISIBLE_NOISE",
    "CharSet",
    "Perturbed",
    "add_typos",
    "get_charset",
    "hamming_edits",
    "inject_invisible",
    "inject_visible",
    "nfkc",
    "random_replacement",
    "shuffle_words",
    "spell_correct",
    "strip_cf",
    "strip_cf_co_cn",
    "strip_cf_vs",
    "strip_charset",
]

__version__ = "0.1.0"
