import numpy as np
import pytest
import torch

from icml26.carve import CarveRouter, UnknownModelError


def _router():
    r = CarveRouter(16, 8, adapter_hidden=4, generator=torch.Generator().manual_seed(0))
    r.register(["org/a", "org/b", "org/c"], generator=torch.Generator().manual_seed(1))
    return r


def test_unknown_model_id_at_routing_time_is_an_error():
    r = _router()
    x = torch.randn(2, 16)
    assert set(r.route(x, candidates=["org/a", "org/c"])) <= {"org/a", "org/c"}
    with pytest.raises(UnknownModelError, match="org/zzz"):
        r.route(x, candidates=["org/a", "org/zzz"])
    with pytest.raises(UnknownModelError):
        r.indices("org/zzz")


def test_register_appends_rows_and_keeps_old_ones():
    r = _router()
    old = r.model_embeddings.weight.detach().clone()
    r.register(["org/d"])
    assert r.num_models == 4 and r.indices("org/d").item() == 3
    torch.testing.assert_close(r.model_embeddings.weight[:3], old)
    with pytest.raises(ValueError, match="already registered"):
        r.register(["org/a"])


def test_scores_are_cosines_over_tau_and_predict_respects_prefix():
    r = _router()
    x = torch.randn(5, 16)
    s = r.scores(x)
    assert s.abs().max() <= 1 / r.tau + 1e-4
    assert np.all(r.predict(x, n_models=2) < 2)
    np.testing.assert_array_equal(r.predict(x), s.argmax(1).numpy())
    with pytest.raises(ValueError, match="shape"):
        r.predict(torch.randn(2, 7))


def test_checkpoint_roundtrip_with_safetensors(tmp_path):
    r = _router()
    x = torch.randn(4, 16)
    r.save(tmp_path / "ckpt")
    back = CarveRouter.load(tmp_path / "ckpt", device="cpu")
    assert back.model_ids == r.model_ids
    torch.testing.assert_close(back.scores(x), r.scores(x))
    with pytest.raises(ValueError, match="no router checkpoint"):
        CarveRouter.load(tmp_path / "nothing")
