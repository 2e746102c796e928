#!/usr/bin/env python3
"""Write the papers table of the root README from a ``reproduce --all`` summary.

    uv run icml26 reproduce --all            # writes results/summary.json
    python scripts/papers_table.py [results/summary.json] [--check]

The table sits between the ``papers-table`` markers of README.md. A paper in the
summary gets its measured line (checks held, headline metric against the best
baseline, wall time); a paper absent from it keeps its current line (planned
papers, or papers the summary did not run). ``--check`` exits 1 when the README
would change, without writing it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- papers-table:start -->", "<!-- papers-table:end -->"
HEAD = [
    "| distribution | paper | status | headline claim at `smoke` scale (3 seeds, CPU) |",
    "|---|---|---|---|",
]


def measured_line(p: dict) -> str:
    title = p.get("title") or p["paper"]
    if p.get("arxiv"):
        title += f" (arXiv {p['arxiv']})"
    if p.get("error"):
        text = f"crashed: {p['error'][:80]}"
    else:
        held, total = p.get("checks_held", 0), p.get("checks_total", 0)
        verdict = "yes" if total and held == total else ("partly" if held else "no")

        def num(x):
            return "—" if x is None else f"{x:.3g}"

        text = f"{verdict}: {held}/{total} checks hold; {p['metric']} {num(p['method'])}"
        if p.get("baseline_name"):
            text += f" vs {num(p['best_baseline'])} ({p['baseline_name']})"
        text += f"; {p['seconds']:.0f} s"
    return f"| `icml26-{p['paper']}` | {title} | implemented | {text} |"


def render(readme: str, summary: dict) -> str:
    if START not in readme or END not in readme:
        raise SystemExit("README.md has no papers-table markers")
    before, rest = readme.split(START, 1)
    table, after = rest.split(END, 1)
    rows = {}
    for line in table.strip().splitlines()[2:]:
        m = re.match(r"\|\s*`icml26-([a-z0-9-]+)`", line)
        if m:
            rows[m.group(1)] = line
    for p in summary["papers"]:
        rows[p["paper"]] = measured_line(p)
    implemented = [n for n, ln in rows.items() if "| implemented |" in ln]
    planned = [n for n in rows if n not in implemented]
    body = [rows[n] for n in implemented] + [rows[n] for n in planned]
    return before + START + "\n" + "\n".join(HEAD + body) + "\n" + END + after


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    path = Path(args[0]) if args else ROOT / "results" / "summary.json"
    summary = json.loads(path.read_text())
    readme = ROOT / "README.md"
    new = render(readme.read_text(), summary)
    if "--check" in argv:
        return 0 if new == readme.read_text() else 1
    readme.write_text(new)
    print(f"README.md papers table updated from {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
