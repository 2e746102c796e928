"""One writer under a launcher: rank 0 writes, prints and saves; the others wait.

``torchrun`` and ``accelerate launch`` start one process per device and set
``RANK``/``WORLD_SIZE`` (and ``LOCAL_RANK``). Training code shards its batches by
rank; everything that leaves the process (checkpoints, reports, figures, result
lines) must come from rank 0 only, or the ranks race on the same files. These
helpers read the launcher's environment, and the initialised process group when
there is one, so they work with plain torch DDP, accelerate, or no launcher at all.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import sys
from collections.abc import Iterator

DEFAULT_TIMEOUT_S = 300.0


def _torch_dist():
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    dist = torch.distributed
    return dist if dist.is_available() and dist.is_initialized() else None


def rank() -> int:
    """This process's global rank (0 without a launcher)."""
    dist = _torch_dist()
    if dist is not None:
        return int(dist.get_rank())
    return int(os.environ.get("RANK", os.environ.get("ACCELERATE_PROCESS_INDEX", "0")) or 0)


def world_size() -> int:
    """How many processes take part (1 without a launcher)."""
    dist = _torch_dist()
    if dist is not None:
        return int(dist.get_world_size())
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def is_main_process() -> bool:
    """True on the one process that writes files and prints results."""
    return rank() == 0


def barrier() -> None:
    """Wait for every rank (a no-op without an initialised process group)."""
    dist = _torch_dist()
    if dist is not None and dist.get_world_size() > 1:
        dist.barrier()


@contextlib.contextmanager
def main_process_first() -> Iterator[bool]:
    """Rank 0 runs the block first (e.g. writes a cache), the others after it.

    Yields whether this is the main process.
    """
    main = is_main_process()
    if not main:
        barrier()
    try:
        yield main
    finally:
        if main:
            barrier()


def launched() -> bool:
    """True when a launcher started several processes (``WORLD_SIZE`` > 1)."""
    return int(os.environ.get("WORLD_SIZE", "1") or 1) > 1


def init_process_group(backend: str | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """Join the launcher's process group once (gloo on CPU, nccl with CUDA).

    Returns True when a group is (now) initialised. The timeout bounds every
    collective, so a rank that died makes the others fail with an error instead of
    hanging forever. Without a launcher this does nothing and returns False.
    """
    if not launched():
        return False
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return True
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl" and "LOCAL_RANK" in os.environ:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(backend=backend, timeout=datetime.timedelta(seconds=timeout_s))
    return True
