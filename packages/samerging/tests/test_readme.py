"""The README's quickstart runs as written and prints what the README says."""

from __future__ import annotations

import ast
from pathlib import Path

from icml26.shared.readme import quickstart_code
from icml26.shared.testing import run_quickstart

README = Path(__file__).parents[1] / "README.md"


def test_quickstart_runs_and_prints_what_the_readme_says():
    code = quickstart_code(README)
    done = run_quickstart(README, timeout_s=120)
    assert done.returncode == 0, done.tail()
    lines = done.stdout.strip().splitlines()
    printed = [ln for ln in code.splitlines() if ln.startswith("print(")]
    assert len(lines) == len(printed)
    for line, src in zip(lines, printed, strict=True):
        expected = src.split("# ->", 1)[1].strip()
        assert ast.literal_eval(line) == ast.literal_eval(expected), (line, expected)
