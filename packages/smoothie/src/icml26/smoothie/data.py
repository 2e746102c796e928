"""Data: the synonym-cluster seq2seq task, vocabularies, embedding tables and loaders.

- :func:`synonym_task` — C concepts × S surface forms (+ PAD, EOS); embeddings are a
  concept centre plus small within-concept noise; the target is a deterministic transform
  of the source's concept sequence (a concept map, optionally reversed) rendered with a
  random surface form per token, so many outputs are correct. ``S = 1`` is the control
  without synonym structure. (Reconstructed: the brief's task, not the paper's data.)
- :func:`normalize_embeddings` — ``E ← (E − mean)/std`` with scalar statistics over all
  entries of the non-special rows (official ``--train_embeddings`` off path).
- :func:`fit_sigmas` — re-fits σ_min/σ_max to a table (the paper's 1.5/200 belong to
  768-d BERT embeddings): σ_min puts ≥ 99.5% of ``softmax(X0)`` on the true token,
  σ_max makes it near uniform.
- :func:`fit_coef_d` — re-fits the third constant of the ``Arctan`` schedule, ``d``, so
  that the network input loses half of a token's concept at the same t as under the paper's
  defaults on a BERT-sized table (:data:`PAPER_HALF_INFORMATION_T`; reconstructed).
- :meth:`Vocabulary.from_tokenizer` — a Hugging Face ``tokenizers`` tokenizer (a user's
  ``tokenizer.json`` or one trained locally, :mod:`icml26.smoothie.corpus`) as a vocabulary.
- Loaders for the DiffuSeq-style ``{train,valid,test}.jsonl`` (``{"src": ..., "trg": ...}``)
  the official code reads, CSV/TSV pairs, and a user vocabulary plus ``.npy`` embeddings
  (``allow_pickle=False``).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from icml26.smoothie.space import check_embeddings

__all__ = [
    "EOS",
    "PAD",
    "PAPER_HALF_INFORMATION_T",
    "Seq2Seq",
    "SynonymTask",
    "Vocabulary",
    "fit_coef_d",
    "fit_sigmas",
    "load_embeddings",
    "normalize_embeddings",
    "read_delimited_pairs",
    "read_jsonl_pairs",
    "read_jsonl_splits",
    "synonym_task",
]

PAD, EOS = "[PAD]", "[SEP]"


class Vocabulary:
    """Token strings ↔ ids with PAD and an end token; whitespace tokenisation by default."""

    def __init__(
        self,
        tokens: Sequence[str],
        *,
        pad: str = PAD,
        eos: str = EOS,
        tokenize: Callable[[str], list[str]] | None = None,
        detokenize: Callable[[list[str]], str] | None = None,
    ):
        tokens = list(tokens)
        if len(set(tokens)) != len(tokens):
            raise ValueError("vocabulary tokens must be unique")
        for special in (pad, eos):
            if special not in tokens:
                raise ValueError(f"vocabulary lacks the special token {special!r}")
        self.tokens = tokens
        self.index = {tok: i for i, tok in enumerate(tokens)}
        self.pad_id, self.eos_id = self.index[pad], self.index[eos]
        self.tokenize = tokenize or str.split
        self.detokenize = detokenize or " ".join

    def __len__(self) -> int:
        return len(self.tokens)

    @classmethod
    def from_tokenizer(cls, tokenizer, *, pad: str = PAD, eos: str = EOS) -> Vocabulary:
        """Wrap a Hugging Face ``tokenizers.Tokenizer`` (e.g. from
        :func:`icml26.smoothie.corpus.train_tokenizer` or ``Tokenizer.from_file``): its
        vocabulary in id order, and its pieces (without special tokens) as the tokenisation."""
        if not hasattr(tokenizer, "get_vocab") or not hasattr(tokenizer, "encode"):
            raise TypeError(f"expected a tokenizers.Tokenizer, got {type(tokenizer).__name__}")
        index = tokenizer.get_vocab(with_added_tokens=True)
        tokens = sorted(index, key=index.__getitem__)
        if [index[t] for t in tokens] != list(range(len(tokens))):
            raise ValueError("the tokenizer's ids are not contiguous from 0")

        def tokenize(text: str) -> list[str]:
            return tokenizer.encode(text, add_special_tokens=False).tokens

        decoder = tokenizer.decoder
        detokenize = decoder.decode if decoder is not None else " ".join
        return cls(tokens, pad=pad, eos=eos, tokenize=tokenize, detokenize=detokenize)

    @property
    def special_ids(self) -> list[int]:
        return [self.pad_id, self.eos_id]

    def encode(self, text: str | Sequence[str], max_len: int, *, eos: bool = True) -> list[int]:
        """Ids of ``text`` (+ EOS), padded with PAD to ``max_len``; errors if too long/unknown."""
        pieces = self.tokenize(text) if isinstance(text, str) else list(text)
        ids = []
        for p in pieces:
            if p not in self.index:
                raise ValueError(f"unknown token {p!r} (not in the vocabulary of {len(self)})")
            ids.append(self.index[p])
        if eos:
            ids.append(self.eos_id)
        if len(ids) > max_len:
            raise ValueError(
                f"sequence of {len(ids)} tokens (with EOS) is longer than the maximum length "
                f"{max_len}"
            )
        return ids + [self.pad_id] * (max_len - len(ids))

    def encode_batch(
        self, texts: Iterable[str | Sequence[str]], max_len: int, *, eos: bool = True
    ) -> Tensor:
        return torch.tensor([self.encode(t, max_len, eos=eos) for t in texts], dtype=torch.long)

    def decode(self, ids: Sequence[int]) -> str:
        out = []
        for i in ids:
            if i == self.eos_id:
                break
            if i != self.pad_id:
                out.append(self.tokens[i])
        return self.detokenize(out)


def normalize_embeddings(embeddings: Tensor, special_ids: Sequence[int] = ()) -> Tensor:
    """``(E − mean)/std`` with scalar statistics over every entry of the non-special rows."""
    check_embeddings(embeddings)
    keep = torch.ones(embeddings.shape[0], dtype=torch.bool)
    keep[list(special_ids)] = False
    ref = embeddings[keep]
    std = ref.std()
    if not std > 0:
        raise ValueError("embedding matrix is constant: cannot normalise")
    return (embeddings - ref.mean()) / std


def fit_sigmas(
    embeddings: Tensor,
    *,
    recovery: float = 0.995,
    terminal_sd: float = 0.02,
    coef_d: float = 9.0,
    delta: float = 1.0,
) -> tuple[float, float]:
    """σ_min and σ_max re-fitted to a table (reconstructed recipe; the paper's 1.5/200 fit
    normalised 768-d BERT embeddings).

    σ_min: the largest value with mean ``softmax(X0)[true] ≥ recovery``. σ_max: the smallest
    value for which the noise-free latent at t = 1, ``√α_1 · X0``, varies over the
    vocabulary by at most ``terminal_sd · δ`` (mean over tokens of its sd), so the prior
    ``N(0, δ² I)`` matches ``X_1`` as it does for BERT. Bisection on log σ.
    """
    check_embeddings(embeddings)
    d2 = _sq_distances(embeddings)
    sigma_min = _fit_sigma_min(d2, recovery)
    spread = (-d2 / (2 * sigma_min**2)).std(-1).mean().item()
    return sigma_min, _fit_sigma_max(spread, sigma_min, coef_d, delta, terminal_sd)


def _sq_distances(embeddings: Tensor) -> Tensor:
    from icml26.smoothie.space import pairwise_sq_distances

    return pairwise_sq_distances(embeddings.double(), embeddings.double()).clamp_min(0)


def _fit_sigma_min(d2: Tensor, recovery: float) -> float:
    """The largest σ with mean ``softmax(−d²/2σ²)[true] ≥ recovery`` (bisection on log σ)."""

    def recov(s: float) -> float:
        return torch.softmax(-d2 / (2 * s * s), -1).diagonal().mean().item()

    lo, hi = 1e-4, 1e4
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if recov(mid) >= recovery else (lo, mid)
    return float(lo)


def _fit_sigma_max(
    spread: float, sigma_min: float, coef_d: float, delta: float, terminal_sd: float
) -> float:
    """The smallest σ_max with ``√α_1 · spread ≤ terminal_sd · δ`` (bisection on log σ)."""
    from icml26.smoothie.space import ArctanSchedule

    def terminal(s_max: float) -> float:
        sched = ArctanSchedule(coef_d=coef_d, delta=delta, sigma_min=sigma_min, sigma_max=s_max)
        mu, _ = sched.params(torch.ones(1, dtype=torch.float64))
        return mu.item() * spread

    lo, hi = sigma_min * 1.0001, sigma_min * 1e8
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if terminal(mid) <= terminal_sd * delta else (mid, hi)
    return float(hi)


PAPER_HALF_INFORMATION_T = 0.75
"""The t at which the network input ``softmax(X_t) @ E`` shows half of the tokens under the
paper's defaults (σ_min 1.5, σ_max 200, d = 9, δ = 1) on a BERT-sized table: 0.754 measured
by :func:`icml26.smoothie.evaluation.half_information_time` on a random-like table of
V = 28,996 normalised 768-d rows (every token its own group; BERT itself is a download;
``benchmarks/smoothie/info_profile.py --bert``)."""


def fit_coef_d(
    embeddings: Tensor,
    groups: Tensor | None = None,
    *,
    target: float = PAPER_HALF_INFORMATION_T,
    recovery: float = 0.995,
    terminal_sd: float = 0.02,
    delta: float = 1.0,
    draws: int = 4,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``(coef_d, σ_min, σ_max)`` of the ``Arctan`` schedule re-fitted to a table
    (reconstructed; the paper's d = 9 belongs to 768-d BERT).

    σ_min and σ_max fix the endpoints (:func:`fit_sigmas`); d sets where in t the kernel
    widens. It is chosen (bisection on log d, σ re-fitted at each d) so that the network
    input keeps half of a token's group (``groups``: e.g. the concept of each row, ``< 0``
    for special tokens; default: each row its own) until ``t = target``, the time at which
    the paper's defaults lose half of the tokens on a BERT-sized table. Derived from the
    forward process only, never from a trained model.
    """
    from icml26.smoothie.evaluation import half_information_time
    from icml26.smoothie.space import ArctanSchedule, SmoothieSpace

    check_embeddings(embeddings)
    if not 0 < target < 1:
        raise ValueError(f"target must lie in (0, 1), got {target}")

    d2 = _sq_distances(embeddings)
    smin = _fit_sigma_min(d2, recovery)
    spread = (-d2 / (2 * smin**2)).std(-1).mean().item()
    del d2

    def t_half(d: float) -> tuple[float, float, float]:
        smax = _fit_sigma_max(spread, smin, d, delta, terminal_sd)
        space = SmoothieSpace(ArctanSchedule(d, delta, smin, smax))
        return half_information_time(space, embeddings, groups, draws=draws, seed=seed), smin, smax

    lo, hi = 0.25, 400.0
    if not t_half(lo)[0] <= target <= t_half(hi)[0]:
        raise ValueError(f"no d in [{lo}, {hi}] puts the half-information time at {target}")
    for _ in range(16):
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if t_half(mid)[0] >= target else (mid, hi)
    d = math.sqrt(lo * hi)
    _, smin, smax = t_half(d)
    return float(d), smin, smax


