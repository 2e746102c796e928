"""Figures for reports, drawn without a display.

Uses matplotlib's object API (``Figure``), never ``pyplot``, so no GUI backend is
touched and figures are freed when dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def new_figure(
    nrows: int = 1, ncols: int = 1, *, size: tuple[float, float] | None = None, **subplot_kw: Any
) -> tuple[Any, Any]:
    """A ``(Figure, axes)`` pair; ``axes`` is a single Axes when nrows = ncols = 1."""
    from matplotlib.figure import Figure

    size = size or (4.0 * ncols, 3.2 * nrows)
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True, **subplot_kw)
    return fig, axes


def save_figure(fig: Any, path: str | Path, *, dpi: int = 150) -> Path:
    """Save ``fig`` as PNG at ``path`` (``.png`` added if missing) and return the path."""
    path = Path(path)
    if path.suffix.lower() != ".png":
        path = path.with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png")
    return path
