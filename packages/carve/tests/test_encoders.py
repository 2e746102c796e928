import numpy as np
import pytest

from icml26.carve import HashedNgramEncoder, MiniLMEncoder, make_encoder


def test_hashed_encoder_is_deterministic_unit_norm_and_lexical():
    enc = HashedNgramEncoder(512)
    x = enc.encode(["detect cars in photos", "detect cars in photos", "read this article aloud"])
    assert x.shape == (3, 512) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(x[0], x[1])
    close = float(enc.encode(["detect cars in images"])[0] @ x[0])
    assert close > float(x[2] @ x[0]) + 0.3
    assert enc.encode([]).shape == (0, 512)


def test_encoders_reject_bad_input():
    with pytest.raises(TypeError, match="not a single string"):
        HashedNgramEncoder().encode("one sentence")
    with pytest.raises(TypeError, match="strings"):
        HashedNgramEncoder().encode(["ok", 3])
    with pytest.raises(ValueError):
        HashedNgramEncoder(dim=4)
    with pytest.raises(ValueError, match="unknown encoder"):
        make_encoder("bert")


@pytest.mark.slow
@pytest.mark.skipif(not MiniLMEncoder.available(), reason="needs the minilm extra")
def test_minilm_encoder_caches_on_disk(tmp_path):
    enc = MiniLMEncoder(tmp_path, device="cpu")
    x = enc.encode(["a cat sits on the mat", "a kitten is on the rug", "stock prices fell"])
    assert x.shape == (3, 384)
    assert x[0] @ x[1] > x[0] @ x[2] + 0.3
    again = MiniLMEncoder(tmp_path, device="cpu")
    again._model = "unused"  # a cache hit must not call the model
    np.testing.assert_allclose(again.encode(["a kitten is on the rug"])[0], x[1], rtol=1e-6)