# -- the synonym-cluster task ----------------------------------------------------------------
@dataclass(frozen=True)
class SynonymTask:
    """C concepts × S synonyms, d-dim embeddings, sequences of ``min_len..max_len − 1`` tokens."""

    concepts: int = 60
    synonyms: int = 4
    dim: int = 64
    within_sd: float = 0.15
    max_len: int = 12
    min_len: int = 4
    transform: str = "map"  # "map" (concept c → π(c)) or "reverse-map"
    n_train: int = 20_000
    n_test: int = 256
    context_maps: int = 1  # K > 1: π_k with k = (previous source concept) mod K

    def __post_init__(self) -> None:
        if self.concepts < 2 or self.synonyms < 1 or self.dim < 1:
            raise ValueError("need ≥ 2 concepts, ≥ 1 synonym and a positive dimension")
        if not 1 <= self.min_len < self.max_len:
            raise ValueError(f"need 1 ≤ min_len < max_len, got {self.min_len}, {self.max_len}")
        if self.transform not in ("map", "reverse-map"):
            raise ValueError(f"transform must be 'map' or 'reverse-map', got {self.transform!r}")
        if isinstance(self.context_maps, bool) or not 1 <= self.context_maps <= self.concepts:
            raise ValueError(
                f"context_maps must be an integer in [1, concepts], got {self.context_maps!r}"
            )
        if self.n_train < 1 or self.n_test < 1:
            raise ValueError(f"need n_train, n_test ≥ 1, got {self.n_train}, {self.n_test}")


