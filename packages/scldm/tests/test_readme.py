"""The README's quickstart runs as written and prints what the README says."""

from __future__ import annotations

from pathlib import Path

import pytest

from icml26.shared.testing import run_quickstart

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow  # a fresh interpreter imports torch, anndata and scanpy: ~25 s here
def test_quickstart_runs_as_written(tmp_path):
    proc = run_quickstart(README, cwd=tmp_path, env={"ICML26_QUIET": "1"})
    assert proc.returncode == 0, proc.tail()
    assert proc.stdout.strip().splitlines()[-1] == "(100, 100) (50, 100) (600, 64)"
    assert (tmp_path / "scldm_model" / "model.safetensors").is_file()
