"""The MER-DG loss: official formula, N ≤ D, per-modality statistics, errors."""

import numpy as np
import pytest
import torch

from icml26.merdg import (
    MERConfig,
    correlation_matrix,
    mer_loss,
    mer_penalty,
    spectral_entropy_loss,
    variance_floor_loss,
)


def _z(n, d, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))


def test_official_formula_golden_values():
    z = _z(64, 8)
    # variance floor: mean ReLU(1 - sqrt(var_unbiased + 1e-4))
    std = torch.sqrt(z.var(0) + 1e-4)
    assert torch.isclose(variance_floor_loss(z), torch.relu(1 - std).mean())
    # spectral: biased std, (N - 1) denominator, 1e-4 ridge, -logdet / D
    x = (z - z.mean(0)) / (z.std(0, unbiased=False) + 1e-4)
    c = x.T @ x / 63 + 1e-4 * torch.eye(8)
    assert torch.isclose(spectral_entropy_loss(z), -torch.logdet(c) / 8, atol=1e-6)
    assert torch.isclose(mer_loss(z), variance_floor_loss(z) + spectral_entropy_loss(z))
    # scaled-down features trip the floor; unit-variance white ones barely do
    assert variance_floor_loss(0.1 * z) > 0.85 and variance_floor_loss(3 * z) == 0


def test_finite_with_nonzero_gradient_when_batch_not_larger_than_dim():
    for n, d in ((16, 128), (16, 16), (4, 32)):
        z = _z(n, d).requires_grad_()
        loss = mer_loss(z)
        loss.backward()
        assert torch.isfinite(loss)
        assert torch.isfinite(z.grad).all() and z.grad.abs().sum() > 0
        # the ridge is load-bearing: rank ≤ N - 1 < D leaves eigenvalues at the ridge
        if n <= d:
            eig = torch.linalg.eigvalsh(correlation_matrix(z.detach()))
            assert eig.min() < 2e-4
    # the shrinkage switch gives a full-rank estimate and a much smaller penalty
    z = _z(16, 128)
    assert spectral_entropy_loss(z, shrinkage=0.5) < 0.2 * spectral_entropy_loss(z)


def test_minimising_mer_lowers_the_condition_number():
    g = torch.Generator().manual_seed(1)
    mix = torch.randn(16, 16, generator=g) * torch.logspace(0, -2, 16)
    z = (torch.randn(256, 16, generator=g) @ mix).requires_grad_()
    cond0 = torch.linalg.cond(correlation_matrix(z.detach()))
    opt = torch.optim.Adam([z], lr=0.05)
    for _ in range(100):
        opt.zero_grad()
        mer_loss(z).backward()
        opt.step()
    cond1 = torch.linalg.cond(correlation_matrix(z.detach()))
    assert cond1 < 0.1 * cond0
    assert variance_floor_loss(z.detach()) < 0.05


def test_statistics_are_per_modality():
    a, b = _z(64, 8, 1), _z(64, 8, 2)
    collapsed = a[:, :1].repeat(1, 8) + 1e-3 * b  # rank-one modality
    cfg = MERConfig(lambda_mer=3.0)
    total = mer_penalty([a, collapsed], cfg)
    assert torch.isclose(total, 3.0 * (mer_loss(a) + mer_loss(collapsed)))
    # the collapsed modality is penalised on its own; pooling columns would hide it
    pooled = mer_loss(torch.cat([a, collapsed], 1))
    assert mer_loss(collapsed) > mer_loss(a) + 1.0
    assert not torch.isclose(total, 3.0 * pooled)
    with pytest.raises(TypeError, match="one tensor per modality"):
        mer_penalty(torch.cat([a, b], 1))


def test_bad_inputs_get_clear_errors():
    z = _z(8, 4)
    with pytest.raises(ValueError, match="NaN"):
        mer_loss(torch.full((8, 4), float("nan")))
    with pytest.raises(ValueError, match="same batch size"):
        mer_penalty([z, _z(7, 4)])
    with pytest.raises(ValueError, match="at least 2 samples"):
        variance_floor_loss(z[:1])
    with pytest.raises(ValueError, match="2-D"):
        mer_loss(torch.zeros(3))
    with pytest.raises(ValueError, match="shrinkage"):
        MERConfig(shrinkage=2.0)


def test_floor_matches_lightly_vicreg_variance():
    lightly = pytest.importorskip("lightly.loss.vicreg_loss")
    for seed in range(3):
        z = _z(32, 16, seed) * (0.2 + seed)
        np.testing.assert_allclose(
            float(variance_floor_loss(z)), float(lightly.variance_loss(z, eps=1e-4)), atol=1e-6
        )
