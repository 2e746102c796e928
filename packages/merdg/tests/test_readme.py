"""The README's quickstart runs as written and prints the numbers the README shows."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from icml26.shared.readme import quickstart_code
from icml26.shared.testing import run_quickstart

README = Path(__file__).parents[1] / "README.md"


@pytest.mark.slow  # about 10 CPU-seconds in a fresh interpreter
def test_quickstart_runs_and_prints_what_the_readme_says():
    code = quickstart_code(README)
    done = run_quickstart(README)
    assert done.returncode == 0, done.tail()
    assert "Warning" not in done.stderr
    lines = done.stdout.strip().splitlines()
    assert float(lines[0]) == float(code.split("# -> ")[1].split()[0])
    # the loop's three lines, as the README lists them under the code block
    text = README.read_text()
    listed = re.findall(
        r"`(\('[^`]+\))`", text.split("The three lines of the loop print", 1)[1][:300]
    )
    assert len(listed) == 3 == len(lines) - 1
    for got, want in zip(lines[1:], listed, strict=True):
        g, w = ast.literal_eval(got), ast.literal_eval(want)
        assert g[0] == w[0]
        assert abs(g[1] - w[1]) <= 0.02 and abs(g[2] - w[2]) <= 0.02, (got, want)
