"""Test helpers for multi-process runs: launch a script under ``torchrun`` on CPU.

Every package that trains a deep model tests two CPU processes (gloo): one writer,
identical parameters, and a failing rank that ends the run instead of hanging. These
helpers launch the processes with the settings those tests share (one thread per
process, unbuffered output, ``--standalone`` rendezvous, a wall-clock limit) so each
test keeps only what it checks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FAILURE_MESSAGE", "Launch", "failing_rank_script", "torchrun"]

FAILURE_MESSAGE = "rank 1 failed on purpose"


@dataclass(frozen=True)
class Launch:
    """What a ``torchrun`` launch returned, with its wall-clock seconds."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def tail(self, chars: int = 3000) -> str:
        """The end of both streams, for an assertion message."""
        return f"--- stdout ---\n{self.stdout[-chars:]}\n--- stderr ---\n{self.stderr[-chars:]}"


def torchrun(
    args: Sequence[str | os.PathLike[str]],
    *,
    nproc: int = 2,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
) -> Launch:
    """Run ``python -m torch.distributed.run --standalone --nproc_per_node N *args``.

    ``args`` is a script path or ``-m module`` followed by its arguments. Each process
    gets one thread (``OMP_NUM_THREADS=1``) and unbuffered output; ``env`` adds to the
    current environment. A launch that outlives ``timeout_s`` raises
    ``subprocess.TimeoutExpired`` (a hang is a failure, never a wait).
    """
    if not isinstance(nproc, int) or isinstance(nproc, bool) or nproc < 1:
        raise ValueError(f"nproc must be a positive int, got {nproc!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc_per_node", str(nproc), *map(str, args)]  # fmt: skip
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=full_env,
                          timeout=timeout_s)  # fmt: skip
    return Launch(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)


def failing_rank_script(
    path: str | os.PathLike[str], target: str, entry: str, *, failing_rank: int = 1
) -> Path:
    """Write a launcher script that runs ``entry`` with ``target`` raising on one rank.

    ``target`` is ``"package.module:attribute"`` (a function the run calls, e.g. the
    training step); on rank ``failing_rank`` it is replaced by one that raises
    ``RuntimeError(FAILURE_MESSAGE)``, the other ranks run unchanged (and would wait for
    the failed one forever without the launcher and the process-group timeout).
    ``entry`` is the Python code that starts the run, e.g.
    ``"import sys; from icml26.x import cli; sys.exit(cli.main(sys.argv[1:]))"``.
    """
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"target must be 'module:attribute', got {target!r}")
    code = textwrap.dedent(
        f"""
        import importlib, os
        if int(os.environ.get("RANK", "0")) == {int(failing_rank)}:
            _mod = importlib.import_module({module!r})

            def _fail(*args, **kwargs):
                raise RuntimeError({FAILURE_MESSAGE!r})

            setattr(_mod, {attr!r}, _fail)
        """
    )
    out = Path(path)
    out.write_text(code + "\n" + textwrap.dedent(entry).strip() + "\n", encoding="utf-8")
    return out
