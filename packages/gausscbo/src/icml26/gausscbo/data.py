"""Targets: Gaussian mixtures, the paper's 2-D test cases A–D and the d-dimensional generator.

- :class:`GaussianMixture`: weights, means, covariances; a JAX log-density; JSON and
  NPZ files (read without pickle).
- :func:`paper_target`: targets A–D of Table 2 (Appendix D.2).
- :func:`random_gmm`: the random d = 10 mixtures of Appendix D.3 (K = 5 components,
  Dirichlet weights, means uniform on the sphere of radius R√d, covariance
  eigenvalues uniform in [λ_min, λ_max] with a Haar-random eigenbasis).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from icml26.shared.datasets import sample_gaussian_mixture

__all__ = ["PAPER_TARGETS", "GaussianMixture", "MixtureDensity", "paper_target", "random_gmm"]


class MixtureDensity(NamedTuple):
    """log μ_targ of a Gaussian mixture as a JAX pytree (arrays are traced, not baked
    into compiled code, so one compilation serves every mixture of the same size)."""

    log_norm: jax.Array  # (K,) log w_k − log det L_k (−1e30 for padding components)
    means: jax.Array  # (K, d)
    prec_chol: jax.Array  # (K, d, d) L_k⁻¹

    def __call__(self, x: jax.Array) -> jax.Array:
        diff = x[..., None, :] - self.means  # (…, K, d)
        # y_ki = Σ_j P_kij diff_kj as a product and a sum (no batch-wide dot, so a point's
        # value does not depend on the batch it is evaluated in)
        y = jnp.sum(self.prec_chol * diff[..., None, :], axis=-1)
        logp = self.log_norm - 0.5 * jnp.sum(y**2, -1)
        return logsumexp(logp, axis=-1) - 0.5 * self.means.shape[-1] * jnp.log(2 * jnp.pi)


@dataclass(frozen=True, eq=False)
class GaussianMixture:
    """μ_targ = Σ_k w_k N(m_k, Σ_k); ``weights`` (K,), ``means`` (K, d), ``covs`` (K, d, d)."""

    weights: np.ndarray
    means: np.ndarray
    covs: np.ndarray
    name: str = ""

    def __post_init__(self) -> None:
        w = np.asarray(self.weights, dtype=np.float64)
        mu = np.asarray(self.means, dtype=np.float64)
        cov = np.asarray(self.covs, dtype=np.float64)
        if mu.ndim != 2:
            raise ValueError(f"means must be (K, d), got shape {mu.shape}")
        k, d = mu.shape
        if w.shape != (k,):
            raise ValueError(f"weights must have shape ({k},), got {w.shape}")
        if cov.shape != (k, d, d):
            raise ValueError(f"covs must have shape ({k}, {d}, {d}), got {cov.shape}")
        for arr, label in ((w, "weights"), (mu, "means"), (cov, "covs")):
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"{label} contain NaN or inf")
        if np.any(w < 0) or not np.isclose(w.sum(), 1.0, atol=1e-8):
            raise ValueError(f"weights must be non-negative and sum to 1, got {w}")
        if not np.allclose(cov, np.swapaxes(cov, 1, 2), atol=1e-10):
            raise ValueError("every covariance must be symmetric")
        if np.linalg.eigvalsh(cov).min() <= 0:
            raise ValueError("every covariance must be positive definite")
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "means", mu)
        object.__setattr__(self, "covs", cov)
        chol = np.linalg.cholesky(cov)
        object.__setattr__(self, "_prec_chol", np.linalg.inv(chol))
        object.__setattr__(
            self, "_log_norm", np.log(w) - np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(1)
        )

    @property
    def d(self) -> int:
        return int(self.means.shape[1])

    @property
    def k(self) -> int:
        return int(self.means.shape[0])

    def density(self, pad_to: int | None = None) -> MixtureDensity:
        """The log-density as a pytree; ``pad_to`` adds weight-0 components up to that K."""
        log_norm, means, prec = self._log_norm, self.means, self._prec_chol
        extra = 0 if pad_to is None else int(pad_to) - self.k
        if extra < 0:
            raise ValueError(f"pad_to={pad_to} is below the number of components {self.k}")
        if extra:
            log_norm = np.concatenate([log_norm, np.full(extra, -1e30)])
            means = np.concatenate([means, np.zeros((extra, self.d))])
            prec = np.concatenate([prec, np.broadcast_to(np.eye(self.d), (extra, self.d, self.d))])
        # numpy float64 leaves: converted at trace time, so they keep double precision
        # even when the objective is built outside a float64 context
        return MixtureDensity(np.asarray(log_norm), np.asarray(means), np.asarray(prec))

    def log_density(self, x: jax.Array) -> jax.Array:
        """log μ_targ(x) (normalised) for x of shape (…, d); JAX-traceable."""
        return self.density()(jnp.asarray(x))

    def potential(self, x: jax.Array) -> jax.Array:
        """V(x) = −log μ_targ(x)."""
        return -self.log_density(x)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` draws (n, d) from the mixture."""
        x, _ = sample_gaussian_mixture(rng, n, self.means, self.covs, self.weights)
        return x

    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance of the mixture (the forward-KL optimal Gaussian)."""
        mean = self.weights @ self.means
        diff = self.means - mean
        cov = np.einsum("k,kij->ij", self.weights, self.covs + np.einsum("ki,kj->kij", diff, diff))
        return mean, cov

    # -- files ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "weights": self.weights.tolist(),
            "means": self.means.tolist(),
            "covs": self.covs.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> GaussianMixture:
        missing = [key for key in ("weights", "means", "covs") if key not in data]
        if missing:
            raise ValueError(
                f"a Gaussian mixture needs keys weights, means, covs; missing {missing}"
            )
        return cls(data["weights"], data["means"], data["covs"], name=str(data.get("name", "")))

    def save(self, path: str | Path) -> Path:
        """Write ``.json`` or ``.npz`` (by suffix)."""
        path = Path(path)
        if path.suffix == ".json":
            path.write_text(json.dumps(self.to_dict(), indent=2))
        elif path.suffix == ".npz":
            np.savez(path, weights=self.weights, means=self.means, covs=self.covs)
        else:
            raise ValueError(f"unknown target format {path.suffix!r}; use .json or .npz")
        return path

    @classmethod
    def load(cls, path: str | Path) -> GaussianMixture:
        """Read a mixture from ``.json`` ({"weights", "means", "covs"}) or ``.npz`` (same keys)."""
        path = Path(path)
        if path.suffix == ".json":
            try:
                data = json.loads(path.read_text())
            except json.JSONDecodeError as err:
                raise ValueError(f"{path} is not valid JSON: {err}") from err
            return cls.from_dict(data)
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as z:
                return cls.from_dict({k: z[k] for k in z.files} | {"name": path.stem})
        raise ValueError(f"unknown target format {path.suffix!r}; use .json or .npz")


# Appendix D.2, Table 2.
PAPER_TARGETS: dict[str, dict] = {
    "A": {
        "means": [[-2.2, 0.0], [2.2, 0.0]],
        "covs": [[[1.0, 0.2], [0.2, 0.6]], [[1.0, -0.2], [-0.2, 0.6]]],
        "weights": [0.5, 0.5],
    },
    "B": {
        "means": [[-1.77, 1.06], [-0.35, -0.35]],
        "covs": [[[1.25, -0.25], [-0.25, 1.25]], [[2.5, -1.5], [-1.5, 2.5]]],
        "weights": [0.5, 0.5],
    },
    "C": {
        "means": [[-2.47, 1.06], [-1.48, 0.64], [-2.05, 0.07], [0.20, -1.61]],
        "covs": [
            [[0.45, 0.0], [0.0, 0.45]],
            [[1.9, -1.9], [-1.9, 2.3]],
            [[2.3, -1.9], [-1.9, 1.9]],
            [[2.51, -2.49], [-2.49, 2.51]],
        ],
        "weights": [0.25, 0.30, 0.30, 0.15],
    },
    "D": {
        "means": [[-1.5, -2.0], [1.5, 0.7], [-1.5, 0.7], [1.5, -2.0]],
        "covs": [[[0.7, 0.0], [0.0, 0.5]]] * 4,
        "weights": [0.2, 0.2, 0.2, 0.4],
    },
}


def paper_target(name: str) -> GaussianMixture:
    """Target ``"A"``, ``"B"``, ``"C"`` or ``"D"`` of the paper (d = 2)."""
    key = str(name).upper()
    if key not in PAPER_TARGETS:
        raise ValueError(f"unknown target {name!r}; the paper's targets are A, B, C, D")
    return GaussianMixture.from_dict({**PAPER_TARGETS[key], "name": key})


def random_gmm(
    rng: np.random.Generator,
    d: int = 10,
    k: int = 5,
    *,
    radius: float = 3.0,
    eig_range: tuple[float, float] = (0.4, 2.0),
    dirichlet: float = 1.0,
) -> GaussianMixture:
    """A random K-component mixture in R^d as in Appendix D.3 (defaults: the paper's).

    Weights ~ Dirichlet(1,…,1); means uniform on the sphere of radius ``radius·√d``;
    covariances Q diag(λ) Qᵀ with Q Haar-orthogonal and λ_i ~ U(eig_range).
    The Dirichlet concentration and the eigenvalue law are not given in the paper
    (reconstructed).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if d < 1 or k < 1:
        raise ValueError(f"d and k must be positive, got d={d}, k={k}")
    lo, hi = eig_range
    if not 0 < lo <= hi:
        raise ValueError(f"eig_range must satisfy 0 < low <= high, got {eig_range}")
    weights = rng.dirichlet(np.full(k, dirichlet))
    u = rng.standard_normal((k, d))
    means = radius * np.sqrt(d) * u / np.linalg.norm(u, axis=1, keepdims=True)
    q, r = np.linalg.qr(rng.standard_normal((k, d, d)))
    q = q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]  # Haar measure
    lam = rng.uniform(lo, hi, size=(k, d))
    covs = np.einsum("kij,kj,klj->kil", q, lam, q)
    covs = 0.5 * (covs + np.swapaxes(covs, 1, 2))
    return GaussianMixture(weights, means, covs, name=f"gmm-d{d}-k{k}")
