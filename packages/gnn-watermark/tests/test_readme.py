"""The README's quickstart runs as written (in a fresh process) and prints what the README says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from icml26.shared.testing import run_quickstart

README = Path(__file__).resolve().parents[1] / "README.md"


def _numbers(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?\d+(?:\.\d+)?", line)]


# torch and torch_geometric take ~20 CPU-seconds to import on the 2-core CI machine: slow tier
@pytest.mark.slow
def test_quickstart_prints_what_the_readme_says(tmp_path):
    # every warning shown once, so that a filtered one is proven filtered
    proc = run_quickstart(README, cwd=tmp_path, env={"PYTHONWARNINGS": "default"}, timeout_s=600)
    assert proc.returncode == 0, proc.tail()
    assert "FutureWarning" not in proc.stderr  # torch_geometric's import notice is filtered
    assert (tmp_path / "secret" / "key.json").is_file()
    out = proc.stdout.splitlines()
    assert len(out) == 5, proc.stdout
    # the numbers the README shows, with tolerances for platform differences
    acc_wm, acc_clean = _numbers(out[0])
    assert acc_wm == pytest.approx(0.935, abs=0.02) and acc_clean == pytest.approx(0.95, abs=0.02)
    mi, *clean_mi = _numbers(out[1])
    assert mi == pytest.approx(24, abs=3) and max(clean_mi) <= 5
    z_sub, z_clean = _numbers(out[2])[:2]
    assert z_sub == pytest.approx(9.2, abs=2) and z_clean > 8
    assert out[2].endswith("owned at 5 %: True")
    assert _numbers(out[3])[-1] == pytest.approx(8.0, abs=2)
    assert _numbers(out[4])[-1] == pytest.approx(10.0, abs=2)
