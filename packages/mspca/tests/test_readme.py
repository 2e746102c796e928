"""The README's quickstart runs as written and prints what it says."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from icml26.shared.readme import quickstart_code

README = Path(__file__).resolve().parents[1] / "README.md"


def _quickstart() -> str:
    return quickstart_code(README)


@pytest.mark.slow  # two compilations: about 20 s alone, minutes on a loaded machine
def test_quickstart_runs_and_prints_what_the_readme_says():
    code = _quickstart()
    env = os.environ | {"OMP_NUM_THREADS": "1", "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 4, out.stdout
    assert float(lines[0]) >= 0.9  # README: 0.97
    assert float(lines[1]) == pytest.approx(49.0, rel=0.05)
    assert lines[2].strip() == "[False  True]"
    assert float(lines[3]) >= 0.9  # README: 0.99
