"""Unconditional Smoothie on the corpus at L = 64 (CPU size), development seeds only.

``reproduce.run_unconditional`` with ``reproduce.UNCONDITIONAL_TINY`` (``--cap`` overrides
the training cap). One JSON record per seed is appended to
``results/smoothie/unconditional/records.jsonl``. Usage:

    python benchmarks/smoothie/unconditional.py --seeds 100
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from icml26.smoothie.reproduce import UNCONDITIONAL_TINY, run_unconditional

EVALUATION_SEEDS = range(3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[100])
    parser.add_argument("--cap", type=int, default=None)
    parser.add_argument("--out", default="results/smoothie/unconditional")
    args = parser.parse_args()
    if any(s in EVALUATION_SEEDS for s in args.seeds):
        parser.error("use development seeds (not 0..2)")
    config = UNCONDITIONAL_TINY
    if args.cap is not None:
        config = replace(config, train=replace(config.train, cap=args.cap))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        c0 = time.process_time()
        rec = run_unconditional(config, seed)
        rec.update(cap=config.train.cap, cpu_seconds_seed=time.process_time() - c0)
        with (out / "records.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps(rec, indent=1), flush=True)


if __name__ == "__main__":
    main()
