"""Rank-wise LoRA saliency: γ from factor gradients, whole ranks pruned, ranks ≤ r kept."""

import pytest
import torch

from icml26.samerging import ChainPath, LoraAdapter, elementwise_lora_merge, rank_saliency_merge
from icml26.samerging.saliency import path_mass


def _setup(n=3, r=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    base = {
        "a.weight": torch.randn(12, 8, generator=g, dtype=torch.float64),
        "a.bias": torch.randn(12, generator=g, dtype=torch.float64),
        "b.weight": torch.randn(5, 12, generator=g, dtype=torch.float64),
        "b.bias": torch.randn(5, generator=g, dtype=torch.float64),
    }
    path = ChainPath((("a.weight", "a.bias"), ("b.weight", "b.bias")))
    ads = []
    for _ in range(n):
        a = {k: 0.5 * torch.randn(r, base[k].shape[1], generator=g, dtype=torch.float64)
             for k in ("a.weight", "b.weight")}  # fmt: skip
        b = {k: 0.5 * torch.randn(base[k].shape[0], r, generator=g, dtype=torch.float64)
             for k in ("a.weight", "b.weight")}  # fmt: skip
        ads.append(LoraAdapter(a, b, scaling=2.0))
    return base, ads, path


def test_ranks_are_pruned_whole_and_never_exceed_r():
    base, ads, path = _setup(r=4)
    res = rank_saliency_merge(base, ads, path, iterations=3, prune=0.5)
    for ranks in res.ranks:
        assert all(v == 1 for v in ranks.values())  # round(4 · 0.5³) → at least 1
    ad = res.adapters[0]
    pruned = ad.pruned()
    assert pruned.A["a.weight"].shape[0] == 1 and pruned.B["a.weight"].shape[1] == 1
    torch.testing.assert_close(
        pruned.scaling * pruned.B["a.weight"] @ pruned.A["a.weight"], ad.delta("a.weight")
    )
    want = {
        k: v + sum(a.delta(k) for a in res.adapters) if k in ad.A else v for k, v in base.items()
    }
    for k in base:
        torch.testing.assert_close(res.state_dict[k], want[k])
    hist = [h["ranks"] for h in res.history]
    assert hist[0] == [4, 4, 4] and hist[-1] == [2, 2, 2]  # 2 ranks per target, 2 targets


def test_first_round_keeps_the_ranks_with_the_largest_gamma_eta():
    base, ads, path = _setup(n=2, r=4, seed=1)
    res = rank_saliency_merge(base, ads, path, iterations=1, prune=0.5)
    ad = ads[0]
    k = "a.weight"
    # explicit G = ∂R/∂ΔW = sign(W) ⊙ P with W materialised
    weights = dict(base)
    for key in ad.A:
        weights[key] = base[key] + ad.delta(key)
    g_mat = torch.sign(weights[k]) * path_mass(path, weights)[k]
    mean = sum(a.delta(k) for a in ads)
    gamma = torch.stack([ad.B[k][:, j] @ g_mat @ ad.A[k][j] for j in range(4)])
    eta = torch.stack([ad.B[k][:, j] @ mean @ ad.A[k][j] for j in range(4)])
    top = set(torch.topk((gamma * eta).abs(), 2).indices.tolist())
    assert set(torch.nonzero(res.adapters[0].masks[k]).flatten().tolist()) == top


def test_different_target_modules_are_refused():
    base, ads, path = _setup(n=2)
    other = LoraAdapter({"a.weight": ads[1].A["a.weight"]}, {"a.weight": ads[1].B["a.weight"]}, 2.0)
    with pytest.raises(ValueError, match="different target modules"):
        rank_saliency_merge(base, [ads[0], other], path)
    with pytest.raises(ValueError, match="do not chain"):
        LoraAdapter({"a.weight": torch.zeros(3, 8)}, {"a.weight": torch.zeros(12, 2)})
    with pytest.raises(ValueError, match="prune"):
        rank_saliency_merge(base, ads, path, prune=1.5)


def test_elementwise_ablation_prunes_entries_of_delta_w():
    base, ads, path = _setup()
    res = elementwise_lora_merge(base, ads, path, iterations=3, prune=0.5)
    assert res.masks[0]["a.weight"].float().mean() == pytest.approx(0.125, abs=0.03)
