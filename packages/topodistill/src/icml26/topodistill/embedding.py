"""Time-delay embedding (Takens 1981) and the choice of its parameters.

- :func:`delay_embed` builds the shadow manifold ``M_x`` with rows
  ``[x(t), x(t − τ), …, x(t − (E − 1) τ)]`` (pyEDM's ``tau = −τ`` convention).
- :func:`mutual_information` and :func:`choose_tau`: τ at the first minimum of the
  time-delayed mutual information (Fraser & Swinney 1986).
- :func:`simplex_forecast` and :func:`choose_E`: E at the best simplex-projection
  forecast skill (Sugihara & May 1990), library on the first half of the series and
  predictions on the second, as pyEDM's ``EmbedDimension``.

Every public function checks its series: 1-D, finite (a NaN is an error, not a
silently dropped row) and long enough for the embedding.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from icml26.topodistill.neighbours import default_device, nearest_neighbours

__all__ = [
    "check_exclusion_radius",
    "check_series",
    "choose_E",
    "choose_tau",
    "delay_embed",
    "embedding_span",
    "mutual_information",
    "simplex_forecast",
    "simplex_weights",
]


def check_series(
    x: object, name: str = "series", *, min_length: int = 3, varying: bool = False
) -> np.ndarray:
    """``x`` as a finite 1-D float array of at least ``min_length`` points, or a ValueError.

    ``varying=True`` also rejects a constant series (no neighbourhood, mutual information
    or correlation is defined on one).
    """
    if isinstance(x, str | bytes) or x is None:
        raise TypeError(f"{name} must be a 1-D numeric array, got {type(x).__name__}")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a 1-D numeric array, got {type(x).__name__}") from None
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.ravel()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr))
        raise ValueError(
            f"{name} contains {bad.size} NaN/inf value(s) (first at index {bad[0]}); "
            "drop or impute them before embedding"
        )
    if arr.size < min_length:
        raise ValueError(f"{name} has {arr.size} points; at least {min_length} are needed")
    if varying and arr.size and np.ptp(arr) == 0:
        raise ValueError(
            f"{name} is constant (every value is {arr[0]:g}); CCM, mutual information and "
            "the simplex scan need a varying series"
        )
    return arr


def check_exclusion_radius(radius: object, n_points: int, k: int) -> int:
    """The Theiler radius as an int in ``[0, (n_points − k − 1) / 2]``, or a ValueError.

    Beyond that bound a point in the middle of the manifold has fewer than ``k``
    admissible neighbours even in the full library, and its cross-map estimate is missing.
    """
    if isinstance(radius, bool) or not isinstance(radius, int | np.integer):
        raise TypeError(f"exclusion_radius must be an integer, got {type(radius).__name__}")
    radius = int(radius)
    if radius < 0:
        raise ValueError(
            f"exclusion_radius must be >= 0 (0 excludes the point itself), got {radius}"
        )
    limit = (n_points - k - 1) // 2
    if radius > limit:
        raise ValueError(
            f"exclusion_radius={radius} is too long for {n_points} manifold points with "
            f"k={k} neighbours: at most {max(limit, 0)} leaves every point k admissible neighbours"
        )
    return radius


def _check_positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def embedding_span(E: int, tau: int) -> int:
    """Samples of past needed by one embedding vector: ``(E − 1) τ``."""
    return (E - 1) * tau


def delay_embed(x: object, E: int, tau: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The delay embedding of ``x``: ``(vectors (M, E), times (M,))``.

    Row ``r`` is ``[x(t), x(t − τ), …, x(t − (E−1)τ)]`` for ``t = times[r]``, with
    ``times = (E−1)τ, …, N−1`` and ``M = N − (E−1)τ``. A series too short for E·τ
    raises ValueError.
    """
    E = _check_positive_int(E, "E")
    tau = _check_positive_int(tau, "tau")
    span = embedding_span(E, tau)
    arr = check_series(x, min_length=1)
    if arr.size <= span + E:
        raise ValueError(
            f"the series has {arr.size} points but E={E}, tau={tau} needs more than "
            f"(E-1)*tau + E = {span + E}; lower E or tau, or give a longer series"
        )
    times = np.arange(span, arr.size)
    vectors = np.stack([arr[times - j * tau] for j in range(E)], axis=1)
    return vectors, times


def mutual_information(x: object, max_lag: int, *, bins: int | None = None) -> np.ndarray:
    """Time-delayed mutual information I(x(t); x(t + lag)) in nats, for lag = 0..max_lag.

    Equal-probability (rank) binning with ``bins`` bins (default ``⌈√(N/5)⌉``, at
    least 4), which is robust to outliers and observation noise.
    """
    arr = check_series(x, min_length=10, varying=True)
    max_lag = _check_positive_int(max_lag, "max_lag")
    if max_lag >= arr.size - 5:
        raise ValueError(f"max_lag={max_lag} is too large for {arr.size} points")
    bins = bins or max(4, math.ceil(math.sqrt(arr.size / 5)))
    ranks = np.argsort(np.argsort(arr, kind="stable"), kind="stable")
    labels = (ranks * bins) // arr.size
    mi = np.empty(max_lag + 1)
    for lag in range(max_lag + 1):
        a, b = labels[: arr.size - lag], labels[lag:]
        joint = np.bincount(a * bins + b, minlength=bins * bins).reshape(bins, bins) / a.size
        pa, pb = joint.sum(1), joint.sum(0)
        nz = joint > 0
        mi[lag] = float(np.sum(joint[nz] * np.log(joint[nz] / np.outer(pa, pb)[nz])))
    return mi


