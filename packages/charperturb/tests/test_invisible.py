import unicodedata

import numpy as np
import pytest

from icml26.charperturb import CHARSETS, get_charset, inject_invisible, inject_visible

TEXT = "The capital of France is Paris, 12 + 30 = 42."


def test_seeded_determinism_and_difference():
    a = inject_invisible(TEXT, "vs", k=3, rng=5)
    b = inject_invisible(TEXT, "vs", k=3, rng=5)
    c = inject_invisible(TEXT, "vs", k=3, rng=6)
    assert a.text == b.text and np.array_equal(a.positions, b.positions)
    assert a.text != c.text


@pytest.mark.parametrize("name", list(CHARSETS))
@pytest.mark.parametrize("k", [0, 1, 3])
def test_fixed_k_inserts_exactly_k_after_every_char(name, k):
    p = inject_invisible(TEXT, name, k=k, rng=0)
    noise = set(get_charset(name).chars)
    assert p.n_inserted == k * len(TEXT) == len(p.text) - len(TEXT)
    # after each source character come exactly k characters of the set
    i = 0
    for ch in TEXT:
        assert p.text[i] == ch
        assert all(c in noise for c in p.text[i + 1 : i + 1 + k])
        i += 1 + k
    assert p.restore() == TEXT
    assert all(p.text[j] in noise for j in p.positions)


def test_randomised_and_poisson_counts():
    p = inject_invisible(TEXT, "zero_width", k_min=1, k_max=4, rng=1)
    assert len(TEXT) <= p.n_inserted <= 4 * len(TEXT)
    assert p.params["k_min"] == 1 and p.restore() == TEXT
    q = inject_invisible(TEXT * 20, "tags", poisson=2.0, rng=2)
    assert abs(q.invisible_ratio - 2.0) < 0.3
    assert q.restore() == TEXT * 20


def test_skip_whitespace_and_set_size():
    p = inject_invisible("a b", "vs", k=2, skip_whitespace=True, set_size=2, rng=0)
    assert p.text[3] == " " and p.text[4] == "b"
    assert set(p.inserted) <= {"\ufe00", "\ufe01"}
    full = inject_invisible(TEXT * 10, "vs", k=3, set_size=4, rng=0)
    assert len(set(full.inserted)) == 4


def test_visible_control_uses_the_same_positions():
    a = inject_invisible(TEXT, "vs", k_min=0, k_max=3, set_size=10, rng=3)
    b = inject_visible(TEXT, k_min=0, k_max=3, rng=3)
    assert np.array_equal(a.positions, b.positions)
    assert all(unicodedata.category(c)[0] in "PS" for c in b.inserted)


@pytest.mark.parametrize("name", list(CHARSETS))
def test_each_set_has_its_documented_category(name):
    cs = get_charset(name)
    assert cs.categories() == {cs.category}


def test_variation_selectors_are_mn_not_cf():
    assert get_charset("vs").categories() == {"Mn"}
    assert unicodedata.normalize("NFKC", "a\ufe0f") == "a\ufe0f"


def test_metadata_round_trip():
    p = inject_invisible("ab", "bidi", k=1, rng=0)
    m = p.metadata()
    assert m["positions"] == [1, 3] and len(m["codepoints"]) == 2
    assert m["charset"] == "bidi" and m["k"] == 1


@pytest.mark.parametrize(
    ("kwargs", "err"),
    [
        ({"k": -1}, ValueError),
        ({"k_min": 3, "k_max": 1}, ValueError),
        ({"k_min": 1}, ValueError),
        ({"k": 1, "poisson": 1.0}, ValueError),
        ({"k": 1.5}, TypeError),
        ({"poisson": -1.0}, ValueError),
        ({"k": 1, "set_size": 0}, ValueError),
        ({"k": 1, "set_size": 257}, ValueError),
    ],
)
def test_bad_parameters(kwargs, err):
    with pytest.raises(err):
        inject_invisible(TEXT, "vs", rng=0, **kwargs)


def test_bad_inputs():
    with pytest.raises(ValueError, match="unknown character set"):
        inject_invisible(TEXT, "emoji", k=1, rng=0)
    with pytest.raises(TypeError, match="must be a str"):
        inject_invisible(b"bytes", "vs", k=1, rng=0)
    with pytest.raises(TypeError, match="rng"):
        inject_invisible(TEXT, "vs", k=1, rng=None)
    with pytest.raises(ValueError, match="set_size"):
        inject_invisible(TEXT, "zero_width", k=1, set_size=6, rng=0)
