"""The balanced domain sampler: equal counts per domain, seeded order, clear errors."""

import numpy as np
import pytest

from icml26.merdg import BalancedDomainSampler


def test_every_batch_is_balanced_and_epochs_reshuffle():
    domains = np.repeat([0, 1, 2], [50, 70, 40])
    s = BalancedDomainSampler(domains, 12, seed=3)
    assert len(s) == 40 // 4  # drop_last: the smallest domain sets the count
    first = list(s)
    assert len(first) == 10
    for batch in first:
        assert len(batch) == 12 and len(set(batch)) == 12
        assert np.bincount(domains[batch], minlength=3).tolist() == [4, 4, 4]
    second = list(s)
    assert first != second  # a fresh permutation per epoch
    again = BalancedDomainSampler(domains, 12, seed=3)
    assert list(again) == first  # same seed, same order
    full = BalancedDomainSampler(domains, 12, drop_last=False, seed=0)
    assert len(full) == 18 and all(len(b) == 12 for b in full)


def test_sampler_errors():
    with pytest.raises(ValueError, match="not divisible by the 3 source domains"):
        BalancedDomainSampler(np.repeat([0, 1, 2], 20), 64)
    with pytest.raises(ValueError, match="one domain only"):
        BalancedDomainSampler(np.zeros(30, dtype=int), 10)
    with pytest.raises(ValueError, match="positive integer"):
        BalancedDomainSampler(np.repeat([0, 1], 20), 0)
