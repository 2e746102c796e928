"""Fast tests run torch on one thread (the shared CPUs are slow with more)."""

import pytest
import torch

from icml26.teamtr import PolicySpec, ProtocolGame, RoundRobinRouter, Team, make_policy


@pytest.fixture(autouse=True)
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _tiny_team(n: int = 3, seed: int = 0, d: int = 16) -> Team:
    g = torch.Generator().manual_seed(seed)
    spec = PolicySpec(d_model=d, layers=1, heads=2, vocab=20)
    return Team([f"a{i}" for i in range(n)], [make_policy(spec, g) for _ in range(n)])


@pytest.fixture
def tiny_team():
    return _tiny_team


@pytest.fixture
def team3() -> Team:
    return _tiny_team(3)


@pytest.fixture
def game3() -> ProtocolGame:
    return ProtocolGame(agents=3)


@pytest.fixture
def router3(team3) -> RoundRobinRouter:
    return RoundRobinRouter(team3.names)
