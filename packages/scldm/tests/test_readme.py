"""The README's quickstart runs as written and prints what the README says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from icml26.shared.readme import quickstart_code

README = Path(__file__).resolve().parents[1] / "README.md"


def quickstart() -> str:
    return quickstart_code(README)


@pytest.mark.slow  # a fresh interpreter imports torch, anndata and scanpy: ~25 s here
def test_quickstart_runs_as_written(tmp_path):
    code = quickstart()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ICML26_QUIET": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "(100, 100) (50, 100) (600, 64)"
    assert (tmp_path / "scldm_model" / "model.safetensors").is_file()
