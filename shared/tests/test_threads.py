"""torch_threads sets and restores torch's thread count (checked against a stand-in torch)."""

import sys
import types

import pytest

from icml26.shared import torch_threads


@pytest.fixture
def fake_torch(monkeypatch):
    state = {"threads": 8}
    torch = types.SimpleNamespace(
        get_num_threads=lambda: state["threads"],
        set_num_threads=lambda n: state.update(threads=n),
    )
    monkeypatch.setitem(sys.modules, "torch", torch)
    return state


def test_sets_then_restores_even_on_error(fake_torch):
    with torch_threads(1):
        assert fake_torch["threads"] == 1
    assert fake_torch["threads"] == 8
    with pytest.raises(RuntimeError), torch_threads(2):
        assert fake_torch["threads"] == 2
        raise RuntimeError
    assert fake_torch["threads"] == 8


@pytest.mark.parametrize("n", [None, 0])
def test_none_or_zero_leaves_the_setting_alone(fake_torch, n):
    with torch_threads(n):
        assert fake_torch["threads"] == 8


def test_negative_count_is_an_error(fake_torch):
    with pytest.raises(ValueError, match="positive"), torch_threads(-1):
        pass
