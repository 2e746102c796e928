"""Figures for reports, drawn without a display.

Uses matplotlib's object API (``Figure``), never ``pyplot``, so no GUI backend is
touched and figures are freed when dropped.

Every figure of a report shows the spread over seeds: :func:`errorbar_lines` and
:func:`errorbar_bars` draw mean ± sd (or the interquartile range) from the per-seed
values a :class:`~icml26.shared.results.Stat` keeps, and :func:`save_figure` takes the
caption that ``report.md`` prints under the figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from icml26.shared.results import Stat

SPREADS = ("sd", "iqr")


class FigurePath(type(Path())):  # type: ignore[misc]
    """A saved figure's path that also carries its caption (``report.md`` prints it)."""

    caption: str = ""


def new_figure(
    nrows: int = 1, ncols: int = 1, *, size: tuple[float, float] | None = None, **subplot_kw: Any
) -> tuple[Any, Any]:
    """A ``(Figure, axes)`` pair; ``axes`` is a single Axes when nrows = ncols = 1."""
    from matplotlib.figure import Figure

    size = size or (4.0 * ncols, 3.2 * nrows)
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True, **subplot_kw)
    return fig, axes


def save_figure(fig: Any, path: str | Path, *, dpi: int = 150, caption: str = "") -> FigurePath:
    """Save ``fig`` as PNG at ``path`` (``.png`` added if missing).

    Returns the path; its ``caption`` attribute holds ``caption``, which the runner
    writes under the figure in ``report.md``.
    """
    path = Path(path)
    if path.suffix.lower() != ".png":
        path = path.with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, format="png")
    saved = FigurePath(path)
    saved.caption = str(caption)
    return saved


def spread(stat: Stat | Sequence[float] | float, kind: str = "sd") -> tuple[float, float, float]:
    """``(centre, below, above)`` of per-seed values: mean ± sd, or median and IQR."""
    if kind not in SPREADS:
        raise ValueError(f"spread kind must be one of {SPREADS}, got {kind!r}")
    values = np.asarray(stat.values if isinstance(stat, Stat) else np.ravel(stat), dtype=float)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"spread needs finite values, got {values.tolist()}")
    if kind == "sd":
        centre = float(values.mean())
        sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
        return centre, sd, sd
    q1, centre, q3 = (float(v) for v in np.percentile(values, [25, 50, 75]))
    return centre, centre - q1, q3 - centre


def errorbar_lines(
    ax: Any,
    x: Sequence[float],
    stats: Sequence[Stat | Sequence[float] | float],
    *,
    label: str | None = None,
    kind: str = "sd",
    **kwargs: Any,
) -> Any:
    """One curve of ``stats[i]`` against ``x[i]`` with error bars over seeds."""
    if len(x) != len(stats):
        raise ValueError(f"x has {len(x)} points but stats has {len(stats)}")
    centre, lo, hi = (np.array(v) for v in zip(*(spread(s, kind) for s in stats), strict=True))
    kwargs.setdefault("marker", "o")
    kwargs.setdefault("capsize", 3)
    return ax.errorbar(np.asarray(x, float), centre, yerr=[lo, hi], label=label, **kwargs)


def errorbar_bars(
    ax: Any,
    labels: Sequence[str],
    stats: Sequence[Stat | Sequence[float] | float],
    *,
    kind: str = "sd",
    horizontal: bool = False,
    **kwargs: Any,
) -> Any:
    """One bar per label at its mean (or median) with error bars over seeds."""
    if len(labels) != len(stats):
        raise ValueError(f"{len(labels)} labels but {len(stats)} stats")
    centre, lo, hi = (np.array(v) for v in zip(*(spread(s, kind) for s in stats), strict=True))
    pos = np.arange(len(labels))
    kwargs.setdefault("capsize", 3)
    if horizontal:
        bars = ax.barh(pos, centre, xerr=[lo, hi], **kwargs)
        ax.set_yticks(pos, list(labels))
    else:
        bars = ax.bar(pos, centre, yerr=[lo, hi], **kwargs)
        ax.set_xticks(pos, list(labels), rotation=30, ha="right")
    return bars
