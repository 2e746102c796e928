"""Baselines on the same BatteryLife tensors, windows and labels as DITING.

- BatteryLife's models (Tan et al., KDD 2025), re-implemented in torch behind the same loader
  (their code needs BatteryML and is not on PyPI): :func:`dummy_predict` (the training-label
  mean), :class:`MLP`, :class:`CPMLP` (CyclePatch: an intra-cycle MLP per cycle, then an
  inter-cycle MLP) and :class:`CPTransformer` (cycle tokens through a Transformer encoder).
  Widths are ours (the leaderboard's tuned sizes are per dataset).
- Severson et al. (2019): the variance, discharge and full elastic-net models on
  ΔQ_{late−early}(V), rebuilt from the three channels (:func:`severson_features`,
  :class:`SeversonModel`; scikit-learn's ``ElasticNetCV``, target log10 life).
- :class:`DriftSlope`, ours: the least-squares slope of every curve point across the observed
  cycles, summarised by its log norm, then a linear model of log life. It is the simplest
  strong baseline for a cumulative drift (regression across cycles averages the noise).
- :func:`savgol_denoise`: the abstract's foil, smoothing across cycles before a regressor.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from icml26.diting.model import check_inputs

__all__ = [
    "CPMLP",
    "MLP",
    "CPTransformer",
    "DriftSlope",
    "SeversonModel",
    "dummy_predict",
    "savgol_denoise",
    "severson_features",
]


def dummy_predict(train_life: np.ndarray, n: int) -> np.ndarray:
    """BatteryLife's Dummy: the mean training label for every sample."""
    return np.full(n, float(np.mean(train_life)))


