"""The README's quickstart runs as written and prints the numbers the README shows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from icml26.shared.readme import quickstart_code
from icml26.shared.testing import run_quickstart

README = Path(__file__).parents[1] / "README.md"


@pytest.mark.slow  # a subprocess that imports torch and trains 20 steps: minutes on a busy CPU
def test_quickstart_runs_and_prints_what_the_readme_says():
    code = quickstart_code(README)
    done = run_quickstart(README)  # one thread: OMP_NUM_THREADS=1 reaches torch
    assert done.returncode == 0, done.tail()
    lines = done.stdout.strip().splitlines()
    printed = [ln for ln in code.splitlines() if ln.startswith("print(")]
    assert len(lines) == len(printed)
    for line, src in zip(lines, printed, strict=True):
        expected = src.split("# ->", 1)[1].strip()
        assert ast.literal_eval(line) == ast.literal_eval(expected), (line, expected)
