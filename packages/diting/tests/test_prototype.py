import numpy as np
import pytest
import torch

from icml26.diting.prototype import HealthPrototype, ground_cost, sinkhorn_log, spectral_measures


def _cycles(B=2, T=12, D=24, seed=0):
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(B, 1, D, generator=g)
    return base + 0.01 * torch.randn(B, T, D, generator=g)


def test_identical_early_cycles_give_their_mean_and_uniform_weights():
    x = torch.randn(3, 1, 16).expand(3, 10, 16).contiguous()
    x[:, 8:] += 5.0  # cycles past K are not prototype cycles
    out = HealthPrototype(8)(x, torch.ones(3, 10))
    torch.testing.assert_close(out.prototype, x[:, 0])
    torch.testing.assert_close(out.weights, torch.full((3, 8), 1 / 8))
    assert torch.allclose(out.residual[:, :8], torch.zeros(3, 8, 16), atol=1e-6)


def test_medoid_ignores_one_anomalous_cycle_where_the_mean_does_not():
    x = _cycles()
    x[:, 3] = 3.0 * torch.sin(torch.linspace(0, 20, 24))  # a very different spectrum
    mask = torch.ones(2, 12)
    med = HealthPrototype(8, tau=0.05)(x, mask)
    mean = HealthPrototype(8, kind="mean")(x, mask)
    assert torch.all(med.medoid != 3)
    assert float(med.weights[:, 3].max()) < 1e-3
    clean = x[:, [0, 1, 2, 4, 5, 6, 7]].mean(1)
    assert float((med.prototype - clean).abs().max()) < 0.05
    assert float((mean.prototype - clean).abs().max()) > 0.2


def test_windows_shorter_than_K_use_only_observed_cycles_and_zero_the_rest():
    x = _cycles(B=1)
    mask = torch.zeros(1, 12)
    mask[0, :3] = 1
    out = HealthPrototype(8)(x, mask)
    assert torch.all(out.weights[0, 3:] == 0) and abs(float(out.weights.sum()) - 1) < 1e-6
    assert torch.all(out.residual[0, 3:] == 0)
    x2 = x.clone()
    x2[0, 3:] += 10.0  # cycles past the window
    torch.testing.assert_close(HealthPrototype(8)(x2, mask).prototype, out.prototype)
    with pytest.raises(ValueError, match="at least one observed"):
        HealthPrototype(8)(x, torch.zeros(1, 12))


def test_sinkhorn_matches_pot_within_1e5():
    ot = pytest.importorskip("ot")
    g = torch.Generator().manual_seed(1)
    mu = spectral_measures(torch.randn(6, 180, generator=g, dtype=torch.float64), 32)
    M = ground_cost(32, dtype=torch.float64)
    res = sinkhorn_log(mu[:3], mu[3:], M, reg=0.05, max_iter=2000, tol=1e-10)
    ref = [
        ot.sinkhorn2(a.numpy(), b.numpy(), M.numpy(), 0.05, method="sinkhorn_log", stopThr=1e-10)
        for a, b in zip(mu[:3], mu[3:], strict=True)
    ]
    np.testing.assert_allclose(res.cost.numpy(), ref, atol=1e-5)
    assert bool(res.converged.all())
    # the exact log-sum-exp path (small ε) agrees with POT too
    small = sinkhorn_log(mu[:1], mu[3:4], M, reg=0.005, max_iter=5000, tol=1e-9)
    ref_small = ot.sinkhorn2(mu[0].numpy(), mu[3].numpy(), M.numpy(), 0.005,
                             method="sinkhorn_log", stopThr=1e-9, numItermax=5000)  # fmt: skip
    np.testing.assert_allclose(small.cost.numpy(), [ref_small], atol=1e-5)


def test_sinkhorn_non_convergence_is_reported_per_problem():
    x = _cycles()
    proto = HealthPrototype(8, max_iter=1, tol=1e-12)
    out = proto(x, torch.ones(2, 12))
    assert out.converged.shape == (2,) and not bool(out.converged.any())
    with pytest.raises(ValueError, match="reg"):
        sinkhorn_log(torch.ones(2) / 2, torch.ones(2) / 2, torch.zeros(2, 2), reg=0.0)


def test_prototype_gradients_flow_unless_detached():
    x = _cycles().requires_grad_(True)
    HealthPrototype(8)(x, torch.ones(2, 12)).prototype.sum().backward()
    assert x.grad is not None and float(x.grad.abs().sum()) > 0
    y = _cycles().requires_grad_(True)
    out = HealthPrototype(8, detach=True)(y, torch.ones(2, 12))
    assert not out.prototype.requires_grad
