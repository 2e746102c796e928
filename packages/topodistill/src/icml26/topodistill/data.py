"""Multivariate series in, :class:`TimeSeries` out: CSV files, DataFrames, arrays.

The layout is pyEDM's: one row per time, a time column first (optional), one
column per variable. The real dataset of Sugihara et al. (2012) — Californian
sardine and anchovy landings with sea-surface temperatures, 1929–2005 — ships inside
the ``pyEDM`` wheel; :func:`load_sardine_anchovy` reads that file (extra ``peers``),
nothing is downloaded. Simulated systems live in :mod:`icml26.topodistill.systems`.

Missing values are kept as NaN when loading; every analysis function rejects them
with a clear error, so drop or impute first (:meth:`TimeSeries.dropna`).
"""

from __future__ import annotations

import csv
import importlib.util
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["TimeSeries", "from_array", "from_dataframe", "load_csv", "load_sardine_anchovy"]


@dataclass(frozen=True)
class TimeSeries:
    """``values`` (T, d) with channel ``names`` and a ``time`` axis (T,)."""

    values: np.ndarray
    names: tuple[str, ...]
    time: np.ndarray

    def __post_init__(self) -> None:
        if self.values.ndim != 2 or self.values.shape[1] != len(self.names):
            raise ValueError(f"values must be (T, {len(self.names)}), got {self.values.shape}")
        if self.time.shape != (self.values.shape[0],):
            raise ValueError(f"time must be ({self.values.shape[0]},), got {self.time.shape}")
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"channel names must be unique, got {self.names}")

    def __len__(self) -> int:
        return self.values.shape[0]

    def column(self, name: str) -> np.ndarray:
        """One channel by name."""
        try:
            return self.values[:, self.names.index(name)]
        except ValueError:
            raise KeyError(f"no channel {name!r}; channels are {self.names}") from None

    def select(self, names: Sequence[str]) -> TimeSeries:
        """A copy with only the named channels, in that order."""
        idx = [self.names.index(n) if n in self.names else -1 for n in names]
        if -1 in idx:
            unknown = [n for n, i in zip(names, idx, strict=True) if i < 0]
            raise KeyError(f"unknown channel(s) {unknown}")
        return TimeSeries(self.values[:, idx], tuple(names), self.time)

    def dropna(self) -> TimeSeries:
        """Rows with any NaN removed (delay embeddings then span the gaps: check first)."""
        keep = np.all(np.isfinite(self.values), axis=1)
        return TimeSeries(self.values[keep], self.names, self.time[keep])


def from_array(values: Any, names: Sequence[str] | None = None, time: Any = None) -> TimeSeries:
    """A :class:`TimeSeries` from a (T, d) or (T,) numeric array."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"values must be (T, d) or (T,), got shape {arr.shape}")
    names = tuple(names) if names is not None else tuple(f"x{i}" for i in range(arr.shape[1]))
    t = np.arange(arr.shape[0], dtype=float) if time is None else np.asarray(time, dtype=float)
    return TimeSeries(arr, names, t)


def from_dataframe(frame: Any, *, time_column: str | None = None) -> TimeSeries:
    """A :class:`TimeSeries` from a pandas DataFrame (pyEDM layout).

    ``time_column`` names the time column; without it the first column is taken as
    time when it is called ``time``/``Time``/``date``/``year``, else the row index.
    """
    if not hasattr(frame, "columns") or not hasattr(frame, "to_numpy"):
        raise TypeError(f"expected a pandas DataFrame, got {type(frame).__name__}")
    columns = [str(c) for c in frame.columns]
    if time_column is None and columns and columns[0].lower() in ("time", "date", "year"):
        time_column = columns[0]
    if time_column is not None and time_column not in columns:
        raise KeyError(f"no time column {time_column!r}; columns are {columns}")
    names = [c for c in columns if c != time_column]
    values = frame[names].to_numpy(dtype=float)
    time = frame[time_column].to_numpy(dtype=float) if time_column else None
    return from_array(values, names, time)


def _number(cell: str) -> float:
    cell = cell.strip()
    if cell == "" or cell.lower() in ("na", "nan", "null"):
        return math.nan
    return float(cell)


def load_csv(path: str | Path, *, time_column: str | int | None = 0) -> TimeSeries:
    """Read a CSV with a header row (pyEDM layout); ``time_column`` by name or index
    (``None``: no time column). Empty cells and ``NA`` become NaN."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such CSV file: {path}")
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 2:
        raise ValueError(f"{path} needs a header row and at least one data row")
    header = [h.strip() for h in rows[0]]
    if isinstance(time_column, str):
        if time_column not in header:
            raise KeyError(f"no time column {time_column!r} in {path}; columns are {header}")
        time_column = header.index(time_column)
    try:
        table = np.array([[_number(c) for c in row] for row in rows[1:] if row], dtype=float)
    except ValueError as err:
        raise ValueError(f"{path} has a non-numeric cell: {err}") from None
    if table.ndim != 2 or table.shape[1] != len(header):
        raise ValueError(f"{path}: every row must have {len(header)} cells")
    if time_column is None:
        return from_array(table, header)
    keep = [i for i in range(len(header)) if i != time_column]
    return from_array(table[:, keep], [header[i] for i in keep], table[:, time_column])


def load_sardine_anchovy() -> TimeSeries:
    """Sardine and anchovy landings and SST (Sugihara et al. 2012), from pyEDM's wheel.

    Channels ``anchovy, sardine, sio_sst, np_sst`` (first differences, normalised, as
    pyEDM ships them), yearly 1929–2005. Needs ``pip install icml26-topodistill[peers]``.
    """
    spec = importlib.util.find_spec("pyEDM")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "the sardine–anchovy data ship with pyEDM: pip install 'icml26-topodistill[peers]'"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "sardine_anchovy_sst.csv"
    return load_csv(path, time_column="year")
