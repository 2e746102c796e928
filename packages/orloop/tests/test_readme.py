"""The README's Python quickstart runs as written and prints what the README says."""

import re
from pathlib import Path

import pytest

from icml26.shared.testing import run_quickstart

README = Path(__file__).parents[1] / "README.md"


@pytest.mark.slow  # about 4 s of CPU, but over 15 s of wall time on a loaded 2-core machine
def test_quickstart_runs_and_prints_the_documented_numbers():
    done = run_quickstart(README, env={"ICML26_QUIET": "1"}, timeout_s=120)
    assert done.returncode == 0, done.tail()
    out = done.stdout
    assert "IIS rows [] bounds [('x1', 'boxed')]" in out  # a bound-only IIS
    assert "rejected: -51.0 INFEASIBLE" in out  # 1e20 is rolled back, not a crash
    assert "repaired: OPTIMAL 1.0" in out
    greedy = re.search(r"GreedyDrop \{'RR@5': ([0-9.]+), 'OP': ([0-9.]+), 'FP': ([0-9.]+)\}", out)
    minimal = re.search(
        r"MinimalRepair \{'RR@5': ([0-9.]+), 'OP': ([0-9.]+), 'FP': ([0-9.]+)\}", out
    )
    assert abs(float(greedy.group(1)) - 0.917) < 0.01  # fails on the one type-H instance
    assert float(minimal.group(1)) == 1.0 and float(minimal.group(3)) == 1.0
    assert abs(float(minimal.group(2)) - 0.985) < 0.01
