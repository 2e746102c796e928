"""The README's quickstart runs as written and prints what it says."""

from pathlib import Path

import pytest

from icml26.shared.testing import run_quickstart

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow  # two compilations: about 20 s alone, minutes on a loaded machine
def test_quickstart_runs_and_prints_what_the_readme_says():
    out = run_quickstart(README)
    assert out.returncode == 0, out.tail()
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 4, out.stdout
    assert float(lines[0]) >= 0.9  # README: 0.97
    assert float(lines[1]) == pytest.approx(49.0, rel=0.05)
    assert lines[2].strip() == "[False  True]"
    assert float(lines[3]) >= 0.9  # README: 0.99
