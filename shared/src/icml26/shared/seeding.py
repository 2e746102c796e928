"""Explicit randomness: one integer seed, and the generators derived from it.

Every result records its seed, and the same seed gives the same numbers. Named
streams (``numpy_rng(seed, "knockoff")``) give independent generators for the parts
of an experiment, so that adding a draw in one part does not shift another.
torch and JAX are imported only when their helpers are called.
"""

from __future__ import annotations

import random
import zlib
from typing import Any

import numpy as np


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be non-negative, got {seed}")
    return int(seed)


def _stream_key(stream: tuple[str | int, ...]) -> list[int]:
    # crc32, not hash(): Python salts str hashes per process.
    return [zlib.crc32(s.encode()) if isinstance(s, str) else int(s) for s in stream]


def derive_seed(seed: int, *stream: str | int) -> int:
    """A 32-bit seed for a named stream of ``seed`` (stable across processes)."""
    seq = np.random.SeedSequence(_check_seed(seed), spawn_key=_stream_key(stream))
    return int(seq.generate_state(1, dtype=np.uint32)[0])


def numpy_rng(seed: int, *stream: str | int) -> np.random.Generator:
    """A numpy ``Generator`` for ``seed``, optionally for a named stream of it."""
    return np.random.default_rng(
        np.random.SeedSequence(_check_seed(seed), spawn_key=_stream_key(stream))
    )


def jax_key(seed: int, *stream: str | int) -> Any:
    """A JAX PRNG key for ``seed`` (and stream); needs ``jax``."""
    import jax

    return jax.random.key(derive_seed(seed, *stream) if stream else _check_seed(seed))


def torch_generator(seed: int, *stream: str | int, device: Any = "cpu") -> Any:
    """A ``torch.Generator`` on ``device`` seeded from ``seed`` (and stream); needs ``torch``."""
    import torch

    gen = torch.Generator(device=device)
    gen.manual_seed(derive_seed(seed, *stream) if stream else _check_seed(seed))
    return gen


def seed_everything(seed: int) -> None:
    """Seed Python's ``random``, numpy's global state and torch (if installed).

    Prefer the explicit generators above in library code; this is for scripts and
    for third-party code that draws from global state.
    """
    seed = _check_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)  # noqa: NPY002 (global state is the point here)
    try:
        import torch
    except ImportError:
        return
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
