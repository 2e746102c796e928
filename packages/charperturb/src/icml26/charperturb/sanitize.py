"""Defences: the set-aware sanitiser and the one-line ``unicodedata`` strips.

A reviewer notes that stripping the variation-selector range is "one line of code"
[read]. The simplest strong baselines are therefore stdlib one-liners:

* :func:`strip_cf` — drop category Cf (format characters). It does **not** remove
  variation selectors: they are category Mn.
* :func:`strip_cf_vs` — Cf plus the two variation-selector ranges.
* :func:`nfkc` — Unicode NFKC normalisation (keeps variation selectors and most Cf).
* :func:`strip_cf_co_cn` — the rule of ``llm-guard``'s ``InvisibleText`` scanner (drop
  Cf, Co, Cn), re-implemented from its source because ``llm-guard`` 0.3.16 pins
  ``transformers==4.51.3`` and cannot join this workspace.

:func:`strip_charset` is the set-aware sanitiser: it deletes exactly the code points of
the inserted set, which inverts UCC-Inj exactly whenever the clean text held none of
them (:meth:`Perturbed.restore` inverts it exactly in every case, from the positions).
:func:`spell_correct` (``symspellpy``, extra ``spell``) is the typo baseline.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import cache

from icml26.charperturb.charsets import CharSet, get_charset
from icml26.charperturb.perturbation import check_text

__all__ = [
    "BASELINE_SANITIZERS",
    "nfkc",
    "spell_correct",
    "strip_cf",
    "strip_cf_co_cn",
    "strip_cf_vs",
    "strip_charset",
]

_VS = re.compile("[\ufe00-\ufe0f\U000e0100-\U000e01ef]")


@cache
def _table(charsets: tuple[CharSet, ...]) -> dict[int, None]:
    return {c: None for cs in charsets for c in cs.codepoints}


def strip_charset(text: str, charsets: str | CharSet | Iterable[str | CharSet] = "vs") -> str:
    """Delete every code point of the given set(s): the set-aware sanitiser."""
    text = check_text(text)
    if isinstance(charsets, str | CharSet):
        charsets = [charsets]
    sets = [get_charset(c) for c in charsets]
    if not sets:
        raise ValueError("strip_charset needs at least one character set")
    return text.translate(_table(tuple(sets)))


def strip_cf(text: str) -> str:
    """The one-liner ``"".join(c for c in s if unicodedata.category(c) != "Cf")``."""
    return "".join(c for c in check_text(text) if unicodedata.category(c) != "Cf")


def strip_cf_vs(text: str) -> str:
    """Cf plus the variation-selector ranges U+FE00–FE0F, U+E0100–E01EF (category Mn)."""
    return _VS.sub("", strip_cf(text))


def strip_cf_co_cn(text: str) -> str:
    """``llm-guard`` ``InvisibleText``'s rule: drop categories Cf, Co and Cn."""
    return "".join(c for c in check_text(text) if unicodedata.category(c) not in ("Cf", "Co", "Cn"))


def nfkc(text: str) -> str:
    """``unicodedata.normalize("NFKC", s)``."""
    return unicodedata.normalize("NFKC", check_text(text))


BASELINE_SANITIZERS: dict[str, Callable[[str], str]] = {
    "strip Cf": strip_cf,
    "strip Cf + VS": strip_cf_vs,
    "NFKC": nfkc,
    "strip Cf/Co/Cn (llm-guard rule)": strip_cf_co_cn,
}


@cache
def _symspell(max_edit: int):
    try:
        from importlib.resources import files

        from symspellpy import SymSpell
    except ImportError as err:  # pragma: no cover - extra not installed
        raise ImportError("spell_correct needs the `spell` extra (symspellpy)") from err
    sym = SymSpell(max_dictionary_edit_distance=max_edit, prefix_length=7)
    path = files("symspellpy").joinpath("frequency_dictionary_en_82_765.txt")
    sym.load_dictionary(str(path), term_index=0, count_index=1)
    return sym


def spell_correct(text: str, max_edit: int = 2) -> str:
    """Word-wise SymSpell correction of alphabetic words (case of the first letter kept);
    digits, punctuation and spacing stay as they are."""
    text = check_text(text)
    from symspellpy import Verbosity

    sym = _symspell(max_edit)

    def fix(m: re.Match) -> str:
        word = m.group()
        hits = sym.lookup(word.lower(), Verbosity.TOP, max_edit_distance=max_edit)
        if not hits:
            return word
        best = hits[0].term
        return best.capitalize() if word[0].isupper() else best

    return re.sub(r"[A-Za-z]+", fix, text)
