"""Anderson weights: both official solvers, constraint, mixing, the linear case."""

import pytest
import torch

from icml26.cfgmp import anderson_mix, anderson_weights


@pytest.mark.parametrize(("seed", "m", "dim"), [(s, 2 + s % 3, 5 + 7 * s) for s in range(6)])
def test_weights_sum_to_one_and_solvers_agree(seed, m, dim, close):
    f = torch.randn(3, m, dim, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    for solver in ("gram", "lstsq"):
        a = anderson_weights(f, ridge=1e-4, solver=solver)
        # the DiT code normalises by (sum + 1e-8): the sum is 1 up to that guard
        close(a.sum(1), torch.ones(3, dtype=torch.float64), atol=1e-5, rtol=0)
    # without the ridge both solve the same constrained least squares
    a_gram = anderson_weights(f, ridge=0.0, solver="gram")
    a_lsq = anderson_weights(f, ridge=0.0, solver="lstsq")
    close(a_gram, a_lsq, atol=1e-5, rtol=1e-5)
    # and with the official ridges on well-scaled residuals they agree closely too
    a_gram = anderson_weights(f, ridge=1e-4, solver="gram")
    a_lsq = anderson_weights(f, ridge=1e-4, solver="lstsq")
    close(a_gram, a_lsq, atol=1e-3, rtol=1e-3)


def test_weights_minimise_the_combined_residual():
    f = torch.randn(2, 2, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    a = anderson_weights(f, ridge=0.0)
    best = (a[:, :, None] * f).sum(1).norm(dim=1)
    for s in torch.linspace(-2, 3, 51, dtype=torch.float64):
        trial = torch.stack([s * torch.ones(2), (1 - s) * torch.ones(2)], 1).to(f)
        assert torch.all(best <= (trial[:, :, None] * f).sum(1).norm(dim=1) + 1e-12)


def test_single_history_and_half_precision():
    f = torch.randn(4, 1, 8)
    assert torch.equal(anderson_weights(f), torch.ones(4, 1))
    a = anderson_weights(torch.randn(4, 2, 8).to(torch.bfloat16))
    assert a.dtype == torch.float32  # solved in float32, as the SD code does


def test_mixing_with_damping(close):
    z = torch.randn(2, 2, 3)
    g = torch.randn(2, 2, 3)
    a = torch.tensor([[0.25, 0.75], [1.5, -0.5]])
    full = anderson_mix(z, g, a, 1.0)
    close(full, (a[..., None] * g).sum(1))
    half = anderson_mix(z, g, a, 0.5)
    close(half, 0.5 * (a[..., None] * z).sum(1) + 0.5 * full)


def test_anderson_solves_an_affine_fixed_point_problem():
    """g(z) = Mz + b with m = 1 on a 2-D problem: AA gets far closer than Picard."""
    m_ = torch.tensor([[0.95, 0.0], [0.0, 0.9]], dtype=torch.float64)
    b = torch.tensor([1.0, -1.0], dtype=torch.float64)
    fixed = torch.linalg.solve(torch.eye(2, dtype=torch.float64) - m_, b)

    def g(z):
        return z @ m_.T + b

    z_p = z_a = torch.zeros(1, 2, dtype=torch.float64)
    hist_z, hist_g = [], []
    for k in range(6):
        z_p = g(z_p)
        gz = g(z_a)
        hist_z, hist_g = [*hist_z, z_a][-2:], [*hist_g, gz][-2:]
        if k == 0:
            z_a = gz
        else:
            zs, gs = torch.stack(hist_z, 1), torch.stack(hist_g, 1)
            z_a = anderson_mix(zs, gs, anderson_weights(gs - zs, ridge=0.0))
    assert (z_a - fixed).norm() < 0.1 * (z_p - fixed).norm()


def test_bad_input():
    with pytest.raises(ValueError, match="batch, history, dim"):
        anderson_weights(torch.randn(3, 4))
    with pytest.raises(ValueError, match="solver"):
        anderson_weights(torch.randn(1, 2, 3), solver="qr")
    with pytest.raises(ValueError, match="ridge"):
        anderson_weights(torch.randn(1, 2, 3), ridge=-1.0)
    with pytest.raises(ValueError, match="histories"):
        anderson_mix(torch.randn(1, 2, 3), torch.randn(1, 3, 3), torch.ones(1, 2))
