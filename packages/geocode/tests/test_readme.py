"""The README's quickstart runs as written and prints what the README says."""

from __future__ import annotations

from pathlib import Path

import pytest

from icml26.shared import quickstart_code
from icml26.shared.testing import run_quickstart

README = Path(__file__).parents[1] / "README.md"


@pytest.mark.slow  # a fresh interpreter imports sympy, matplotlib and shapely
def test_quickstart_prints_what_the_readme_says():
    code = quickstart_code(README)
    done = run_quickstart(README)
    assert done.returncode == 0, done.tail()
    printed = [ln for ln in code.splitlines() if ln.startswith("print(")]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == len(printed)
    for line, src in zip(lines, printed, strict=True):
        assert line.strip() == src.split("# ->", 1)[1].strip()


def test_readme_has_the_house_sections():
    heads = [ln for ln in README.read_text().splitlines() if ln.startswith("## ")]
    order = ["## Install", "## Quickstart", "## CLI", "## Results", "## Budget study",
             "## Fidelity", "## Limitations"]  # fmt: skip
    assert [h for h in heads if h in order] == order
