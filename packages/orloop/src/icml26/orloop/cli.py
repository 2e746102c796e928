"""``icml26 orloop ...``: generate ORDebug-style datasets and inspect models.

icml26 orloop generate --n 5000 --out data/ordebug [--seed 0] [--milp-fraction 0.3]
icml26 orloop iis MODEL.mps [--method auto|highs|deletion_filter]
icml26 orloop validate DATASET_DIR
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from icml26.orloop.data import read_dataset, write_instance
from icml26.orloop.iis import compute_iis
from icml26.orloop.model import Model
from icml26.orloop.saboteur import ERROR_TYPES, LP_TYPES, MILP_TYPES, generate, validate
from icml26.shared import progress


def _types(text: str) -> tuple[str, ...]:
    out = tuple(t.strip().upper() for t in text.split(",") if t.strip())
    bad = [t for t in out if t not in ERROR_TYPES]
    if bad or not out:
        raise argparse.ArgumentTypeError(f"error types are letters A–I, got {text!r}")
    return out


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icml26 orloop", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write validated instances as MPS files + index.jsonl")
    gen.add_argument("--n", type=int, required=True, help="number of instances")
    gen.add_argument("--out", required=True, help="output directory")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--milp-fraction", type=float, default=0.3)
    gen.add_argument("--lp-types", type=_types, default=LP_TYPES)
    gen.add_argument("--milp-types", type=_types, default=MILP_TYPES)
    iis = sub.add_parser("iis", help="print the IIS of an infeasible .mps/.lp model")
    iis.add_argument("model")
    iis.add_argument("--method", default="auto", choices=("auto", "highs", "deletion_filter"))
    val = sub.add_parser("validate", help="re-check every instance of a dataset directory")
    val.add_argument("dataset")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as stop:
        return int(stop.code or 0)
    try:
        if args.command == "generate":
            return _generate(args)
        if args.command == "iis":
            found = compute_iis(Model.read(args.model), method=args.method)
            print(json.dumps(found.to_dict(), indent=2))
            return 0 if found.valid else 1
        return _validate(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"icml26 orloop: {err}", file=sys.stderr)
        return 2


def _generate(args: argparse.Namespace) -> int:
    if args.n < 1:
        raise ValueError(f"--n must be positive, got {args.n}")
    if "B" in args.lp_types:
        raise ValueError("error type B needs the MILP family; leave it out of --lp-types")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    counts: Counter[str] = Counter()
    instances = generate(
        args.n,
        seed=args.seed,
        lp_types=args.lp_types,
        milp_types=args.milp_types,
        milp_fraction=args.milp_fraction,
    )
    with (out / "index.jsonl").open("w") as f:
        for inst in progress(instances, total=args.n, desc="instances", unit="inst"):
            f.write(json.dumps(write_instance(inst, out)) + "\n")
            counts[f"{inst.family}/{inst.error_type}/{inst.difficulty}"] += 1
    seconds = time.perf_counter() - t0
    print(f"wrote {args.n} validated instances to {out}/ in {seconds:.1f} s")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    instances = read_dataset(args.dataset)
    bad = [i.problem_id for i in progress(instances, desc="validate") if not validate(i).ok]
    print(f"{len(instances) - len(bad)}/{len(instances)} instances pass the three-way validation")
    for pid in bad[:20]:
        print(f"  failed: {pid}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
