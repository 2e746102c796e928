"""BatteryLife's metrics: MAPE, α-accuracy (share within 15 %) and RMSE in cycles.

Scores average over *samples* (every evaluated window of every test cell), which is how the
BatteryLife evaluation pools its test predictions as we read it; :func:`score` with
``per_cell=True`` first averages each cell's windows (reported beside it).
"""

from __future__ import annotations

import numpy as np

__all__ = ["accuracy_within", "mape", "rmse", "score"]


def _check(y_true, y_pred):
    y_true, y_pred = np.asarray(y_true, dtype=float), np.asarray(y_pred, dtype=float)
    if y_true.shape != y_pred.shape:
        raise ValueError(f"shapes differ: {y_true.shape} vs {y_pred.shape}")
    if np.any(y_true <= 0):
        raise ValueError("true lives must be > 0")
    if not np.all(np.isfinite(y_pred)):
        raise ValueError("predictions hold NaN or inf values")
    return y_true, y_pred


def mape(y_true, y_pred) -> float:
    y_true, y_pred = _check(y_true, y_pred)
    return float(np.mean(np.abs(y_pred - y_true) / y_true))


def accuracy_within(y_true, y_pred, alpha: float = 0.15) -> float:
    y_true, y_pred = _check(y_true, y_pred)
    return float(np.mean(np.abs(y_pred - y_true) / y_true <= alpha))


def rmse(y_true, y_pred) -> float:
    y_true, y_pred = _check(y_true, y_pred)
    return float(np.sqrt(np.mean((y_pred - y_true) ** 2)))


def score(y_true, y_pred, cells=None, *, per_cell: bool = False) -> dict[str, float]:
    """``{"mape", "acc15", "rmse"}`` over samples, or over per-cell means."""
    y_true, y_pred = _check(y_true, y_pred)
    if per_cell:
        if cells is None:
            raise ValueError("per_cell scoring needs the cell of each sample")
        cells = np.asarray(cells)
        ids = np.unique(cells)
        err = np.array(
            [
                np.mean(np.abs(y_pred[cells == c] - y_true[cells == c]) / y_true[cells == c])
                for c in ids
            ]
        )
        acc = np.array(
            [
                np.mean(
                    np.abs(y_pred[cells == c] - y_true[cells == c]) / y_true[cells == c] <= 0.15
                )
                for c in ids
            ]
        )
        sq = np.array([np.mean((y_pred[cells == c] - y_true[cells == c]) ** 2) for c in ids])
        return {
            "mape": float(err.mean()),
            "acc15": float(acc.mean()),
            "rmse": float(np.sqrt(sq.mean())),
        }
    return {
        "mape": mape(y_true, y_pred),
        "acc15": accuracy_within(y_true, y_pred),
        "rmse": rmse(y_true, y_pred),
    }
