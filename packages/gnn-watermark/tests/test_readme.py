"""The README's quickstart runs as written (in a fresh process) and prints what the README says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from icml26.shared.readme import quickstart_code

README = Path(__file__).resolve().parents[1] / "README.md"


def _quickstart() -> str:
    return quickstart_code(README)


def _numbers(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?\d+(?:\.\d+)?", line)]


# torch and torch_geometric take ~20 CPU-seconds to import on the 2-core CI machine: slow tier
@pytest.mark.slow
def test_quickstart_prints_what_the_readme_says(tmp_path):
    (tmp_path / "quickstart.py").write_text(_quickstart())
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")}
    env["OMP_NUM_THREADS"] = "1"
    proc = subprocess.run(
        [sys.executable, "-W", "default", "quickstart.py"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
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
