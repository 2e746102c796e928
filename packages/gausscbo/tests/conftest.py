"""Fast tests run in float64 (as the package's entry points do)."""

import jax
import pytest


@pytest.fixture(autouse=True)
def _x64():
    with jax.enable_x64(True):
        yield
