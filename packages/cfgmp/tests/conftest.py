"""Shared test settings."""

import pytest
import torch
from threadpoolctl import threadpool_limits

from icml26.shared import torch_threads


@pytest.fixture(autouse=True, scope="session")
def _one_thread():
    """The tests use tiny arrays: extra torch/BLAS threads only spin on small CPUs."""
    with torch_threads(1), threadpool_limits(limits=1):
        yield


def _assert_close(actual, expected, *, atol: float = 1e-7, rtol: float = 1e-7) -> None:
    a = torch.as_tensor(actual).detach().cpu()
    b = torch.as_tensor(expected).detach().cpu()
    assert a.shape == b.shape, f"shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}"
    if a.dtype == torch.float32 or b.dtype == torch.float32:
        atol, rtol = max(atol, 1e-5), max(rtol, 1.3e-6)
    a, b = a.double(), b.double()
    err = (a - b).abs()
    bound = atol + rtol * b.abs()
    assert bool((err <= bound).all()), f"max abs diff {float(err.max()):.3g} exceeds the tolerance"


@pytest.fixture
def close():
    """``close(actual, expected, atol=, rtol=)``: torch.testing.assert_close without its
    first-call cost (it imports sympy: seconds on a cold interpreter)."""
    return _assert_close
