"""Budget study: the smoke comparison at larger training budgets, one seed.

A diagnostic, not a preset: it takes the ``smoke`` Config, multiplies the steps of both
training stages (warm-up unchanged) and optionally widens the model, then runs the
package's own ``run`` and ``judge`` for one seed. Nothing else changes.

    python benchmarks/prism/budget_study.py --budget 1x:1 --budget 4x:4 --budget 16x:16
    python benchmarks/prism/budget_study.py --budget 4x-wide:4:64

Each ``--budget`` is ``label:step_multiplier[:d_model]`` (a wider model doubles d_ff with
d_model, as in smoke). Writes results/prism/budget/<label>.json and prints a table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from icml26.prism.reproduce import (
    PPL_GROUPS,
    PPL_MODES,
    PRESETS,
    PRISM,
    PRISMLESS,
    PROFILE_MM,
    PROFILE_NGL,
    REVERSION,
    SCAN_KINDS,
    SINGLE,
    judge,
    ppl_group,
    run,
    zero_shot_group,
)
from icml26.shared import Report, quiet_dependencies


def budget_config(mult: int, d_model: int | None = None):
    base = PRESETS["smoke"]
    cfg = dataclasses.replace(
        base,
        pretrain=base.pretrain.replace(steps=base.pretrain.steps * mult),
        finetune=base.finetune.replace(steps=base.finetune.steps * mult),
    )
    if d_model is not None:
        cfg = dataclasses.replace(cfg, model=cfg.model.replace(d_model=d_model, d_ff=2 * d_model))
    return cfg


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--budget", action="append", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("results/prism/budget"))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for spec in args.budget:
        label, mult, *rest = spec.split(":")
        cfg = budget_config(int(mult), int(rest[0]) if rest else None)
        t0 = time.perf_counter()
        with quiet_dependencies():
            report = run(cfg, args.seed, args.out)
        wall = time.perf_counter() - t0
        merged = Report.merge([report])
        checks = judge(merged, cfg)

        def val(method, metric, group, merged=merged):
            return merged.stat(method, metric, group).mean

        row = {
            "label": label,
            "seed": args.seed,
            "pretrain_steps": cfg.pretrain.steps,
            "finetune_steps": cfg.finetune.steps,
            "d_model": cfg.model.d_model,
            "d_ff": cfg.model.d_ff,
            "wall_s": wall,
            "ppl": {
                m: {
                    f"{g} ({mode})": val(m, "ppl", ppl_group(g, mode))
                    for g in PPL_GROUPS
                    for mode in PPL_MODES
                }
                for m in (PRISM, PRISMLESS)
            },
            "probe_f1": {m: val(m, "f1", "GL/NGL probe") for m in (PRISM, PRISMLESS)},
            "probe_pr_auc": {m: val(m, "pr_auc", "GL/NGL probe") for m in (PRISM, PRISMLESS)},
            "spearman": {
                kind: {
                    m: val(m, "spearman", zero_shot_group(kind))
                    for m in (PRISM, PRISMLESS, PROFILE_NGL, PROFILE_MM)
                }
                for kind in SCAN_KINDS
            },
            "checks": [
                {"name": c.name, "holds": bool(c.holds), "detail": c.detail} for c in checks
            ],
        }
        (args.out / f"{label}.json").write_text(json.dumps(row, indent=2, ensure_ascii=False))
        p, q = row["ppl"][PRISM], row["ppl"][PRISMLESS]
        rv, sm = row["spearman"][REVERSION], row["spearman"][SINGLE]
        cdr, fr = "CDR·NGL (marginalised)", "FR·GL (marginalised)"
        print(
            f"{label}: steps {cfg.pretrain.steps}+{cfg.finetune.steps} d={cfg.model.d_model} "
            f"{wall:.0f}s | {cdr} {p[cdr]:.2f} vs {q[cdr]:.2f} | "
            f"CDR·NGL (exact) {p['CDR·NGL (exact)']:.2f} | {fr} {p[fr]:.2f} vs {q[fr]:.2f} | "
            f"F1 {row['probe_f1'][PRISM]:.3f} vs {row['probe_f1'][PRISMLESS]:.3f} | "
            f"rho reversion {rv[PRISM]:+.3f} vs {rv[PRISMLESS]:+.3f}, single "
            f"{sm[PRISM]:+.3f} vs {sm[PRISMLESS]:+.3f} "
            f"(site profile single {sm[PROFILE_NGL]:+.3f} vs {sm[PROFILE_MM]:+.3f}) | "
            + " ".join(f"{c['name'][:3]}{'✓' if c['holds'] else '✗'}" for c in row["checks"]),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
