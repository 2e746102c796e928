"""The ``icml26`` command.

    icml26 [--version] [-v | -q] COMMAND
    icml26 list [--check]
    icml26 info NAME
    icml26 reproduce NAME | --all [--preset smoke|paper] [--seeds N] [--out DIR] [--check]
    icml26 status [--out DIR]
    icml26 <package-command> ...      (added by packages, e.g. ``icml26 orloop generate``)

Exit codes:

- 0 done (the claim may or may not hold without ``--check``);
- 1 a claim did not hold, under ``--check``;
- 2 bad usage: unknown paper or preset, seeds < 1, an output folder that cannot be written;
- 3 a paper crashed or failed to load (also under ``--all``, with or without ``--check``);
- 130 interrupted (Ctrl-C).

Progress goes to stderr: a line per seed with an ETA, and the stage lines of the
reproduction (``-q`` hides them, ``-v`` adds icml26's own INFO logs). Third-party
loggers stay at WARNING and dependencies' deprecation warnings are filtered.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import textwrap
import traceback
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from icml26.shared.distributed import is_main_process
from icml26.shared.hygiene import quiet_dependencies, silence_loggers
from icml26.shared.progress import PROGRESS_LOGGER, SeedReporter, StageHandler, format_seconds
from icml26.shared.registry import (
    BrokenPaper,
    Paper,
    Registry,
    UnknownPaper,
    UnknownPreset,
    commands,
    discover,
)
from icml26.shared.reproduction import (
    DEFAULT_RESULTS,
    Summary,
    reproduce,
    results_dir,
    staging_dir,
    summarize,
)
from icml26.shared.results import Report, config_to_dict
from icml26.shared.summary import read_summary, rows_from, summary_table, write_summary

EXIT_OK, EXIT_CLAIM_FAILED, EXIT_USAGE, EXIT_CRASHED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
BUILTINS = ("list", "info", "reproduce", "status")

log = logging.getLogger("icml26.cli")


class UsageError(ValueError):
    """Bad usage found after parsing (an output folder that cannot be written)."""


class PaperCrashed(RuntimeError):
    """A paper's run raised; the message names it, its error and where the traceback is."""


def _version() -> str:
    try:
        return metadata.version("icml26-shared")
    except metadata.PackageNotFoundError:
        return "unknown"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser(extra: Sequence[str] = ()) -> argparse.ArgumentParser:
    epilog = "package commands: " + ", ".join(extra) if extra else None
    parser = argparse.ArgumentParser(
        prog="icml26",
        description="Reference implementations of ICML 2026 papers: list them, "
        "reproduce their claims.",
        epilog=epilog,
    )
    parser.add_argument("--version", action="version", version=f"icml26 {_version()}")
    loud = parser.add_mutually_exclusive_group()
    loud.add_argument("-v", "--verbose", action="store_true", help="also icml26's INFO logs")
    loud.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = sub.add_parser("list", help="installed papers (with --check: their claims)")
    listing.add_argument(
        "--check",
        action="store_true",
        help="import every paper: print its claim, report the ones that fail to load",
    )
    info = sub.add_parser("info", help="one paper: title, claim, presets, measured time")
    info.add_argument("name")
    rep = sub.add_parser(
        "reproduce",
        help="run a paper's preset over seeds and check its claim",
        epilog="exit codes: 0 done, 1 claim failed (--check), 2 usage, 3 a paper crashed, "
        "130 interrupted",
    )
    which = rep.add_mutually_exclusive_group(required=True)
    which.add_argument("name", nargs="?", help="the paper (see `icml26 list`)")
    which.add_argument("--all", action="store_true", help="every installed paper")
    rep.add_argument(
        "--preset",
        default="smoke",
        help="smoke (2 CPU cores, a few minutes a seed: `icml26 info NAME` gives the measured "
        "time) or paper (the paper's scale, for a GPU)",
    )
    rep.add_argument("--seeds", type=_positive_int, default=None, help="number of seeds (0..N-1)")
    rep.add_argument("--out", default=None, help="results root (default: results/)")
    rep.add_argument("--check", action="store_true", help="exit 1 when the claim does not hold")
    status = sub.add_parser("status", help="the last `reproduce --all` summary (runs nothing)")
    status.add_argument("--out", default=None, help="results root (default: results/)")
    status.add_argument("--preset", default="smoke", help="preset for --rebuild (default smoke)")
    status.add_argument(
        "--rebuild",
        action="store_true",
        help="write the summary from the report.json files under the results root "
        "(papers run one by one), without running anything",
    )
    return parser


