"""SA-Merging's loop: density, τ* recomputed, per-tensor masks, one expert, clear errors."""

import pytest
import torch
from torch import nn

from icml26.samerging import ChainPath, sa_merge, topk_mask


def _setup(n_experts=3, seed=0, scales=(1.0, 1.0)):
    g = torch.Generator().manual_seed(seed)
    base = {
        "a.weight": torch.randn(16, 10, generator=g) * scales[0],
        "a.bias": torch.randn(16, generator=g),
        "b.weight": torch.randn(4, 16, generator=g) * scales[1],
        "b.bias": torch.randn(4, generator=g),
    }
    experts = [
        {k: v + 0.2 * torch.randn(v.shape, generator=g) for k, v in base.items()}
        for _ in range(n_experts)
    ]
    return base, experts, ChainPath((("a.weight", "a.bias"), ("b.weight", "b.bias")))


@pytest.mark.parametrize(("T", "p"), [(10, 0.2), (3, 0.5), (1, 0.2)])
def test_density_is_one_minus_p_to_the_T(T, p):
    base, experts, path = _setup()
    res = sa_merge(base, experts, path=path, iterations=T, prune=p)
    assert res.density == pytest.approx((1 - p) ** T, abs=0.03)
    assert [h["iteration"] for h in res.history] == list(range(1, T + 1))


def test_consensus_is_recomputed_from_the_masked_vectors_each_iteration():
    base, experts, path = _setup()
    res = sa_merge(base, experts, path=path, iterations=4)
    norms = [h["consensus_norm"] for h in res.history]
    full = sum(torch.cat([(e[k] - base[k]).flatten() for k in base]) for e in experts)
    assert norms[0] == pytest.approx(float(full.double().norm()), rel=1e-6)
    for t in range(1, 4):  # τ* of iteration t+1 is the sum of the vectors masked t times
        prev = sa_merge(base, experts, path=path, iterations=t).task_vectors
        star = sum(torch.cat([tv[k].flatten() for k in base]) for tv in prev)
        assert norms[t] == pytest.approx(float(star.double().norm()), rel=1e-6)
    assert len(set(norms)) == len(norms)


def test_masks_are_per_tensor_never_global():
    # the second layer's updates are 1000x smaller: a global ranking would drop them all
    base, experts, path = _setup(scales=(1.0, 1.0))
    for e in experts:
        e["b.weight"] = base["b.weight"] + 1e-3 * (e["b.weight"] - base["b.weight"])
    res = sa_merge(base, experts, path=path, iterations=2, prune=0.5, score="magnitude")
    for m in res.masks:
        for k, v in m.items():
            assert float(v.float().mean()) == pytest.approx(0.25, abs=0.05), k


def test_one_expert_merges_to_base_plus_its_masked_task_vector():
    base, experts, path = _setup(n_experts=1)
    res = sa_merge(base, experts, path=path, iterations=4)
    for k in base:
        tau = (experts[0][k] - base[k]) * res.masks[0][k]
        torch.testing.assert_close(res.state_dict[k], base[k] + tau)
        assert 0 < int(res.masks[0][k].sum()) < res.masks[0][k].numel()


def test_modules_are_accepted_and_scale_zero_is_the_base():
    torch.manual_seed(0)
    base = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    experts = [nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)) for _ in range(2)]
    res = sa_merge(base, experts, scale=0.0, iterations=2)
    for k, v in base.state_dict().items():
        torch.testing.assert_close(res.state_dict[k], v)


def test_topk_mask_ranks_only_surviving_entries():
    score = torch.tensor([5.0, 4.0, 3.0, 2.0, 1.0])
    alive = torch.tensor([False, True, True, True, True])
    assert topk_mask(score, alive, 0.5).tolist() == [False, True, True, False, False]


def test_clear_errors_name_the_tensor():
    base, experts, path = _setup()
    bad = dict(experts[0])
    del bad["a.bias"]
    with pytest.raises(ValueError, match=r"'a\.bias'"):
        sa_merge(base, [bad], path=path)
    bad = dict(experts[0], **{"b.weight": torch.zeros(5, 16)})
    with pytest.raises(ValueError, match=r"'b\.weight'.*shape"):
        sa_merge(base, [bad], path=path)
    bad = dict(experts[0], **{"a.weight": experts[0]["a.weight"].double()})
    with pytest.raises(ValueError, match=r"'a\.weight'.*dtype"):
        sa_merge(base, [bad], path=path)
    for kw in ({"prune": 0.0}, {"prune": 1.0}, {"iterations": 0}, {"iterations": 2.5}):
        with pytest.raises(ValueError):
            sa_merge(base, experts, path=path, **kw)
    with pytest.raises(TypeError, match=r"nn\.Module or a state dict"):
        sa_merge([1, 2], experts, path=path)
    with pytest.raises(ValueError, match="at least one expert"):
        sa_merge(base, [], path=path)
