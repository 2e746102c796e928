"""The README's quickstart runs as written and prints the numbers the README shows."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from icml26.shared.readme import quickstart_code
from icml26.shared.testing import run_quickstart

README = Path(__file__).parents[1] / "README.md"


def _quickstart() -> str:
    return quickstart_code(README)


def _arrays(line: str) -> list[np.ndarray]:
    """The bracketed number lists of a printed line, e.g. ``[0.8 0.9] [0.1 0.5]``."""
    return [np.array(m.split(), dtype=float) for m in re.findall(r"\[([-\d.\s]+)\]", line)]


@pytest.mark.slow  # about 20 CPU-seconds: two short CURE stages
def test_quickstart_runs_and_prints_what_the_readme_says():
    code = _quickstart()
    done = run_quickstart(README)
    assert done.returncode == 0, done.tail()
    lines = done.stdout.strip().splitlines()
    printed = [ln for ln in code.splitlines() if ln.startswith("print(")]
    assert len(lines) == len(printed)
    # every print line carries its expected output as a comment "# ≈ ..." or "# -> ..."
    for line, src in zip(lines, printed, strict=True):
        expected = src.split("#", 1)[1].split("≈", 1)[-1].split("->", 1)[-1].strip()
        if expected.startswith("[") and "'" not in expected:
            want = _arrays(expected)
            got = _arrays(line)
            assert len(got) == len(want), (line, expected)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, atol=0.05, err_msg=line)
        else:
            assert ast.literal_eval(line) == ast.literal_eval(expected), (line, expected)
