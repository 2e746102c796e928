"""Running a paper's preset over seeds and writing what it found.

:func:`reproduce` is what ``icml26 reproduce`` calls; it is also the way to run a
reproduction from Python::

    from icml26.shared import discover, reproduce
    report = reproduce(discover().get("mspca"), preset="smoke", seeds=3)
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from icml26.shared.registry import Paper
from icml26.shared.results import Environment, Report

log = logging.getLogger(__name__)

DEFAULT_RESULTS = Path("results")


def results_dir(paper: str, preset: str, root: str | Path | None = None) -> Path:
    """``<root>/<paper>/<preset>/``, with ``results/`` as the default root."""
    return Path(root if root is not None else DEFAULT_RESULTS) / paper / preset


def reproduce(
    paper: Paper,
    *,
    preset: str = "smoke",
    seeds: int | list[int] | None = None,
    out: str | Path | None = None,
) -> Report:
    """Run ``preset`` for each seed, merge, judge the claim, plot, and write the report.

    ``seeds`` is a count (seeds 0..N-1) or an explicit list; ``out`` is the root
    under which ``<paper>/<preset>/`` is written.
    """
    config = paper.preset(preset)
    if seeds is None:
        seeds = paper.default_seeds
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seed_list or (isinstance(seeds, int) and seeds < 1):
        raise ValueError(f"seeds must be at least 1, got {seeds!r}")
    if any(s < 0 for s in seed_list):
        raise ValueError(f"seeds must be non-negative, got {seed_list}")
    target = results_dir(paper.name, preset, out)
    target.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    per_seed = []
    for seed in seed_list:
        log.info("%s/%s: seed %d", paper.name, preset, seed)
        t0 = time.perf_counter()
        rep = paper.run(config, seed, target)
        if not isinstance(rep, Report):
            raise TypeError(f"{paper.name}.run returned {type(rep).__name__}, not a Report")
        rep.seeds = [seed]
        rep.wall_time_s = time.perf_counter() - t0
        per_seed.append(rep)

    report = Report.merge(per_seed)
    report.paper, report.preset = paper.name, preset
    report.claim, report.criterion = paper.claim, paper.criterion
    report.checks = list(paper.judge(report, config))
    if paper.plot is not None:
        paths = paper.plot(report, target)
        report.figures = [Path(p).name for p in paths]
        report.captions = {Path(p).name: p.caption for p in paths if getattr(p, "caption", "")}
    report.wall_time_s = time.perf_counter() - start
    report.environment = Environment.capture(
        distribution=paper.distribution, seeds=seed_list, config=config
    )
    report.write(target)
    return report


@dataclass(frozen=True)
class Summary:
    """One line of ``icml26 reproduce --all``: the method against its best baseline."""

    paper: str
    claim: str
    method: float | None
    best_baseline: float | None
    baseline_name: str | None
    metric: str
    holds: bool | None
    seconds: float
    error: str | None = None


def summarize(paper: Paper, report: Report) -> Summary:
    """Compare the paper's method with the best other row on the headline metric."""
    head = paper.headline

    def score(method: str) -> float | None:
        vals = [
            r.metrics[head.metric].mean
            for r in report.rows
            if r.method == method
            and head.metric in r.metrics
            and (head.group is None or r.group == head.group)
        ]
        return sum(vals) / len(vals) if vals else None

    ours = score(paper.method)
    others = {
        m: s
        for m in report.methods
        if m != paper.method and m not in head.ignore and (s := score(m)) is not None
    }
    best_name = None
    if others:
        pick = max if head.higher_is_better else min
        best_name = pick(others, key=others.__getitem__)
    return Summary(
        paper=paper.name,
        claim=paper.claim,
        method=ours,
        best_baseline=others.get(best_name) if best_name else None,
        baseline_name=best_name,
        metric=head.metric,
        holds=report.holds,
        seconds=report.wall_time_s,
    )
