"""The exact Gaussian-mixture velocities against finite differences of the density path."""

import numpy as np
import pytest
import torch

from icml26.cfgmp import GaussianMixtureFlow, ring_mixture


def _mixture() -> GaussianMixtureFlow:
    # anisotropic, rotated covariances and unequal weights, 2 classes x 2 modes
    rot = np.array([[np.cos(0.5), -np.sin(0.5)], [np.sin(0.5), np.cos(0.5)]])
    covs = np.stack(
        [
            rot @ np.diag([0.5, 0.1]) @ rot.T,
            np.diag([0.2, 0.3]),
            np.diag([0.4, 0.4]),
            rot.T @ np.diag([0.05, 0.6]) @ rot,
        ]
    )
    means = np.array([[2.0, 0.0], [-1.0, 1.5], [0.0, -2.0], [1.5, 1.5]])
    return GaussianMixtureFlow(means, covs, weights=[0.1, 0.2, 0.3, 0.4], classes=[0, 1, 0, 1])


def _points(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return 2.0 * torch.randn(n, 2, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("cond", [None, "labels"])
@pytest.mark.parametrize("t", [0.15, 0.5, 0.85])
def test_velocity_matches_finite_difference_score(t, cond, close):
    """v = (x + (1 − t)·∇log p_t)/t, with ∇log p_t from central differences of log p_t."""
    flow, x = _mixture(), _points()
    c = torch.arange(64) % 2 if cond else None
    eps = 1e-5
    grad = torch.stack(
        [
            (flow.log_density(x + eps * e, t, c) - flow.log_density(x - eps * e, t, c)) / (2 * eps)
            for e in torch.eye(2, dtype=torch.float64)
        ],
        dim=1,
    )
    v_fd = (x + (1 - t) * grad) / t
    close(flow.velocity(x, t, c), v_fd, atol=1e-6, rtol=1e-6)
    close(flow.score(x, t, c), grad, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("t", [0.2, 0.6])
def test_velocity_solves_continuity_equation(t):
    """∂_t log p + ∇·v + v·∇log p = 0, every derivative by finite differences."""
    flow, x = _mixture(), _points(32, seed=1)
    c = torch.arange(32) % 2
    eps = 1e-5
    dlogp_dt = (flow.log_density(x, t + eps, c) - flow.log_density(x, t - eps, c)) / (2 * eps)
    div = torch.zeros(32, dtype=torch.float64)
    grad = torch.zeros(32, 2, dtype=torch.float64)
    for i, e in enumerate(torch.eye(2, dtype=torch.float64)):
        div += (flow.velocity(x + eps * e, t, c)[:, i] - flow.velocity(x - eps * e, t, c)[:, i]) / (
            2 * eps
        )
        grad[:, i] = (flow.log_density(x + eps * e, t, c) - flow.log_density(x - eps * e, t, c)) / (
            2 * eps
        )
    residual = dlogp_dt + div + (flow.velocity(x, t, c) * grad).sum(1)
    assert residual.abs().max() < 1e-5


def test_endpoints_and_monte_carlo_posterior_mean(close):
    flow = ring_mixture(4, radius=3.0, std=0.4)
    x = _points(16)
    # t = 0: the velocity is E[x1] − x whatever x is
    close(flow.velocity(x, 0.0), flow.means.mean(0) - x)
    lab = torch.arange(16) % 4
    close(flow.velocity(x, 0.0, lab), flow.means[lab] - x)
    # Monte Carlo: E[x1 − x0 | x_t in a small ball] against the velocity at the ball's centre
    g = torch.Generator().manual_seed(3)
    n = 400_000
    labels = torch.randint(0, 4, (n,), generator=g)
    x1 = flow.sample(labels, g)
    x0 = torch.randn(n, 2, generator=g, dtype=torch.float64)
    t = 0.5
    xt = t * x1 + (1 - t) * x0
    centre = torch.tensor([[1.0, 0.5]], dtype=torch.float64)
    near = (xt - centre).norm(dim=1) < 0.05
    mc = (x1 - x0)[near].mean(0)
    se = (x1 - x0)[near].std(0) / near.sum().sqrt()
    assert torch.all((mc - flow.velocity(centre, t)[0]).abs() < 4 * se + 0.02)


def test_class_velocity_uses_only_its_components(close):
    flow = _mixture()
    x = _points(8)
    post = flow.posterior(x, 0.7, torch.zeros(8, dtype=torch.long))
    assert torch.all(post[:, [1, 3]] == 0)
    close(post.sum(1), torch.ones(8, dtype=torch.float64))
    v_c, v_u = flow.velocity_pair(
        x, torch.full((8,), 0.7, dtype=torch.float64), torch.ones(8, dtype=torch.long)
    )
    close(v_c, flow.velocity(x, 0.7, torch.ones(8, dtype=torch.long)))
    close(v_u, flow.velocity(x, 0.7))


def test_mixture_rejects_bad_input():
    with pytest.raises(ValueError, match="positive definite"):
        GaussianMixtureFlow([[0.0, 0.0]], [np.zeros((2, 2))])
    with pytest.raises(ValueError, match="weights"):
        GaussianMixtureFlow([[0.0], [1.0]], [1.0, 1.0], weights=[0.2, 0.2])
    flow = ring_mixture(3)
    with pytest.raises(ValueError, match=r"\(B, 2\)"):
        flow.velocity(torch.zeros(4, 3), 0.5)
    with pytest.raises(ValueError, match="class labels"):
        flow.velocity(torch.zeros(4, 2), 0.5, torch.tensor([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="cond must be"):
        flow.velocity(torch.zeros(4, 2), 0.5, torch.tensor([0, 1]))
