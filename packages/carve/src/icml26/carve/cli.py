"""``icml26 carve ...``: the package's own commands.

``icml26 carve reproduce --data DIR`` runs a preset (default ``cmrbench``) on the official
CMRBench files in ``DIR`` (``cleaned-<experience>-{val,eval}.json`` from
github.com/collagelab/CMR, ``data/processed``), with the encoder of your choice, and
writes the same report as ``icml26 reproduce`` under ``results/carve/<preset>/``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from dataclasses import replace

from icml26.carve import reproduce as rp


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icml26 carve", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    rep = sub.add_parser("reproduce", help="a preset on CMRBench files or the simulated hub")
    rep.add_argument("--preset", default="cmrbench", choices=sorted(rp.PRESETS))
    rep.add_argument("--data", default=None, metavar="DIR",
                     help="folder with the official cleaned-*-{val,eval}.json files")  # fmt: skip
    rep.add_argument("--encoder", default=None, choices=rp.ENCODERS,
                     help="frozen query/card encoder (default: the preset's, 'auto')")  # fmt: skip
    rep.add_argument("--seeds", type=int, default=None, help="number of seeds (0..N-1)")
    rep.add_argument("--out", default=None, help="results root (default: results/)")
    rep.add_argument("--methods", default=None, metavar="LIST",
                     help="comma-separated subset, in this order, of: "
                     + ", ".join(rp.METHOD_ALIASES))  # fmt: skip
    rep.add_argument("--check", action="store_true", help="exit 1 when the claim does not hold")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from icml26.shared import reproduce, results_dir

    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")  # fmt: skip
    config = rp.PRESETS[args.preset]
    changes = {}
    if args.data is not None:
        changes.update(source="cmrbench", data_dir=str(args.data))
    if args.encoder is not None:
        changes["encoder"] = args.encoder
    if args.methods is not None:
        names = [m.strip() for m in args.methods.split(",") if m.strip()]
        unknown = [m for m in names if m not in rp.METHOD_ALIASES]
        if unknown or not names:
            print(f"icml26 carve: unknown --methods {unknown or names}; known: "
                  f"{', '.join(rp.METHOD_ALIASES)}", file=sys.stderr)  # fmt: skip
            return 2
        changes["methods"] = tuple(rp.METHOD_ALIASES[m] for m in names)
    config = replace(config, **changes)
    if args.seeds is not None and args.seeds < 1:
        print("icml26 carve: --seeds must be at least 1", file=sys.stderr)
        return 2
    paper = replace(rp.PAPER, presets={**rp.PAPER.presets, args.preset: config})
    try:
        report = reproduce(paper, preset=args.preset, seeds=args.seeds, out=args.out)
    except ValueError as err:
        print(f"icml26 carve: {err}", file=sys.stderr)
        return 2
    print(report.to_markdown())
    print(f"\nwritten to {results_dir(paper.name, args.preset, args.out)}/")
    return 1 if args.check and not report.holds else 0


if __name__ == "__main__":
    raise SystemExit(main())
