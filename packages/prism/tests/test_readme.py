"""The README's quickstart runs as written and prints what the README says."""

import re
from pathlib import Path

import pytest

from icml26.shared.testing import run_quickstart

README = Path(__file__).resolve().parents[1] / "README.md"


def _floats(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?\d+\.\d+", line)]


def test_quickstart_prints_what_the_readme_says(tmp_path):
    proc = run_quickstart(README, cwd=tmp_path)
    assert proc.returncode == 0, proc.tail()
    out = proc.stdout.splitlines()
    exact, marg = _floats(out[0]), _floats(out[1])
    assert out[0].startswith("PPL exact") and out[1].startswith("PPL marginalised")
    assert exact == pytest.approx([33.7, 34.6], abs=1.0)
    assert marg == pytest.approx([18.4, 18.9], abs=1.0)
    assert all(m < e for m, e in zip(marg, exact, strict=True))  # case summed out
    assert out[2].startswith("reversion scan: 50 variants, Spearman")
    assert _floats(out[2])[0] == pytest.approx(0.71, abs=0.1)
    assert out[3].startswith("5 NGL-directed variants, first:")
    assert len(out[3].split(":")[1].strip().split(",")) == 3
