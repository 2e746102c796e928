"""Sessions for the icml26 workspace.

For every paper found under ``packages/``:

- ``test-<dist>``       its fast tests, in a venv synced from uv.lock with exactly that member;
- ``gpu-<dist>``        its ``gpu``-marked tests (tag ``gpu``: ``nox -t gpu`` runs them all);
                        it fails where CUDA is absent or no test ran, unless
                        ``ICML26_GPU_OPTIONAL=1`` says that skipping is acceptable;
- ``slow-<dist>``       its ``slow``-marked tests (tag ``slow``);
- ``bench-<dist>``      the scripts in ``benchmarks/<dist>/``;
- ``reproduce-<dist>``  ``icml26 reproduce <dist> --check``
  (``-- --preset paper`` for the full run).

Plus ``test-shared``, ``hygiene`` (stderr of every paper's import and CLI is ours
alone), ``distributed`` (multi-process and sharded tests, ``-m distributed``) and
``lint``. A bare ``nox`` runs every fast test session, hygiene and lint.
Arguments after ``--`` go to pytest, the benchmark scripts or ``icml26 reproduce``.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = sorted(p.name for p in (ROOT / "packages").glob("*") if (p / "pyproject.toml").is_file())

nox.needs_version = ">=2024.10.9"
nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.sessions = [
    "test-shared",
    *(f"test-{dist}" for dist in PACKAGES),
    "hygiene",
    "lint",
]

QUIET_ENV = {"ICML26_QUIET": "1", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}

CUDA_REQUIRED = (
    "import sys, torch; "
    "sys.exit(0 if torch.cuda.is_available() else "
    "'no CUDA device: the gpu tests would all skip (ICML26_GPU_OPTIONAL=1 allows it)')"
)


def sync(session: nox.Session, package: str, *, groups=("test",), all_extras=False) -> None:
    """Install exactly one workspace member (and its groups) from uv.lock into the session venv."""
    args = ["uv", "sync", "--locked", "--package", package]
    args += [f"--group={g}" for g in groups]
    if all_extras:
        args.append("--all-extras")
    session.run_install(
        *args, env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}, external=True
    )


def sync_workspace(session: nox.Session) -> None:
    """Install every paper (with the extras the root pins) and the dev group from uv.lock."""
    session.run_install(
        "uv", "sync", "--locked", "--group", "dev",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}, external=True,
    )  # fmt: skip


@nox.session(name="test-shared")
def test_shared(session: nox.Session) -> None:
    """icml26-shared's tests."""
    sync(session, "icml26-shared")
    session.run("pytest", "shared/tests", *session.posargs, env=QUIET_ENV)


def _paper_sessions(dist: str) -> None:
    package = f"icml26-{dist}"
    tests = f"packages/{dist}/tests"

    @nox.session(name=f"test-{dist}", tags=["test"])
    def test(session: nox.Session) -> None:
        sync(session, package)
        session.run("pytest", tests, *session.posargs, env=QUIET_ENV)

    @nox.session(name=f"gpu-{dist}", tags=["gpu"])
    def gpu(session: nox.Session) -> None:
        sync(session, package, all_extras=True)
        optional = os.environ.get("ICML26_GPU_OPTIONAL", "") not in ("", "0")
        if not optional:
            # a GPU job that skipped everything has tested nothing: refuse to pass
            session.run("python", "-c", CUDA_REQUIRED)
        session.run(
            "pytest", tests, "-m", "gpu", *session.posargs, env=QUIET_ENV,
            success_codes=[0, 5] if optional else [0],
        )  # fmt: skip

    @nox.session(name=f"slow-{dist}", tags=["slow"])
    def slow(session: nox.Session) -> None:
        sync(session, package)
        # exit 5 = this package has no slow tests
        session.run("pytest", tests, "-m", "slow", *session.posargs, env=QUIET_ENV,
                    success_codes=[0, 5])  # fmt: skip

    @nox.session(name=f"bench-{dist}", tags=["bench"])
    def bench(session: nox.Session) -> None:
        sync(session, package, all_extras=True)
        scripts = sorted((ROOT / "benchmarks" / dist).glob("bench_*.py"))
        if not scripts:
            session.error(f"no benchmarks/{dist}/bench_*.py")
        for script in scripts:
            session.run("python", str(script.relative_to(ROOT)), *session.posargs)

    @nox.session(name=f"reproduce-{dist}", tags=["reproduce"])
    def reproduce(session: nox.Session) -> None:
        sync(session, package, groups=(), all_extras=True)
        session.run("icml26", "reproduce", dist, "--check", *session.posargs)


for _dist in PACKAGES:
    _paper_sessions(_dist)


@nox.session
def hygiene(session: nox.Session) -> None:
    """Every installed paper imports and answers `icml26 info` with nothing on stderr."""
    sync_workspace(session)
    session.run("pytest", "shared/tests/test_hygiene.py", *session.posargs, env=QUIET_ENV)


@nox.session
def distributed(session: nox.Session) -> None:
    """Two-process training (torchrun, gloo on CPU) and sharded JAX trials of every package."""
    sync_workspace(session)
    dirs = ["shared/tests", *(f"packages/{d}/tests" for d in PACKAGES)]
    session.run("pytest", *dirs, "-m", "distributed", *session.posargs, env=QUIET_ENV,
                success_codes=[0, 5])  # fmt: skip


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format) and actionlint on the workflows."""
    session.run_install(
        "uv", "sync", "--locked", "--only-group", "lint",
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
        external=True,
    )  # fmt: skip
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("actionlint", "-color")
