"""GL/NGL linear probe on frozen residue embeddings (the rebuttal's disentanglement test).

Per-residue backbone states of an unmasked forward pass are the features; an
L2-regularised logistic regression trained on one set of sequences predicts each
residue's GL/NGL label on another. Reported: F1 of the NGL class at threshold 0.5
and PR-AUC (average precision).

The regression is scikit-learn's default ``LogisticRegression`` objective
(``C = 1``: ``½‖w‖² + Σ log-loss``, unpenalised intercept, standardised features),
solved here by Newton's method in NumPy: the features have at most a few hundred
dimensions, and importing scikit-learn costs more than the fit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from icml26.prism.conditioning import Conditioning, GeneIds, RegionIds
from icml26.prism.model import PrismLessModel, PrismModel
from icml26.prism.vocab import Tokenizer
from icml26.shared.metrics import average_precision


@torch.no_grad()
def residue_embeddings(
    model: PrismModel | PrismLessModel,
    sequences: Sequence[str],
    *,
    v_gene: GeneIds = None,
    j_gene: GeneIds = None,
    regions: RegionIds = None,
    batch_size: int = 128,
) -> np.ndarray:
    """(total residues, H) backbone states of the residues of ``sequences``, in order
    (``v_gene``/``j_gene``/``regions`` as in :func:`~icml26.prism.score.pseudo_log_likelihood`)."""
    if not isinstance(model, PrismModel | PrismLessModel):
        raise TypeError(f"expected a PrismModel or PrismLessModel, got {type(model).__name__}")
    sequences = list(sequences)
    cond = Conditioning.build(len(sequences), v_gene=v_gene, j_gene=j_gene, regions=regions)
    if cond is not None:
        cond.check(model)
    was_training = model.training
    model.eval()
    chunks = []
    for start in range(0, len(sequences), batch_size):
        enc = Tokenizer()([s.upper() for s in sequences[start : start + batch_size]])
        ids, attn = enc.torch(model.device)
        kw = {}
        if cond is not None:
            kw = cond.slice(start, start + len(ids)).tensors(enc.input_ids, model.device)
        h = model(ids, attn, **kw).hidden.float().cpu().numpy()
        chunks.append(h[enc.residue_mask])
    model.train(was_training)
    return np.concatenate(chunks)


@dataclass(frozen=True)
class ProbeResult:
    f1: float
    pr_auc: float


def linear_probe(
    model: PrismModel | PrismLessModel,
    train_sequences: Sequence[str],
    train_labels: Sequence[np.ndarray],
    test_sequences: Sequence[str],
    test_labels: Sequence[np.ndarray],
    *,
    train_conditioning: Mapping[str, Any] | None = None,
    test_conditioning: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> ProbeResult:
    """Fit the probe on the train residues and score it on the test residues.

    ``*_conditioning``: ``v_gene``/``j_gene``/``regions`` keywords of
    :func:`residue_embeddings` for each set. ``seed`` is accepted for API stability;
    the Newton fit is deterministic.
    """
    x_tr = residue_embeddings(model, train_sequences, **(train_conditioning or {}))
    x_te = residue_embeddings(model, test_sequences, **(test_conditioning or {}))
    y_tr = np.concatenate([np.asarray(y, dtype=int) for y in train_labels])
    y_te = np.concatenate([np.asarray(y, dtype=int) for y in test_labels])
    if len(y_tr) != len(x_tr) or len(y_te) != len(x_te):
        raise ValueError("labels must have one entry per residue")
    if len(np.unique(y_tr)) < 2:
        raise ValueError("the training residues need both GL and NGL labels")
    mu, sd = x_tr.mean(0), x_tr.std(0)
    sd[sd == 0] = 1.0
    w = fit_logistic((x_tr - mu) / sd, y_tr)
    p = _sigmoid(_design((x_te - mu) / sd) @ w)
    pred = p >= 0.5
    tp = float(np.sum(pred & (y_te == 1)))
    denom = float(pred.sum() + (y_te == 1).sum())
    f1 = 2 * tp / denom if denom else 0.0
    return ProbeResult(f1=f1, pr_auc=float(average_precision(y_te, p)))


def _design(x: np.ndarray) -> np.ndarray:
    return np.concatenate([x.astype(np.float64), np.ones((len(x), 1))], axis=1)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def fit_logistic(x: np.ndarray, y: np.ndarray, *, c: float = 1.0, iters: int = 50) -> np.ndarray:
    """Weights (last = intercept) minimising ``½‖w‖²/c + Σ log-loss`` by Newton's method."""
    xd = _design(x)
    y = np.asarray(y, dtype=np.float64)
    reg = np.full(xd.shape[1], 1.0 / c)
    reg[-1] = 0.0  # the intercept is not penalised
    w = np.zeros(xd.shape[1])
    for _ in range(iters):
        p = _sigmoid(xd @ w)
        grad = xd.T @ (p - y) + reg * w
        hess = (xd * (p * (1 - p))[:, None]).T @ xd + np.diag(reg) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w
