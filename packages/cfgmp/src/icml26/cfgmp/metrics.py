"""Sample-quality and mechanism metrics.

- :func:`wasserstein2` — exact W2 between two empirical distributions (POT's network
  simplex, squared Euclidean cost); :func:`classwise_w2` averages it over classes.
- :func:`mmd2` — squared MMD with an RBF kernel (median bandwidth).
- :func:`mode_precision` — share of samples within ``n_std`` standard deviations
  of a mode of their class (a mixture's "class precision").
- :func:`frechet_distance` — the Fréchet (FID-style) distance between Gaussian fits
  of two feature sets (Heusel et al., 2017).
- :func:`precision_recall` — k-NN manifold precision and recall (Kynkäänniemi et al.,
  2019).
- :func:`classifier_accuracy` — share of samples a classifier assigns to the
  requested class.
- :func:`trajectory_gap` / :func:`gap_reduction` — the prediction gap ‖v_c − v_u‖
  along a sampling trajectory, and its reduction by the projection.
- :func:`spread` — max − min of a metric across guidance scales (robustness).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import ot
import torch
from scipy.spatial.distance import cdist

from icml26.shared.metrics import mmd2_rbf

__all__ = [
    "classifier_accuracy",
    "classwise_w2",
    "frechet_distance",
    "gap_reduction",
    "gap_reduction_per_step",
    "mmd2",
    "mode_precision",
    "precision_recall",
    "spread",
    "trajectory_gap",
    "wasserstein2",
]


def _points(x: Any, name: str) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().double().numpy()
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise ValueError(f"{name} must be (n_samples, n_features), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def _same_dim(a: np.ndarray, b: np.ndarray) -> None:
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"samples differ in dimension: {a.shape[1]} vs {b.shape[1]}")


def wasserstein2(x: Any, y: Any) -> float:
    """Exact 2-Wasserstein distance between the empirical measures of ``x`` and ``y``."""
    a, b = _points(x, "x"), _points(y, "y")
    _same_dim(a, b)
    cost = ot.dist(a, b, metric="sqeuclidean")
    wa, wb = np.full(len(a), 1.0 / len(a)), np.full(len(b), 1.0 / len(b))
    return float(np.sqrt(max(ot.emd2(wa, wb, cost, numItermax=1_000_000), 0.0)))


def classwise_w2(x: Any, labels: Any, ref: Any, ref_labels: Any) -> dict[int, float]:
    """W2 between the samples of each class and the reference samples of that class."""
    a, r = _points(x, "x"), _points(ref, "ref")
    la, lr = np.asarray(labels).ravel(), np.asarray(ref_labels).ravel()
    if la.shape[0] != a.shape[0] or lr.shape[0] != r.shape[0]:
        raise ValueError("labels must give one class per sample")
    out = {}
    for c in np.unique(la):
        if not np.any(lr == c):
            raise ValueError(f"no reference samples for class {c}")
        out[int(c)] = wasserstein2(a[la == c], r[lr == c])
    return out


def mmd2(x: Any, y: Any, bandwidth: float | None = None) -> float:
    """Squared RBF-kernel MMD (biased V-statistic; median-heuristic bandwidth)."""
    return mmd2_rbf(_points(x, "x"), _points(y, "y"), bandwidth=bandwidth)


def mode_precision(
    x: Any, labels: Any, means: Any, stds: Any, classes: Any, n_std: float = 3.0
) -> float:
    """Share of samples within ``n_std``·σ of some mode of their own class."""
    a = _points(x, "x")
    mu = _points(means, "means")
    _same_dim(a, mu)
    sd = np.asarray(stds, dtype=np.float64).ravel()
    cls = np.asarray(classes).ravel()
    lab = np.asarray(labels).ravel()
    if sd.shape[0] != mu.shape[0] or cls.shape[0] != mu.shape[0] or lab.shape[0] != a.shape[0]:
        raise ValueError("means, stds and classes must describe the same modes")
    dist = cdist(a, mu) / (n_std * sd[None])
    own = cls[None, :] == lab[:, None]
    return float(np.mean(np.any((dist <= 1.0) & own, axis=1)))


def frechet_distance(feat_a: Any, feat_b: Any) -> float:
    """``‖μa − μb‖² + tr(Σa + Σb − 2(Σa Σb)^{1/2})`` between Gaussian fits."""
    a, b = _points(feat_a, "feat_a"), _points(feat_b, "feat_b")
    _same_dim(a, b)
    if len(a) < 2 or len(b) < 2:
        raise ValueError("the Fréchet distance needs at least 2 samples on each side")
    mu_a, mu_b = a.mean(0), b.mean(0)
    s_a, s_b = np.atleast_2d(np.cov(a, rowvar=False)), np.atleast_2d(np.cov(b, rowvar=False))
    # tr((Σa Σb)^½) = Σ sqrt(eig(Σa^½ Σb Σa^½)): symmetric PSD, so no complex round-off and
    # no failure on the singular covariances of ReLU features (dead units)
    lam, vec = np.linalg.eigh(s_a)
    root_a = (vec * np.sqrt(np.clip(lam, 0.0, None))) @ vec.T
    inner = np.linalg.eigvalsh(root_a @ s_b @ root_a)
    tr_covmean = float(np.sqrt(np.clip(inner, 0.0, None)).sum())
    return float(((mu_a - mu_b) ** 2).sum() + np.trace(s_a) + np.trace(s_b) - 2 * tr_covmean)


def precision_recall(real: Any, fake: Any, k: int = 3) -> tuple[float, float]:
    """k-NN precision (fake inside the real manifold) and recall (real inside the fake one)."""
    r, f = _points(real, "real"), _points(fake, "fake")
    _same_dim(r, f)
    if k < 1 or k >= min(len(r), len(f)):
        raise ValueError(f"k must lie in 1..{min(len(r), len(f)) - 1}, got {k}")

    def radii(z: np.ndarray) -> np.ndarray:
        d = cdist(z, z)
        return np.sort(d, axis=1)[:, k]  # column 0 is the point itself

    r_rad, f_rad = radii(r), radii(f)
    d_fr = cdist(f, r)
    precision = float(np.mean(np.any(d_fr <= r_rad[None, :], axis=1)))
    recall = float(np.mean(np.any(f_rad[None, :] >= d_fr.T, axis=1)))
    return precision, recall


@torch.no_grad()
def classifier_accuracy(classifier: Any, x: torch.Tensor, labels: torch.Tensor) -> float:
    """Share of samples ``classifier(x).argmax`` assigns to ``labels``."""
    if x.shape[0] != labels.shape[0]:
        raise ValueError(f"{x.shape[0]} samples but {labels.shape[0]} labels")
    pred = classifier(x).argmax(dim=1).cpu()
    return float((pred == labels.cpu()).float().mean())


def trajectory_gap(result: Any, *, corrected_only: bool = False) -> float:
    """Mean prediction gap ``‖v_c − v_u‖`` where guidance was applied along a trajectory.

    ``result`` is a :class:`~icml26.cfgmp.sampler.SampleResult`; ``corrected_only``
    restricts the mean to the steps inside the projection window.
    """
    gaps = np.asarray(result.gap, dtype=float)
    if corrected_only:
        gaps = gaps[np.asarray(result.corrected, dtype=bool)]
    gaps = gaps[np.isfinite(gaps)]
    if gaps.size == 0:
        raise ValueError("no step of this trajectory evaluated both predictions")
    return float(gaps.mean())


def gap_reduction_per_step(result: Any) -> np.ndarray:
    """``1 − gap after/gap before`` the projection at every step (NaN where the step was
    not corrected or sampled without ``diagnostics=True``)."""
    before = np.asarray(result.gap_before, dtype=float)
    after = np.asarray(result.gap, dtype=float)
    mask = np.asarray(result.corrected, dtype=bool) & np.isfinite(before) & np.isfinite(after)
    out = np.full(before.shape, np.nan)
    out[mask] = 1.0 - after[mask] / np.maximum(before[mask], 1e-300)
    return out


def gap_reduction(result: Any, *, include_t0: bool = False) -> float:
    """``1 − mean(gap after projection)/mean(gap before)`` over the corrected steps.

    Steps at ``t = 0`` are left out by default: on the linear interpolant
    ``v(x, 0, c) = E[x1 | c] − x``, so the gap ``E[x1 | c] − E[x1]`` does not depend on
    ``x`` there and no projection can change it (its cut is exactly 0), while it is the
    largest gap of the trajectory — averaging it in halves the measured cut. Needs a
    result sampled with ``diagnostics=True`` by a guider with a projection; see
    :func:`gap_reduction_per_step` for the cut of every step.
    """
    before = np.asarray(result.gap_before, dtype=float)
    after = np.asarray(result.gap, dtype=float)
    mask = np.asarray(result.corrected, dtype=bool) & np.isfinite(before) & np.isfinite(after)
    if not include_t0:
        times = np.asarray(result.times, dtype=float)[: mask.size]
        mask &= times > 0.0
    if not mask.any():
        raise ValueError(
            "no corrected step with diagnostics (after t = 0): sample with diagnostics=True"
        )
    return float(1.0 - after[mask].mean() / max(before[mask].mean(), 1e-300))


def spread(values: Sequence[float]) -> float:
    """``max − min`` of a metric over guidance scales."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0 or not np.all(np.isfinite(v)):
        raise ValueError("spread needs finite values")
    return float(v.max() - v.min())
