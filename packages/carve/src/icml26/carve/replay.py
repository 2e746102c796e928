"""Replay buffers: CARvE's domain-stratified coreset, and random replay (the baseline).

Official ``coreset_replay.py`` (``build_domain_model_coreset_replay``), applied to each
previous experience with budget B = ⌊ratio · n⌋:

1. per-domain quotas proportional to the domain's share of the data, at least
   ``min_per_domain`` (5), at most the domain's size, trimmed from the largest
   domains down to the budget (:func:`domain_quotas`);
2. inside a domain, at most ``max_per_model`` (3) examples per model, chosen by
   farthest-point sampling (FPS) in a frozen embedding space;
3. a domain with more picks than its quota is thinned by FPS; one with fewer is filled
   by FPS from its remaining examples, seeded with what it already holds;
4. if the floors alone exceed B, the whole selection is thinned by FPS to B.

So the buffer is bounded by B and covers every domain that has data.
"""

from __future__ import annotations

import numpy as np


def farthest_point_sampling(
    embeddings: np.ndarray,
    candidates: np.ndarray,
    k: int,
    rng: np.random.Generator,
    existing: np.ndarray | None = None,
) -> np.ndarray:
    """k indices of ``candidates`` by greedy max-min cosine distance (official FPS).

    Starts from a random candidate, or from the points in ``existing`` when given.
    """
    candidates = np.asarray(candidates, dtype=np.int64)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if len(candidates) <= k:
        return candidates.copy()
    x = embeddings[candidates].astype(np.float64)
    x /= np.linalg.norm(x, axis=1, keepdims=True) + 1e-8
    picked = np.zeros(len(candidates), dtype=bool)
    if existing is not None and len(existing):
        e = embeddings[np.asarray(existing, dtype=np.int64)].astype(np.float64)
        e /= np.linalg.norm(e, axis=1, keepdims=True) + 1e-8
        max_sim = (x @ e.T).max(axis=1)
    else:
        first = int(rng.integers(len(candidates)))
        picked[first] = True
        max_sim = x @ x[first]
    while picked.sum() < k:
        sims = np.where(picked, np.inf, max_sim)
        nxt = int(np.argmin(sims))
        picked[nxt] = True
        max_sim = np.maximum(max_sim, x @ x[nxt])
    order = np.flatnonzero(picked)
    return candidates[order]


def domain_quotas(domains: np.ndarray, budget: int, min_per_domain: int) -> dict[int, int]:
    """Quota per domain: round(B · share), at least the floor, at most the domain's size.

    As in the official quota step (``build_domain_model_herding_replay``): the floor drops
    to max(1, B // n_domains) when B cannot pay it, and quotas above the floor are
    decremented, largest first, until they sum to at most B.
    """
    values, counts = np.unique(domains, return_counts=True)
    n = len(domains)
    floor = min_per_domain
    if len(values) and budget < len(values) * min_per_domain:
        floor = max(1, budget // len(values))
    quota = {
        int(d): int(min(c, max(floor, round(budget * c / n))))
        for d, c in zip(values, counts, strict=True)
    }
    while sum(quota.values()) > budget:
        over = [d for d in quota if quota[d] > floor]
        if not over:
            break
        quota[max(over, key=quota.__getitem__)] -= 1
    return quota


def coreset_replay(
    embeddings: np.ndarray,
    domains: np.ndarray,
    models: np.ndarray,
    ratio: float,
    rng: np.random.Generator,
    *,
    min_per_domain: int = 5,
    max_per_model: int = 3,
) -> np.ndarray:
    """Indices of the domain-model coreset of one experience's training set."""
    domains, models = np.asarray(domains), np.asarray(models)
    n = len(domains)
    if embeddings.shape[0] != n or models.shape[0] != n:
        raise ValueError("embeddings, domains and models must have one entry per example")
    if not 0 <= ratio <= 1:
        raise ValueError(f"ratio must lie in [0, 1], got {ratio}")
    if min_per_domain < 0 or max_per_model < 1:
        raise ValueError("min_per_domain must be >= 0 and max_per_model >= 1")
    budget = int(ratio * n)
    if budget <= 0:
        return np.zeros(0, dtype=np.int64)
    selected: list[np.ndarray] = []
    for dom, quota in domain_quotas(domains, budget, min_per_domain).items():
        idx = np.flatnonzero(domains == dom)
        picks = [
            farthest_point_sampling(embeddings, idx[models[idx] == m], max_per_model, rng)
            for m in np.unique(models[idx])
        ]
        core = np.concatenate(picks)
        if len(core) > quota:
            core = farthest_point_sampling(embeddings, core, quota, rng)
        elif len(core) < quota:
            rest = np.setdiff1d(idx, core)
            core = np.concatenate(
                [core, farthest_point_sampling(embeddings, rest, quota - len(core), rng, core)]
            )
        selected.append(core)
    out = np.unique(np.concatenate(selected))
    if len(out) > budget:
        out = np.sort(farthest_point_sampling(embeddings, out, budget, rng))
    return out


def random_replay(n: int, ratio: float, rng: np.random.Generator) -> np.ndarray:
    """⌊ratio · n⌋ indices drawn uniformly without replacement (the random-replay baseline)."""
    if not 0 <= ratio <= 1:
        raise ValueError(f"ratio must lie in [0, 1], got {ratio}")
    return np.sort(rng.choice(n, size=int(ratio * n), replace=False)).astype(np.int64)
