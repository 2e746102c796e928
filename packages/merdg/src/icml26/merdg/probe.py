"""The frozen-encoder probe of ``evaluate_modality_features.py`` and feature spread measures.

Freeze a trained model's encoders, extract each modality's embedding on the source-train
part and on the target domain, train an MLP probe (hidden 512, dropout 0.3, Adam 1e-3,
25 epochs in the official script; here the epoch count is the cap of a training-loss
plateau rule) on the source and score it on the target, per modality and for the
concatenation. A modality probe is immune to the cross-modal co-occurrence, so its target
accuracy measures how much domain-invariant class information the encoder kept.

Spread: ``feature_logdet`` is ``logdet(C) / D`` of the standardised correlation with the
1e-4 ridge (the quantity MER maximises, so ``−L_spec``); ``effective_rank`` is
``exp(H(σ / Σσ))`` of the centred feature matrix's singular values (Roy & Vetterli 2007).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from icml26.merdg.data import LODOSplit
from icml26.merdg.mer import EPS, correlation_matrix
from icml26.merdg.models import MultimodalNet
from icml26.shared import Plateau

__all__ = ["ProbeConfig", "effective_rank", "feature_logdet", "probe_accuracy", "probe_model"]


@dataclass(frozen=True)
class ProbeConfig:
    hidden: int = 512
    dropout: float = 0.3
    lr: float = 1e-3
    epochs: int = 25  # cap
    batch_size: int = 256
    patience: int = 5
    min_delta: float = 0.01


def _as_tensor(x) -> torch.Tensor:
    t = torch.as_tensor(np.asarray(x, dtype=np.float32) if not isinstance(x, torch.Tensor) else x)
    if t.ndim != 2:
        raise ValueError(f"features must be 2-D (N × D), got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError("features have NaN or infinite values")
    return t.float()


def feature_logdet(features, eps: float = EPS) -> float:
    """``logdet(C) / D`` of the standardised feature correlation (with the ridge)."""
    z = _as_tensor(features).double()
    if z.shape[0] < 2:
        raise ValueError("feature_logdet needs at least 2 samples")
    _, value = torch.linalg.slogdet(correlation_matrix(z, eps=eps))
    return float(value) / z.shape[1]


def effective_rank(features) -> float:
    """``exp`` of the entropy of the normalised singular values of the centred features."""
    z = _as_tensor(features).double()
    s = torch.linalg.svdvals(z - z.mean(0, keepdim=True))
    if float(s.sum()) == 0.0:
        return 0.0
    p = s / s.sum()
    p = p[p > 0]
    return float(torch.exp(-(p * p.log()).sum()))


def probe_accuracy(
    train_x,
    train_y,
    test_x,
    test_y,
    n_classes: int,
    config: ProbeConfig | None = None,
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> float:
    """Train an MLP probe on (train_x, train_y); top-1 accuracy on (test_x, test_y)."""
    cfg = config or ProbeConfig()
    xtr, xte = _as_tensor(train_x).to(device), _as_tensor(test_x).to(device)
    ytr = torch.as_tensor(np.asarray(train_y), device=device).long()
    yte = torch.as_tensor(np.asarray(test_y), device=device).long()
    if len(xtr) != len(ytr) or len(xte) != len(yte):
        raise ValueError("probe features and labels differ in length")
    # standardise with the source statistics (the probe sees source data only)
    mu, sd = xtr.mean(0, keepdim=True), xtr.std(0, keepdim=True).clamp_min(1e-6)
    xtr, xte = (xtr - mu) / sd, (xte - mu) / sd
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = nn.Sequential(
            nn.Linear(xtr.shape[1], cfg.hidden),
            nn.ReLU(),
            nn.Dropout(cfg.dropout),
            nn.Linear(cfg.hidden, n_classes),
        ).to(device)
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
        gen = torch.Generator().manual_seed(seed)
        rule = Plateau(window=1, patience=cfg.patience, min_delta=cfg.min_delta, cap=cfg.epochs)
        while not rule.stopped:
            order = torch.randperm(len(xtr), generator=gen).to(device)
            total, count = 0.0, 0
            for start in range(0, len(order), cfg.batch_size):
                idx = order[start : start + cfg.batch_size]
                loss = F.cross_entropy(net(xtr[idx]), ytr[idx])
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                total += float(loss.detach()) * len(idx)
                count += len(idx)
            rule.update(total / count)
        net.eval()
        with torch.no_grad():
            return float((net(xte).argmax(1) == yte).float().mean())


@torch.no_grad()
def _embeddings(model: MultimodalNet, features) -> list[torch.Tensor]:
    device = next(model.parameters()).device
    was = model.training
    model.eval()
    out = [e.cpu() for e in model.embed([torch.as_tensor(x, device=device) for x in features])]
    model.train(was)
    return out


def probe_model(
    model: MultimodalNet,
    split: LODOSplit,
    config: ProbeConfig | None = None,
    *,
    seed: int = 0,
    concat: bool = True,
) -> dict[str, float]:
    """Probe target accuracy per modality (``probe_m<k>``), their mean (``probe``), the
    concatenation (``probe_concat``), and the source-train feature log-det and effective
    rank per modality and on average (``logdet``, ``erank``)."""
    n_classes = int(split.train.n_classes)
    tr = _embeddings(model, split.train.features)
    te = _embeddings(model, split.test.features)
    out: dict[str, float] = {}
    accs, dets, ranks = [], [], []
    for m, (a, b) in enumerate(zip(tr, te, strict=True)):
        acc = probe_accuracy(
            a, split.train.labels, b, split.test.labels, n_classes, config, seed=seed
        )
        out[f"probe_m{m}"] = acc
        accs.append(acc)
        dets.append(feature_logdet(a))
        ranks.append(effective_rank(a))
    out["probe"] = float(np.mean(accs))
    if concat:
        out["probe_concat"] = probe_accuracy(
            torch.cat(tr, 1),
            split.train.labels,
            torch.cat(te, 1),
            split.test.labels,
            n_classes,
            config,
            seed=seed,
        )
    out["logdet"] = float(np.mean(dets))
    out["erank"] = float(np.mean(ranks))
    return out
