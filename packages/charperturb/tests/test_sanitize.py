import pytest

from icml26.charperturb import (
    CHARSETS,
    inject_invisible,
    nfkc,
    strip_cf,
    strip_cf_co_cn,
    strip_cf_vs,
    strip_charset,
)
from icml26.charperturb.tasks import sentences

TEXTS = sentences(50, 0)


@pytest.mark.parametrize("name", list(CHARSETS))
def test_set_aware_sanitiser_inverts_insertion_exactly(name):
    for i, s in enumerate(TEXTS):
        p = inject_invisible(s, name, k_min=0, k_max=4, rng=i)
        assert strip_charset(p.text, name) == s
        assert p.restore() == s


def test_cf_only_strip_leaves_variation_selectors():
    p = inject_invisible(TEXTS[0], "vs", k=3, rng=0)
    left = strip_cf(p.text)
    assert left == p.text  # every VS survives
    assert nfkc(p.text) != TEXTS[0]
    assert strip_cf_vs(p.text) == TEXTS[0]


@pytest.mark.parametrize("name", ["zero_width", "tags", "soft_hyphen", "bidi"])
def test_cf_strip_removes_the_cf_sets(name):
    p = inject_invisible(TEXTS[1], name, k=2, rng=1)
    assert strip_cf(p.text) == TEXTS[1]
    assert strip_cf_co_cn(p.text) == TEXTS[1]


def test_sanitiser_is_set_aware_only():
    s = "a\u200bb\ufe0fc"
    assert strip_charset(s, "vs") == "a\u200bbc"
    assert strip_charset(s, ["vs", "zero_width"]) == "abc"
    with pytest.raises(ValueError, match="unknown character set"):
        strip_charset(s, "nope")
    with pytest.raises(TypeError):
        strip_charset(None, "vs")


def test_restore_refuses_word_operators():
    from icml26.charperturb import shuffle_words

    with pytest.raises(ValueError):
        shuffle_words("hello world", 1.0, rng=0).restore()


@pytest.mark.slow  # loading SymSpell's 82k-word dictionary takes ~25 s
def test_spell_correct_fixes_simple_typos():
    pytest.importorskip("symspellpy")
    from icml26.charperturb import spell_correct

    assert spell_correct("The captial of Frnace is 12") == "The capital of France is 12"
