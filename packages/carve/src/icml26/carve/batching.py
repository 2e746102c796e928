"""Semantic batching (official ``samplers.py``, ``semantic_batching: true``,
``domains_per_batch: 2``): each batch draws its queries from a few domains, so that the
candidate sets of a batch share their semantic negatives.

Per epoch, each domain's examples are shuffled and cut into chunks of
``batch_size / domains_per_batch``; chunks are shuffled and grouped into batches.
Every example is used exactly once per epoch.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np


class DomainBatchSampler:
    """A batch sampler (list of indices per batch) for ``torch.utils.data.DataLoader``.

    Deterministic given ``seed``: every process that iterates it sees the same batches
    (what ``accelerate`` needs to shard them); the epoch counter advances per iteration.
    """

    def __init__(
        self, domains: np.ndarray, batch_size: int, *, domains_per_batch: int = 2, seed: int = 0
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if domains_per_batch < 0:
            raise ValueError(f"domains_per_batch must be >= 0, got {domains_per_batch}")
        self.domains = np.asarray(domains)
        self.batch_size = batch_size
        self.domains_per_batch = domains_per_batch
        self.seed = seed
        self.epoch = 0

    def _batches(self, epoch: int) -> list[np.ndarray]:
        rng = np.random.default_rng([self.seed, epoch])
        n = len(self.domains)
        if self.domains_per_batch == 0:  # plain shuffling
            order = rng.permutation(n)
            return [order[i : i + self.batch_size] for i in range(0, n, self.batch_size)]
        chunk = max(1, self.batch_size // self.domains_per_batch)
        chunks = []
        for d in np.unique(self.domains):
            idx = rng.permutation(np.flatnonzero(self.domains == d))
            chunks += [idx[i : i + chunk] for i in range(0, len(idx), chunk)]
        order = rng.permutation(len(chunks))
        flat = np.concatenate([chunks[i] for i in order]) if chunks else np.zeros(0, int)
        return [flat[i : i + self.batch_size] for i in range(0, n, self.batch_size)]

    def __len__(self) -> int:
        return -(-len(self.domains) // self.batch_size)

    def __iter__(self) -> Iterator[list[int]]:
        batches = self._batches(self.epoch)
        self.epoch += 1
        for b in batches:
            yield b.tolist()
