"""Exact conditional and unconditional velocity fields of a Gaussian-mixture target.

No training: for data ``x1 ~ Σ_k π_k N(μ_k, S_k)`` and the linear interpolant
``x_t = t·x1 + (1 − t)·x0`` (``x0 ~ N(0, I)``), each component gives a Gaussian path

    x_t | k ~ N(t·μ_k, Σ_k(t)),   Σ_k(t) = t²·S_k + (1 − t)²·I,

and ``(x1 − x0, x_t) | k`` is jointly Gaussian with cross-covariance ``t·S_k − (1 − t)·I``,
so the flow-matching velocity ``v(x, t) = E[x1 − x0 | x_t = x]`` is

    v(x, t) = Σ_k p_t(k | x) · (μ_k + (t·S_k − (1 − t)·I) Σ_k(t)⁻¹ (x − t·μ_k)),

with posterior weights ``p_t(k | x) ∝ π_k N(x; t·μ_k, Σ_k(t))`` (softmax of
log-likelihoods). The class-``c`` velocity restricts the sum to the components of
class ``c`` (renormalising their weights); the unconditional one uses all of them.
Everything is diagonal in the eigenbasis of each ``S_k``, so one batched pass
evaluates all components; the formula is finite at ``t = 1``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

__all__ = ["GaussianMixtureFlow", "ring_mixture"]


class GaussianMixtureFlow:
    """A labelled Gaussian mixture with its exact flow-matching velocities.

    Parameters
    ----------
    means:
        ``(K, d)`` component means.
    covariances:
        ``(K, d, d)`` symmetric positive-definite covariances, or ``(K,)`` standard
        deviations of isotropic components.
    weights:
        ``(K,)`` mixture weights (uniform when omitted).
    classes:
        ``(K,)`` class label of each component (component ``k`` is class ``k`` when
        omitted).
    device, dtype:
        Where the fields are evaluated; float64 by default.

    Call it as a velocity model: ``flow(x, t, cond)`` with ``cond`` a ``(B,)`` tensor of
    class labels, or ``None`` for the unconditional velocity.
    """

    def __init__(
        self,
        means: Any,
        covariances: Any,
        weights: Any = None,
        classes: Sequence[int] | None = None,
        *,
        device: Any = None,
        dtype: torch.dtype = torch.float64,
    ):
        mu = np.asarray(means, dtype=np.float64)
        if mu.ndim != 2 or mu.shape[0] < 1:
            raise ValueError(f"means must be (K, d), got shape {mu.shape}")
        k, d = mu.shape
        cov = np.asarray(covariances, dtype=np.float64)
        if cov.shape == (k,):
            if np.any(cov <= 0):
                raise ValueError("standard deviations must be positive")
            cov = (cov**2)[:, None, None] * np.eye(d)
        if cov.shape != (k, d, d):
            raise ValueError(f"covariances must be ({k}, {d}, {d}) or ({k},), got {cov.shape}")
        if not np.allclose(cov, np.swapaxes(cov, 1, 2)):
            raise ValueError("covariances must be symmetric")
        lam, vecs = np.linalg.eigh(cov)
        if np.any(lam <= 0):
            raise ValueError("covariances must be positive definite")
        w = np.full(k, 1.0 / k) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (k,) or np.any(w <= 0) or not np.isclose(w.sum(), 1.0):
            raise ValueError(f"weights must be {k} positive numbers summing to 1")
        cls = np.arange(k) if classes is None else np.asarray(classes)
        if cls.shape != (k,) or cls.dtype.kind not in "iu" or cls.min() < 0:
            raise ValueError(f"classes must be {k} non-negative integer labels")
        self.n_components, self.dim = k, d
        self.n_classes = int(cls.max()) + 1
        if len(np.unique(cls)) != self.n_classes:
            raise ValueError("classes must use every label 0..C-1")
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.dtype = dtype

        def as_t(a: np.ndarray) -> Tensor:
            return torch.as_tensor(a, dtype=dtype, device=self.device)

        self.means, self.covariances, self.weights = as_t(mu), as_t(cov), as_t(w)
        self.classes = torch.as_tensor(cls, dtype=torch.long, device=self.device)
        self._eigval, self._eigvec = as_t(lam), as_t(vecs)  # S_k = U diag(λ) Uᵀ
        self._chol = as_t(np.linalg.cholesky(cov))
        self._isotropic = bool(np.allclose(vecs, np.eye(d)))
        self._log_norm = 0.5 * d * math.log(2 * math.pi)
        # log of the within-class weights: a (C, K) table, -inf off-class
        logw = np.full((self.n_classes, k), -np.inf)
        for c in range(self.n_classes):
            on = cls == c
            logw[c, on] = np.log(w[on] / w[on].sum())
        self._log_class_weights = as_t(logw)
        self._log_weights = as_t(np.log(w))

    # -- checks ------------------------------------------------------------------------
    def _inputs(self, x: Tensor, t: Tensor | float, cond: Any) -> tuple[Tensor, Tensor, Tensor]:
        if not isinstance(x, Tensor) or x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"x must be a (B, {self.dim}) tensor, got {getattr(x, 'shape', x)}")
        x = x.to(device=self.device, dtype=self.dtype)
        t = torch.as_tensor(t, dtype=self.dtype, device=self.device)
        if t.ndim == 0:
            t = t.expand(x.shape[0])
        if t.shape != (x.shape[0],):
            raise ValueError(f"t must be a scalar or ({x.shape[0]},), got {tuple(t.shape)}")
        if cond is None:
            logw = self._log_weights.expand(x.shape[0], -1)
        else:
            c = torch.as_tensor(cond, device=self.device).long()
            if c.shape != (x.shape[0],):
                raise ValueError(f"cond must be ({x.shape[0]},) class labels, got {tuple(c.shape)}")
            if c.min() < 0 or c.max() >= self.n_classes:
                raise ValueError(f"class labels must lie in 0..{self.n_classes - 1}")
            logw = self._log_class_weights[c]
        return x, t, logw

    # -- the Gaussian paths --------------------------------------------------------------
    def _components(
        self, x: Tensor, t: Tensor, *, data: bool = False
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """Per component: log N(x; tμ_k, Σ_k(t)), E[x1 − x0 | x, k] and (if ``data``)
        E[x1 | x, k]; shapes (B, K), (B, K, d), (B, K, d)."""
        tt = t[:, None, None]  # (B, 1, 1)
        diff = x[:, None, :] - tt * self.means[None]  # (B, K, d)
        # work in the eigenbasis of S_k, where Σ_k(t) is diagonal (skipped if isotropic)
        proj = diff if self._isotropic else torch.einsum("bkd,kde->bke", diff, self._eigvec)
        lam = self._eigval[None]  # (1, K, d)
        var = tt**2 * lam + (1 - tt) ** 2  # eigenvalues of Σ_k(t)
        logp = -0.5 * ((proj**2) / var + torch.log(var)).sum(-1) - self._log_norm
        gain_v = (tt * lam - (1 - tt)) / var  # Cov(x1 − x0, x_t) Σ⁻¹
        vel = self._rotate(gain_v * proj) + self.means[None]
        den = self._rotate(tt * lam / var * proj) + self.means[None] if data else None
        return logp, vel, den

    def _rotate(self, y: Tensor) -> Tensor:
        return y if self._isotropic else torch.einsum("kde,bke->bkd", self._eigvec, y)

    def posterior(self, x: Tensor, t: Tensor | float, cond: Any = None) -> Tensor:
        """``p_t(k | x, cond)``, shape (B, K)."""
        x, t, logw = self._inputs(x, t, cond)
        logp, _, _ = self._components(x, t)
        return torch.softmax(logw + logp, dim=-1)

    def velocity(self, x: Tensor, t: Tensor | float, cond: Any = None) -> Tensor:
        """The exact flow-matching velocity ``E[x1 − x0 | x_t = x, cond]``, shape (B, d)."""
        x, t, logw = self._inputs(x, t, cond)
        logp, vel, _ = self._components(x, t)
        post = torch.softmax(logw + logp, dim=-1)
        return (post[..., None] * vel).sum(1)

    __call__ = velocity

    def velocity_pair(
        self, x: Tensor, t: Tensor | float, cond: Any, null_cond: Any = None
    ) -> tuple[Tensor, Tensor]:
        """``(v(x, t, cond), v(x, t, null_cond))`` sharing one pass over the components."""
        x, t, logw_c = self._inputs(x, t, cond)
        _, _, logw_u = self._inputs(x, t, null_cond)
        logp, vel, _ = self._components(x, t)
        post = torch.softmax(torch.stack([logw_c, logw_u]) + logp, dim=-1)  # (2, B, K)
        v = (post[..., None] * vel).sum(2)
        return v[0], v[1]

    def denoised(self, x: Tensor, t: Tensor | float, cond: Any = None) -> Tensor:
        """``E[x1 | x_t = x, cond]`` (the data prediction), shape (B, d)."""
        x, t, logw = self._inputs(x, t, cond)
        logp, _, data = self._components(x, t, data=True)
        post = torch.softmax(logw + logp, dim=-1)
        return (post[..., None] * data).sum(1)

    def log_density(self, x: Tensor, t: Tensor | float, cond: Any = None) -> Tensor:
        """``log p_t(x | cond)`` of the interpolant's marginal, shape (B,)."""
        x, t, logw = self._inputs(x, t, cond)
        logp, _, _ = self._components(x, t)
        return torch.logsumexp(logw + logp, dim=-1)

    def score(self, x: Tensor, t: Tensor | float, cond: Any = None) -> Tensor:
        """``∇ log p_t(x | cond)`` in closed form: ``(t·E[x1 | x] − x)/(1 − t)²``."""
        x, t, _ = self._inputs(x, t, cond)
        tt = t[:, None]
        return (tt * self.denoised(x, t, cond) - x) / (1 - tt) ** 2

    # -- data ---------------------------------------------------------------------------
    def sample(self, labels: Tensor, generator: torch.Generator | None = None) -> Tensor:
        """Draw one data point ``x1`` of class ``labels[i]`` per entry, shape (B, d)."""
        labels = torch.as_tensor(labels, device=self.device).long()
        if labels.ndim != 1 or labels.min() < 0 or labels.max() >= self.n_classes:
            raise ValueError(f"labels must be a 1-D tensor of classes in 0..{self.n_classes - 1}")
        probs = self._log_class_weights[labels].exp()
        comp = torch.multinomial(probs.float().cpu(), 1, generator=generator).squeeze(1)
        comp = comp.to(self.device)
        z = torch.randn(labels.shape[0], self.dim, generator=generator, dtype=self.dtype)
        z = z.to(self.device)
        return self.means[comp] + torch.einsum("bde,be->bd", self._chol[comp], z)

    def class_means(self) -> Tensor:
        """The mean of each class's distribution, shape (C, d)."""
        w = self._log_class_weights.exp()
        return w @ self.means


def ring_mixture(
    n_classes: int = 8,
    *,
    radius: float = 4.0,
    std: float = 0.5,
    modes_per_class: int = 1,
    device: Any = None,
    dtype: torch.dtype = torch.float64,
) -> GaussianMixtureFlow:
    """``n_classes · modes_per_class`` isotropic Gaussians evenly spaced on a circle.

    With ``modes_per_class > 1`` the modes of one class are spread around the ring
    (mode ``j`` of class ``c`` sits at angle index ``c + j·n_classes``).
    """
    if n_classes < 1 or modes_per_class < 1:
        raise ValueError("n_classes and modes_per_class must be positive")
    if radius <= 0 or std <= 0:
        raise ValueError(f"radius and std must be positive, got {radius}, {std}")
    k = n_classes * modes_per_class
    angles = 2 * np.pi * np.arange(k) / k
    means = radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    classes = np.arange(k) % n_classes
    return GaussianMixtureFlow(means, np.full(k, std), classes=classes, device=device, dtype=dtype)
