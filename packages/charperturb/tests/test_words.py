import re
from collections import Counter

import pytest

from icml26.charperturb import add_typos, hamming_edits, random_replacement, shuffle_words

TEXT = "Tom has 12 apples and 7 bananas; 12 + 7 = 19. Option Paris or Berlin."


def _digits_ops(s):
    return re.findall(r"[\d+=;.]", s)


def test_shuffle_keeps_multisets_and_ends():
    p = shuffle_words(TEXT * 3, 1.0, rng=0)
    src, out = re.findall(r"\S+", p.source), re.findall(r"\S+", p.text)
    assert len(src) == len(out)
    for a, b in zip(src, out, strict=True):
        assert Counter(a) == Counter(b)
        assert a[0] == b[0] and a[-1] == b[-1]
    assert p.words_changed > 0 and 0 < p.changed_share <= 1
    assert hamming_edits(p) > 0


def test_shuffle_without_kept_ends_moves_ends_sometimes():
    p = shuffle_words("abcdefgh " * 30, 1.0, rng=1, keep_ends=False)
    words = p.text.split()
    assert any(w[0] != "a" or w[-1] != "h" for w in words)
    assert all(sorted(w) == list("abcdefgh") for w in words)


def test_fraction_q():
    p = shuffle_words("alpha bravo charlie delta echo foxtrot golf hotel", 0.5, rng=0)
    assert p.words_eligible == 8
    assert p.words_changed <= 4
    assert shuffle_words(TEXT, 0.0, rng=0).text == TEXT


@pytest.mark.parametrize("op", ["typos", "shuffle"])
def test_digits_operators_and_options_untouched(op):
    for seed in range(10):
        if op == "typos":
            p = add_typos(TEXT, 1.0, rng=seed, protect=("Paris", "Berlin"))
        else:
            p = shuffle_words(TEXT, 1.0, rng=seed, protect=("Paris", "Berlin"))
        assert _digits_ops(p.text) == _digits_ops(TEXT)
        assert "Paris" in p.text and "Berlin" in p.text


def test_typos_change_every_long_word_at_p1():
    p = add_typos("alpha bravo charlie delta", 1.0, rng=0, kinds=("substitute",))
    assert p.words_changed == p.words_eligible == 4
    assert all(
        a != b for a, b in zip(p.text.split(), ["alpha", "bravo", "charlie", "delta"], strict=True)
    )
    assert add_typos(TEXT, 0.0, rng=0).text == TEXT


def test_qwerty_substitutions_are_neighbours():
    from icml26.charperturb.typos import QWERTY_NEIGHBOURS

    p = add_typos("aaaa ssss dddd ffff", 1.0, rng=3, qwerty=True, kinds=("substitute",))
    for src, out in zip(["aaaa", "ssss", "dddd", "ffff"], p.text.split(), strict=True):
        diff = [c for a, c in zip(src, out, strict=True) if a != c]
        assert len(diff) == 1 and diff[0] in QWERTY_NEIGHBOURS[src[0]]


def test_typo_determinism():
    assert add_typos(TEXT, 0.7, rng=4).text == add_typos(TEXT, 0.7, rng=4).text


def test_random_replacement_matches_edit_count():
    s = shuffle_words(TEXT * 2, 1.0, rng=2)
    n = hamming_edits(s)
    r = random_replacement(TEXT * 2, n, rng=2)
    assert hamming_edits(r) == n
    assert _digits_ops(r.text) == _digits_ops(TEXT * 2)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_probabilities_outside_unit_interval(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        add_typos(TEXT, bad, rng=0)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        shuffle_words(TEXT, bad, rng=0)


def test_type_errors():
    with pytest.raises(TypeError):
        add_typos(123, 0.5, rng=0)
    with pytest.raises(TypeError):
        shuffle_words(TEXT, "0.5", rng=0)
    with pytest.raises(ValueError, match="kinds"):
        add_typos(TEXT, 0.5, rng=0, kinds=("swap",))


def test_char_map_follows_length_changing_typos():
    src = "alpha bravo charlie delta"
    for seed in range(20):
        p = add_typos(src, 1.0, rng=seed)
        m = p.char_map()
        assert len(m) == len(src) and all(m[i] <= m[i + 1] for i in range(len(m) - 1))
        for i, c in enumerate(src):
            if c == " ":
                assert p.text[m[i]] == " "


def _one_edit_apart(a, b):
    """a → b by one substitute, insert, delete or adjacent transpose."""
    if len(a) == len(b):
        d = [i for i in range(len(a)) if a[i] != b[i]]
        return len(d) == 1 or (len(d) == 2 and d[1] == d[0] + 1 and a[d[0]] == b[d[1]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return len(long_) == len(short) + 1 and any(
        long_[:i] + long_[i + 1 :] == short for i in range(len(long_))
    )


@pytest.mark.parametrize("qwerty", [False, True])
def test_every_typo_is_one_edit_and_the_record_rebuilds_the_text(qwerty):
    src = "Quick Brown foxes jump over lazy dogs; Ärger über Größe, 42 times. " * 5
    for seed in range(15):
        p = add_typos(src, 0.8, rng=seed, qwerty=qwerty)
        rebuilt, last = [], 0
        for a, old, new in p.edits:
            assert src[a : a + len(old)] == old and _one_edit_apart(old, new), (old, new)
            diff = [i for i in range(len(old)) if len(old) == len(new) and old[i] != new[i]]
            if len(diff) == 1:  # a substitute keeps the case of the letter it replaces
                assert old[diff[0]].isupper() == new[diff[0]].isupper()
            rebuilt += [src[last:a], new]
            last = a + len(old)
        assert "".join([*rebuilt, src[last:]]) == p.text
        assert p.words_changed == len(p.edits) and _digits_ops(p.text) == _digits_ops(src)