class _Masked(nn.Module):
    def __init__(self, T: int, C: int, S: int):
        super().__init__()
        self.T, self.C, self.S = T, C, S

    def _prepare(
        self, curves: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        check_inputs(curves, mask, self.T, self.C, self.S)
        mask = mask.to(curves.dtype)
        return curves * mask[:, :, None, None], mask


class MLP(_Masked):
    """BatteryLife MLP: all T·C·S values of the window (zeros past it) through an MLP."""

    def __init__(self, T: int, C: int, S: int, *, hidden: int = 128, dropout: float = 0.1):
        super().__init__(T, C, S)
        self.net = nn.Sequential(
            nn.Linear(T * C * S, hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1),
        )  # fmt: skip

    def forward(self, curves, mask):
        x, _ = self._prepare(curves, mask)
        return self.net(x.flatten(1))


class CPMLP(_Masked):
    """BatteryLife CPMLP: each cycle (C·S values) → intra-cycle MLP → d; the T tokens,
    zeroed past the window, flattened → inter-cycle MLP → life."""

    def __init__(self, T: int, C: int, S: int, *, d_model: int = 32, hidden: int = 128,
                 dropout: float = 0.1):  # fmt: skip
        super().__init__(T, C, S)
        self.intra = nn.Sequential(
            nn.Linear(C * S, d_model), nn.ReLU(), nn.Linear(d_model, d_model)
        )
        self.inter = nn.Sequential(
            nn.Linear(T * d_model, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 1)
        )

    def forward(self, curves, mask):
        x, m = self._prepare(curves, mask)
        tokens = self.intra(x.flatten(2)) * m.unsqueeze(-1)
        return self.inter(tokens.flatten(1))


class CPTransformer(_Masked):
    """BatteryLife CPTransformer: cycle tokens (Linear(C·S, d) + learned position) through a
    Transformer encoder with the window as key-padding mask, masked mean pooling, a head."""

    def __init__(self, T: int, C: int, S: int, *, d_model: int = 32, heads: int = 4,
                 layers: int = 2, dropout: float = 0.1):  # fmt: skip
        super().__init__(T, C, S)
        self.embed = nn.Linear(C * S, d_model)
        self.position = nn.Parameter(torch.zeros(T, d_model))
        layer = nn.TransformerEncoderLayer(
            d_model, heads, 2 * d_model, dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, 1)

    def forward(self, curves, mask):
        x, m = self._prepare(curves, mask)
        h = self.encoder(self.embed(x.flatten(2)) + self.position, src_key_padding_mask=m == 0)
        pooled = (h * m.unsqueeze(-1)).sum(1) / m.sum(1, keepdim=True).clamp_min(1)
        return self.head(pooled)


# -- Severson et al. 2019 ---------------------------------------------------------------
def _discharge_qv(cycle: np.ndarray, grid: np.ndarray) -> np.ndarray:
    half = cycle.shape[-1] // 2
    v, q = cycle[0, half:], cycle[2, half:]
    order = np.argsort(v)
    return np.interp(grid, v[order], q[order])


def severson_features(curves: np.ndarray, lengths: np.ndarray, *, kind: str = "full") -> np.ndarray:
    """Severson's features per (cell, window): ΔQ(V) between an early cycle (the 10th, or
    half-way for shorter windows) and the last observed one, from the voltage and capacity
    channels of the discharge half. ``kind``: ``"variance"`` (log10 var ΔQ), ``"discharge"``
    (+ log10 |min|, |skew|, |kurtosis| of ΔQ, Q_d(2), max Q_d − Q_d(2)) or ``"full"``
    (+ slope and intercept of Q_d over cycles 2..i, mean charge C-rate of cycles 1–5)."""
    from scipy.stats import kurtosis, skew

    if kind not in ("variance", "discharge", "full"):
        raise ValueError(f"kind must be 'variance', 'discharge' or 'full', got {kind!r}")
    if curves.ndim != 4 or curves.shape[2] != 3:
        raise ValueError(f"curves must be [N, T, 3, S], got shape {curves.shape}")
    half = curves.shape[-1] // 2
    rows = []
    for cell, i in zip(curves, np.asarray(lengths), strict=True):
        i = int(i)
        early, late = min(9, max(0, i // 2 - 1)), i - 1
        lo = max(cell[early, 0, half:].min(), cell[late, 0, half:].min())
        hi = min(cell[early, 0, half:].max(), cell[late, 0, half:].max())
        grid = np.linspace(lo, hi, 100) if hi > lo else np.linspace(0.0, 1.0, 100)
        dq = _discharge_qv(cell[late], grid) - _discharge_qv(cell[early], grid)
        f = [np.log10(np.var(dq) + 1e-12)]
        if kind != "variance":
            qd = cell[:i, 2, half:].max(-1)
            q2 = qd[min(1, i - 1)]
            f += [
                np.log10(abs(dq.min()) + 1e-12),
                np.log10(abs(skew(dq)) + 1e-12),
                np.log10(abs(kurtosis(dq)) + 1e-12),
                q2,
                qd.max() - q2,
            ]
        if kind == "full":
            t = np.arange(1, i)
            slope, intercept = np.polyfit(t, qd[1:i], 1) if i >= 3 else (0.0, qd[-1])
            f += [slope, intercept, cell[: min(5, i), 1, :half].mean()]
        rows.append(f)
    out = np.asarray(rows, dtype=float)
    return np.nan_to_num(out, nan=0.0, posinf=0.0, neginf=0.0)


class _LogLifeRegressor:
    """Features → standardise → elastic net (CV over cells) → 10^prediction."""

    def __init__(self, *, l1_ratio=(0.1, 0.5, 0.9, 1.0), folds: int = 3, seed: int = 0):
        self.l1_ratio, self.folds, self.seed = list(l1_ratio), folds, seed

    def features(self, curves, lengths):  # pragma: no cover - abstract
        raise NotImplementedError

    def fit(self, curves, lengths, life, groups):
        from sklearn.linear_model import ElasticNetCV
        from sklearn.model_selection import GroupKFold
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        X = self.features(curves, lengths)
        folds = min(self.folds, len(np.unique(groups)))
        cv = list(GroupKFold(folds).split(X, groups=groups))
        self.model = make_pipeline(
            StandardScaler(),
            ElasticNetCV(
                l1_ratio=self.l1_ratio, alphas=20, cv=cv, max_iter=5000, random_state=self.seed
            ),
        )
        import warnings

        from sklearn.exceptions import ConvergenceWarning

        # the coordinate descent's non-convergence is kept as data, not printed
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            self.model.fit(X, np.log10(life))
        self.convergence_warnings = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
        for w in caught:
            if not issubclass(w.category, ConvergenceWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return self

    def predict(self, curves, lengths):
        return 10 ** self.model.predict(self.features(curves, lengths))


class SeversonModel(_LogLifeRegressor):
    """Severson's elastic net on its ``variance`` / ``discharge`` / ``full`` features."""

    def __init__(self, kind: str = "variance", **kw):
        super().__init__(**kw)
        if kind not in ("variance", "discharge", "full"):
            raise ValueError(f"kind must be 'variance', 'discharge' or 'full', got {kind!r}")
        self.kind = kind

    def features(self, curves, lengths):
        return severson_features(curves, lengths, kind=self.kind)


class DriftSlope(_LogLifeRegressor):
    """Least-squares slope of each curve point over the observed cycles; features
    ``log ‖slope‖`` per channel and ``log i``; elastic net on log life (ours)."""

    def features(self, curves, lengths):
        rows = []
        for cell, i in zip(curves, np.asarray(lengths), strict=True):
            i = int(i)
            y = cell[:i].reshape(i, cell.shape[1], -1)  # [i, C, S]
            t = np.arange(i, dtype=float) - (i - 1) / 2
            denom = max(float(t @ t), 1e-12)
            slope = np.tensordot(t, y - y.mean(0), axes=(0, 0)) / denom  # [C, S]
            norms = np.sqrt((slope**2).mean(-1)) + 1e-12
            rows.append([*np.log(norms), np.log(i)])
        return np.asarray(rows)


def savgol_denoise(curves: np.ndarray, lengths: np.ndarray, *, window: int = 11, order: int = 2):
    """Savitzky–Golay smoothing of every curve point across the observed cycles of each
    window (nothing past the window is read); cycles past it stay zero."""
    from scipy.signal import savgol_filter

    out = np.zeros_like(curves)
    for k, (cell, i) in enumerate(zip(curves, np.asarray(lengths), strict=True)):
        i = int(i)
        w = min(window, i if i % 2 else i - 1)
        if w > order:
            out[k, :i] = savgol_filter(cell[:i], w, order, axis=0)
        else:
            out[k, :i] = cell[:i]
    return out
