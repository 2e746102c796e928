"""The ``icml26`` command.

    icml26 list [--check]
    icml26 info NAME
    icml26 reproduce NAME | --all [--preset smoke|paper] [--seeds N] [--out DIR] [--check]
    icml26 <package-command> ...      (added by packages, e.g. ``icml26 orloop generate``)

Exit codes: 0 done; 1 a claim failed under ``--check`` (or a paper crashed);
2 bad usage (unknown paper, unknown preset, seeds < 1).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import textwrap
import traceback
from collections.abc import Sequence

from icml26.shared.registry import (
    BrokenPaper,
    Registry,
    UnknownPaper,
    UnknownPreset,
    commands,
    discover,
)
from icml26.shared.reproduction import Summary, reproduce, results_dir, summarize
from icml26.shared.results import config_to_dict

EXIT_OK, EXIT_CLAIM_FAILED, EXIT_USAGE = 0, 1, 2
BUILTINS = ("list", "info", "reproduce")


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
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = sub.add_parser("list", help="installed papers (with --check: their claims)")
    listing.add_argument(
        "--check",
        action="store_true",
        help="import every paper: print its claim, report the ones that fail to load",
    )
    info = sub.add_parser("info", help="one paper: title, claim, presets")
    info.add_argument("name")
    rep = sub.add_parser("reproduce", help="run a paper's preset over seeds and check its claim")
    which = rep.add_mutually_exclusive_group(required=True)
    which.add_argument("name", nargs="?", help="the paper (see `icml26 list`)")
    which.add_argument("--all", action="store_true", help="every installed paper")
    rep.add_argument("--preset", default="smoke", help="smoke (CPU, ~1 min) or paper (GPU scale)")
    rep.add_argument("--seeds", type=_positive_int, default=None, help="number of seeds (0..N-1)")
    rep.add_argument("--out", default=None, help="results root (default: results/)")
    rep.add_argument("--check", action="store_true", help="exit 1 when the claim does not hold")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    plugins = commands()
    if argv and argv[0] in plugins and argv[0] not in BUILTINS:
        return int(plugins[argv[0]].load()(argv[1:]) or 0)

    parser = build_parser(sorted(plugins))
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # argparse exits 2 on bad usage, 0 on --help
        return int(stop.code or 0)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    registry = discover()
    if args.command == "list":
        try:
            return _list(registry) if args.check else _list_fast(registry)
        except BrokenPipeError:  # `icml26 list | head`: the reader left, nothing is wrong
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
            return EXIT_OK
    try:
        if args.command == "info":
            return _info(registry, args.name)
        if args.all:
            return _reproduce_all(registry, args)
        return _reproduce_one(registry, args)
    except (UnknownPaper, UnknownPreset) as err:
        print(f"icml26: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPaper as err:
        print(f"icml26: {err}", file=sys.stderr)
        return EXIT_CLAIM_FAILED


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
    for name, paper in registry.papers.items():
        print(f"{name:16s} {paper.title}")
        print(textwrap.indent(textwrap.fill(paper.claim, 88), " " * 17))
    for name, error in registry.broken.items():
        print(f"{name:16s} BROKEN: {error}")
    return EXIT_OK


def _info(registry: Registry, name: str) -> int:
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
        print(f"  {preset}: {json.dumps(config_to_dict(config), ensure_ascii=False)}")
    return EXIT_OK


def _reproduce_one(registry: Registry, args: argparse.Namespace) -> int:
    paper = registry.get(args.name)
    paper.preset(args.preset)  # unknown preset -> usage error before any work
    report = reproduce(paper, preset=args.preset, seeds=args.seeds, out=args.out)
    print(report.to_markdown())
    print(f"\nwritten to {results_dir(paper.name, args.preset, args.out)}/")
    if args.check and not report.holds:
        return EXIT_CLAIM_FAILED
    return EXIT_OK


def _reproduce_all(registry: Registry, args: argparse.Namespace) -> int:
    for paper in registry.papers.values():
        paper.preset(args.preset)
    rows: list[Summary] = []
    for name, error in registry.broken.items():
        rows.append(Summary(name, "", None, None, None, "", False, 0.0, error=error))
    for name, paper in registry.papers.items():
        print(f"== {name} ({args.preset})", file=sys.stderr)
        try:
            report = reproduce(paper, preset=args.preset, seeds=args.seeds, out=args.out)
            rows.append(summarize(paper, report))
        except Exception as err:  # one paper's crash must not stop the others
            traceback.print_exc()
            rows.append(Summary(name, paper.claim, None, None, None, "", False, 0.0, str(err)))
    print(_summary_table(rows))
    failed = [r.paper for r in rows if not r.holds]
    if failed:
        print(f"\nclaims not holding: {', '.join(failed)}")
    return EXIT_CLAIM_FAILED if args.check and failed else EXIT_OK


def _summary_table(rows: list[Summary]) -> str:
    def num(x: float | None) -> str:
        return "—" if x is None else f"{x:.3g}"

    lines = [
        "| paper | claim | metric | method | best baseline | holds | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: r.paper):
        claim = textwrap.shorten(r.claim, 70) if r.claim else ""
        if r.error:
            lines.append(
                f"| {r.paper} | {claim} | | | | error: {textwrap.shorten(r.error, 60)} | |"
            )
            continue
        base = f"{num(r.best_baseline)} ({r.baseline_name})" if r.baseline_name else "—"
        holds = {True: "yes", False: "NO", None: "—"}[r.holds]
        cells = [r.paper, claim, r.metric, num(r.method), base, holds, f"{r.seconds:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
