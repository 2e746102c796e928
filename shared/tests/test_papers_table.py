"""scripts/papers_table.py: the README table comes from summary.json, planned rows stay."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "papers_table.py"

README = """# x

<!-- papers-table:start -->
| distribution | paper | status | headline |
|---|---|---|---|
| `icml26-old` | Old | implemented | hand text |
| `icml26-later` | Later | planned | — |
<!-- papers-table:end -->

tail
"""


@pytest.mark.skipif(not SCRIPT.is_file(), reason="runs from a checkout")
def test_render_updates_measured_rows_and_keeps_planned():
    render = runpy.run_path(str(SCRIPT))["render"]
    summary = {
        "papers": [
            {"paper": "old", "title": "Old paper", "arxiv": "2601.00001", "metric": "acc",
             "method": 0.91, "best_baseline": 0.8, "baseline_name": "PCA", "seconds": 12.0,
             "checks_held": 2, "checks_total": 3, "error": None},
        ]
    }  # fmt: skip
    out = render(README, summary)
    assert "| `icml26-old` | Old paper (arXiv 2601.00001) | implemented | partly: 2/3" in out
    assert "acc 0.91 vs 0.8 (PCA)" in out
    assert "| `icml26-later` | Later | planned | — |" in out
    assert out.endswith("tail\n")
    assert "hand text" not in out
