import numpy as np
import pytest

from icml26.prism.vocab import (
    AA_ORDER,
    CLS,
    EOS,
    GL_IDS,
    MASK,
    NGL_IDS,
    PAD,
    TOKENS,
    VOCAB_SIZE,
    Tokenizer,
    origin_labels,
    residue_ids,
    to_uppercase_ids,
)


def test_vocabulary_is_esm2_plus_twenty_lowercase():
    assert VOCAB_SIZE == 53
    assert TOKENS[:4] == ("<cls>", "<pad>", "<eos>", "<unk>")
    assert TOKENS[4:8] == ("L", "A", "G", "V")
    assert TOKENS[32] == "<mask>" and MASK == 32
    assert [TOKENS[i] for i in GL_IDS] == list(AA_ORDER)
    assert [TOKENS[i] for i in NGL_IDS] == list(AA_ORDER.lower())
    assert set(NGL_IDS.tolist()) == set(range(33, 53))
    np.testing.assert_array_equal(to_uppercase_ids(NGL_IDS), GL_IDS)


def test_tokenizer_unpaired_and_paired_layouts():
    tok = Tokenizer()
    ids = tok.encode("EVQ")
    assert ids.tolist() == [CLS, TOKENS.index("E"), TOKENS.index("V"), TOKENS.index("Q"), EOS]
    paired = tok.encode("EV", "DI")
    assert paired.tolist()[0] == CLS and paired.tolist()[3:5] == [CLS, CLS]
    assert paired.tolist()[-1] == EOS and len(paired) == 2 + 2 + 4
    enc = tok(["EVQ", "EVQLV"], ["DI", "DIQ"])
    assert enc.input_ids.shape == (2, 1 + 5 + 2 + 3 + 1)
    assert enc.input_ids[0, -1] == PAD and enc.attention_mask[0, -1] == 0
    assert enc.residue_mask.sum(1).tolist() == [5, 8]
    assert tok.decode(enc.input_ids[1]) == "EVQLV/DIQ"
    # lowercase is uppercased unless asked to keep it
    assert tok.encode("eV").tolist() == tok.encode("EV").tolist()
    kept = tok.encode("eV", preserve_case=True)
    assert kept[1] == TOKENS.index("e") and tok.decode(kept) == "eV"
    assert origin_labels("EvQ").tolist() == [False, True, False]


@pytest.mark.parametrize(("seq", "pos"), [("EVQB", 3), ("EV1Q", 2), ("J", 0), ("EVé", 2)])
def test_invalid_residue_names_its_position(seq, pos):
    with pytest.raises(ValueError, match=f"position {pos}"):
        residue_ids(seq)
    with pytest.raises(ValueError, match="light chain"):
        Tokenizer().encode("EVQ", seq)


def test_bad_arguments():
    with pytest.raises(ValueError, match="empty"):
        residue_ids("")
    with pytest.raises(TypeError):
        residue_ids(123)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="light chains"):
        Tokenizer()(["EV", "QV"], ["DI"])
