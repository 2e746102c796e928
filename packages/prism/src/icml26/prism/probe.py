"""GL/NGL linear probe on frozen residue embeddings (the rebuttal's disentanglement test).

Per-residue backbone states of an unmasked forward pass are the features; a
logistic regression (scikit-learn) trained on one set of sequences predicts each
residue's GL/NGL label on another. Reported: F1 of the NGL class at threshold 0.5
and PR-AUC (average precision).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from icml26.prism.model import PrismLessModel, PrismModel
from icml26.prism.vocab import Tokenizer
from icml26.shared.metrics import average_precision


@torch.no_grad()
def residue_embeddings(
    model: PrismModel | PrismLessModel, sequences: Sequence[str], *, batch_size: int = 128
) -> np.ndarray:
    """(total residues, H) backbone states of the residues of ``sequences``, in order."""
    if not isinstance(model, PrismModel | PrismLessModel):
        raise TypeError(f"expected a PrismModel or PrismLessModel, got {type(model).__name__}")
    was_training = model.training
    model.eval()
    chunks = []
    for start in range(0, len(sequences), batch_size):
        enc = Tokenizer()([s.upper() for s in sequences[start : start + batch_size]])
        ids, attn = enc.torch(model.device)
        h = model(ids, attn).hidden.float().cpu().numpy()
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
    seed: int = 0,
) -> ProbeResult:
    """Fit the probe on the train residues and score it on the test residues."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.preprocessing import StandardScaler

    x_tr = residue_embeddings(model, train_sequences)
    x_te = residue_embeddings(model, test_sequences)
    y_tr = np.concatenate([np.asarray(y, dtype=int) for y in train_labels])
    y_te = np.concatenate([np.asarray(y, dtype=int) for y in test_labels])
    if len(y_tr) != len(x_tr) or len(y_te) != len(x_te):
        raise ValueError("labels must have one entry per residue")
    if len(np.unique(y_tr)) < 2:
        raise ValueError("the training residues need both GL and NGL labels")
    scaler = StandardScaler().fit(x_tr)
    clf = LogisticRegression(max_iter=2000, random_state=seed)
    clf.fit(scaler.transform(x_tr), y_tr)
    p = clf.predict_proba(scaler.transform(x_te))[:, 1]
    f1 = float(f1_score(y_te, (p >= 0.5).astype(int), zero_division=0))
    return ProbeResult(f1=f1, pr_auc=float(average_precision(y_te, p)))