@dataclass
class Seq2Seq:
    """Token ids: ``src``, ``trg`` ``(N, L)``, ``src_mask`` (1 = token), plus the concept of
    every token id (``-2`` PAD, ``-1`` EOS), the vocabulary and, for text, its tokenizer."""

    vocab: Vocabulary
    embeddings: Tensor
    concept_of: Tensor
    train_src: Tensor
    train_trg: Tensor
    test_src: Tensor
    test_trg: Tensor
    tokenizer: object | None = None  # a tokenizers.Tokenizer when built from text

    def mask(self, src: Tensor) -> Tensor:
        return (src != self.vocab.pad_id).long()


def synonym_task(task: SynonymTask, rng: np.random.Generator) -> Seq2Seq:
    """Simulate the task (vocabulary ``2 + C·S``: PAD, EOS, then ``c{i}s{j}``)."""
    c, s, d = task.concepts, task.synonyms, task.dim
    tokens = [PAD, EOS] + [f"c{i}s{j}" for i in range(c) for j in range(s)]
    vocab = Vocabulary(tokens)
    centres = rng.standard_normal((c + 2, d))
    table = np.concatenate(
        [
            centres[:2],
            np.repeat(centres[2:], s, 0) + task.within_sd * rng.standard_normal((c * s, d)),
        ]
    )
    emb = normalize_embeddings(torch.tensor(table, dtype=torch.float32), vocab.special_ids)
    concept_of = torch.tensor([-2, -1] + [i for i in range(c) for _ in range(s)])  # PAD, EOS
    perm = rng.permutation(c)
    # K concept maps; the one applied at position i is chosen by the source concept at
    # i − 1 (the first position uses π_0): the target word depends on its context
    maps = np.stack([perm] + [rng.permutation(c) for _ in range(task.context_maps - 1)])

    def make(n: int) -> tuple[Tensor, Tensor]:
        src = np.full((n, task.max_len), vocab.pad_id)
        trg = np.full((n, task.max_len), vocab.pad_id)
        for row in range(n):
            length = int(rng.integers(task.min_len, task.max_len))
            conc = rng.integers(0, c, length)
            which = np.concatenate([[0], conc[:-1] % task.context_maps])
            out = maps[which, conc]
            if task.transform == "reverse-map":
                out = out[::-1]
            src[row, :length] = 2 + conc * s + rng.integers(0, s, length)
            trg[row, :length] = 2 + out * s + rng.integers(0, s, length)
            trg[row, length] = vocab.eos_id
            src[row, length] = vocab.eos_id if length < task.max_len else vocab.pad_id
        return torch.tensor(src), torch.tensor(trg)

    tr_src, tr_trg = make(task.n_train)
    te_src, te_trg = make(task.n_test)
    return Seq2Seq(vocab, emb, concept_of, tr_src, tr_trg, te_src, te_trg)


