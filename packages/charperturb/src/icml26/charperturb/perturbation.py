"""The record every operator returns: the perturbed text and exactly what was done.

A :class:`Perturbed` keeps the source, the output, the operator's parameters and the
edits (inserted code points and their output positions for UCC-Inj; changed words for
typos and shuffling), so that a perturbation can be inverted exactly, logged as JSONL
metadata and its strength reported (share of words changed, invisible/visible ratio).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Perturbed", "check_probability", "check_text", "make_rng"]


def check_text(text: object, name: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    return text


def check_probability(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number in [0, 1], got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value}")
    return value


def make_rng(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A numpy Generator from a Generator or an int seed (None is refused: be explicit)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise TypeError(
        f"rng must be a numpy Generator or an int seed, got {type(rng).__name__}; "
        "randomness is explicit in this package"
    )


@dataclass(frozen=True)
class Perturbed:
    """One perturbed text with its metadata.

    ``positions``/``inserted`` (UCC-Inj): output index and character of every inserted
    code point, in order. ``words_changed``/``words_eligible`` (typos, shuffle): the
    share of words the operator actually changed (a shuffle may be the identity).
    """

    text: str
    source: str
    operator: str
    params: dict[str, Any] = field(default_factory=dict)
    positions: np.ndarray | None = None
    inserted: str = ""
    words_eligible: int = 0
    words_changed: int = 0
    edits: tuple[tuple[int, str, str], ...] = ()

    @property
    def n_inserted(self) -> int:
        return len(self.inserted)

    @property
    def invisible_ratio(self) -> float:
        """Inserted characters per source character (the paper's "several times" axis)."""
        return self.n_inserted / max(len(self.source), 1)

    @property
    def changed_share(self) -> float:
        """Share of eligible words the operator changed (0 when none were eligible)."""
        return self.words_changed / self.words_eligible if self.words_eligible else 0.0

    def char_map(self) -> np.ndarray:
        """Output position of every source character (identity for word operators)."""
        if self.positions is None:
            # word edits (start, old, new) in source order: shift by the length changes
            # so far; a character inside an edited word maps into the new word
            out = np.arange(len(self.source))
            shift = 0
            for a, old, new in sorted(self.edits):
                out[a + len(old) :] += len(new) - len(old)
                inside = np.arange(a, a + len(old))
                out[inside] = a + shift + np.minimum(inside - a, max(len(new) - 1, 0))
                shift += len(new) - len(old)
            return out
        keep = np.ones(len(self.text), dtype=bool)
        keep[self.positions] = False
        return np.flatnonzero(keep)

    def restore(self) -> str:
        """Invert an insertion exactly from the recorded positions (UCC-Inj only)."""
        if self.positions is None:
            raise ValueError(f"operator {self.operator!r} did not insert characters")
        keep = np.ones(len(self.text), dtype=bool)
        keep[self.positions] = False
        arr = np.frombuffer(self.text.encode("utf-32-le"), dtype="<u4")
        return arr[keep].tobytes().decode("utf-32-le")

    def metadata(self) -> dict[str, Any]:
        """JSON-ready description (inserted code points as ints, positions as a list)."""
        meta: dict[str, Any] = {"operator": self.operator, **self.params}
        if self.positions is not None:
            meta["n_inserted"] = self.n_inserted
            meta["invisible_ratio"] = self.invisible_ratio
            meta["positions"] = self.positions.tolist()
            meta["codepoints"] = [ord(c) for c in self.inserted]
        if self.words_eligible or self.edits:
            meta["words_eligible"] = self.words_eligible
            meta["words_changed"] = self.words_changed
            meta["changed_share"] = self.changed_share
            meta["edits"] = [list(e) for e in self.edits]
        return meta