def _configure_logging(verbose: bool, quiet: bool) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    silence_loggers()
    logging.getLogger("icml26").setLevel(logging.INFO if verbose else logging.WARNING)
    progress = logging.getLogger(PROGRESS_LOGGER)
    progress.handlers = [h for h in progress.handlers if not isinstance(h, StageHandler)]
    if not quiet and is_main_process():
        progress.setLevel(logging.INFO)
        progress.addHandler(StageHandler())
        progress.propagate = False


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _main(argv)
    except KeyboardInterrupt:
        _say("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `icml26 info x | head -1`: the reader left, nothing is wrong
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return EXIT_OK


def _say(message: str) -> None:
    with contextlib.suppress(BrokenPipeError, ValueError):
        print(f"icml26: {message}", file=sys.stderr)


def _main(argv: list[str]) -> int:
    plugins = commands()
    # `icml26 -v carve ...`: global flags may stand before a package command
    lead = 0
    while lead < len(argv) and argv[lead] in ("-v", "--verbose", "-q", "--quiet"):
        lead += 1
    if lead < len(argv) and argv[lead] in plugins and argv[lead] not in BUILTINS:
        _configure_logging(
            any(a in ("-v", "--verbose") for a in argv[:lead]),
            any(a in ("-q", "--quiet") for a in argv[:lead]),
        )
        with quiet_dependencies():
            return int(plugins[argv[lead]].load()(argv[lead + 1 :]) or 0)

    parser = build_parser(sorted(plugins))
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse exits 2 on bad usage, 0 on --help / --version
        return int(stop.code or 0)
    _configure_logging(args.verbose, args.quiet)
    registry = discover()
    if args.command == "status":
        if args.rebuild:
            return _rebuild_status(registry, args.out, args.preset)
        return _status(args.out)
    if args.command == "list":
        return _list(registry) if args.check else _list_fast(registry)
    try:
        if args.command == "info":
            return _info(registry, args.name)
        if args.all:
            return _reproduce_all(registry, args)
        return _reproduce_one(registry, args)
    except (UnknownPaper, UnknownPreset, UsageError) as err:
        _say(str(err))
        return EXIT_USAGE
    except BrokenPaper as err:
        _say(str(err))
        return EXIT_CRASHED
    except PaperCrashed as err:
        _say(str(err))
        return EXIT_CRASHED


def _list_fast(registry: Registry) -> int:
    """Names and descriptions from package metadata: no paper is imported (importing all
    of them, with torch and JAX, takes tens of seconds)."""
    if not registry.names:
        print("no icml26 papers installed (pip install icml26-<paper>)")
    for name, summary in registry.summaries().items():
        line = f"{name:16s} {summary}"
        print(textwrap.fill(line, 105, subsequent_indent=" " * 17, break_on_hyphens=False))
    if registry.names:
        print("\n`icml26 info NAME` for one paper; `icml26 list --check` imports them all.")
    return EXIT_OK


def _list(registry: Registry) -> int:
    if not registry.names:
        print("no icml26 papers installed (pip install icml26-<paper>)")
    with quiet_dependencies():
        papers, broken = registry.papers, registry.broken
    for name, paper in papers.items():
        print(f"{name:16s} {paper.title}")
        print(textwrap.indent(textwrap.fill(paper.claim, 88), " " * 17))
    for name, error in broken.items():
        print(f"{name:16s} BROKEN: {error}")
    return EXIT_OK


def _info(registry: Registry, name: str) -> int:
    with quiet_dependencies():
        paper = registry.get(name)
    print(f"{paper.title}")
    if paper.authors:
        print(paper.authors)
    print(f"distribution: {paper.distribution}")
    if paper.arxiv:
        print(f"arXiv: {paper.arxiv}")
    if paper.code:
        print(f"official code: {paper.code}")
    print(f"\nclaim: {paper.claim}\ncriterion: {paper.criterion}")
    print(f"method row: {paper.method}; headline metric: {paper.headline.metric}")
    print(f"default seeds: {paper.default_seeds}\n\npresets:")
    for preset, config in paper.presets.items():
        took = paper.seconds_per_seed.get(preset)
        timing = f" (measured: {format_seconds(took)} a seed)" if took else ""
        print(f"  {preset}{timing}: {json.dumps(config_to_dict(config), ensure_ascii=False)}")
    return EXIT_OK


def _check_writable(root: str | None) -> Path:
    """The results root, created; an unusable one is a usage error, said in one line."""
    path = Path(root if root is not None else DEFAULT_RESULTS)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".icml26-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise UsageError(f"cannot write results under {path}: {err.strerror or err}") from None
    return path


def _run(paper: Paper, args: argparse.Namespace) -> Report:
    """One reproduction with progress lines; a crash becomes :class:`PaperCrashed`."""
    reporter = (
        None
        if args.quiet
        else SeedReporter(expected_seconds=paper.seconds_per_seed.get(args.preset))
    )
    try:
        with quiet_dependencies():
            return reproduce(
                paper, preset=args.preset, seeds=args.seeds, out=args.out, on_progress=reporter
            )
    except (KeyboardInterrupt, UnknownPreset):
        raise
    except Exception as err:
        where = staging_dir(paper.name, args.preset, args.out)
        detail = f"{type(err).__name__}: {err}".strip()
        try:
            where.mkdir(parents=True, exist_ok=True)
            (where / "traceback.txt").write_text(traceback.format_exc())
            hint = f" (traceback in {where / 'traceback.txt'})"
        except OSError:
            hint = ""
        if args.verbose:
            traceback.print_exc()
        raise PaperCrashed(f"{paper.name} crashed: {textwrap.shorten(detail, 300)}{hint}") from err


def _reproduce_one(registry: Registry, args: argparse.Namespace) -> int:
    with quiet_dependencies():
        paper = registry.get(args.name)
    paper.preset(args.preset)  # unknown preset -> usage error before any work
    _check_writable(args.out)
    report = _run(paper, args)
    if not is_main_process():
        return EXIT_OK  # rank 0 prints and judges for everyone
    print(report.to_markdown())
    print(f"\nwritten to {results_dir(paper.name, args.preset, args.out)}/")
    if args.check and not report.holds:
        return EXIT_CLAIM_FAILED
    return EXIT_OK


def _reproduce_all(registry: Registry, args: argparse.Namespace) -> int:
    with quiet_dependencies():
        papers, broken = registry.papers, registry.broken
    for paper in papers.values():
        paper.preset(args.preset)
    _check_writable(args.out)
    rows: list[Summary] = []
    for name, error in broken.items():
        rows.append(Summary(name, "", None, None, None, "", None, 0.0, error=error))
    for name, paper in papers.items():
        if is_main_process():
            _say(f"== {name} ({args.preset})")
        try:
            report = _run(paper, args)
        except PaperCrashed as err:  # one paper's crash must not stop the others
            _say(str(err))
            rows.append(Summary(name, paper.claim, None, None, None, "", None, 0.0, str(err)))
            continue
        rows.append(summarize(paper, report))
    if not is_main_process():
        return EXIT_CRASHED if any(r.error for r in rows) else EXIT_OK
    print(summary_table(rows))
    paths = write_summary(rows, preset=args.preset, root=args.out)
    print(f"\nsummary written to {paths[1]}")
    crashed = [r.paper for r in rows if r.error]
    failed = [r.paper for r in rows if not r.error and r.holds is False]
    if crashed:
        print(f"crashed or failed to load: {', '.join(crashed)}")
    if failed:
        print(f"claims not holding: {', '.join(failed)}")
    if crashed:
        return EXIT_CRASHED
    return EXIT_CLAIM_FAILED if args.check and failed else EXIT_OK


def _rebuild_status(registry: Registry, root: str | None, preset: str) -> int:
    """Summarise the latest complete report of each installed paper at ``preset``."""
    rows: list[Summary] = []
    with quiet_dependencies():
        for name in registry.names:
            path = results_dir(name, preset, root) / "report.json"
            if not path.is_file():
                continue
            try:
                paper = registry.get(name)
                rows.append(summarize(paper, Report.read(path)))
            except (BrokenPaper, ValueError, KeyError) as err:
                rows.append(Summary(name, "", None, None, None, "", None, 0.0, error=str(err)))
    if not rows:
        _say(f"no {preset} report under {Path(root or DEFAULT_RESULTS)}/: nothing to summarise")
        return EXIT_OK
    paths = write_summary(rows, preset=preset, root=root)
    print(summary_table(rows))
    print(f"\nsummary written to {paths[1]}")
    return EXIT_OK


def _status(root: str | None) -> int:
    try:
        data = read_summary(root)
    except ValueError as err:
        _say(str(err))
        return EXIT_USAGE
    if data is None:
        where = Path(root if root is not None else DEFAULT_RESULTS)
        _say(f"no summary under {where}/ yet: `icml26 reproduce --all` writes one")
        return EXIT_OK
    rows = rows_from(data)
    print(f"preset `{data['preset']}`, finished {data['finished_at']}\n")
    print(summary_table(rows))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
