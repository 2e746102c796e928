import pytest
import torch

from icml26.dpfeature import (
    clipped_mean_gradient,
    init_weights,
    loss_coefficients,
    make_multipatch,
    mean_gradient,
    per_sample_gradients,
    per_sample_gradients_vmap,
    per_sample_norms,
)
from icml26.dpfeature.model import forward, logistic_loss
from icml26.dpfeature.persample import gram


@pytest.fixture
def problem():
    g = torch.Generator().manual_seed(3)
    data = make_multipatch(9, 40, 4.0, patches=3, generator=g, dtype=torch.float64)
    w = init_weights(3, 40, 0.3, generator=g, dtype=torch.float64)
    return w, data.x, data.y


def test_vmapped_per_sample_gradients_equal_a_loop(problem):
    w, x, y = problem
    fast = per_sample_gradients_vmap(w, x, y)
    for i in range(x.shape[0]):
        wi = w.clone().requires_grad_(True)
        loss = logistic_loss(y[i] * forward(wi, x[i : i + 1])[0])
        (ref,) = torch.autograd.grad(loss, wi)
        assert torch.allclose(fast[i], ref, atol=1e-12)
    # the closed-form coefficients give the same tensor, norms and mean
    assert torch.allclose(per_sample_gradients(w, x, y), fast, atol=1e-12)
    _, coef = loss_coefficients(w, x, y)
    norms = per_sample_norms(coef, gram(x))
    assert torch.allclose(norms, fast.flatten(1).norm(dim=1), atol=1e-10)
    assert torch.allclose(mean_gradient(coef, x), fast.mean(0), atol=1e-12)


def test_clipping_bounds_every_per_example_gradient(problem):
    w, x, y = problem
    grads = per_sample_gradients_vmap(w, x, y)
    norms = grads.flatten(1).norm(dim=1)
    clip = float(norms.median())  # half the examples are clipped
    _, coef = loss_coefficients(w, x, y)
    scale = (clip / norms).clamp(max=1.0)
    clipped = grads * scale[:, None, None, None]
    assert torch.all(clipped.flatten(1).norm(dim=1) <= clip * (1 + 1e-9))
    assert (scale < 1).sum() >= 4
    got = clipped_mean_gradient(coef, x, per_sample_norms(coef, gram(x)), clip)
    assert torch.allclose(got, clipped.mean(0), atol=1e-12)


def test_batched_vmap_matches_unbatched(problem):
    w, x, y = problem
    wb, xb, yb = torch.stack([w, 2 * w]), torch.stack([x, x]), torch.stack([y, -y])
    out = per_sample_gradients_vmap(wb, xb, yb)
    assert torch.allclose(out[1], per_sample_gradients_vmap(2 * w, x, -y), atol=1e-12)
