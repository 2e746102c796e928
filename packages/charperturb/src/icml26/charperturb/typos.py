"""In-word typos: one edit per chosen word (reconstructed operator).

The paper studies "numerous typos within words" [read]; the operator is **reconstructed**
[inferred]: each eligible word (alphabetic, length ≥ ``min_length``, not protected) is
chosen with probability ``p`` and receives one edit drawn uniformly from substitute /
insert / delete / adjacent transpose. With ``qwerty`` the substituted or inserted
letter is a QWERTY neighbour of the letter it replaces or follows. Digits, operators
and protected words (answer options) are never touched by default; the share of words
actually changed is reported (a transpose of equal letters is no change).
"""

from __future__ import annotations

import re
import string
from collections.abc import Collection

import numpy as np

from icml26.charperturb.perturbation import Perturbed, check_probability, check_text, make_rng

__all__ = ["QWERTY_NEIGHBOURS", "TYPO_KINDS", "add_typos", "eligible_words", "random_replacement"]

TYPO_KINDS = ("substitute", "insert", "delete", "transpose")
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _qwerty() -> dict[str, str]:
    pos = {c: (r, i) for r, row in enumerate(_ROWS) for i, c in enumerate(row)}
    out = {}
    for c, (r, i) in pos.items():
        out[c] = "".join(
            d for d, (r2, i2) in pos.items() if d != c and abs(r2 - r) <= 1 and abs(i2 - i) <= 1
        )
    return out


#: lower-case QWERTY neighbours (same row ±1 key, rows above/below ±1 key)
QWERTY_NEIGHBOURS = _qwerty()
_ALPHA = re.compile(r"[^\W\d_]+")
_ANY = re.compile(r"\S+")


def eligible_words(
    text: str, *, min_length: int = 1, alphabetic_only: bool = True, protect: Collection[str] = ()
) -> list[tuple[int, int]]:
    """(start, end) spans of the words an operator may touch."""
    pattern = _ALPHA if alphabetic_only else _ANY
    protected = set(protect)
    return [
        m.span()
        for m in pattern.finditer(text)
        if len(m.group()) >= min_length and m.group() not in protected
    ]


def _match_case(new: str, old: str) -> str:
    return new.upper() if old.isupper() else new


def _letter(rng: np.random.Generator, near: str | None, qwerty: bool) -> str:
    if qwerty and near is not None and near.lower() in QWERTY_NEIGHBOURS:
        pool = QWERTY_NEIGHBOURS[near.lower()]
        return _match_case(pool[rng.integers(len(pool))], near)
    c = string.ascii_lowercase[rng.integers(26)]
    return _match_case(c, near) if near is not None else c


def _one_typo(word: str, kind: str, rng: np.random.Generator, qwerty: bool) -> str:
    n = len(word)
    if kind == "substitute":
        i = int(rng.integers(n))
        # a substitute always changes the letter
        for _ in range(8):
            c = _letter(rng, word[i], qwerty)
            if c != word[i]:
                break
        return word[:i] + c + word[i + 1 :]
    if kind == "insert":
        i = int(rng.integers(n + 1))
        return word[:i] + _letter(rng, word[max(i - 1, 0)], qwerty) + word[i:]
    if kind == "delete":
        i = int(rng.integers(n))
        return word[:i] + word[i + 1 :]
    if n < 2:
        return word
    i = int(rng.integers(n - 1))
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def _apply(text: str, spans: list[tuple[int, int]], new_words: dict[int, str]) -> str:
    parts, last = [], 0
    for j, (a, b) in enumerate(spans):
        if j in new_words:
            parts += [text[last:a], new_words[j]]
            last = b
    parts.append(text[last:])
    return "".join(parts)


def add_typos(
    text: str,
    p: float,
    *,
    rng: np.random.Generator | int,
    qwerty: bool = False,
    kinds: Collection[str] = TYPO_KINDS,
    min_length: int = 4,
    alphabetic_only: bool = True,
    protect: Collection[str] = (),
) -> Perturbed:
    """One typo in each eligible word with probability ``p`` (``p = 1``: every word)."""
    text = check_text(text)
    p = check_probability(p, "p")
    rng = make_rng(rng)
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in TYPO_KINDS]
    if unknown or not kinds:
        raise ValueError(f"typo kinds must be a non-empty subset of {TYPO_KINDS}, got {kinds}")
    spans = eligible_words(
        text, min_length=min_length, alphabetic_only=alphabetic_only, protect=protect
    )
    chosen = rng.random(len(spans)) < p
    new_words, edits = {}, []
    for j in np.flatnonzero(chosen):
        a, b = spans[j]
        kind = kinds[int(rng.integers(len(kinds)))]
        new = _one_typo(text[a:b], kind, rng, qwerty)
        if new != text[a:b]:
            new_words[int(j)] = new
            edits.append((a, text[a:b], new))
    return Perturbed(
        text=_apply(text, spans, new_words),
        source=text,
        operator="typos",
        params={
            "p": p,
            "qwerty": qwerty,
            "kinds": list(kinds),
            "min_length": min_length,
            "alphabetic_only": alphabetic_only,
        },
        words_eligible=len(spans),
        words_changed=len(new_words),
        edits=tuple(edits),
    )


def random_replacement(
    text: str,
    n_edits: int,
    *,
    rng: np.random.Generator | int,
    min_length: int = 1,
    alphabetic_only: bool = True,
    protect: Collection[str] = (),
) -> Perturbed:
    """The matched control: replace ``n_edits`` random letters of eligible words with
    random letters (used at the shuffle's measured edit rate)."""
    text = check_text(text)
    if isinstance(n_edits, bool) or not isinstance(n_edits, int | np.integer) or n_edits < 0:
        raise ValueError(f"n_edits must be a non-negative int, got {n_edits!r}")
    rng = make_rng(rng)
    spans = eligible_words(
        text, min_length=min_length, alphabetic_only=alphabetic_only, protect=protect
    )
    slots = np.array([i for a, b in spans for i in range(a, b)], dtype=np.int64)
    n = min(int(n_edits), slots.size)
    where = np.sort(rng.choice(slots, size=n, replace=False)) if n else slots[:0]
    chars = list(text)
    edits = []
    for i in where:
        old = chars[i]
        new = old
        while new == old:
            new = _match_case(string.ascii_lowercase[rng.integers(26)], old)
        chars[i] = new
        edits.append((int(i), old, new))
    touched = {j for j, (a, b) in enumerate(spans) if any(a <= e[0] < b for e in edits)}
    return Perturbed(
        text="".join(chars),
        source=text,
        operator="random_replacement",
        params={"n_edits": n},
        words_eligible=len(spans),
        words_changed=len(touched),
        edits=tuple(edits),
    )
