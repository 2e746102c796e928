"""The README's quickstart runs as written and prints what the README says."""

import re
from pathlib import Path

import pytest

from icml26.shared.readme import quickstart_code
from icml26.shared.testing import run_quickstart

README = Path(__file__).resolve().parents[1] / "README.md"


def _floats(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"[-+]?\d+\.\d+|\d+", line)]


@pytest.mark.slow  # ~20 s of CPU (minutes of wall on the shared 2-core machine)
def test_quickstart_prints_what_the_readme_says(tmp_path):
    code = quickstart_code(README)
    promised = [ln[2:] for ln in code.split("# prints\n", 1)[1].splitlines() if ln.startswith("# ")]
    proc = run_quickstart(README, cwd=tmp_path, timeout_s=900)
    assert proc.returncode == 0, proc.tail()
    out = proc.stdout.splitlines()
    assert len(out) == len(promised) == 2
    for got, want in zip(out, promised, strict=True):
        assert got.split(" ")[0] == want.split(" ")[0]
        assert _floats(got) == pytest.approx(_floats(want), abs=0.05)


def test_readme_quickstart_is_there():
    code = quickstart_code(README)
    assert "fit_paws" in code and "# prints" in code
