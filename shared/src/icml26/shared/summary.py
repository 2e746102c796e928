"""The state of every paper at a glance: ``results/summary.{md,json,png}``.

``icml26 reproduce --all`` writes these after its last paper; ``icml26 status``
prints the last one without running anything; ``scripts/papers_table.py`` turns
``summary.json`` into the papers table of the root README.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from icml26.shared.reproduction import DEFAULT_RESULTS, Summary

SUMMARY_VERSION = 1


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3g}"


def verdict(row: Summary) -> str:
    """``'3/4'`` checks held, ``'error: ...'`` or ``'—'``."""
    if row.error:
        return "error: " + textwrap.shorten(row.error, 60)
    if not row.checks_total:
        return "—"
    return f"{row.checks_held}/{row.checks_total}"


def summary_table(rows: Sequence[Summary]) -> str:
    """The markdown table ``--all`` prints: one line per paper."""
    lines = [
        "| paper | claim | checks held | metric | method | best baseline | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: r.paper):
        claim = textwrap.shorten(r.claim, 70) if r.claim else ""
        base = f"{_num(r.best_baseline)} ({r.baseline_name})" if r.baseline_name else "—"
        cells = [r.paper, claim, verdict(r)]
        if r.error:
            cells += ["", "", "", ""]
        else:
            arrow = "↑" if r.higher_is_better else "↓"
            cells += [f"{r.metric} {arrow}", _num(r.method), base, f"{r.seconds:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_summary(
    rows: Sequence[Summary], *, preset: str, root: str | Path | None = None
) -> list[Path]:
    """Write ``summary.md``, ``summary.json`` and ``summary.png`` under ``root``."""
    root = Path(root if root is not None else DEFAULT_RESULTS)
    root.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    data = {
        "schema_version": SUMMARY_VERSION,
        "preset": preset,
        "finished_at": stamp,
        "papers": [asdict(r) for r in sorted(rows, key=lambda r: r.paper)],
    }
    held = sum(r.checks_held for r in rows)
    total = sum(r.checks_total for r in rows)
    md = "\n".join(
        [
            f"# icml26 — every paper, preset `{preset}`",
            "",
            f"{len(rows)} papers, {held} of {total} checks held ({stamp}).",
            "",
            summary_table(rows),
            "",
            "![checks held per paper](summary.png)",
            "",
            "*Checks of each paper's claim that held (dark) and failed (light) at this preset; "
            "a paper that crashed or failed to load shows no bar.*",
            "",
        ]
    )
    paths = [root / "summary.json", root / "summary.md"]
    paths[0].write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    paths[1].write_text(md)
    paths.append(_summary_figure(rows, root / "summary.png", preset))
    return paths


def _summary_figure(rows: Sequence[Summary], path: Path, preset: str) -> Path:
    from icml26.shared.figures import new_figure, save_figure

    rows = sorted(rows, key=lambda r: r.paper, reverse=True)
    fig, ax = new_figure(size=(6.5, 0.35 * len(rows) + 1.4))
    names = [r.paper for r in rows]
    held = [r.checks_held for r in rows]
    failed = [r.checks_total - r.checks_held for r in rows]
    ax.barh(names, held, color="#2b6a99", label="checks held")
    ax.barh(names, failed, left=held, color="#bcd4e6", label="checks failed")
    for i, r in enumerate(rows):
        if r.error:
            ax.text(0.1, i, "crashed / failed to load", va="center", fontsize=8, color="#a00")
    ax.set_xlabel("checks of the paper's claim")
    ax.set_title(f"icml26 claims at the `{preset}` preset")
    ax.legend(loc="lower right", fontsize=8)
    return save_figure(fig, path)


def read_summary(root: str | Path | None = None) -> dict[str, Any] | None:
    """The last ``summary.json`` under ``root``, or None when there is none."""
    path = Path(root if root is not None else DEFAULT_RESULTS) / "summary.json"
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is not a summary written by icml26: {err}") from err
    if data.get("schema_version") != SUMMARY_VERSION:
        raise ValueError(f"{path}: summary version {data.get('schema_version')!r} unknown")
    return data


def rows_from(data: dict[str, Any]) -> list[Summary]:
    """The :class:`Summary` rows of a read summary."""
    known = set(Summary.__dataclass_fields__)
    return [Summary(**{k: v for k, v in p.items() if k in known}) for p in data["papers"]]