def choose_tau(x: object, *, max_lag: int | None = None, bins: int | None = None) -> int:
    """τ at the first local minimum of the time-delayed mutual information.

    Falls back to the first lag where the MI drops below ``1/e`` of its lag-0 value,
    then to ``max_lag``, when the curve has no interior minimum.
    """
    arr = check_series(x, min_length=20, varying=True)
    max_lag = max_lag or max(2, min(arr.size // 10, 200))
    mi = mutual_information(arr, max_lag, bins=bins)
    for lag in range(1, max_lag):
        if mi[lag] < mi[lag - 1] and mi[lag] <= mi[lag + 1]:
            return lag
    below = np.flatnonzero(mi < mi[0] / math.e)
    return int(below[0]) if below.size else max_lag


def simplex_weights(dist: torch.Tensor) -> torch.Tensor:
    """Simplex weights ``w_k = exp(−d_k / d_1)``, normalised (Sugihara & May 1990).

    ``dist`` is (..., k) sorted ascending. When ``d_1 = 0`` the exact matches share the
    weight (pyEDM's rule); ``inf`` distances get zero weight.
    """
    d1 = dist[..., :1]
    zero = d1 == 0
    w = torch.exp(-dist / torch.where(zero, torch.ones_like(d1), d1))
    w = torch.where(zero, (dist == 0).to(w.dtype), w)
    w = torch.nan_to_num(w, nan=0.0)
    total = w.sum(-1, keepdim=True)
    return w / torch.where(total > 0, total, torch.ones_like(total))


def simplex_forecast(
    x: object,
    E: int,
    tau: int = 1,
    *,
    Tp: int = 1,
    exclusion_radius: int = 0,
    device: torch.device | str | None = None,
) -> float:
    """Simplex-projection skill ρ(x̂(t+Tp), x(t+Tp)): library = first half, prediction = second.

    ``E + 1`` nearest library neighbours with exponential weights; neighbours within
    the Theiler window of the predicted point are excluded.
    """
    arr = check_series(x, min_length=10, varying=True)
    vectors, times = delay_embed(arr, E, tau)
    Tp = _check_positive_int(Tp, "Tp")
    usable = times + Tp < arr.size
    vectors, times = vectors[usable], times[usable]
    half = arr.size // 2
    lib, pred = times + Tp < half, times >= half
    if lib.sum() < E + 2 or pred.sum() < 3:
        raise ValueError(f"series of {arr.size} points is too short for E={E}, tau={tau}")
    if isinstance(exclusion_radius, bool) or not isinstance(exclusion_radius, int | np.integer):
        raise TypeError(f"exclusion_radius must be an integer, got {exclusion_radius!r}")
    if exclusion_radius < 0:
        raise ValueError(f"exclusion_radius must be >= 0, got {exclusion_radius}")
    device = torch.device(device) if device is not None else default_device()
    dist, idx = nearest_neighbours(
        vectors[pred],
        vectors[lib],
        E + 1,
        query_times=times[pred],
        library_times=times[lib],
        exclusion_radius=exclusion_radius,
        device=device,
    )
    targets = torch.as_tensor(arr[times[lib] + Tp], device=device)
    estimate = (simplex_weights(dist) * targets[idx]).sum(-1).cpu().numpy()
    truth = arr[times[pred] + Tp]
    if estimate.std() == 0 or truth.std() == 0:
        return 0.0
    return float(np.corrcoef(estimate, truth)[0, 1])


def choose_E(
    x: object,
    tau: int = 1,
    *,
    max_E: int = 10,
    Tp: int = 1,
    exclusion_radius: int = 0,
    device: torch.device | str | None = None,
) -> tuple[int, np.ndarray]:
    """E in 1..max_E with the best simplex forecast skill; returns ``(E, skills)``.

    E values whose embedding does not fit the series are skipped (skill NaN).
    """
    max_E = _check_positive_int(max_E, "max_E")
    tau = _check_positive_int(tau, "tau")
    arr = check_series(x, min_length=10, varying=True)
    if isinstance(exclusion_radius, bool) or not isinstance(exclusion_radius, int | np.integer):
        raise TypeError(f"exclusion_radius must be an integer, got {exclusion_radius!r}")
    if exclusion_radius < 0:
        raise ValueError(f"exclusion_radius must be >= 0, got {exclusion_radius}")
    skills = np.full(max_E, np.nan)
    for E in range(1, max_E + 1):
        if (E - 1) * tau + Tp + 2 * (E + 2) >= arr.size // 2:
            break
        skills[E - 1] = simplex_forecast(
            arr, E, tau, Tp=Tp, exclusion_radius=exclusion_radius, device=device
        )
    if np.all(np.isnan(skills)):
        raise ValueError(f"series of {arr.size} points is too short to scan E with tau={tau}")
    return int(np.nanargmax(skills)) + 1, skills
