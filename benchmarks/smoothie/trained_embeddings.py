"""Smoothie with fixed vs trained embeddings (official ``--train_embeddings``) on the smoke
task, development seeds by default; the evaluation seeds 0..2 only with ``--evaluation``
(a reported, not tuned, run: nothing is changed after it).

Both rows take ``reproduce.run_task``'s code path with the ``smoke`` preset's task, model,
training rule and N; only the method list differs. One JSON record per method is appended
to ``results/smoothie/trained_embeddings/records.jsonl``. Usage:

    python benchmarks/smoothie/trained_embeddings.py --seeds 100
    python benchmarks/smoothie/trained_embeddings.py --evaluation --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from icml26.shared import numpy_rng, quiet_dependencies, torch_threads
from icml26.smoothie.data import synonym_task
from icml26.smoothie.reproduce import PRESETS, run_task

EVALUATION_SEEDS = range(3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[100])
    parser.add_argument("--preset", default="smoke")
    parser.add_argument("--out", default="results/smoothie/trained_embeddings")
    parser.add_argument(
        "--evaluation", action="store_true", help="allow the evaluation seeds 0..2 (report only)"
    )
    args = parser.parse_args()
    if not args.evaluation and any(s in EVALUATION_SEEDS for s in args.seeds):
        parser.error("use development seeds (not 0..2), or --evaluation for a reported run")
    config = replace(
        PRESETS[args.preset], methods=("smoothie", "smoothie-trained-e"), mbr=0, sweep_steps=()
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with torch_threads(1), quiet_dependencies():
        for seed in args.seeds:
            c0 = time.process_time()
            data = synonym_task(config.task, numpy_rng(seed, "task"))
            _, records = run_task(config, data, seed, f"S={config.task.synonyms}")
            for rec in records:
                rec.update(preset=args.preset, cpu_seconds_seed=time.process_time() - c0)
                with (out / "records.jsonl").open("a", encoding="utf-8") as f:
                    f.write(json.dumps(rec) + "\n")
                print(
                    f"seed {seed} {rec['method']}: concept {rec.get('concept_accuracy', 0):.1f} "
                    f"distinct {rec.get('distinct', 0):.2f} stop {rec.get('stopping')}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
