"""The README's quickstart runs as written and prints the numbers the README states."""

from __future__ import annotations

import re
from pathlib import Path

from icml26.shared.readme import quickstart_code
from icml26.shared.testing import run_quickstart

README = Path(__file__).resolve().parents[1] / "README.md"


def quickstart() -> str:
    return quickstart_code(README)


def test_quickstart_runs_and_prints_the_stated_numbers(tmp_path):
    out = run_quickstart(README, cwd=tmp_path)
    assert out.returncode == 0, out.tail()
    got = re.search(r"D-Acc ([\d.]+), D-FGT ([\d.]+)", out.stdout)
    assert got, out.stdout
    # the README says what the quickstart prints: "D-Acc 32.4, D-FGT 49.1", "[4, 4, 4]"
    stated = re.search(r"prints `D-Acc ([\d.]+), D-FGT ([\d.]+)`", README.read_text())
    assert stated, "the README does not state the quickstart's numbers"
    assert abs(float(got.group(1)) - float(stated.group(1))) <= 3.0
    assert abs(float(got.group(2)) - float(stated.group(2))) <= 5.0
    assert "epochs per experience: [" in out.stdout
    assert (tmp_path / "router-ckpt" / "router.safetensors").is_file()
