"""Data: the multi-patch model, its digits analogue, CIFAR-10's binary release, loaders.

The multi-patch model (Cao, Chen, Belkin & Gu 2022; reconstructed for this paper,
whose text is unread): a label y ∈ {±1}; ``patches`` patches of dimension d, one of them
the signal y·μ and every other an independent noise patch
ξ ~ N(0, σ_p² (I − μμᵀ/‖μ‖²)), projected orthogonal to μ. The signal-to-noise ratio is
SNR = ‖μ‖₂ / (σ_p √d). μ = ‖μ‖·e₁ unless a direction is given; the signal sits at a
uniformly random patch (the network is patch-symmetric, so this changes nothing for
two patches and matters for the 4–8-patch variant only as the "image" structure).

Arrays are ``x`` of shape (n, patches, d) and ``y`` of shape (n,) with values ±1. A
leading batch axis (settings × seeds) is added by :func:`stack`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

__all__ = [
    "CIFAR10_CLASSES",
    "MultiPatch",
    "PatchDataset",
    "check_labels",
    "digits_patches",
    "load_cifar10_binary",
    "make_multipatch",
    "mu_norm_for_snr",
    "snr",
    "stack",
    "write_cifar10_binary",
]

CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value}")
    return value


def _count(value: int, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def snr(mu_norm: float, sigma_p: float, d: int) -> float:
    """SNR = ‖μ‖ / (σ_p √d)."""
    return _positive(mu_norm, "mu_norm") / (
        _positive(sigma_p, "sigma_p") * math.sqrt(_count(d, "d"))
    )


def mu_norm_for_snr(value: float, sigma_p: float, d: int) -> float:
    """The ‖μ‖ with SNR = ``value`` (inverse of :func:`snr`)."""
    return _positive(value, "snr") * _positive(sigma_p, "sigma_p") * math.sqrt(_count(d, "d"))


def check_labels(y: torch.Tensor) -> torch.Tensor:
    """``y`` as a float tensor of ±1; anything else is a ``ValueError``."""
    y = torch.as_tensor(y)
    if y.numel() == 0:
        raise ValueError("labels are empty")
    if not torch.all((y == 1) | (y == -1)):
        bad = torch.unique(y[(y != 1) & (y != -1)])[:5].tolist()
        raise ValueError(f"labels must be +1 or -1, got values such as {bad}")
    return y.to(torch.get_default_dtype()) if not y.is_floating_point() else y


@dataclass(frozen=True)
class MultiPatch:
    """One sample of the multi-patch model.

    ``x`` (n, P, d), ``y`` (n,) ±1, ``mu`` (d,), ``noise`` (n, P − 1, d) the noise
    patches in order, ``signal_patch`` (n,) the index of the signal patch.
    """

    x: torch.Tensor
    y: torch.Tensor
    mu: torch.Tensor
    noise: torch.Tensor
    signal_patch: torch.Tensor
    sigma_p: float

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    @property
    def d(self) -> int:
        return int(self.x.shape[-1])

    @property
    def snr(self) -> float:
        return snr(float(self.mu.norm()), self.sigma_p, self.d)

    def to(self, device: torch.device | str) -> MultiPatch:
        return MultiPatch(
            self.x.to(device),
            self.y.to(device),
            self.mu.to(device),
            self.noise.to(device),
            self.signal_patch.to(device),
            self.sigma_p,
        )


def make_multipatch(
    n: int,
    d: int,
    mu_norm: float,
    *,
    sigma_p: float = 1.0,
    patches: int = 2,
    generator: torch.Generator | None = None,
    mu_direction: torch.Tensor | None = None,
    balanced: bool = True,
    dtype: torch.dtype = torch.float32,
) -> MultiPatch:
    """Draw ``n`` samples of the multi-patch model (Cao et al. 2022, Definition 2.1).

    ``balanced`` gives exactly ⌊n/2⌋ labels −1 (shuffled) instead of fair coin flips;
    ``mu_direction`` (d,) is normalised, ``e₁`` by default.
    """
    n, d, patches = _count(n, "n"), _count(d, "d", 2), _count(patches, "patches", 2)
    mu_norm, sigma_p = _positive(mu_norm, "mu_norm"), _positive(sigma_p, "sigma_p")
    gen = generator
    if mu_direction is None:
        direction = torch.zeros(d, dtype=dtype)
        direction[0] = 1.0
    else:
        direction = torch.as_tensor(mu_direction, dtype=dtype).flatten()
        if direction.shape != (d,) or not torch.isfinite(direction).all() or direction.norm() == 0:
            raise ValueError(f"mu_direction must be a finite non-zero vector of length {d}")
        direction = direction / direction.norm()
    mu = mu_norm * direction
    if balanced:
        y = torch.ones(n, dtype=dtype)
        y[: n // 2] = -1
        y = y[torch.randperm(n, generator=gen)]
    else:
        y = torch.where(torch.rand(n, generator=gen) < 0.5, -1.0, 1.0).to(dtype)
    noise = sigma_p * torch.randn(n, patches - 1, d, generator=gen, dtype=dtype)
    # ξ ← (I − μμᵀ/‖μ‖²) ξ: orthogonal to μ, so the SNR is what it says
    noise = noise - (noise @ direction)[..., None] * direction
    signal_patch = torch.randint(patches, (n,), generator=gen)
    x = torch.empty(n, patches, d, dtype=dtype)
    rows = torch.arange(n)
    x[rows, signal_patch] = y[:, None] * mu
    other = torch.ones(n, patches, dtype=torch.bool)
    other[rows, signal_patch] = False
    x[other] = noise.reshape(-1, d)
    return MultiPatch(x, y, mu, noise, signal_patch, sigma_p)


def stack(samples: Sequence[MultiPatch]) -> MultiPatch:
    """Stack equally shaped samples along a new leading batch axis (settings × seeds)."""
    if not samples:
        raise ValueError("stack needs at least one sample")
    shapes = {tuple(s.x.shape) for s in samples}
    if len(shapes) != 1:
        raise ValueError(f"samples differ in shape: {sorted(shapes)}")
    return MultiPatch(
        torch.stack([s.x for s in samples]),
        torch.stack([s.y for s in samples]),
        torch.stack([s.mu for s in samples]),
        torch.stack([s.noise for s in samples]),
        torch.stack([s.signal_patch for s in samples]),
        samples[0].sigma_p,
    )


class PatchDataset(torch.utils.data.Dataset):
    """``(x_i, y_i)`` pairs of patch arrays (n, P, d) and ±1 labels, for DataLoaders."""

    def __init__(self, x: torch.Tensor | np.ndarray, y: torch.Tensor | np.ndarray):
        x = torch.as_tensor(x)
        y = check_labels(torch.as_tensor(y))
        if x.ndim != 3:
            raise ValueError(f"x must have shape (n, patches, d), got {tuple(x.shape)}")
        if y.shape != (x.shape[0],):
            raise ValueError(f"y must have shape ({x.shape[0]},), got {tuple(y.shape)}")
        if not torch.isfinite(x).all():
            raise ValueError("x contains NaN or inf")
        self.x, self.y = x.to(torch.get_default_dtype()), y

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[index], self.y[index]


# -- digits: the real-image analogue -------------------------------------------------------
def _scattering(images: np.ndarray) -> np.ndarray:
    """ScatterNet features (kymatio ``Scattering2D``, J = 1, L = 8) of 8 × 8 images."""
    try:
        # the 2-D frontend directly: kymatio.torch also imports the 3-D transform, which
        # needs scipy.special.sph_harm (removed in SciPy 1.17)
        from kymatio.scattering2d.frontend.torch_frontend import ScatteringTorch2D
    except ImportError as err:  # pragma: no cover - the peers extra
        raise ImportError(
            "ScatterNet features need kymatio: pip install 'icml26-dpfeature[peers]'"
        ) from err
    scat = ScatteringTorch2D(J=1, shape=(8, 8), L=8)
    with torch.no_grad():
        out = scat(torch.as_tensor(images, dtype=torch.float32))
    return out.reshape(len(images), -1).numpy()


def digits_patches(
    noise_sigma: float,
    rng: np.random.Generator,
    *,
    classes: tuple[int, int] = (3, 8),
    features: str = "raw",
) -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's digits as a two-patch problem (reconstructed analogue of CIFAR-10).

    Patch 1 is the image's features (``"raw"`` pixels or ``"scattering"``, kymatio's
    ScatterNet as in Tramèr & Boneh 2021), centred on the pooled mean and scaled to unit
    mean squared norm per coordinate; patch 2 is Gaussian noise of standard deviation
    ``noise_sigma`` per coordinate, whose size sets the SNR. Returns ``x`` (n, 2, k) and
    ``y`` ±1 (+1 for ``classes[0]``).
    """
    from sklearn.datasets import load_digits

    noise_sigma = _positive(noise_sigma, "noise_sigma")
    if features not in ("raw", "scattering"):
        raise ValueError(f"features must be 'raw' or 'scattering', got {features!r}")
    if len(classes) != 2 or classes[0] == classes[1] or not set(classes) <= set(range(10)):
        raise ValueError(f"classes must be two different digits, got {classes}")
    digits = load_digits()
    keep = np.isin(digits.target, classes)
    images = digits.images[keep] / 16.0
    y = np.where(digits.target[keep] == classes[0], 1.0, -1.0)
    feats = images.reshape(len(images), -1) if features == "raw" else _scattering(images)
    feats = feats - feats.mean(0)
    feats = feats / np.sqrt(np.mean(np.sum(feats**2, 1)) / feats.shape[1])
    noise = noise_sigma * rng.standard_normal(feats.shape)
    x = np.stack([feats, noise], 1)
    return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(y, dtype=torch.float32)


