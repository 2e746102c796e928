"""How many CPU threads torch may use while a block runs.

Small models gain nothing from intra-op parallelism, and on a busy machine OpenMP
worker threads spin while waiting: two threads on a loaded 2-core CPU ran the papers'
tiny networks 10–13 times slower than one. Reproductions and test suites therefore run
torch on one thread and give the caller's setting back afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """Run the block with ``n`` torch intra-op threads, then restore the previous count.

    ``None`` or ``0`` leaves the setting alone (torch is then not even imported).
    """
    if not n:
        yield
        return
    if n < 0:
        raise ValueError(f"thread count must be positive, got {n}")
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)
