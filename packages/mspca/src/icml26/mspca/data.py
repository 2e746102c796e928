"""Data beyond the simulator: a real-data example and loaders for users' matrices.

The paper's experiments are synthetic (see :mod:`icml26.mspca.simulate`). Its
dependencies hint at an audio experiment that needs a hub download; offline, the
real-data example is scikit-learn's bundled digits with a mean shift injected into a
random subset of the images (reconstructed substitute).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class ShiftedDigits:
    """Digits (samples as rows) with a mean shift added to a random subset."""

    x: np.ndarray  # (n, d) contaminated, standardized
    x_clean: np.ndarray  # (n, d) before the shift
    mask: np.ndarray  # (n,) bool: the shifted images
    shift: np.ndarray  # (d,) the mean-shift vector m
    clean_pc: np.ndarray  # (d,) top principal axis of the clean data (the metric's reference)


def shifted_digits(
    rng: np.random.Generator, *, fraction: float = 0.10, strength: float = 2.0
) -> ShiftedDigits:
    """scikit-learn's 1,797 digits, pixels standardized (constant pixels dropped).

    The standardized clean data are centered, as the paper's model assumes (its
    eigenspace-invariance result needs a centered X). A Haar-direction shift m with
    ‖m‖² = strength·λ₁/fraction (λ₁ the top clean eigenvalue, so the mean spike
    θ² = π‖m‖² is ``strength`` times the leading covariance spike) is added to a
    random ``fraction`` of the images.
    """
    from sklearn.datasets import load_digits

    if not 0 < fraction < 1:
        raise ValueError(f"fraction must lie in (0, 1), got {fraction}")
    if not strength > 0:
        raise ValueError(f"strength must be positive, got {strength}")
    pixels = load_digits().data.astype(float)
    pixels = pixels[:, pixels.std(axis=0) > 0]
    x = (pixels - pixels.mean(axis=0)) / pixels.std(axis=0)
    n, d = x.shape
    w, v = np.linalg.eigh(x.T @ x / n)
    direction = rng.standard_normal(d)
    direction /= np.linalg.norm(direction)
    shift = direction * np.sqrt(strength * w[-1] / fraction)
    mask = rng.random(n) < fraction
    return ShiftedDigits(x + np.outer(mask, shift), x, mask, shift, v[:, -1])


def load_matrix(
    path: str | Path, *, samples_as: str = "rows", delimiter: str | None = None
) -> np.ndarray:
    """Read a numeric matrix and return it with samples as **rows** (n × d).

    Formats: ``.npy`` (read with ``allow_pickle=False``), ``.csv``/``.tsv``/``.txt``
    (numbers only, no header), ``.h5ad`` (AnnData's ``.X``; needs ``anndata``).
    ``samples_as="columns"`` transposes a file stored in the paper's d × n layout.
    """
    path = Path(path)
    if samples_as not in ("rows", "columns"):
        raise ValueError(f"samples_as must be 'rows' or 'columns', got {samples_as!r}")
    if not path.is_file():
        raise ValueError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            x = np.load(path, allow_pickle=False)
        except ValueError as err:
            raise ValueError(f"{path}: not a plain numeric .npy array ({err})") from err
    elif suffix in (".csv", ".tsv", ".txt"):
        sep = delimiter if delimiter is not None else ("\t" if suffix == ".tsv" else ",")
        if suffix == ".txt" and delimiter is None:
            sep = None
        try:
            x = np.loadtxt(path, delimiter=sep, ndmin=2)
        except ValueError as err:
            raise ValueError(f"{path}: expected numbers only, no header ({err})") from err
    elif suffix == ".h5ad":
        try:
            import anndata
        except ImportError as err:
            raise ImportError("reading .h5ad needs anndata: pip install anndata") from err
        x = anndata.read_h5ad(path).X
        x = x.toarray() if hasattr(x, "toarray") else np.asarray(x)
    else:
        raise ValueError(
            f"{path}: unsupported format {suffix!r}; use .npy, .csv, .tsv, .txt or .h5ad"
        )
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"{path}: expected a 2-D matrix, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{path}: the matrix contains NaN or inf")
    return x if samples_as == "rows" else x.T
