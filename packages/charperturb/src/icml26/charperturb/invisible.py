"""UCC-Inj: invisible characters inserted after every input character.

The paper's operator [read] inserts invisible Unicode characters (variation selectors in
its ICLR version) **after each input character**; its noise factors are the number of
noise characters per input character, the noise type, the set size and randomised
insertion counts. The parameterisation here is **reconstructed** (the paper gives no
code):

* after character i insert ``k_i`` characters, with ``k_i = k`` (fixed), ``k_i ~ U{k_min
  … k_max}`` (randomised counts) or ``k_i ~ Poisson(λ)`` (a variant, not the default);
* each inserted character is drawn uniformly from the first ``set_size`` code points of
  the chosen set (:mod:`icml26.charperturb.charsets`);
* spaces count as characters unless ``skip_whitespace``;
* every inserted code point and its output position is recorded, so
  :meth:`Perturbed.restore` inverts the insertion exactly.
"""

from __future__ import annotations

import numpy as np

from icml26.charperturb.charsets import CharSet, get_charset
from icml26.charperturb.perturbation import Perturbed, check_text, make_rng

__all__ = ["VISIBLE_NOISE", "inject_invisible", "inject_visible"]

#: the matched visible-noise control: random printable ASCII symbols that no word,
#: number or operator uses, so the control adds "more characters" without new words
VISIBLE_NOISE = CharSet("visible", tuple(ord(c) for c in "~^`|#@$&_\\"), "Po/Sm/Sk", "visible")


def _check_count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return int(value)


def _counts(
    n: int,
    rng: np.random.Generator,
    k: int | None,
    k_min: int | None,
    k_max: int | None,
    poisson: float | None,
) -> tuple[np.ndarray, dict]:
    modes = sum(x is not None for x in (k, poisson)) + (k_min is not None or k_max is not None)
    if modes != 1:
        raise ValueError("give exactly one of k, (k_min, k_max) or poisson")
    if k is not None:
        k = _check_count(k, "k")
        return np.full(n, k, dtype=np.int64), {"k": k}
    if poisson is not None:
        if isinstance(poisson, bool) or not isinstance(poisson, int | float):
            raise TypeError(f"poisson must be a number, got {type(poisson).__name__}")
        if not np.isfinite(poisson) or poisson < 0:
            raise ValueError(f"poisson rate must be finite and >= 0, got {poisson}")
        return rng.poisson(float(poisson), n).astype(np.int64), {"poisson": float(poisson)}
    if k_min is None or k_max is None:
        raise ValueError("randomised counts need both k_min and k_max")
    k_min, k_max = _check_count(k_min, "k_min"), _check_count(k_max, "k_max")
    if k_min > k_max:
        raise ValueError(f"k_min must be <= k_max, got k_min={k_min} > k_max={k_max}")
    return rng.integers(k_min, k_max + 1, n, dtype=np.int64), {"k_min": k_min, "k_max": k_max}


def inject_invisible(
    text: str,
    charset: str | CharSet = "vs",
    *,
    k: int | None = None,
    k_min: int | None = None,
    k_max: int | None = None,
    poisson: float | None = None,
    set_size: int | None = None,
    skip_whitespace: bool = False,
    rng: np.random.Generator | int,
) -> Perturbed:
    """Insert invisible characters after every character of ``text`` (UCC-Inj).

    Exactly one of ``k`` (fixed count), ``k_min``/``k_max`` (uniform random count per
    character, inclusive) or ``poisson`` (rate λ; variant) chooses the counts. ``k=3``
    is the default when none is given.

    >>> p = inject_invisible("ab", "zero_width", k=2, set_size=1, rng=0)
    >>> [hex(ord(c)) for c in p.text], p.restore()
    (['0x61', '0x200b', '0x200b', '0x62', '0x200b', '0x200b'], 'ab')
    """
    text = check_text(text)
    cs = get_charset(charset)
    chars = cs.subset(set_size)
    rng = make_rng(rng)
    if k is None and k_min is None and k_max is None and poisson is None:
        k = 3
    counts, params = _counts(len(text), rng, k, k_min, k_max, poisson)
    src = np.frombuffer(text.encode("utf-32-le"), dtype="<u4")
    if skip_whitespace and len(text):
        counts[np.array([c.isspace() for c in text], dtype=bool)] = 0
    total = int(counts.sum())
    pool = np.array([ord(c) for c in chars], dtype="<u4")
    noise = pool[rng.integers(0, len(pool), total)] if total else np.empty(0, dtype="<u4")
    # source char i lands at i + (insertions before it); its k_i noise chars follow it
    starts = np.arange(len(src)) + np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    out = np.empty(len(src) + total, dtype="<u4")
    is_src = np.zeros(out.size, dtype=bool)
    is_src[starts] = True
    out[starts] = src
    out[~is_src] = noise
    positions = np.flatnonzero(~is_src)
    params |= {
        "charset": cs.name,
        "set_size": len(chars),
        "skip_whitespace": bool(skip_whitespace),
    }
    return Perturbed(
        text=out.tobytes().decode("utf-32-le"),
        source=text,
        operator="ucc_inj" if cs is not VISIBLE_NOISE else "visible_noise",
        params=params,
        positions=positions,
        inserted=noise.tobytes().decode("utf-32-le"),
    )


def inject_visible(
    text: str,
    *,
    k: int | None = None,
    k_min: int | None = None,
    k_max: int | None = None,
    poisson: float | None = None,
    skip_whitespace: bool = False,
    rng: np.random.Generator | int,
) -> Perturbed:
    """The matched visible-noise control: the same counts, visible symbols instead.

    With the same seed and count parameters it inserts at exactly the positions
    :func:`inject_invisible` would, so "more characters" is separated from "fragmented
    invisible tokens".
    """
    return inject_invisible(
        text, VISIBLE_NOISE, k=k, k_min=k_min, k_max=k_max, poisson=poisson,
        skip_whitespace=skip_whitespace, rng=rng,
    )  # fmt: skip
