"""Fast tests run torch on one thread and share one tiny offline dataset."""

import numpy as np
import pytest
import torch

from icml26.paws import PointMass, PointMassConfig, behaviour_episodes, make_preferences


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def env():
    return PointMass(PointMassConfig())


@pytest.fixture(scope="session")
def episodes(env):
    return behaviour_episodes(env, 40, np.random.default_rng(0))


@pytest.fixture(scope="session")
def pairs(episodes):
    return make_preferences(episodes, 60, 20, np.random.default_rng(1))
