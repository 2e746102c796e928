"""Data: scikit-learn's digits for the learned model, reference draws for the mixture,
and a loader for image arrays users bring.

- :func:`load_digits_data` — the 1,797 8×8 digits bundled with scikit-learn, as flat
  tensors scaled to [−1, 1] (the flow network's data space) with a seeded split.
- :func:`mixture_reference` — labelled draws from a mixture's class distributions,
  the reference side of W2/MMD.
- :func:`load_image_array` — ``.npy``/``.npz`` image arrays (N, H, W) or (N, H, W, C)
  in [0, 1] or [0, 255], with optional labels (read without pickle).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from icml26.shared.datasets import load_digits_split

__all__ = [
    "DigitsData",
    "from_model_space",
    "load_digits_data",
    "load_image_array",
    "mixture_reference",
    "to_model_space",
]


def to_model_space(images01: Tensor) -> Tensor:
    """Pixels in [0, 1] -> [−1, 1]."""
    return 2.0 * images01 - 1.0


def from_model_space(x: Tensor) -> Tensor:
    """[−1, 1] -> pixels in [0, 1] (clipped)."""
    return ((x + 1.0) / 2.0).clamp(0.0, 1.0)


@dataclass(frozen=True)
class DigitsData:
    """Flat 8×8 digits in [−1, 1] with labels 0–9."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor
    image_shape: tuple[int, int] = (8, 8)

    @property
    def num_classes(self) -> int:
        return 10


def load_digits_data(*, seed: int = 0, test_fraction: float = 0.25) -> DigitsData:
    """scikit-learn's digits, split with stratification by ``seed``, scaled to [−1, 1]."""
    x_tr, y_tr, x_te, y_te = load_digits_split(test_fraction=test_fraction, seed=seed).as_tensors()
    return DigitsData(to_model_space(x_tr), y_tr, to_model_space(x_te), y_te)


def mixture_reference(
    mixture: Any, n_per_class: int, generator: torch.Generator | None = None
) -> tuple[Tensor, Tensor]:
    """``n_per_class`` data draws of every class of ``mixture``: ``(x, labels)``."""
    if n_per_class < 1:
        raise ValueError(f"n_per_class must be positive, got {n_per_class}")
    labels = torch.arange(mixture.n_classes).repeat_interleave(n_per_class)
    return mixture.sample(labels, generator), labels


def load_image_array(
    path: str | Path, *, images_key: str = "images", labels_key: str = "labels"
) -> tuple[np.ndarray, np.ndarray | None]:
    """Read images from ``.npy`` or ``.npz`` (no pickle); returns ``(float32 in [0, 1], labels)``.

    Integer arrays are taken as 0–255; float arrays must already lie in [0, 1].
    """
    path = Path(path)
    if path.suffix not in (".npy", ".npz"):
        raise ValueError(f"expected a .npy or .npz file, got {path.name}")
    if not path.is_file():
        raise FileNotFoundError(path)
    labels = None
    if path.suffix == ".npy":
        images = np.load(path, allow_pickle=False)
    else:
        with np.load(path, allow_pickle=False) as z:
            if images_key not in z:
                raise ValueError(f"{path.name} has no array {images_key!r}; has {list(z.keys())}")
            images = z[images_key]
            labels = z.get(labels_key, None)
    if images.ndim not in (3, 4):
        raise ValueError(f"images must be (N, H, W) or (N, H, W, C), got shape {images.shape}")
    if images.dtype.kind in "iu":
        images = images.astype(np.float32) / 255.0
    else:
        images = images.astype(np.float32)
        if not np.all(np.isfinite(images)) or images.min() < 0 or images.max() > 1:
            raise ValueError("float images must be finite and lie in [0, 1]")
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape != (images.shape[0],) or labels.dtype.kind not in "iu":
            raise ValueError(f"labels must be {images.shape[0]} integers, got {labels.shape}")
    return images, labels
