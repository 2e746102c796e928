"""Routing accuracy at three levels of the hub hierarchy, and forgetting (paper §3).

- M-Acc: the predicted model id is the gold one;
- F-Acc: the predicted model belongs to the gold model's family (new in the paper);
- D-Acc: the predicted model's domain is the query's domain.

After each experience t the router is tested on the test split of every experience
k <= t, giving lower-triangular matrices A[t, k] per level. The paper reports, after the
final step, the mean over experiences of A[T, k] and the forgetting

    FGT = mean over k < T of (A[k, k] - A[T, k]),

the accuracy on an experience right after learning it minus the accuracy at the end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

LEVELS = ("model", "family", "domain")
NO_ROUTE = -1  # a retriever with no evidence for any model; wrong at every level


def routing_accuracy(
    predicted: np.ndarray,
    gold: np.ndarray,
    query_domain: np.ndarray,
    model_family: np.ndarray,
    model_domain: np.ndarray,
) -> dict[str, float]:
    """Model-, family- and domain-level accuracy of predicted registry indices.

    ``model_family`` / ``model_domain`` map every registry index to its family / domain,
    so the family and domain levels are read off the hierarchy, never from the query text.
    """
    predicted, gold = np.asarray(predicted), np.asarray(gold)
    query_domain = np.asarray(query_domain)
    if predicted.shape != gold.shape or gold.shape != query_domain.shape or gold.ndim != 1:
        raise ValueError(
            f"predicted, gold and query_domain must be equal-length vectors, got "
            f"{predicted.shape}, {gold.shape}, {query_domain.shape}"
        )
    if gold.size == 0:
        raise ValueError("accuracy needs at least one query")
    n = len(model_family)
    if predicted.min() < NO_ROUTE or predicted.max() >= n or gold.min() < 0 or gold.max() >= n:
        raise ValueError(f"model indices must lie in [0, {n}) (or {NO_ROUTE} = no route)")
    routed = predicted != NO_ROUTE
    safe = np.where(routed, predicted, 0)
    return {
        "model": float(np.mean(routed & (predicted == gold))),
        "family": float(np.mean(routed & (model_family[safe] == model_family[gold]))),
        "domain": float(np.mean(routed & (model_domain[safe] == query_domain))),
    }


@dataclass
class AccuracyMatrix:
    """A[t, k] per level: accuracy on experience k's test set after learning up to t."""

    n_experiences: int
    values: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.n_experiences < 1:
            raise ValueError(f"n_experiences must be positive, got {self.n_experiences}")
        for level in LEVELS:
            self.values.setdefault(level, np.full((self.n_experiences,) * 2, np.nan))

    def record(self, after: int, on: int, accuracy: dict[str, float]) -> None:
        if not 0 <= on <= after < self.n_experiences:
            raise ValueError(f"need 0 <= on <= after < {self.n_experiences}, got {on}, {after}")
        for level in LEVELS:
            self.values[level][after, on] = accuracy[level]

    def average(self, level: str, after: int | None = None) -> float:
        """Mean accuracy over the experiences seen after step ``after`` (default: last)."""
        t = self.n_experiences - 1 if after is None else after
        row = self.values[level][t, : t + 1]
        if np.isnan(row).any():
            raise ValueError(f"accuracy after experience {t} is not recorded for every k <= {t}")
        return float(row.mean())

    def forgetting(self, level: str, after: int | None = None) -> float:
        """mean over k < t of A[k, k] - A[t, k]; 0 after the first experience."""
        t = self.n_experiences - 1 if after is None else after
        if t == 0:
            return 0.0
        a = self.values[level]
        drop = np.diag(a)[:t] - a[t, :t]
        if np.isnan(drop).any():
            raise ValueError(f"forgetting after {t} needs A[k, k] and A[{t}, k] for all k < {t}")
        return float(drop.mean())

    def to_dict(self) -> dict[str, list[list[float | None]]]:
        return {
            level: [[None if np.isnan(v) else float(v) for v in row] for row in a]
            for level, a in self.values.items()
        }
