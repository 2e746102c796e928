"""The closed-form explanation against a direct ridge solve, its gradient and invariances."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.gnn_watermark import informative_features, ridge_explanation


def _direct_ridge(x: np.ndarray, y: np.ndarray, lam: float) -> np.ndarray:
    """The official recipe written out in numpy, float64, with an explicit (K̄ᵀK̄ + λI) solve."""

    def standardise(a):
        return (a - a.mean()) / a.std(ddof=1)

    def centre(g):
        g = g - g.mean(axis=0, keepdims=True)
        g = g - g.mean(axis=1, keepdims=True)
        return g / (np.sqrt((g**2).sum(axis=(0, 1), keepdims=True)) + 1e-10)

    n, f = x.shape
    xs, ys = standardise(x), standardise(y)
    k = np.exp(-((xs[None, :, :] - xs[:, None, :]) ** 2) / (0.2 * f + 1e-10))
    d = ((ys[None, :, :] - ys[:, None, :]) ** 2).sum(-1, keepdims=True)
    l_ = np.exp(-d / (0.2 * y.shape[1] + 1e-10))
    kb = centre(k).reshape(n * n, f)
    lb = centre(l_).reshape(n * n)
    return np.linalg.solve(kb.T @ kb + lam * np.eye(f), kb.T @ lb)


@pytest.mark.parametrize(("n", "f"), [(7, 5), (4, 30)])  # direct branch, then the n² < F branch
def test_equals_direct_ridge_solve(n, f):
    rng = np.random.default_rng(0)
    x = rng.random((n, f))
    y = rng.dirichlet(np.ones(3), size=n)
    ours = ridge_explanation(torch.from_numpy(x), torch.from_numpy(y), 0.1).numpy()
    np.testing.assert_allclose(ours, _direct_ridge(x, y, 0.1), rtol=1e-8, atol=1e-12)


def test_gradient_flows_to_the_model_outputs():
    torch.manual_seed(0)
    x = (torch.rand(12, 9) < 0.4).double()
    logits = torch.randn(12, 3, dtype=torch.float64, requires_grad=True)
    beta = ridge_explanation(x, torch.softmax(logits, -1))
    (beta * torch.linspace(-1, 1, 9, dtype=torch.float64)).sum().backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    assert logits.grad.abs().sum() > 0


def test_batched_equals_one_by_one_and_node_order_does_not_matter():
    torch.manual_seed(1)
    x = (torch.rand(3, 10, 8) < 0.5).double()
    y = torch.softmax(torch.randn(3, 10, 4, dtype=torch.float64), -1)
    batched = ridge_explanation(x, y)
    for b in range(3):
        torch.testing.assert_close(batched[b], ridge_explanation(x[b], y[b]))
    perm = torch.randperm(10)
    permuted = ridge_explanation(x[:, perm], y[:, perm])
    torch.testing.assert_close(permuted, batched)
    assert torch.equal(torch.sign(permuted), torch.sign(batched))


def test_constant_features_get_exactly_zero_attribution():
    torch.manual_seed(2)
    x = (torch.rand(10, 6) < 0.5).float()
    x[:, 2] = 0.0
    x[:, 4] = 1.0
    beta = ridge_explanation(x, torch.softmax(torch.randn(10, 3), -1))
    assert beta[2] == 0 and beta[4] == 0 and (beta[[0, 1, 3, 5]] != 0).all()
    assert informative_features(x).tolist() == [True, True, False, True, False, True]


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="different nodes"):
        ridge_explanation(torch.rand(5, 3), torch.rand(4, 2))
    with pytest.raises(ValueError, match="at least 2 nodes"):
        ridge_explanation(torch.rand(1, 3), torch.rand(1, 2))
    with pytest.raises(TypeError):
        ridge_explanation(np.zeros((3, 3)), torch.rand(3, 2))