# -- loaders -------------------------------------------------------------------------------
def read_jsonl_pairs(path: str | Path) -> list[tuple[str, str]]:
    """``(src, trg)`` from a DiffuSeq-style JSONL file (one ``{"src": .., "trg": ..}`` a line)."""
    pairs = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{n}: not valid JSON ({err.msg})") from None
            if not isinstance(obj, dict) or "src" not in obj or "trg" not in obj:
                raise ValueError(f"{path}:{n}: a JSONL line needs the keys 'src' and 'trg'")
            if not isinstance(obj["src"], str) or not isinstance(obj["trg"], str):
                raise TypeError(f"{path}:{n}: 'src' and 'trg' must be strings")
            pairs.append((obj["src"], obj["trg"]))
    return pairs


def read_jsonl_splits(directory: str | Path) -> dict[str, list[tuple[str, str]]]:
    """The ``train``/``valid``/``test`` ``.jsonl`` files present in ``directory``."""
    directory = Path(directory)
    out = {
        s: read_jsonl_pairs(directory / f"{s}.jsonl")
        for s in ("train", "valid", "test")
        if (directory / f"{s}.jsonl").exists()
    }
    if not out:
        raise ValueError(f"no train/valid/test .jsonl files in {directory}")
    return out


def read_delimited_pairs(
    path: str | Path, *, delimiter: str | None = None, src: str = "src", trg: str = "trg"
) -> list[tuple[str, str]]:
    """``(src, trg)`` from a CSV/TSV file with a header naming the two columns."""
    path = Path(path)
    delimiter = delimiter or ("\t" if path.suffix in (".tsv", ".tab") else ",")
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh, delimiter=delimiter)
        if (
            reader.fieldnames is None
            or src not in reader.fieldnames
            or trg not in reader.fieldnames
        ):
            raise ValueError(
                f"{path}: header must name the columns {src!r} and {trg!r}, got {reader.fieldnames}"
            )
        return [(row[src], row[trg]) for row in reader]


def load_embeddings(path: str | Path, vocab: Vocabulary | int, *, normalize: bool = True) -> Tensor:
    """A ``.npy`` table (read with ``allow_pickle=False``) with one row per vocabulary token."""
    arr = np.load(path, allow_pickle=False)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{path}: embeddings must be numeric, got dtype {arr.dtype}")
    size = vocab if isinstance(vocab, int) else len(vocab)
    emb = check_embeddings(torch.tensor(arr, dtype=torch.float32), size)
    if normalize:
        specials = [] if isinstance(vocab, int) else vocab.special_ids
        emb = normalize_embeddings(emb, specials)
    return emb
