"""The baselines against hand computations: TA, averaging, TIES, DARE, Consensus-TA, WUDI."""

import pytest
import torch

from icml26.samerging import (
    consensus_ta,
    dare,
    pcb_merging,
    task_arithmetic,
    ties_merging,
    weight_average,
    wudi,
)
from icml26.samerging.baselines import pcb_vector


def _pair():
    base = {"w": torch.zeros(2, 3, dtype=torch.float64), "b": torch.zeros(2, dtype=torch.float64)}
    e1 = {"w": torch.tensor([[1.0, -2.0, 0.1], [0.0, 3.0, -0.2]], dtype=torch.float64),
          "b": torch.tensor([0.5, -0.5], dtype=torch.float64)}  # fmt: skip
    e2 = {"w": torch.tensor([[-0.5, -1.0, 0.2], [4.0, -1.0, 0.1]], dtype=torch.float64),
          "b": torch.tensor([0.1, 0.3], dtype=torch.float64)}  # fmt: skip
    return base, [e1, e2]


def test_task_arithmetic_and_average():
    base, ex = _pair()
    ta = task_arithmetic(base, ex, scale=0.5)
    torch.testing.assert_close(ta["w"], 0.5 * (ex[0]["w"] + ex[1]["w"]))
    torch.testing.assert_close(weight_average(base, ex)["b"], (ex[0]["b"] + ex[1]["b"]) / 2)


