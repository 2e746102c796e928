"""What a user's terminal shows is ours: no third-party log lines or deprecation warnings.

Runs every installed paper (``nox -s hygiene`` installs them all) in a fresh
subprocess, as a user would: ``icml26 info NAME`` imports the paper and must leave
stderr empty; the slow tier runs each paper's smoke preset with one seed and accepts
only the command's own ``icml26:`` lines on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata

import pytest

PAPERS = sorted(ep.name for ep in metadata.entry_points(group="icml26.papers"))
CLI = [sys.executable, "-m", "icml26.shared.cli"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "ICML26_QUIET"))}
    env.update(MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    return env


def foreign_lines(stderr: str) -> list[str]:
    """Lines of stderr that the icml26 command did not write."""
    return [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("icml26:")]


def test_foreign_lines_are_found():
    err = "icml26: seed 1/3\nDEBUG bm25s: tokenizing\nFutureWarning: x\nicml26:   stage\n"
    assert foreign_lines(err) == ["DEBUG bm25s: tokenizing", "FutureWarning: x"]


@pytest.mark.parametrize("name", PAPERS)
def test_import_and_info_leave_stderr_empty(name, tmp_path):
    done = subprocess.run(
        [*CLI, "info", name], capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", f"`icml26 info {name}` wrote to stderr:\n{done.stderr}"


def test_list_check_leaves_stderr_empty(tmp_path):
    if not PAPERS:
        pytest.skip("no paper installed in this environment")
    done = subprocess.run(
        [*CLI, "list", "--check"], capture_output=True, text=True, env=_env(), cwd=tmp_path,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "BROKEN" not in done.stdout
    assert done.stderr == ""


@pytest.mark.slow
@pytest.mark.parametrize("name", PAPERS)
def test_smoke_reproduction_stderr_is_ours(name, tmp_path):
    done = subprocess.run(
        [*CLI, "reproduce", name, "--seeds", "1", "--out", str(tmp_path)],
        capture_output=True, text=True, env=_env(), cwd=tmp_path, timeout=1800,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert foreign_lines(done.stderr) == []
