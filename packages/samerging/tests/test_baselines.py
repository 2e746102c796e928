"""The baselines against hand computations: TA, averaging, TIES, DARE, Consensus-TA, WUDI."""

import pytest
import torch

from icml26.samerging import consensus_ta, dare, task_arithmetic, ties_merging, weight_average, wudi


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
