"""The closed-form, differentiable explanation of a subgraph (method; ``regression_utils.py``).

The paper explains a GNN's outputs on a subgraph GraphLIME-style, replacing GraphLIME's
HSIC Lasso with ridge regression so the explanation has a closed form and can be
differentiated with respect to the model's parameters. For a subgraph with node
features X_S (n × F) and predicted class probabilities Y_S (n × C):

1. standardise X_S and Y_S each with one *global* mean and standard deviation;
2. per-feature Gaussian kernels ``K[i, j, k] = exp(-(x_ik - x_jk)² / (0.2·F))`` and the
   output kernel ``L[i, j] = exp(-‖y_i - y_j‖² / (0.2·C))`` (bandwidth 2σ²·0.1, σ² = dim);
3. double-centre each kernel and divide it by its Frobenius norm (+1e-10);
4. flatten to K̄ ∈ R^{n²×F}, L̄ ∈ R^{n²} and solve the ridge regression (by Cholesky:
   the system is symmetric positive definite)

       β = (K̄ᵀK̄ + λI)⁻¹ K̄ᵀL̄,   λ = 0.1.

β ∈ R^F holds one attribution per feature. Everything is batched over a leading
dimension of subgraphs of equal size. When n² < F the same β is computed through the
push-through identity ``(K̄ᵀK̄ + λI)⁻¹K̄ᵀ = K̄ᵀ(K̄K̄ᵀ + λI)⁻¹`` (an n²×n² solve instead of
F×F; identical in exact arithmetic), which is what makes 6,805-feature graphs tractable.
"""

from __future__ import annotations

import torch
from torch import Tensor

#: ridge penalty λ of the official code (``regression_kwargs['lambda']``)
RIDGE_LAMBDA = 0.1
#: the kernel bandwidth factor: exp(-d² / (2·σ²·0.1)) with σ² = dimension
BANDWIDTH_FACTOR = 0.1


def _standardise(a: Tensor) -> Tensor:
    """(a - mean) / std with one scalar mean and std per subgraph (official: global z-score).

    A constant block has std 0; it then maps to all zeros (its kernels are constant and
    centre to zero, so β = 0), where the official code would divide by zero.
    """
    mean = a.mean(dim=(-2, -1), keepdim=True)
    std = a.std(dim=(-2, -1), keepdim=True)  # unbiased, as torch.std in the official code
    return (a - mean) / std.clamp_min(torch.finfo(a.dtype).tiny)


def feature_kernels(x: Tensor) -> Tensor:
    """Per-feature Gaussian kernels: (..., n, F) -> (..., n, n, F), bandwidth 0.2·F."""
    x = _standardise(x)
    d = x.shape[-1]
    diff = x.unsqueeze(-3) - x.unsqueeze(-2)  # (..., n, n, F)
    return torch.exp(-(diff**2) / (2.0 * d * BANDWIDTH_FACTOR + 1e-10))


def output_kernel(y: Tensor) -> Tensor:
    """Gaussian kernel on whole output vectors: (..., n, C) -> (..., n, n, 1), bandwidth 0.2·C."""
    y = _standardise(y)
    c = y.shape[-1]
    dist = ((y.unsqueeze(-3) - y.unsqueeze(-2)) ** 2).sum(dim=-1, keepdim=True)
    return torch.exp(-dist / (2.0 * c * BANDWIDTH_FACTOR + 1e-10))


def center_and_normalize(kernel: Tensor) -> Tensor:
    """Double centring and per-channel Frobenius normalisation (official ``compute_gram_matrix``).

    ``kernel`` is (..., n, n, k); each of the k channels is centred over both node axes
    (first the row axis, then the column axis, in that order as in the official code)
    and scaled to unit Frobenius norm (+1e-10).
    """
    g = kernel - kernel.mean(dim=-3, keepdim=True)
    g = g - g.mean(dim=-2, keepdim=True)
    norm = torch.linalg.vector_norm(g, dim=(-3, -2), keepdim=True) + 1e-10
    return g / norm


def ridge_explanation(x: Tensor, y: Tensor, lam: float = RIDGE_LAMBDA) -> Tensor:
    """The paper's explanation β for one subgraph or a batch of equal-sized subgraphs.

    Args:
        x: node features, ``(n, F)`` or ``(B, n, F)``.
        y: class probabilities of the same nodes, ``(n, C)`` or ``(B, n, C)``; gradients
            flow through ``y`` into the model that produced it.
        lam: ridge penalty λ (0.1 in the paper).

    Returns:
        β, ``(F,)`` or ``(B, F)``.
    """
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        raise TypeError(
            f"x and y must be torch tensors, got {type(x).__name__}, {type(y).__name__}"
        )
    if x.dim() not in (2, 3) or y.dim() != x.dim():
        raise ValueError(
            f"x must be (n, F) or (B, n, F) and y the same rank, got {tuple(x.shape)}, "
            f"{tuple(y.shape)}"
        )
    if x.shape[:-1] != y.shape[:-1]:
        raise ValueError(f"x and y describe different nodes: {tuple(x.shape)} vs {tuple(y.shape)}")
    n = x.shape[-2]
    if n < 2:
        raise ValueError(f"a subgraph needs at least 2 nodes to be explained, got {n}")
    if lam <= 0:
        raise ValueError(f"the ridge penalty must be positive, got {lam}")
    if not torch.is_floating_point(x):
        x = x.float()
    y = y.to(x.dtype)
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x (the subgraph features) contains NaN or inf")
    if not bool(torch.isfinite(y.detach()).all()):
        raise ValueError("y (the model's output probabilities) contains NaN or inf")

    f = x.shape[-1]
    k_bar = center_and_normalize(feature_kernels(x)).reshape(*x.shape[:-2], n * n, f)
    l_bar = center_and_normalize(output_kernel(y)).reshape(*y.shape[:-2], n * n, 1)
    kt = k_bar.transpose(-1, -2)
    if n * n < f:
        # β = K̄ᵀ (K̄K̄ᵀ + λI)⁻¹ L̄  — the n²×n² form of the same ridge solution
        alpha = _spd_solve(k_bar @ kt, l_bar, lam)
        beta = kt @ alpha
    else:
        beta = _spd_solve(kt @ k_bar, kt @ l_bar, lam)
    return beta.squeeze(-1)


def _spd_solve(gram: Tensor, rhs: Tensor, lam: float) -> Tensor:
    """(G + λI)⁻¹ rhs for a Gram matrix G, by Cholesky: G + λI is symmetric positive
    definite, so no pivoting is needed (same solution as ``torch.linalg.solve``)."""
    eye = torch.eye(gram.shape[-1], dtype=gram.dtype, device=gram.device)
    a = gram + lam * eye
    chol, info = torch.linalg.cholesky_ex(a)
    if bool((info != 0).any()):  # not positive definite in floating point: fall back to LU
        return torch.linalg.solve(a, rhs)
    return torch.cholesky_solve(rhs, chol)


def informative_features(x: Tensor) -> Tensor:
    """Features that vary inside every subgraph of ``x`` (``(n, F)`` or ``(B, n, F)``) -> bool (F,).

    A feature that is constant inside a subgraph (in sparse bag-of-words data: absent
    from all its nodes) has a zero centred kernel, hence β_j = 0 exactly, whatever the
    model. Such features can never carry the watermark; counting their zeros as sign
    matches is what inflates the official "with zeros" statistic.
    """
    if x.dim() == 2:
        x = x.unsqueeze(0)
    varies = (x != x[:, :1, :]).any(dim=1)  # (B, F)
    return varies.all(dim=0)
