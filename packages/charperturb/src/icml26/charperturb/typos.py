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


#: the 25 lower-case letters other than each letter (a substitute always changes it)
_OTHER_LETTERS = {c: string.ascii_lowercase.replace(c, "") for c in string.ascii_lowercase}
_KIND_CODE = {k: i for i, k in enumerate(TYPO_KINDS)}


def _letter(near: str, u: float, qwerty: bool, change: bool) -> str:
    """A letter drawn by the uniform ``u``: a QWERTY neighbour of ``near`` (``qwerty``),
    else any letter but ``near`` (``change``) or any letter; in ``near``'s case."""
    low = near.lower()
    if qwerty and low in QWERTY_NEIGHBOURS:
        pool = QWERTY_NEIGHBOURS[low]
    elif change and low in _OTHER_LETTERS:
        pool = _OTHER_LETTERS[low]
    else:
        pool = string.ascii_lowercase
    c = pool[int(u * len(pool))]
    return c.upper() if near.isupper() else c


def _apply(text: str, spans: list[tuple[int, int]], new_words: dict[int, str]) -> str:
    parts, last = [], 0
    for j in sorted(new_words):
        a, b = spans[j]
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
    # every random draw at once (vectorised); only the string surgery is per word
    chosen = np.flatnonzero(rng.random(len(spans)) < p)
    m = chosen.size
    kind = np.array([_KIND_CODE[k] for k in kinds])[rng.integers(len(kinds), size=m)]
    u_pos, u_letter = rng.random(m), rng.random(m)
    ends = np.asarray(spans, dtype=np.int64).reshape(-1, 2)[chosen]
    length = ends[:, 1] - ends[:, 0]
    # positions: substitute/delete in [0, n), insert in [0, n], transpose in [0, n - 1)
    width = np.where(kind == 1, length + 1, np.where(kind == 3, np.maximum(length - 1, 1), length))
    where = np.minimum((u_pos * width).astype(np.int64), width - 1)
    new_words, edits = {}, []
    for j, (a, b), k, i, u in zip(
        chosen.tolist(), ends.tolist(), kind.tolist(), where.tolist(), u_letter.tolist(),
        strict=True,
    ):  # fmt: skip
        word = text[a:b]
        if k == 0:  # substitute
            new = word[:i] + _letter(word[i], u, qwerty, True) + word[i + 1 :]
        elif k == 1:  # insert after the letter before (a neighbour of it with QWERTY)
            new = word[:i] + _letter(word[max(i - 1, 0)], u, qwerty, False) + word[i:]
        elif k == 2:  # delete
            new = word[:i] + word[i + 1 :]
        elif len(word) >= 2:  # adjacent transpose
            new = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        else:
            new = word
        if new != word:
            new_words[j] = new
            edits.append((a, word, new))
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
    starts = np.asarray([a for a, _ in spans], dtype=np.int64)
    lengths = np.asarray([b - a for a, b in spans], dtype=np.int64)
    # every character index inside an eligible word, without a per-character loop
    slots = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    n = min(int(n_edits), slots.size)
    where = np.sort(rng.choice(slots, size=n, replace=False)) if n else slots[:0]
    chars = list(text)
    edits = []
    for i, u in zip(where.tolist(), rng.random(n).tolist(), strict=True):
        old = chars[i]
        chars[i] = new = _letter(old, u, False, True)
        edits.append((i, old, new))
    # the word each edit falls in (spans are sorted and disjoint)
    touched = set((np.searchsorted(starts, where, side="right") - 1).tolist())
    return Perturbed(
        text="".join(chars),
        source=text,
        operator="random_replacement",
        params={"n_edits": n},
        words_eligible=len(spans),
        words_changed=len(touched),
        edits=tuple(edits),
    )
