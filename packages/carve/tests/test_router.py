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


def test_bad_queries_get_clear_errors_not_row_zero():
    r = _router()
    good = torch.randn(3, 16)
    for bad, match in [
        (torch.full((1, 16), float("nan")), "NaN"),
        (torch.tensor([[float("inf")] * 16]), "NaN or inf"),
        (torch.zeros(2, 16), "all-zero"),
        (torch.ones(2, 16, dtype=torch.long), None),
    ]:
        with pytest.raises((ValueError, TypeError), match=match):
            r.predict(torch.cat([good, bad.to(good.dtype)]) if match else bad)
    with pytest.raises(TypeError, match="token ids"):
        r.predict(torch.ones(2, 16, dtype=torch.long))
    with pytest.raises(ValueError, match="empty"):
        r.route(good, candidates=[])
    with pytest.raises(TypeError, match="single string"):
        r.route(good, candidates="org/a")
    with pytest.raises(TypeError, match="numpy array"):
        r.predict([[0.0] * 16])


def test_normalised_registry_is_cached_and_invalidated():
    r = _router()
    x = torch.randn(4, 16)
    with torch.no_grad():
        first = r.normalized_registry()
        assert r.normalized_registry() is first  # cached between calls
    r.predict(x)
    # an optimiser step changes the rows in place: the cache must follow
    opt = torch.optim.SGD(r.parameters(), lr=10.0)
    loss = -r.candidate_logits(x, torch.tensor([[1, 0, 2]] * 4))[:, 0].sum()
    loss.backward()
    opt.step()
    with torch.no_grad():
        fresh = r.normalized_registry()
    assert fresh is not first
    torch.testing.assert_close(fresh, torch.nn.functional.normalize(r.model_embeddings.weight))
    with torch.no_grad():
        z = torch.nn.functional.normalize(r.encode(x), dim=-1)
    np.testing.assert_array_equal(r.predict(x), (z @ fresh.T).argmax(1).numpy())
    r.register(["org/d"])
    with torch.no_grad():
        assert r.normalized_registry().shape[0] == 4
    state = {k: v.clone() for k, v in r.state_dict().items()}
    state["model_embeddings.weight"] = torch.eye(4, 8)
    r.load_state_dict(state)
    with torch.no_grad():
        torch.testing.assert_close(r.normalized_registry(), torch.eye(4, 8))


def test_unit_rows_match_f_normalize_values_and_gradients():
    from icml26.carve.router import unit

    x = torch.randn(7, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    x[3] = 0.0  # a zero row stays zero, as with F.normalize's clamp
    a, b = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    w = torch.randn(7, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    (unit(a) * w).sum().backward()
    (torch.nn.functional.normalize(b, dim=-1) * w).sum().backward()
    torch.testing.assert_close(unit(x), torch.nn.functional.normalize(x, dim=-1))
    torch.testing.assert_close(a.grad[[0, 1, 2, 4, 5, 6]], b.grad[[0, 1, 2, 4, 5, 6]])
    assert torch.linalg.vector_norm(unit(x)[0]).item() == pytest.approx(1.0)


def test_cache_after_a_fused_optimizer_step():
    """PyTorch's fused AdamW writes the rows in place without bumping their version
    counter; ``invalidate_cache`` or a mode switch drops the stale table."""
    r = _router()
    x = torch.randn(4, 16)
    opt = torch.optim.AdamW(r.parameters(), lr=0.5, fused=True)
    with torch.no_grad():
        first = r.normalized_registry()
    version = r.model_embeddings.weight._version
    loss = -r.candidate_logits(x, torch.tensor([[1, 0, 2]] * 4))[:, 0].sum()
    loss.backward()
    opt.step()
    expected = torch.nn.functional.normalize(r.model_embeddings.weight.detach())
    assert not torch.allclose(first, expected)
    if r.model_embeddings.weight._version == version:  # the pitfall this guards against
        with torch.no_grad():
            assert r.normalized_registry() is first
    r.eval()  # a mode switch drops the cache
    with torch.no_grad():
        torch.testing.assert_close(r.normalized_registry(), expected)
    r.invalidate_cache()
    with torch.no_grad():
        torch.testing.assert_close(r.normalized_registry(), expected)
