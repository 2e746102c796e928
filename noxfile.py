"""Sessions for the icml26 workspace.

For every paper found under ``packages/``:

- ``test-<dist>``       its fast tests, in a venv synced from uv.lock with exactly that member;
- ``gpu-<dist>``        its ``gpu``-marked tests (tag ``gpu``: ``nox -t gpu`` runs them all);
- ``bench-<dist>``      the scripts in ``benchmarks/<dist>/``;
- ``reproduce-<dist>``  ``icml26 reproduce <dist> --check``
  (``-- --preset paper`` for the full run).

Plus ``test-shared`` and ``lint``. A bare ``nox`` runs every test session and lint.
Arguments after ``--`` go to pytest, the benchmark scripts or ``icml26 reproduce``.
"""

from __future__ import annotations

from pathlib import Path

import nox

ROOT = Path(__file__).parent
PACKAGES = sorted(p.name for p in (ROOT / "packages").glob("*") if (p / "pyproject.toml").is_file())

nox.needs_version = ">=2024.10.9"
nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["test-shared", *(f"test-{dist}" for dist in PACKAGES), "lint"]

QUIET_ENV = {"ICML26_QUIET": "1", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}


def sync(session: nox.Session, package: str, *, groups=("test",), all_extras=False) -> None:
    """Install exactly one workspace member (and its groups) from uv.lock into the session venv."""
    args = ["uv", "sync", "--locked", "--package", package]
    args += [f"--group={g}" for g in groups]
    if all_extras:
        args.append("--all-extras")
    session.run_install(
        *args, env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location}, external=True
    )


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
        # exit 5 = no gpu-marked tests in this package: nothing to run is not a failure
        session.run("pytest", tests, "-m", "gpu", *session.posargs, success_codes=[0, 5])

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
