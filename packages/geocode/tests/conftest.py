from __future__ import annotations

import pytest

from icml26.geocode.dataset import synthesize


@pytest.fixture(scope="session")
def problems():
    """A few verified GeoCode-tier problems (seeded)."""
    return synthesize(6, tier="geocode", seed=3, size_px=64).problems
