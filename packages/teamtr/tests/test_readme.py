"""The README's quickstart runs as written and prints what the README says."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from icml26.shared.readme import quickstart_code

README = Path(__file__).resolve().parents[1] / "README.md"


def _floats(line: str) -> list[float]:
    return [float(x) for x in re.findall(r"\d+\.\d+|\d+", line)]


@pytest.mark.slow  # ~15 s of CPU (most of it importing torch's optimiser machinery)
def test_quickstart_prints_what_the_readme_says(tmp_path):
    code = quickstart_code(README)
    promised = [ln[2:] for ln in code.split("# prints\n", 1)[1].splitlines() if ln.startswith("# ")]
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout.splitlines()
    assert len(out) == len(promised) == 2
    for got, want in zip(out, promised, strict=True):
        assert got.split(":")[0] == want.split(":")[0]
        assert _floats(got) == pytest.approx(_floats(want), abs=0.002)
