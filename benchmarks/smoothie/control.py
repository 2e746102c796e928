"""The S = 1 control of the ``extended`` preset alone, seed by seed.

The same code path as ``reproduce.run`` takes for the control (the task with C·S concepts of
one form each, the three spaces, ``run_task``), so the numbers equal those of a whole
``extended`` run of that seed. One JSON record per method is appended to
``results/smoothie/control/control.jsonl``. Usage:

    python benchmarks/smoothie/control.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from icml26.shared import numpy_rng, quiet_dependencies, torch_threads
from icml26.smoothie.data import synonym_task
from icml26.smoothie.reproduce import PRESETS, make_spaces, run_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--preset", default="extended")
    parser.add_argument("--out", default="results/smoothie/control")
    args = parser.parse_args()
    config = PRESETS[args.preset]
    if config.control_synonyms is None:
        parser.error(f"preset {args.preset!r} has no control")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    s = config.control_synonyms
    task = replace(
        config.task, synonyms=s, concepts=config.task.concepts * config.task.synonyms // s
    )
    sub = replace(config, task=task, methods=("smoothie", "embedding", "simplex"), mbr=0)
    sub = replace(sub, sweep_steps=())
    with torch_threads(1), quiet_dependencies():
        for seed in args.seeds:
            c0 = time.process_time()
            data = synonym_task(task, numpy_rng(seed, "control"))
            sched = make_spaces(sub, data)["smoothie"].schedule
            _, records = run_task(sub, data, seed, f"S={s}")
            for rec in records:
                rec.update(
                    preset=args.preset,
                    coef_d=sched.coef_d,
                    sigma=[sched.sigma_min, sched.sigma_max],
                    cpu_seconds_seed=time.process_time() - c0,
                )
                with (out / "control.jsonl").open("a", encoding="utf-8") as f:
                    f.write(json.dumps(rec) + "\n")
                print(
                    f"seed {seed} {rec['method']}: concept {rec.get('concept_accuracy', 0):.1f} "
                    f"distinct {rec.get('distinct', 0):.2f} stop {rec.get('stopping')}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
