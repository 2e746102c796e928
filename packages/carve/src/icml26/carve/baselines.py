"""The paper's comparisons, on the same hub, encoder and training budget as CARvE.

Zero-shot retrieval over model cards (no training; paper: BM25 / SPLADE / BGE-M3):

- :class:`CardRetrieval` — cosine between the frozen query and card embeddings;
- :class:`BM25Retrieval` — Okapi BM25 over the card texts (``bm25s``); a query that
  shares no term with any card gets :data:`~icml26.carve.metrics.NO_ROUTE` (-1), counted
  wrong at every level, instead of an arbitrary model.

Continual baselines, the CARvE router with parts of the recipe switched off so the
comparison isolates the continual-learning strategy (brief, "Baselines"):

- ``SEQUENTIAL_FT`` — the router fine-tuned on each experience in turn (no replay, no
  anchors, one phase);
- ``RANDOM_REPLAY`` — plus a uniformly drawn 10 % of each past experience;
- ``EWC`` — plus online EWC on the router's parameters (official ``router_ewc_*``:
  λ = 1e4, online decay 0.9);
- :func:`ties_merge_stream` — one router per experience, each trained from the same
  initial weights on its experience alone; their adapter/projection deltas are merged
  with TIES (trim to the top-``density`` magnitudes, elect a sign per entry, average
  the agreeing deltas; Yadav et al., 2023), and each model keeps the registry row of the
  experience that introduced it;
- joint training — every experience at once (:meth:`ContinualRouter.learn_jointly`),
  the upper bound.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import torch

from icml26.carve.carve import ContinualRouter, Strategy, TrainConfig
from icml26.carve.hub import Hub
from icml26.carve.metrics import NO_ROUTE, AccuracyMatrix, routing_accuracy
from icml26.carve.router import check_features

SEQUENTIAL_FT = Strategy("Sequential FT", replay=None, two_phase=False)
RANDOM_REPLAY = Strategy("Random replay", replay="random", two_phase=False)
EWC = Strategy("EWC", replay=None, two_phase=False, ewc_lambda=1e4)


class CardRetrieval:
    """Zero-shot dense retrieval: argmax cosine(query embedding, card embedding)."""

    def __init__(self, card_embeddings: np.ndarray) -> None:
        e = np.asarray(card_embeddings, dtype=np.float32)
        if e.ndim != 2 or e.shape[0] == 0:
            raise ValueError(f"card_embeddings must be (n_models, dim), got {e.shape}")
        if not np.isfinite(e).all():
            raise ValueError("card_embeddings hold NaN or inf values")
        norm = np.linalg.norm(e, axis=1, keepdims=True)
        if (norm == 0).any():
            raise ValueError(f"card {int(np.flatnonzero(norm[:, 0] == 0)[0])} has a zero embedding")
        self.cards = e / norm

    def predict(self, queries: np.ndarray, n_models: int | None = None) -> np.ndarray:
        q = check_features(np.asarray(queries, dtype=np.float32), self.cards.shape[1]).numpy()
        n = len(self.cards) if n_models is None else int(n_models)
        if not 1 <= n <= len(self.cards):
            raise ValueError(f"n_models must lie in [1, {len(self.cards)}], got {n_models}")
        if len(q) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.argmax(q @ self.cards[:n].T, axis=1).astype(np.int64)


class BM25Retrieval:
    """Zero-shot lexical retrieval with Okapi BM25 over the card texts (``bm25s``)."""

    def __init__(self, cards: Sequence[str]) -> None:
        if isinstance(cards, str) or not isinstance(cards, Sequence):
            raise TypeError("cards must be a sequence of strings")
        if not cards:
            raise ValueError("BM25Retrieval needs at least one card")
        bad = [i for i, c in enumerate(cards) if not isinstance(c, str)]
        if bad:
            raise TypeError(
                f"cards must be strings; card {bad[0]} is {type(cards[bad[0]]).__name__}"
            )
        self.cards = list(cards)
        self._index: dict[int, object] = {}

    def predict(self, queries: Sequence[str], n_models: int | None = None) -> np.ndarray:
        """Best card per query, or ``NO_ROUTE`` (-1) when no query term is in any card."""
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # its index-building lines
        if isinstance(queries, str):
            raise TypeError("queries must be a sequence of strings, not a single string")
        queries = list(queries)
        bad = [i for i, q in enumerate(queries) if not isinstance(q, str)]
        if bad:
            raise TypeError(f"queries must be strings; query {bad[0]} is "
                            f"{type(queries[bad[0]]).__name__}")  # fmt: skip
        n = len(self.cards) if n_models is None else int(n_models)
        if not 1 <= n <= len(self.cards):
            raise ValueError(f"n_models must lie in [1, {len(self.cards)}], got {n_models}")
        if not queries:
            return np.zeros(0, dtype=np.int64)
        if n not in self._index:
            retriever = bm25s.BM25()
            retriever.index(bm25s.tokenize(self.cards[:n], stopwords="en", show_progress=False),
                            show_progress=False)  # fmt: skip
            self._index[n] = retriever
        retriever = self._index[n]
        tokens = bm25s.tokenize(queries, stopwords="en", show_progress=False)
        docs, scores = retriever.retrieve(tokens, k=1, show_progress=False, n_threads=1)
        out = np.asarray(docs[:, 0], dtype=np.int64)
        out[np.asarray(scores[:, 0]) <= 0] = NO_ROUTE  # no shared term: no evidence at all
        return out


def retrieval_stream(hub: Hub, predict) -> AccuracyMatrix:
    """Accuracy matrix of a training-free router as the registry grows.

    ``predict(k, n_models)`` returns registry indices for experience k's test queries.
    """
    acc = AccuracyMatrix(len(hub.experiences))
    for t in range(len(hub.experiences)):
        n_models = hub.n_registered(t)
        for k in range(t + 1):
            split = hub.experiences[k].test
            pred = predict(k, n_models)
            acc.record(t, k, routing_accuracy(pred, split.model, split.domain,
                                              hub.model_family, hub.model_domain))  # fmt: skip
    return acc


def ties_merge(
    base: dict[str, torch.Tensor], finetuned: Sequence[dict[str, torch.Tensor]], density: float
) -> dict[str, torch.Tensor]:
    """TIES-merging (trim, elect sign, disjoint mean) of task vectors τ_i = θ_i - θ_0."""
    if not 0 < density <= 1:
        raise ValueError(f"density must lie in (0, 1], got {density}")
    if not finetuned:
        raise ValueError("ties_merge needs at least one fine-tuned state")
    merged = {}
    for name, theta0 in base.items():
        taus = torch.stack([ft[name] - theta0 for ft in finetuned])  # (n, ...)
        flat = taus.reshape(len(finetuned), -1)
        k = max(1, round(density * flat.shape[1]))
        # trim: keep each task vector's top-k magnitudes
        thresh = flat.abs().kthvalue(flat.shape[1] - k + 1, dim=1, keepdim=True).values
        trimmed = torch.where(flat.abs() >= thresh, flat, torch.zeros_like(flat))
        sign = torch.sign(trimmed.sum(dim=0))  # elect
        agree = (torch.sign(trimmed) == sign) & (trimmed != 0)
        total = (trimmed * agree).sum(dim=0)
        count = agree.sum(dim=0).clamp(min=1)
        merged[name] = theta0 + (total / count).reshape(theta0.shape)
    return merged


def ties_merge_stream(
    hub: Hub,
    xs_train: list[np.ndarray],
    xs_test: list[np.ndarray],
    *,
    train: TrainConfig,
    seed: int,
    density: float = 0.5,
    device: str | torch.device | None = None,
    backbone_factory: Callable[[], torch.nn.Module] | None = None,
) -> AccuracyMatrix:
    """Per-experience routers merged with TIES after each experience (see module doc).

    With ``backbone_factory`` (a LoRA query tower, the same initial weights per call) the
    merged deltas are the LoRA adapters', as in the paper's TIES row."""
    make = backbone_factory or (lambda: None)
    input_dim = xs_train[0].shape[1]
    acc = AccuracyMatrix(len(hub.experiences))
    strategy = Strategy("TIES merge", replay=None, two_phase=False)
    shared = ("adapter", "projection")
    base_learner = ContinualRouter(hub, input_dim, train=train, strategy=strategy, seed=seed,
                                   device=device, backbone=make())  # fmt: skip
    base = {k: v.detach().clone() for k, v in base_learner.router.state_dict().items()
            if k.startswith(shared)}  # fmt: skip
    tuned: list[dict[str, torch.Tensor]] = []
    rows: list[torch.Tensor] = []
    for t in range(len(hub.experiences)):
        learner = ContinualRouter(hub, input_dim, train=train, strategy=strategy, seed=seed,
                                  device=device, backbone=make())  # fmt: skip
        learner.register_until(hub.n_registered(t - 1) if t else 0)
        learner.experiences_seen = t
        learner.learn(t, xs_train[t])
        state = learner.router.state_dict()
        tuned.append({k: v.detach().cpu() for k, v in state.items() if k.startswith(shared)})
        new = hub.experiences[t].new_models
        rows.append(state["model_embeddings.weight"][new].detach().cpu())
        merged = ties_merge({k: v.cpu() for k, v in base.items()}, tuned, density)
        router = learner.router.cpu()
        router.load_state_dict({**merged, "model_embeddings.weight": torch.cat(rows)}, strict=True)
        n_models = hub.n_registered(t)
        for k in range(t + 1):
            split = hub.experiences[k].test
            pred = router.predict(xs_test[k], n_models=n_models)
            acc.record(t, k, routing_accuracy(pred, split.model, split.domain,
                                              hub.model_family, hub.model_domain))  # fmt: skip
    return acc
