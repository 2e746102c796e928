"""In-word character shuffling (reconstructed operator).

The paper shuffles "the characters in each word" up to nearly every word [read]; the
operator is **reconstructed** [inferred]: ``round(q · n)`` of the n eligible words (chosen
uniformly without replacement) have their letters permuted uniformly, keeping the first
and last letter in place by default (typoglycemia) or not. A permutation may be the
identity (2–3-letter words with kept ends always are): the share of words actually
changed is reported, and :func:`hamming_edits` gives the edit count that the matched
random-replacement control uses.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

from icml26.charperturb.perturbation import Perturbed, check_probability, check_text, make_rng
from icml26.charperturb.typos import _apply, eligible_words

__all__ = ["hamming_edits", "shuffle_words"]


def shuffle_words(
    text: str,
    q: float,
    *,
    rng: np.random.Generator | int,
    keep_ends: bool = True,
    min_length: int = 1,
    alphabetic_only: bool = True,
    protect: Collection[str] = (),
) -> Perturbed:
    """Permute the letters of a fraction ``q`` of the eligible words."""
    text = check_text(text)
    q = check_probability(q, "q")
    rng = make_rng(rng)
    spans = eligible_words(
        text, min_length=min_length, alphabetic_only=alphabetic_only, protect=protect
    )
    n_pick = round(q * len(spans))
    picked = np.sort(rng.choice(len(spans), size=n_pick, replace=False)) if n_pick else []
    new_words, edits = {}, []
    for j in picked:
        a, b = spans[int(j)]
        word = text[a:b]
        if keep_ends and len(word) > 3:
            mid = list(word[1:-1])
            new = word[0] + "".join(mid[i] for i in rng.permutation(len(mid))) + word[-1]
        elif not keep_ends and len(word) > 1:
            new = "".join(word[i] for i in rng.permutation(len(word)))
        else:
            new = word
        if new != word:
            new_words[int(j)] = new
            edits.append((a, word, new))
    return Perturbed(
        text=_apply(text, spans, new_words),
        source=text,
        operator="shuffle",
        params={
            "q": q,
            "keep_ends": keep_ends,
            "min_length": min_length,
            "alphabetic_only": alphabetic_only,
        },
        words_eligible=len(spans),
        words_changed=len(new_words),
        edits=tuple(edits),
    )


def hamming_edits(p: Perturbed) -> int:
    """Characters a length-preserving perturbation changed (the shuffle's edit count)."""
    if len(p.text) != len(p.source):
        raise ValueError("hamming_edits needs a length-preserving perturbation")
    return sum(a != b for a, b in zip(p.text, p.source, strict=True))
