"""Test helpers that launch fresh interpreters: ``torchrun`` and ``accelerate launch`` on
CPU, README quickstarts.

Every package that trains a deep model tests two CPU processes (gloo): one writer,
identical parameters, and a failing rank that ends the run instead of hanging. These
helpers launch the processes with the settings those tests share (one thread per
process, unbuffered output, ``--standalone`` rendezvous, a wall-clock limit) so each
test keeps only what it checks.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "FAILURE_MESSAGE",
    "Launch",
    "accelerate_launch",
    "failing_rank_script",
    "launch_with_failing_rank",
    "run_quickstart",
    "torchrun",
]

# One thread per BLAS, OpenMP and XLA pool: tests on a shared 2-core machine must not
# oversubscribe it, and small models gain nothing from more.
ONE_THREAD = {
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false",
    "PYTHONUNBUFFERED": "1",
}

FAILURE_MESSAGE = "rank 1 failed on purpose"


@dataclass(frozen=True)
class Launch:
    """What a ``torchrun`` launch returned, with its wall-clock seconds."""

    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        """Both streams together."""
        return self.stdout + self.stderr

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
    _check_launch(nproc, timeout_s)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
           "--nproc_per_node", str(nproc), *map(str, args)]  # fmt: skip
    return _launch(cmd, cwd=cwd, env=env, timeout_s=timeout_s)


def accelerate_launch(
    args: Sequence[str | os.PathLike[str]],
    *,
    nproc: int = 2,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 600.0,
) -> Launch:
    """Run ``accelerate launch --multi_gpu --num_processes N *args`` on CPU, offline.

    No accelerate config file is read: every choice the launcher would otherwise ask
    for is passed (one machine, no mixed precision, no dynamo, a free local port), CUDA
    is hidden so accelerate runs the processes as MULTI_CPU (gloo), and the hub is
    offline. Each process gets one thread, as under :func:`torchrun`. accelerate itself
    is needed only in the launched interpreter, not here.
    """
    _check_launch(nproc, timeout_s)
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu",
           "--num_processes", str(nproc), "--num_machines", "1", "--mixed_precision", "no",
           "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
           *map(str, args)]  # fmt: skip
    cpu = {"HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    return _launch(cmd, cwd=cwd, env={**cpu, **(env or {})}, timeout_s=timeout_s)


def _check_launch(nproc: object, timeout_s: object) -> None:
    if not isinstance(nproc, int) or isinstance(nproc, bool) or nproc < 1:
        raise ValueError(f"nproc must be a positive int, got {nproc!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")


def _free_port() -> int:
    # the OS picks an unused port; two launches at once must not share a rendezvous
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _launch(
    cmd: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    timeout_s: float,
) -> Launch:
    full_env = {**os.environ, **ONE_THREAD}
    if os.environ.get("XLA_FLAGS"):  # keep the caller's flags (e.g. a host device count)
        full_env["XLA_FLAGS"] = f"{os.environ['XLA_FLAGS']} {ONE_THREAD['XLA_FLAGS']}"
    full_env.update(env or {})
    start = time.perf_counter()
    done = subprocess.run(list(cmd), capture_output=True, text=True, cwd=cwd, env=full_env,
                          timeout=timeout_s)  # fmt: skip
    return Launch(done.returncode, done.stdout, done.stderr, time.perf_counter() - start)


def run_quickstart(
    readme: str | os.PathLike[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = 300.0,
) -> Launch:
    """Run a README's quickstart as written, in a fresh interpreter on one thread.

    The code is :func:`icml26.shared.readme.quickstart_code` of ``readme``, run as a
    script file in ``cwd`` (a temporary folder keeps what it writes out of the
    checkout), so tracebacks name its lines. The caller checks ``returncode`` and what
    was printed against what the README promises.
    """
    from icml26.shared.readme import quickstart_code

    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be positive, got {timeout_s!r}")
    code = quickstart_code(readme)
    if cwd is None:
        with tempfile.TemporaryDirectory(prefix="icml26-quickstart-") as tmp:
            return _run_script(code, Path(tmp), env, timeout_s)
    return _run_script(code, Path(cwd), env, timeout_s)


def _run_script(code: str, folder: Path, env: Mapping[str, str] | None, timeout_s: float) -> Launch:
    script = folder / "quickstart.py"
    script.write_text(code, encoding="utf-8")
    return _launch([sys.executable, str(script)], cwd=folder, env=env, timeout_s=timeout_s)


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


def launch_with_failing_rank(
    cli_module: str,
    args: Sequence[str | os.PathLike[str]],
    *,
    workdir: str | os.PathLike[str],
    target: str = "torch.autograd:backward",
    nproc: int = 2,
    timeout_s: float = 300.0,
) -> Launch:
    """Run ``cli_module.main(args)`` under ``torchrun`` with ``target`` raising on rank 1.

    The default target makes rank 1 fail at its first backward pass while the others
    wait in the gradient all-reduce (``Tensor.backward`` looks ``torch.autograd.backward``
    up at call time), the case where a missing launcher or process-group timeout hangs.
    The launcher script is written into ``workdir``.
    """
    entry = f"import sys\nfrom {cli_module} import main\nsys.exit(main(sys.argv[1:]))"
    script = failing_rank_script(Path(workdir) / "launch_failing_rank.py", target, entry)
    return torchrun([script, *args], nproc=nproc, cwd=workdir, timeout_s=timeout_s)
