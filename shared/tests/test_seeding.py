from __future__ import annotations

import random

import numpy as np
import pytest

from icml26.shared import derive_seed, numpy_rng, seed_everything


def test_numpy_streams_are_reproducible_and_independent():
    a = numpy_rng(3, "data").normal(size=4)
    assert np.array_equal(a, numpy_rng(3, "data").normal(size=4))
    assert not np.array_equal(a, numpy_rng(3, "model").normal(size=4))
    assert not np.array_equal(a, numpy_rng(4, "data").normal(size=4))


def test_derived_seeds_are_stable_known_values():
    # fixed across processes and platforms: SeedSequence + crc32, not hash()
    assert derive_seed(0, "a") == derive_seed(0, "a")
    assert derive_seed(0, "a") != derive_seed(0, "b")
    assert 0 <= derive_seed(123, "x", 7) < 2**32


def test_seed_everything_seeds_global_state():
    seed_everything(11)
    r, n = random.random(), np.random.rand()  # noqa: NPY002
    seed_everything(11)
    assert (r, n) == (random.random(), np.random.rand())  # noqa: NPY002


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_bad_seed_is_rejected(bad):
    with pytest.raises((ValueError, TypeError)):
        numpy_rng(bad)


def test_jax_and_torch_helpers_when_installed():
    from icml26.shared import jax_key, torch_generator

    try:
        import jax
    except ImportError:
        jax = None
    if jax is not None:
        k1, k2 = jax_key(5, "x"), jax_key(5, "x")
        assert np.array_equal(jax.random.normal(k1, (3,)), jax.random.normal(k2, (3,)))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        g1, g2 = torch_generator(5), torch_generator(5)
        assert torch.equal(torch.rand(3, generator=g1), torch.rand(3, generator=g2))
    if jax is None and torch is None:
        with pytest.raises(ImportError):
            jax_key(0)
