"""Float64 for the package's entry points, without touching JAX's global state.

The paper's computations (α = 10⁴ Gibbs weights, near-singular covariances) need
double precision. Public entry points run inside :func:`float64`, a context that
enables ``jax_enable_x64`` only for their duration; jitted functions are cached per
precision, so callers' own float32 code is unaffected.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import jax

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["float64", "with_float64"]


@contextlib.contextmanager
def float64() -> Iterator[None]:
    """Run the enclosed JAX code with 64-bit floats enabled."""
    if jax.config.jax_enable_x64:
        yield
        return
    with jax.enable_x64(True):
        yield


def with_float64(fn: F) -> F:
    """Decorator: call ``fn`` inside :func:`float64`."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with float64():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