def test_ties_trims_elects_and_takes_the_disjoint_mean():
    base, ex = _pair()
    # 8 entries per task vector, density 0.5 keeps the 4 largest magnitudes of each
    m = ties_merging(base, ex, density=0.5, scale=1.0)
    # task 1 keeps w: 1, -2, 3, b 0.5 ... (flattened over w then b); task 2 keeps 4, -1, -1, -0.5
    want_w = torch.tensor([[1.0, -1.5, 0.0], [4.0, 3.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(m["w"], want_w)
    s = ties_merging(base, ex, density=0.5, scale=1.0, merge="sum")
    assert float(s["w"][0, 1]) == pytest.approx(-3.0)
    with pytest.raises(ValueError, match="density"):
        ties_merging(base, ex, density=0.0)


def test_dare_rescales_kept_entries_and_is_unbiased():
    g = torch.Generator().manual_seed(0)
    base = {"w": torch.zeros(200, 200)}
    ex = [{"w": torch.ones(200, 200)}]
    m = dare(base, ex, drop=0.9, then="ta", scale=1.0, generator=g)["w"]
    kept = m[m != 0]
    torch.testing.assert_close(kept, torch.full_like(kept, 10.0))
    assert float(m.mean()) == pytest.approx(1.0, abs=0.05)
    with pytest.raises(ValueError, match="drop"):
        dare(base, ex, drop=1.0)


def test_consensus_ta_drops_entries_fewer_than_k_tasks_claim():
    base = {"w": torch.zeros(3, dtype=torch.float64)}
    ex = [{"w": torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64)},
          {"w": torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)}]  # fmt: skip
    m = consensus_ta(base, ex, scale=1.0, tall=0.4, agree=2)
    torch.testing.assert_close(m["w"], torch.tensor([2.0, 0.0, 0.0], dtype=torch.float64))


def test_wudi_runs_adam_on_its_interference_loss():
    g = torch.Generator().manual_seed(0)
    base = {
        "w": torch.randn(6, 5, generator=g, dtype=torch.float64),
        "b": torch.zeros(6, dtype=torch.float64),
    }
    noise = 0.1
    ex = [
        {
            k: v + noise * torch.randn(v.shape, generator=g, dtype=torch.float64)
            for k, v in base.items()
        }
        for _ in range(3)
    ]
    ts = [{k: e[k] - base[k] for k in base} for e in ex]
    tau = sum(t["w"] for t in ts).clone().requires_grad_(True)
    opt = torch.optim.Adam([tau], lr=1e-3)
    for _ in range(50):
        loss = sum(((tau - t["w"]) @ t["w"].T).pow(2).sum() / t["w"].pow(2).sum() for t in ts)
        opt.zero_grad()
        loss.backward()
        opt.step()
    m = wudi(base, ex, lr=1e-3, steps=50)
    torch.testing.assert_close(m["w"] - base["w"], tau.detach(), atol=1e-10, rtol=0)
    torch.testing.assert_close(m["b"], sum(t["b"] for t in ts))
    assert float(loss.detach()) < float(
        sum(
            ((sum(t["w"] for t in ts) - t["w"]) @ t["w"].T).pow(2).sum() / t["w"].pow(2).sum()
            for t in ts
        )
    )


def test_pcb_against_a_hand_computation():
    # τ_1 = [2, -1, 1, 0], τ_2 = [2, 1, -1, 1]; Σ τ = [4, 0, 0, 1]; no clipping, keep 3/4.
    # inter_1 = tanh([8, 0, 0, 0]), inter_2 = tanh([8, 0, 0, 1]); intra = exp(2 minmax|τ|²)
    # β_1 = [e²·t8, 0, 0, 0], β_2 = [e²·t8, 0, 0, t1]; floors (2nd smallest) 0 and 0, so
    # β̂_1 = [1, 0, 0, 0], β̂_2 = [1, 0, 0, t1/(e²·t8)] and τ = [(2 + 2)/2, 0, 0, 1]
    base = {"w": torch.zeros(4, dtype=torch.float64)}
    ex = [{"w": torch.tensor([2.0, -1.0, 1.0, 0.0], dtype=torch.float64)},
          {"w": torch.tensor([2.0, 1.0, -1.0, 1.0], dtype=torch.float64)}]  # fmt: skip
    m = pcb_merging(base, ex, ratio=0.75, clip=0.0, scale=1.0)["w"]
    torch.testing.assert_close(m, torch.tensor([2.0, 0.0, 0.0, 1.0], dtype=torch.float64))
    half = pcb_merging(base, ex, ratio=0.75, clip=0.0, scale=0.5)["w"]
    torch.testing.assert_close(half, 0.5 * m)


def test_pcb_clips_outliers_and_keeps_the_top_ratio_of_one_expert():
    # one expert, |τ| = 0.01 .. 0.99 and an outlier 10: clip 0.01 caps it at the 99th
    # entry (0.99); β grows with |τ|, the floor is the 91st entry (0.91), so only
    # 0.92 .. 0.99 and the capped outlier survive, each as its clipped value
    tau = torch.arange(1, 101, dtype=torch.float64) / 100
    tau[99] = 10.0
    m = pcb_vector(tau.unsqueeze(0), ratio=0.1, clip=0.01)
    want = torch.zeros(100, dtype=torch.float64)
    want[91:99] = tau[91:99]
    want[99] = 0.99
    torch.testing.assert_close(m, want)


def test_pcb_drops_entries_that_oppose_the_consensus_and_flattens_all_tensors():
    g = torch.Generator().manual_seed(0)
    base = {
        "a": torch.zeros(30, 20, dtype=torch.float64),
        "b": torch.zeros(40, dtype=torch.float64),
    }
    ex = [{k: 0.1 * torch.randn(v.shape, generator=g, dtype=torch.float64) for k, v in base.items()}
          for _ in range(3)]  # fmt: skip
    m = pcb_merging(base, ex, ratio=0.2, scale=1.0)
    flat = torch.stack([torch.cat([e["a"].flatten(), e["b"]]) for e in ex])
    v = pcb_vector(flat, ratio=0.2)
    torch.testing.assert_close(torch.cat([m["a"].flatten(), m["b"]]), v)
    # an entry survives only where some task agrees in sign with the sum of the task vectors
    agree = ((flat * flat.sum(0)) > 0).any(0)
    assert bool((v[~agree] == 0).all())
    assert 0.1 < float((v != 0).double().mean()) < 0.6
    with pytest.raises(ValueError, match="ratio"):
        pcb_merging(base, ex, ratio=0.0)
    with pytest.raises(ValueError, match="clip"):
        pcb_vector(flat, clip=0.5)
