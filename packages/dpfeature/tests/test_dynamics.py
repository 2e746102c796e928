import torch

from icml26.dpfeature import TrainConfig, decompose, init_weights, make_multipatch, stack, train


def test_decomposition_reconstructs_gd_weights_without_residual():
    g = torch.Generator().manual_seed(0)
    data = make_multipatch(10, 200, 5.0, generator=g, dtype=torch.float64)
    w0 = init_weights(3, 200, 0.05, generator=g, dtype=torch.float64)
    res = train(stack([data]), w0[None], TrainConfig(steps=30, eta=0.2, window=10))
    w = res.w[0]
    dec = decompose(w, w0, data.mu, data.noise, data.y)
    # GD stays in span{μ, ξ_i}: W = W⁽⁰⁾ + jγ μ/‖μ‖² + Σ ρ ξ/‖ξ‖² exactly
    assert float(dec.residual.norm()) < 1e-9 * float((w - w0).norm())
    span = w - w0 - dec.residual
    assert torch.allclose(w0 + span, w, atol=1e-10)
    # γ_{j,r} = j⟨w − w⁽⁰⁾, μ⟩ and ρ reproduce ⟨w − w⁽⁰⁾, ξ_k⟩ through the Gram matrix
    signs = torch.tensor([1.0, -1.0], dtype=w.dtype)
    assert torch.allclose(dec.gamma, torch.einsum("jrd,d->jr", w - w0, data.mu) * signs[:, None])
    xi = data.noise[:, 0]
    lhs = torch.einsum("jrd,nd->jrn", w - w0, xi)
    rhs = torch.einsum("jri,in->jrn", dec.rho / xi.pow(2).sum(1), xi @ xi.T)
    assert torch.allclose(lhs, rhs, atol=1e-9)


def test_random_residual_is_orthogonal_to_the_span():
    g = torch.Generator().manual_seed(1)
    data = make_multipatch(8, 100, 3.0, generator=g, dtype=torch.float64)
    w0 = torch.zeros(2, 2, 100, dtype=torch.float64)
    w = torch.randn(2, 2, 100, generator=g, dtype=torch.float64)
    dec = decompose(w, w0, data.mu, data.noise, data.y)
    assert torch.allclose(dec.residual @ data.mu, torch.zeros(2, 2, dtype=w.dtype), atol=1e-10)
    assert torch.allclose(
        dec.residual @ data.noise[:, 0].T, torch.zeros(2, 2, 8, dtype=w.dtype), atol=1e-9
    )
    assert dec.memorisation.shape == () and dec.ratio > 0
