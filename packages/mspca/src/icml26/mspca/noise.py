"""The noise level, read off the bulk of the spectrum (Marchenko–Pastur median matching).

The paper's model has unit noise variance: the spectral map g, the BBP threshold √c
and the tolerance ε = C·n^{-1/2} are all in those units. Users' data are not, and a
factor of two in scale is enough to turn a covariance spike into an "unstable" one
or every eigenvalue into a "stable" one. Under X = σZ + (finite rank) the nonzero
eigenvalues of XXᵀ/n follow σ² times the Marchenko–Pastur law of ratio c = d/n,
up to the few outliers, so

    σ̂² = median(eigenvalues of S) / median(MP law of ratio c),

which a finite number of spikes moves by O(1/d) only. The estimate is scale
equivariant (σ̂²(aX) = a²σ̂²(X)), so Algorithm 1 run on X/σ̂ gives the same answer
for any rescaling of the data. To keep it cheap the spectrum is that of an evenly
spaced subset of at most ``BULK_ROWS`` features (the same law with ratio m/n).

The Kolmogorov–Smirnov distance between the rescaled bulk and the Marchenko–Pastur
law says whether the model fits at all (integer pixels, heavy tails, strongly
correlated features do not): :data:`MISFIT_WARNING` is the level above which
:func:`~icml26.mspca.knockoff.knockoff_pca` warns. (Reconstructed: the paper assumes
σ² = 1 and does not estimate it.)
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from icml26.mspca.spectrum import mp_median, mp_table

BULK_ROWS = 128
# A pure-noise 128 × 1000 matrix sits at about 0.02; a finite number of spikes adds
# about (their number)/128.
MISFIT_WARNING = 0.1


def bulk_rows(d: int, max_rows: int = BULK_ROWS) -> np.ndarray:
    """Evenly spaced feature indices used for the bulk (all of them when d ≤ max_rows)."""
    if d <= max_rows:
        return np.arange(d)
    return np.unique(np.linspace(0, d - 1, max_rows).round().astype(int))


def estimate_noise_variance(x: jax.Array, max_rows: int = BULK_ROWS) -> tuple[jax.Array, jax.Array]:
    """σ̂² by Marchenko–Pastur median matching, and the Kolmogorov–Smirnov misfit.

    ``x`` is d × n (samples as columns, not centered); traceable and vmappable.
    """
    d, n = x.shape
    rows = bulk_rows(d, max_rows)
    sub = x[rows] if len(rows) < d else x
    m = sub.shape[0]
    ratio = m / n
    gram = sub @ sub.T / n if m <= n else sub.T @ sub / n
    lam = jnp.linalg.eigvalsh(gram)  # ascending: the min(m, n) nonzero eigenvalues
    sigma2 = jnp.median(lam) / mp_median(ratio)
    grid, cdf = mp_table(ratio)
    f = jnp.interp(lam / sigma2, jnp.asarray(grid), jnp.asarray(cdf), left=0.0, right=1.0)
    p = lam.shape[0]
    upper = jnp.arange(1, p + 1) / p - f
    lower = f - jnp.arange(p) / p
    return sigma2, jnp.maximum(jnp.max(upper), jnp.max(lower))
