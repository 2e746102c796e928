"""Figures: metric-versus-guidance curves, mixture scatter plots and digit sample grids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from icml26.shared import Stat, errorbar_lines, new_figure, save_figure

__all__ = ["curves_figure", "digit_grid_figure", "image_grid", "mixture_scatter_figure"]


def image_grid(images: np.ndarray, nrow: int, pad: int = 1) -> np.ndarray:
    """Tile ``images`` (N, H, W) in [0, 1] into one array with ``nrow`` images per row."""
    images = np.asarray(images, dtype=np.float32)
    if images.ndim != 3:
        raise ValueError(f"images must be (N, H, W), got {images.shape}")
    n, h, w = images.shape
    rows = int(np.ceil(n / nrow))
    grid = np.ones((rows * (h + pad) + pad, nrow * (w + pad) + pad), dtype=np.float32)
    for i, img in enumerate(images):
        r, c = divmod(i, nrow)
        grid[
            pad + r * (h + pad) : pad + r * (h + pad) + h,
            pad + c * (w + pad) : pad + c * (w + pad) + w,
        ] = img
    return grid


def digit_grid_figure(
    grids: Mapping[str, np.ndarray],
    path: str | Path,
    title: str = "",
    nrow: int = 10,
    caption: str = "",
) -> Path:
    """One panel per method; each value is an (N, H, W) array of images in [0, 1]."""
    fig, axes = new_figure(1, len(grids), size=(2.4 * len(grids), 2.8))
    axes = np.atleast_1d(axes)
    for ax, (name, imgs) in zip(axes, grids.items(), strict=True):
        ax.imshow(image_grid(imgs, nrow=nrow), cmap="gray_r", vmin=0, vmax=1)
        ax.set_title(name, fontsize=9)
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path, caption=caption)


def mixture_scatter_figure(
    panels: Mapping[str, tuple[np.ndarray, np.ndarray]],
    means: np.ndarray,
    path: str | Path,
    title: str = "",
    caption: str = "",
) -> Path:
    """Scatter of 2-D samples coloured by class, one panel per (method, scale)."""
    n = len(panels)
    cols = min(n, 6)
    rows = int(np.ceil(n / cols))
    fig, axes = new_figure(rows, cols, size=(2.4 * cols, 2.4 * rows))
    axes = np.atleast_1d(axes).ravel()
    spread_of_samples = max(float(np.quantile(np.abs(x), 0.99)) for x, _ in panels.values())
    lim = max(float(np.abs(means).max()) * 1.8, 1.05 * spread_of_samples)
    for ax, (name, (x, labels)) in zip(axes, panels.items(), strict=False):
        ax.scatter(x[:, 0], x[:, 1], c=labels, s=1.5, cmap="tab10", alpha=0.6)
        ax.scatter(means[:, 0], means[:, 1], c="k", marker="x", s=15)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        ax.set_title(name, fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
    for ax in axes[n:]:
        ax.axis("off")
    if title:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path, caption=caption)


def curves_figure(
    panels: Sequence[tuple[str, Mapping[str, tuple[Sequence[float], Sequence[Stat]]]]],
    path: str | Path,
    caption: str = "",
) -> Path:
    """Panels of ``(ylabel, {method: (scales, per-seed stats)})`` against the guidance
    scale, mean ± sd over seeds as error bars."""
    fig, axes = new_figure(1, len(panels), size=(4.2 * len(panels), 3.4))
    axes = np.atleast_1d(axes)
    for ax, (ylabel, curves) in zip(axes, panels, strict=True):
        for name, (ws, stats) in curves.items():
            errorbar_lines(ax, ws, stats, label=name, ms=3, capsize=2)
        ax.set_xlabel("guidance scale w")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    return save_figure(fig, path, caption=caption)
