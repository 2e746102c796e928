"""The invisible-character sets of the UCC-Inj operator and their Unicode categories.

The ICLR version of the paper inserts **Variation Selectors**; the ICML version studies
the noise *type* and the *set size* as factors [read]. The concrete sets below are the
brief's reconstruction [inferred]:

==============  =====================================================  ==========
name            code points                                            category
==============  =====================================================  ==========
``vs``          U+FE00–FE0F (VS1–16) and U+E0100–E01EF (VS17–256)      Mn
``zero_width``  U+200B, U+200C, U+200D, U+2060, U+FEFF                 Cf
``tags``        U+E0001, U+E0020–E007F                                 Cf
``soft_hyphen`` U+00AD                                                 Cf
``bidi``        U+202A–202E, U+2066–2069                               Cf
==============  =====================================================  ==========

Variation selectors are category **Mn** (non-spacing marks), not Cf, and NFKC keeps
them: a "strip Cf" sanitiser leaves the paper's main noise in place.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

__all__ = ["CHARSETS", "CharSet", "get_charset"]


@dataclass(frozen=True)
class CharSet:
    """A named, ordered set of invisible code points and the category they all have."""

    name: str
    codepoints: tuple[int, ...]
    category: str
    description: str

    def __post_init__(self) -> None:
        if not self.codepoints:
            raise ValueError(f"character set {self.name!r} is empty")
        if len(set(self.codepoints)) != len(self.codepoints):
            raise ValueError(f"character set {self.name!r} repeats a code point")

    @property
    def size(self) -> int:
        return len(self.codepoints)

    @property
    def chars(self) -> tuple[str, ...]:
        return tuple(chr(c) for c in self.codepoints)

    def subset(self, set_size: int | None) -> tuple[str, ...]:
        """The first ``set_size`` characters (all when None): the ``set_size`` factor."""
        if set_size is None:
            return self.chars
        if isinstance(set_size, bool) or not isinstance(set_size, int):
            raise TypeError(f"set_size must be an int or None, got {type(set_size).__name__}")
        if not 1 <= set_size <= self.size:
            raise ValueError(
                f"set_size must lie in [1, {self.size}] for set {self.name!r}, got {set_size}"
            )
        return self.chars[:set_size]

    def categories(self) -> set[str]:
        """The Unicode general categories of the set's code points (as the stdlib knows them)."""
        return {unicodedata.category(c) for c in self.chars}


CHARSETS: dict[str, CharSet] = {
    "vs": CharSet(
        "vs",
        tuple(range(0xFE00, 0xFE10)) + tuple(range(0xE0100, 0xE01F0)),
        "Mn",
        "variation selectors VS1–VS256 (the ICLR version's noise)",
    ),
    "zero_width": CharSet(
        "zero_width",
        (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF),
        "Cf",
        "zero-width space, non-joiner, joiner, word joiner, BOM",
    ),
    "tags": CharSet(
        "tags",
        (917505, *tuple(range(917536, 917632))),
        "Cf",
        "language tag and tag characters",
    ),
    "soft_hyphen": CharSet("soft_hyphen", (0x00AD,), "Cf", "soft hyphen"),
    "bidi": CharSet(
        "bidi",
        tuple(range(0x202A, 0x202F)) + tuple(range(0x2066, 0x206A)),
        "Cf",
        "bidirectional embedding, override and isolate controls",
    ),
}


def get_charset(name: str | CharSet) -> CharSet:
    """A :class:`CharSet` by name (``vs``, ``zero_width``, ``tags``, ``soft_hyphen``, ``bidi``)."""
    if isinstance(name, CharSet):
        return name
    if not isinstance(name, str):
        raise TypeError(f"character set must be a name or a CharSet, got {type(name).__name__}")
    try:
        return CHARSETS[name]
    except KeyError:
        raise ValueError(
            f"unknown character set {name!r}; known sets: {', '.join(CHARSETS)}"
        ) from None
