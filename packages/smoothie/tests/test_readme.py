"""The README's quickstart runs as written and prints the numbers the README shows."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from icml26.shared.readme import quickstart_code

README = Path(__file__).parents[1] / "README.md"


@pytest.mark.slow  # a subprocess that imports torch and trains 20 steps: minutes on a busy CPU
def test_quickstart_runs_and_prints_what_the_readme_says():
    code = quickstart_code(README)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    code = "import torch\ntorch.set_num_threads(1)\n" + code
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.strip().splitlines()
    printed = [ln for ln in code.splitlines() if ln.startswith("print(")]
    assert len(lines) == len(printed)
    for line, src in zip(lines, printed, strict=True):
        expected = src.split("# ->", 1)[1].strip()
        assert ast.literal_eval(line) == ast.literal_eval(expected), (line, expected)