# -- CIFAR-10, binary release ----------------------------------------------------------------
RECORD = 1 + 3 * 32 * 32


def load_cifar10_binary(
    path: str | Path, *, classes: tuple[int, int] | None = None, patch: int = 16
) -> tuple[torch.Tensor, torch.Tensor]:
    """Read a file of CIFAR-10's binary release (``data_batch_1.bin`` …, never the pickle).

    Each record is one label byte and 3072 pixel bytes (1024 red, 1024 green, 1024 blue,
    row-major 32 × 32). With ``classes=(a, b)`` only those two are kept with labels +1
    (for ``a``) and −1, else labels are the class indices 0–9. Images are scaled to
    [0, 1] and cut into non-overlapping ``patch`` × ``patch`` × 3 patches, returned as
    ``x`` of shape (n, (32/patch)², 3·patch²).
    """
    path = Path(path)
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size == 0 or raw.size % RECORD:
        raise ValueError(
            f"{path} is not a CIFAR-10 binary file: {raw.size} bytes is not a positive "
            f"multiple of the {RECORD}-byte record"
        )
    if 32 % patch:
        raise ValueError(f"patch must divide 32, got {patch}")
    records = raw.reshape(-1, RECORD)
    labels, pixels = records[:, 0].astype(np.int64), records[:, 1:]
    if labels.max() > 9:
        raise ValueError(f"{path}: label byte {labels.max()} outside 0–9")
    images = pixels.reshape(-1, 3, 32, 32).astype(np.float32) / 255.0
    if classes is not None:
        keep = np.isin(labels, classes)
        images, labels = images[keep], labels[keep]
        y = np.where(labels == classes[0], 1.0, -1.0).astype(np.float32)
    else:
        y = labels.astype(np.float32)
    k = 32 // patch
    # (n, 3, k, patch, k, patch) → (n, k, k, 3, patch, patch) → (n, k², 3·patch²)
    x = images.reshape(-1, 3, k, patch, k, patch).transpose(0, 2, 4, 1, 3, 5)
    return torch.as_tensor(x.reshape(len(images), k * k, -1)), torch.as_tensor(y)


def write_cifar10_binary(path: str | Path, images: np.ndarray, labels: np.ndarray) -> Path:
    """Write uint8 images (n, 3, 32, 32) and labels (n,) in CIFAR-10's binary format."""
    images, labels = np.asarray(images), np.asarray(labels)
    if images.shape[1:] != (3, 32, 32) or images.dtype != np.uint8:
        raise ValueError(f"images must be uint8 of shape (n, 3, 32, 32), got {images.shape}")
    if labels.shape != (images.shape[0],) or labels.min() < 0 or labels.max() > 9:
        raise ValueError("labels must be n integers in 0–9")
    records = np.concatenate([labels.astype(np.uint8)[:, None], images.reshape(len(images), -1)], 1)
    path = Path(path)
    records.tofile(path)
    return path
