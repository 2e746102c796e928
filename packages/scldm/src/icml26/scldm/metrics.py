"""Generation metrics (official ``evaluations.py``/``models.py`` and the CFGen protocol).

Evaluation space (:class:`EvaluationSpace`): counts -> log1p(CP10k), and a PCA fitted
on the *real training* cells; every method is scored in the same space with the same
RBF bandwidth (median heuristic on real cells), because the bandwidth changes rankings.

- :func:`mmd_rbf`: squared RBF-MMD (biased V-statistic, as ``MMDLoss``);
- :func:`sinkhorn_wasserstein`: W1/W2 by entropic OT (POT ``sinkhorn2``);
- :func:`r2_means`, :func:`r2_variances`: R² of per-gene means and variances;
- :func:`correlation_error`: 1 − Pearson r between the off-diagonal gene–gene
  correlation matrices of real and generated cells (0 = same dependency structure);
- :func:`real_vs_generated_accuracy`: cross-validated kNN accuracy at telling real
  from generated cells (0.5 = indistinguishable);
- :class:`CellTypeClassifier`: a logistic regression trained on real cells; its
  accuracy on generated cells of each requested type.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.neighbors import KNeighborsClassifier

from icml26.shared.metrics import median_bandwidth, mmd2_rbf


def _counts(x: Any, name: str) -> np.ndarray:
    x = np.asarray(x.toarray() if hasattr(x, "toarray") else x, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"{name} must be (cells ≥ 2, genes), got shape {x.shape}")
    if not np.all(np.isfinite(x)) or x.min() < 0:
        raise ValueError(f"{name} must hold finite non-negative counts")
    return x


def log_normalize(counts: Any, target_sum: float = 1e4) -> np.ndarray:
    """log1p(counts / library · 10⁴); cells without counts stay zero."""
    x = _counts(counts, "counts")
    lib = x.sum(axis=1, keepdims=True)
    return np.log1p(np.divide(x, lib, out=np.zeros_like(x), where=lib > 0) * target_sum)


@dataclass
class EvaluationSpace:
    """log1p(CP10k) and a PCA fitted on real training cells."""

    pca: PCA
    bandwidth: float

    @classmethod
    def fit(cls, train_counts: Any, *, n_components: int = 30, seed: int = 0) -> EvaluationSpace:
        logn = log_normalize(train_counts)
        k = int(min(n_components, logn.shape[0] - 1, logn.shape[1]))
        pca = PCA(n_components=k, random_state=seed).fit(logn)
        pcs = pca.transform(logn)
        sub = pcs[np.random.default_rng(seed).permutation(len(pcs))[:1000]]
        return cls(pca=pca, bandwidth=median_bandwidth(sub, sub))

    def transform(self, counts: Any) -> np.ndarray:
        return self.pca.transform(log_normalize(counts))


def mmd_rbf(x: np.ndarray, y: np.ndarray, bandwidth: float) -> float:
    """Squared RBF-MMD with a fixed bandwidth."""
    return mmd2_rbf(x, y, bandwidth=bandwidth)


def sinkhorn_wasserstein(
    x: np.ndarray,
    y: np.ndarray,
    *,
    p: int = 2,
    reg: float = 0.05,
    exact: bool = False,
    max_iter: int = 2000,
) -> float:
    """W_p between two point clouds with uniform weights (POT), as the official
    ``wasserstein(method="sinkhorn", reg=0.05)``; W2 is the square root of the cost.

    The cost matrix is divided by its maximum before Sinkhorn, so ``reg`` is relative
    to the cost scale (keeps exp(-C/reg) representable for any data scale; the
    entropic blur is the same for every method compared). ``exact=True`` solves the
    unregularised problem (``ot.emd2``) instead.
    """
    os.environ.setdefault("POT_BACKEND_DISABLE_JAX", "1")  # POT imports JAX if present: slow
    os.environ.setdefault("POT_BACKEND_DISABLE_TENSORFLOW", "1")
    import ot

    if p not in (1, 2):
        raise ValueError(f"p must be 1 or 2, got {p}")
    if reg <= 0:
        raise ValueError(f"reg must be positive, got {reg}")
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    cost = ot.dist(x, y, metric="sqeuclidean" if p == 2 else "euclidean")
    a, b = ot.unif(len(x)), ot.unif(len(y))
    if exact:
        value = float(ot.emd2(a, b, cost, numItermax=10**7))
    else:
        scale = float(cost.max()) or 1.0
        value = float(ot.sinkhorn2(a, b, cost / scale, reg, numItermax=max_iter)) * scale
    return float(np.sqrt(max(value, 0.0))) if p == 2 else value


def r2_means(real_logn: np.ndarray, gen_logn: np.ndarray) -> float:
    """R² of generated per-gene means against the real ones."""
    return float(r2_score(real_logn.mean(0), gen_logn.mean(0)))


def r2_variances(real_logn: np.ndarray, gen_logn: np.ndarray) -> float:
    """R² of generated per-gene variances against the real ones."""
    return float(r2_score(real_logn.var(0), gen_logn.var(0)))


def _correlation(x: np.ndarray) -> np.ndarray:
    x = x - x.mean(0)
    sd = np.sqrt((x * x).sum(0))
    c = (x.T @ x) / np.outer(sd, sd).clip(min=1e-12)
    c[sd < 1e-12] = 0.0
    c[:, sd < 1e-12] = 0.0
    return c


def correlation_error(real_logn: np.ndarray, gen_logn: np.ndarray) -> float:
    """1 − Pearson r of the off-diagonal gene–gene correlations (genes varying in real)."""
    keep = real_logn.std(0) > 1e-8
    cr, cg = _correlation(real_logn[:, keep]), _correlation(gen_logn[:, keep])
    iu = np.triu_indices(int(keep.sum()), k=1)
    a, b = cr[iu], cg[iu]
    if a.size < 2 or np.std(b) < 1e-12:
        return 1.0
    return float(1.0 - np.corrcoef(a, b)[0, 1])


def real_vs_generated_accuracy(
    real_pcs: np.ndarray, gen_pcs: np.ndarray, *, k: int = 5, folds: int = 5, seed: int = 0
) -> float:
    """5-fold kNN accuracy at separating real from generated cells (balanced)."""
    n = min(len(real_pcs), len(gen_pcs))
    rng = np.random.default_rng(seed)
    x = np.concatenate(
        [real_pcs[rng.permutation(len(real_pcs))[:n]], gen_pcs[rng.permutation(len(gen_pcs))[:n]]]
    )
    y = np.r_[np.zeros(n), np.ones(n)]
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return float(cross_val_score(KNeighborsClassifier(n_neighbors=k), x, y, cv=cv).mean())


class CellTypeClassifier:
    """Logistic regression on the evaluation-space PCs of real labelled cells."""

    def __init__(self, space: EvaluationSpace, *, seed: int = 0):
        self.space = space
        self.model = LogisticRegression(max_iter=2000, random_state=seed)

    def fit(self, counts: Any, labels: np.ndarray) -> CellTypeClassifier:
        self.model.fit(self.space.transform(counts), np.asarray(labels).astype(str))
        return self

    def accuracy(self, counts: Any, requested: np.ndarray) -> float:
        """Share of (generated) cells the classifier labels with the requested type."""
        pred = self.model.predict(self.space.transform(counts))
        return float(np.mean(pred == np.asarray(requested).astype(str)))


def generation_metrics(
    real_counts: Any,
    gen_counts: Any,
    space: EvaluationSpace,
    *,
    seed: int = 0,
    wasserstein: bool = True,
) -> dict[str, float]:
    """Every distribution metric of generated vs held-out real cells."""
    real_logn, gen_logn = log_normalize(real_counts), log_normalize(gen_counts)
    real_pcs, gen_pcs = space.pca.transform(real_logn), space.pca.transform(gen_logn)
    out = {
        "mmd": mmd_rbf(real_pcs, gen_pcs, space.bandwidth),
        "r2_mean": r2_means(real_logn, gen_logn),
        "r2_var": r2_variances(real_logn, gen_logn),
        "corr_error": correlation_error(real_logn, gen_logn),
        "knn_acc": real_vs_generated_accuracy(real_pcs, gen_pcs, seed=seed),
    }
    if wasserstein:
        out["w1"] = sinkhorn_wasserstein(real_pcs, gen_pcs, p=1)
        out["w2"] = sinkhorn_wasserstein(real_pcs, gen_pcs, p=2)
    return out
