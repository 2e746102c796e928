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


def _table(pools: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """Per lower-case letter: its pool's code points (padded) and the pool size."""
    width = max(len(v) for v in pools.values())
    codes = np.zeros((26, width), dtype="<u4")
    sizes = np.zeros(26, dtype=np.int64)
    for c, pool in pools.items():
        i = ord(c) - 97
        codes[i, : len(pool)] = [ord(x) for x in pool]
        sizes[i] = len(pool)
    return codes, sizes


_ALL = dict.fromkeys(string.ascii_lowercase, string.ascii_lowercase)
_TABLES = {
    "qwerty": _table(QWERTY_NEIGHBOURS),
    "other": _table(_OTHER_LETTERS),
    "all": _table(_ALL),
}


def _letters(near: np.ndarray, u: np.ndarray, qwerty: bool, change: np.ndarray) -> np.ndarray:
    """:func:`_letter` on arrays: code points drawn by ``u`` for the ``near`` code points."""
    lower = near | 0x20
    ascii_letter = (lower >= 97) & (lower <= 122)
    li = np.where(ascii_letter, lower - 97, 0).astype(np.int64)
    out = np.empty(len(near), dtype="<u4")
    for name, mask in (
        ("qwerty", ascii_letter & qwerty),
        ("other", ascii_letter & ~np.asarray(qwerty) & change),
        ("all", ~(ascii_letter & (qwerty | change))),
    ):
        codes, sizes = _TABLES[name]
        n = sizes[li[mask]]
        out[mask] = codes[li[mask], np.minimum((u[mask] * n).astype(np.int64), n - 1)]
    upper = ascii_letter & (near <= 90)
    out[upper] -= 32
    for i in np.flatnonzero(~ascii_letter):  # other alphabets: the case of the letter
        if chr(near[i]).isupper():
            out[i] = ord(chr(out[i]).upper())
    return out


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
    # every draw and every edit on arrays of code points; Python only slices the changed
    # words for the edit record
    chosen = np.flatnonzero(rng.random(len(spans)) < p)
    m = chosen.size
    kind = np.array([_KIND_CODE[k] for k in kinds])[rng.integers(len(kinds), size=m)]
    u_pos, u_letter = rng.random(m), rng.random(m)
    ends = np.asarray(spans, dtype=np.int64).reshape(-1, 2)[chosen]
    start, length = ends[:, 0], ends[:, 1] - ends[:, 0]
    # positions: substitute/delete in [0, n), insert in [0, n], transpose in [0, n - 1)
    width = np.where(kind == 1, length + 1, np.where(kind == 3, np.maximum(length - 1, 1), length))
    where = start + np.minimum((u_pos * width).astype(np.int64), width - 1)
    src = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    # the letter a substitute replaces, or the one an insert follows (the first if at 0)
    near = src[np.where(kind == 1, np.maximum(where - 1, start), where)] if m else src[:0]
    letters = _letters(near, u_letter, qwerty, kind == 0)
    arr = src.copy()
    sub, ins, dele = kind == 0, kind == 1, kind == 2
    tra = (kind == 3) & (length >= 2)
    arr[where[sub]] = letters[sub]
    t = where[tra]
    arr[t], arr[t + 1] = src[t + 1], src[t]
    same = np.zeros(m, dtype=bool)
    same[tra] = src[t] == src[t + 1]  # transposing equal letters changes nothing
    changed = sub | ins | dele | (tra & ~same)
    keep = np.ones(len(arr), dtype=bool)
    keep[where[dele]] = False
    if ins.any():
        arr = np.insert(arr, where[ins], letters[ins])
        keep = np.insert(keep, where[ins], True)
    out = arr[keep].tobytes().decode("utf-32-le")
    # output start of every chosen word: its start shifted by the earlier length changes
    delta = ins.astype(np.int64) - dele
    out_start = start + np.cumsum(delta) - delta
    edits = [
        (a, text[a : a + n], out[c : c + n + d])
        for a, n, c, d in zip(
            start[changed].tolist(), length[changed].tolist(), out_start[changed].tolist(),
            delta[changed].tolist(), strict=True,
        )
    ]  # fmt: skip
    return Perturbed(
        text=out,
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
        words_changed=len(edits),
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
