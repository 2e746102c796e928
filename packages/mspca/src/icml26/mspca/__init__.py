"""Mean-Shift PCA by Knockoff Mean (Li, Li & Yao; ICML 2026; arXiv:2605.25460).

A small fraction of mean-shifted samples can turn the leading principal component
towards the shift. Mean-Shift PCA adds a deliberate "knockoff" mean shift to every
sample and drops the eigenvalues that move: covariance spikes stay put, mean-shift
spikes do not. Two top-k eigensolves, in JAX (float64, jit, vmap).

Importing this package turns on JAX's float64 mode (``jax_enable_x64``), which the
stability test's n^{-1/2} tolerance needs.
"""

import jax

jax.config.update("jax_enable_x64", True)

from icml26.mspca.baselines import BASELINES, Baseline  # noqa: E402
from icml26.mspca.data import ShiftedDigits, load_matrix, shifted_digits  # noqa: E402
from icml26.mspca.eigensolve import exact_top_eigenpairs, top_eigenpairs  # noqa: E402
from icml26.mspca.estimator import MeanShiftPCA  # noqa: E402
from icml26.mspca.knockoff import (  # noqa: E402
    KnockoffResult,
    alignment,
    knockoff_pca,
    knockoff_pca_batch,
)
from icml26.mspca.simulate import (  # noqa: E402
    Sample,
    paper_shift_norm,
    paper_spike,
    simulate,
    simulate_batch,
)
from icml26.mspca.spectrum import (  # noqa: E402
    bbp_threshold,
    bulk_edge,
    spike_location,
    spike_strength,
)

__all__ = [
    "BASELINES",
    "Baseline",
    "KnockoffResult",
    "MeanShiftPCA",
    "Sample",
    "ShiftedDigits",
    "alignment",
    "bbp_threshold",
    "bulk_edge",
    "exact_top_eigenpairs",
    "knockoff_pca",
    "knockoff_pca_batch",
    "load_matrix",
    "paper_shift_norm",
    "paper_spike",
    "shifted_digits",
    "simulate",
    "simulate_batch",
    "spike_location",
    "spike_strength",
    "top_eigenpairs",
]
