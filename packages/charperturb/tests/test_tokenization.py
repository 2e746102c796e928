import unicodedata

import pytest

from icml26.charperturb import inject_invisible
from icml26.charperturb.tokenization import (
    CallableTokenizer,
    aligned_survival,
    cl100k,
    drops_invisible,
    fragmentation,
    multiset_survival,
    qwen,
    survival_by_length,
)

S = "The quiet teacher found 7 books near the station."


@pytest.fixture(scope="module")
def tokenizers():
    return [cl100k(), qwen()]


def test_survival_definitions():
    assert multiset_survival([1, 2, 2, 3], [2, 9, 1]) == 0.5
    assert multiset_survival([], [1]) == 1.0
    # clean tokens 1@0, 2@2; noisy: 1 starts at the mapped 0, 2 is found at a wrong place
    assert aligned_survival(([1, 2], [0, 2]), ([1, 5, 2], [0, 1, 3]), [0, 1, 5]) == 0.5


def test_survival_by_token_length():
    # clean "ab,c": tokens 1@0 ("ab"), 2@2 (","), 3@3 ("c"); the noisy tokenization keeps
    # "," at its mapped place and loses "ab" and "c"
    clean, noisy = ([1, 2, 3], [0, 2, 3]), ([7, 2, 8], [0, 4, 5])
    share, one, longer = survival_by_length(clean, noisy, [0, 2, 4, 5], 4)
    assert share == pytest.approx(2 / 3) and one == 0.5 and longer == 0.0
    assert survival_by_length(([], []), ([], []), [], 0)[0] == 0.0


@pytest.mark.parametrize("name", ["vs", "tags"])
def test_noise_after_characters_never_splits_one_character_tokens(tokenizers, name):
    """Why UCC-Inj survival has a floor: every surviving clean token is one character."""
    p = inject_invisible(S, name, k=3, rng=0)
    for tok in tokenizers:
        f = fragmentation(tok, S, p.text, p.char_map())
        assert f.multichar_survival == 0.0
        assert f.single_char_survival == 1.0
        assert f.survival == pytest.approx(f.single_char_share)


def test_clean_text_is_unfragmented(tokenizers):
    for tok in tokenizers:
        f = fragmentation(tok, S, S)
        assert f.survival == 1.0 and f.inflation == 1.0
        assert f.clean_tokens_per_char < 0.35
        assert tok.decode(tok.encode(S)) == S


@pytest.mark.parametrize("name", ["vs", "zero_width", "tags"])
def test_k3_fragments_every_set(tokenizers, name):
    p = inject_invisible(S, name, k=3, rng=0)
    for tok in tokenizers:
        f = fragmentation(tok, S, p.text, p.char_map())
        assert f.tokens_per_visible_char >= 3 * f.clean_tokens_per_char
        assert f.survival <= f.multiset_survival
        assert f.survival < 0.3
        assert tok.decode(tok.encode(p.text)) == p.text  # byte-level BPE keeps the noise
        assert not drops_invisible(tok, name)


def test_a_normalising_tokenizer_is_detected():
    base = cl100k()

    def encode(s):
        s = "".join(c for c in unicodedata.normalize("NFKC", s) if unicodedata.category(c) != "Cf")
        return base.encode(s)

    fake = CallableTokenizer("stripping", encode, base.decode)
    assert drops_invisible(fake, "zero_width")
    assert not drops_invisible(fake, "vs")  # NFKC and a Cf strip keep variation selectors
    unk = CallableTokenizer(
        "unk",
        lambda s: [0 if ord(c) > 0x2000 else 1 for c in s],
        lambda ids: "".join("?" if i == 0 else "x" for i in ids),
    )
    assert drops_invisible(unk, "vs")
