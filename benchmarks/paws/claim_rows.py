"""Selected rows of the ``full`` (or ``paper``) claim table, computed by the reproduction's
own ``run``.

The rows are the ones ``icml26 reproduce paws --preset full`` makes (the same data,
preference pairs, A_φ, seeds and budget rules: every row depends only on the seed, the
preference count and its method), restricted to the methods and preference counts asked
for, so that rows added in a new release can be measured without re-running the rest:

    uv run python benchmarks/paws/claim_rows.py --methods "P-IQL" "PT+IQL" IPL \\
        "filtered BC" PAWS --n 500 --seeds 0 1 2

``--preset paper`` does the same for the Meta-World `paper` preset (extra ``metaworld``;
its cached data, regret-labelled pairs and A_φ; no fixed-λ grid, no Transformer PAWS):

    uv run python benchmarks/paws/claim_rows.py --preset paper --methods P-IQL PT+IQL IPL \\
        --n 50 500 --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

from icml26.paws.reproduce import PRESETS, run
from icml26.shared import Report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="+", required=True)
    ap.add_argument("--n", nargs="+", type=int, default=[500])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--preset", choices=("full", "paper"), default="full")
    ap.add_argument("--out", default="results/paws/claim_rows")
    args = ap.parse_args()
    cfg = replace(PRESETS[args.preset], methods=tuple(args.methods), n_prefs=tuple(args.n),
                  lambda_grid=(), transformer=False)  # fmt: skip
    out = Path(args.out)
    reports = []
    for seed in args.seeds:
        t0, c0 = time.perf_counter(), time.process_time()
        rep = run(cfg, seed, out)
        reports.append(rep)
        rows = {f"{r.method} {r.group}": r.metrics[cfg.metric].mean for r in rep.rows}
        line = {"seed": seed, "wall_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0, "rows": rows, "notes": rep.notes}  # fmt: skip
        print(json.dumps(line), flush=True)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"records-{args.preset}-seed{seed}.json").write_text(
            json.dumps(rep.records, indent=1, default=str)
        )
    merged = Report.merge(reports)
    print(merged.table_markdown())
    out.mkdir(parents=True, exist_ok=True)
    (out / "rows.md").write_text(merged.table_markdown())


if __name__ == "__main__":
    main()
