import jax
import numpy as np
import pytest

import icml26.mspca  # noqa: F401  (turns on float64)


@pytest.fixture
def key():
    return jax.random.key(0)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
