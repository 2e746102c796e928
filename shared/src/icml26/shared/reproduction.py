"""Running a paper's preset over seeds and writing what it found.

:func:`reproduce` is what ``icml26 reproduce`` calls; it is also the way to run a
reproduction from Python::

    from icml26.shared import discover, reproduce
    report = reproduce(discover().get("mspca"), preset="smoke", seeds=3)

A reproduction is written into ``<paper>/.<preset>.incomplete/`` and renamed to
``<paper>/<preset>/`` only once its report is complete, so an interrupted or crashed
run never leaves a folder that looks finished (the staging folder keeps an
``INCOMPLETE`` marker saying why), and the report of an earlier complete run is
replaced only by another complete one.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from icml26.shared.distributed import barrier, is_main_process
from icml26.shared.registry import Paper
from icml26.shared.results import Environment, Report

log = logging.getLogger(__name__)

DEFAULT_RESULTS = Path("results")
INCOMPLETE_MARKER = "INCOMPLETE"

# (event, paper, preset, seed index, seed count, seconds so far) -> None
ProgressFn = Callable[[str, str, str, int, int, float], None]


def results_dir(paper: str, preset: str, root: str | Path | None = None) -> Path:
    """``<root>/<paper>/<preset>/``, with ``results/`` as the default root."""
    return Path(root if root is not None else DEFAULT_RESULTS) / paper / preset


def staging_dir(paper: str, preset: str, root: str | Path | None = None) -> Path:
    """Where a run of ``paper``/``preset`` is written until its report is complete."""
    final = results_dir(paper, preset, root)
    return final.parent / f".{final.name}.incomplete"


def _seed_list(paper: Paper, seeds: int | list[int] | None) -> list[int]:
    if seeds is None:
        seeds = paper.default_seeds
    if isinstance(seeds, bool):
        raise TypeError("seeds must be an int or a list of ints, not a bool")
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seed_list or (isinstance(seeds, int) and seeds < 1):
        raise ValueError(f"seeds must be at least 1, got {seeds!r}")
    if any(s < 0 for s in seed_list):
        raise ValueError(f"seeds must be non-negative, got {seed_list}")
    return seed_list


def reproduce(
    paper: Paper,
    *,
    preset: str = "smoke",
    seeds: int | list[int] | None = None,
    out: str | Path | None = None,
    on_progress: ProgressFn | None = None,
) -> Report:
    """Run ``preset`` for each seed, merge, judge the claim, plot, and write the report.

    ``seeds`` is a count (seeds 0..N-1) or an explicit list; ``out`` is the root
    under which ``<paper>/<preset>/`` is written. ``on_progress`` is told when each
    seed starts and ends. Under a multi-process launcher only rank 0 writes.
    """
    config = paper.preset(preset)
    seed_list = _seed_list(paper, seeds)
    target = results_dir(paper.name, preset, out)
    staging = staging_dir(paper.name, preset, out)
    main = is_main_process()
    if main:
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        (staging / INCOMPLETE_MARKER).write_text("running\n")
    barrier()

    def tell(event: str, index: int, seconds: float) -> None:
        if on_progress is not None and main:
            on_progress(event, paper.name, preset, index, len(seed_list), seconds)

    start = time.perf_counter()
    per_seed = []
    try:
        for index, seed in enumerate(seed_list):
            log.info("%s/%s: seed %d", paper.name, preset, seed)
            tell("seed-start", index, time.perf_counter() - start)
            t0 = time.perf_counter()
            rep = paper.run(config, seed, staging)
            if not isinstance(rep, Report):
                raise TypeError(f"{paper.name}.run returned {type(rep).__name__}, not a Report")
            rep.seeds = [seed]
            rep.wall_time_s = time.perf_counter() - t0
            per_seed.append(rep)
            tell("seed-end", index, time.perf_counter() - start)

        report = Report.merge(per_seed)
        report.paper, report.preset = paper.name, preset
        report.claim, report.criterion = paper.claim, paper.criterion
        report.checks = list(paper.judge(report, config))
        if paper.plot is not None and main:
            paths = paper.plot(report, staging)
            report.figures = [Path(p).name for p in paths]
            report.captions = {Path(p).name: p.caption for p in paths if getattr(p, "caption", "")}
        report.wall_time_s = time.perf_counter() - start
        report.environment = Environment.capture(
            distribution=paper.distribution, seeds=seed_list, config=config
        )
    except BaseException as err:
        if main and staging.exists():
            why = "interrupted" if isinstance(err, KeyboardInterrupt) else "crashed"
            (staging / INCOMPLETE_MARKER).write_text(f"{why}: {type(err).__name__}: {err}\n")
        raise
    if main:
        report.write(staging)
        (staging / INCOMPLETE_MARKER).unlink()
        _replace(staging, target)
    barrier()
    return report


def _replace(staging: Path, target: Path) -> None:
    """Move the complete ``staging`` folder to ``target``, replacing an older report."""
    old = target.parent / f".{target.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        target.rename(old)
    staging.rename(target)
    if old.exists():
        shutil.rmtree(old)


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
    checks_held: int = 0
    checks_total: int = 0
    higher_is_better: bool = True
    title: str = ""
    arxiv: str | None = None


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
        if m != paper.method and not head.ignores(m) and (s := score(m)) is not None
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
        checks_held=sum(c.holds for c in report.checks),
        checks_total=len(report.checks),
        higher_is_better=head.higher_is_better,
        title=paper.title,
        arxiv=paper.arxiv,
    )
