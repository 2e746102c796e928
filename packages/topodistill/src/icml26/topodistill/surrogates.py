"""Surrogate series for significance tests of cross-map skill.

Each generator returns (n, N) surrogates of a series of N points, drawn from the
``rng`` passed in:

- :func:`random_phase` — Fourier amplitudes kept, phases drawn uniformly
  (Theiler et al. 1992; Ebisuzaki 1997): same power spectrum and autocorrelation,
  no nonlinear or cross dependence.
- :func:`twin` — twin surrogates (Thiel et al. 2006): walks on the recurrence
  structure of the series' own delay embedding, jumping between "twins" (points with
  identical recurrence neighbourhoods); keeps the attractor's dynamics, destroys
  the phase relation to other variables.
- :func:`block_shuffle` — the series cut into blocks of ``block`` points whose order
  is shuffled: keeps within-block dependence, breaks long-range alignment.
- :func:`shuffle` — an i.i.d. permutation (destroys all temporal structure).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from icml26.topodistill.embedding import check_series, delay_embed

__all__ = ["SURROGATES", "block_shuffle", "make_surrogates", "random_phase", "shuffle", "twin"]


def _check(x: object, n: int, rng: object) -> np.ndarray:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"the number of surrogates must be a positive integer, got {n!r}")
    return check_series(x, min_length=4)


def random_phase(x: object, n: int, rng: np.random.Generator) -> np.ndarray:
    """Phase-randomised surrogates: ``|FFT|`` kept, phases uniform; mean and DC kept."""
    arr = _check(x, n, rng)
    spectrum = np.fft.rfft(arr)
    phases = rng.uniform(0, 2 * np.pi, size=(n, spectrum.size))
    phases[:, 0] = 0.0
    if arr.size % 2 == 0:  # the Nyquist term must stay real
        phases[:, -1] = 0.0
    return np.fft.irfft(np.abs(spectrum) * np.exp(1j * phases), n=arr.size, axis=1)


def block_shuffle(
    x: object, n: int, rng: np.random.Generator, *, block: int | None = None
) -> np.ndarray:
    """Block-shuffled surrogates; ``block`` defaults to ``⌈√N⌉``. The last, shorter
    block (if N is not a multiple) is shuffled along with the others."""
    arr = _check(x, n, rng)
    block = block or math.ceil(math.sqrt(arr.size))
    if not 1 <= block <= arr.size:
        raise ValueError(f"block must lie in [1, {arr.size}], got {block}")
    starts = np.arange(0, arr.size, block)
    pieces = [arr[s : s + block] for s in starts]
    out = np.empty((n, arr.size))
    for i in range(n):
        out[i] = np.concatenate([pieces[j] for j in rng.permutation(len(pieces))])
    return out


def shuffle(x: object, n: int, rng: np.random.Generator) -> np.ndarray:
    """i.i.d. permutations of the series."""
    arr = _check(x, n, rng)
    return rng.permuted(np.broadcast_to(arr, (n, arr.size)).copy(), axis=1)


def twin(
    x: object,
    n: int,
    rng: np.random.Generator,
    *,
    E: int = 3,
    tau: int = 1,
    recurrence_rate: float = 0.05,
) -> np.ndarray:
    """Twin surrogates (Thiel, Romano, Kurths, Rolfs & Kurths 2006, EPL 75:535).

    The recurrence matrix of the delay embedding (max-norm, threshold at the
    ``recurrence_rate`` quantile of distances) defines twins: points whose rows are
    identical. A surrogate starts at a random point and, at each step, moves to the
    successor of the current point or of one of its twins, chosen uniformly. The
    first ``(E−1)τ`` values (no embedding vector) are taken from the start of the
    original series. With few twins a surrogate is close to a time shift of ``x``.
    """
    arr = _check(x, n, rng)
    if not 0 < recurrence_rate < 1:
        raise ValueError(f"recurrence_rate must lie in (0, 1), got {recurrence_rate}")
    vectors, times = delay_embed(arr, E, tau)
    m = vectors.shape[0]
    dist = np.zeros((m, m))
    for j in range(E):  # max-norm, one coordinate at a time to keep memory at M²
        np.maximum(dist, np.abs(vectors[:, None, j] - vectors[None, :, j]), out=dist)
    threshold = np.quantile(dist, recurrence_rate)
    rec = np.packbits(dist <= threshold, axis=1)
    _, group = np.unique(rec, axis=0, return_inverse=True)
    group = group.ravel()
    members = np.argsort(group, kind="stable")
    counts = np.bincount(group)
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    # the last point has no successor: never jump to it as a twin's successor source
    state = rng.integers(0, m - 1, size=n)
    path = np.empty((n, m), dtype=int)
    for step in range(m):
        path[:, step] = state
        g = group[state]
        pick = members[offsets[g] + (rng.random(n) * counts[g]).astype(int)]
        nxt = pick + 1
        restart = nxt >= m
        nxt[restart] = rng.integers(0, m - 1, size=int(restart.sum()))
        state = nxt
    out = np.empty((n, arr.size))
    out[:, : times[0]] = arr[: times[0]]
    out[:, times[0] :] = arr[times[path]]
    return out


SURROGATES: dict[str, Callable[..., np.ndarray]] = {
    "random_phase": random_phase,
    "twin": twin,
    "block_shuffle": block_shuffle,
    "shuffle": shuffle,
}


def make_surrogates(
    kind: str, x: object, n: int, rng: np.random.Generator, **options: object
) -> np.ndarray:
    """Surrogates by name: one of :data:`SURROGATES`."""
    try:
        fn = SURROGATES[kind]
    except KeyError:
        raise ValueError(f"unknown surrogate {kind!r}; choose from {sorted(SURROGATES)}") from None
    return fn(x, n, rng, **options)
