"""The balanced domain sampler of the official code: equal samples per source domain.

Each batch takes ``batch_size / n_domains`` samples from every source domain; within a
domain the order is a fresh permutation per epoch drawn from ``seed + epoch``. With
``drop_last=True`` (the official setting) an epoch has ``min_d ⌊n_d / per_domain⌋``
batches; with ``drop_last=False`` it runs to the largest domain, refilling the short
ones from their start.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

__all__ = ["BalancedDomainSampler"]


class BalancedDomainSampler:
    """Yields lists of indices into ``domains``, each with equal counts per domain."""

    def __init__(
        self, domains: np.ndarray, batch_size: int, *, drop_last: bool = True, seed: int = 0
    ):
        domains = np.asarray(domains)
        if domains.ndim != 1 or len(domains) == 0:
            raise ValueError(f"domains must be a non-empty 1-D array, got shape {domains.shape}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self.domain_ids = [int(d) for d in np.unique(domains)]
        if len(self.domain_ids) < 2:
            raise ValueError(
                f"the balanced domain sampler needs at least two source domains; every sample "
                f"is from domain {self.domain_ids[0]} (a batch with one domain only)"
            )
        n_dom = len(self.domain_ids)
        if batch_size % n_dom:
            raise ValueError(
                f"batch size {batch_size} is not divisible by the {n_dom} source domains "
                f"{self.domain_ids}; use a multiple of {n_dom}"
            )
        self.batch_size, self.drop_last, self.seed = batch_size, drop_last, int(seed)
        self.per_domain = batch_size // n_dom
        self.index = {d: np.flatnonzero(domains == d) for d in self.domain_ids}
        sizes = [len(v) for v in self.index.values()]
        if min(sizes) < self.per_domain:
            raise ValueError(
                f"a domain has {min(sizes)} samples, fewer than the {self.per_domain} per batch"
            )
        self.epoch = 0
        if drop_last:
            self.batches = min(sizes) // self.per_domain
        else:
            self.batches = max(-(-s // self.per_domain) for s in sizes)

    def __len__(self) -> int:
        return self.batches

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self) -> Iterator[list[int]]:
        gen = torch.Generator().manual_seed(self.seed + self.epoch)
        orders = {
            d: idx[torch.randperm(len(idx), generator=gen).numpy()] for d, idx in self.index.items()
        }
        self.epoch += 1
        k = self.per_domain
        for b in range(self.batches):
            batch: list[int] = []
            for d in self.domain_ids:
                order = orders[d]
                part = order[b * k : (b + 1) * k]
                if len(part) < k:  # drop_last=False: refill from the start
                    part = np.concatenate([part, np.resize(order, k - len(part))])
                batch.extend(int(i) for i in part)
            yield batch
