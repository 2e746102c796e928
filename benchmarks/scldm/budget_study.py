"""Budget study: the smoke comparison at other training budgets, one seed.

A diagnostic, not a preset: it takes the ``smoke`` Config, replaces the autoencoder's
batch size and epochs and the DiT's steps, and runs the package's own ``run`` and
``judge`` for one seed (no UMAP). Nothing else changes.

    python benchmarks/scldm/budget_study.py --budget released:128:12:300 \\
        --budget ae:16:12:300 --budget smoke:16:12:1500 --budget dit4k:16:12:4000

Each ``--budget`` is ``label:ae_batch_size:ae_epochs:dit_steps`` (``ae_epochs`` "rule": the
preset's convergence rule with its step cap; "rule500": the rule with a cap of 500 steps;
``dit_steps`` likewise: a number of fixed steps, "rule" the preset's DiT rule with its cap,
"rule8000" the DiT rule with a cap of 8,000 steps). The seed should be a development seed
(``--seed 100``), not one of the evaluation seeds 0–2 of the presets.
``--no-scvi`` leaves scVI out (its numbers do not depend on these budgets). Writes
results/scldm/budget/<label>.json and prints one markdown row per budget.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from icml26.scldm.reproduce import (
    G_RECON,
    G_TYPE,
    G_UNCOND,
    GAUSSIAN,
    METHOD,
    MLP,
    PRESETS,
    RECON,
    SCVI,
    judge,
    run,
)
from icml26.shared import Report

COLUMNS = (
    "label | AE batch × epochs | AE steps (stop) | DiT steps | run s | AE recon. type acc | "
    "MMD scLDM | "
    "MMD AE + Gaussian | MMD MLP VAE | MMD scVI | corr. error scLDM / MLP VAE | "
    "type acc w=1 | type acc w=2 | checks that hold"
)


def _short(check: str) -> str:
    """``(a) vs scVI`` for a check against one peer, else ``(c)``."""
    peer = next((p for p in (MLP, SCVI) if p in check), None)
    return check[:3] + (f" vs {peer}" if peer else "")


def budget_config(
    ae_batch: int,
    ae_epochs: int | None,
    dit_steps: int | None,
    *,
    ae_cap: int | None = None,
    dit_cap: int | None = None,
    scvi=True,
):
    """The smoke Config with these budgets; ``ae_epochs=None`` keeps its convergence rule
    (with the step cap ``ae_cap``, default the preset's), a number of epochs replaces the
    rule by that fixed budget; ``dit_steps=None`` trains the DiT to its rule (cap ``dit_cap``,
    default the preset's, else 8,000), a number of steps is a fixed budget."""
    smoke = PRESETS["smoke"]
    return dataclasses.replace(
        smoke,
        ae_batch_size=ae_batch,
        ae_epochs=ae_epochs or smoke.ae_epochs,
        ae_max_steps=(ae_cap or smoke.ae_max_steps) if ae_epochs is None else None,
        dit_steps=dit_steps or smoke.dit_steps,
        dit_max_steps=(dit_cap or smoke.dit_max_steps or 8000) if dit_steps is None else None,
        scvi=scvi and smoke.scvi,
        umap=False,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--budget", action="append", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("results/scldm/budget"))
    ap.add_argument("--no-scvi", action="store_true", help="leave scVI out")
    ap.add_argument("--dit-min-delta", type=float, default=None, help="the DiT rule's min_delta")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    print(f"| {COLUMNS} |")
    print("|" + "---|" * len(COLUMNS.split("|")))
    for spec in args.budget:
        label, batch, epochs, steps = spec.split(":")
        rule, dit_rule = epochs.startswith("rule"), steps.startswith("rule")
        cfg = budget_config(
            int(batch),
            None if rule else int(epochs),
            None if dit_rule else int(steps),
            ae_cap=int(epochs[4:]) if rule and epochs[4:] else None,
            dit_cap=int(steps[4:]) if dit_rule and steps[4:] else None,
            scvi=not args.no_scvi,
        )
        if args.dit_min_delta is not None:
            cfg = dataclasses.replace(cfg, dit_min_delta=args.dit_min_delta)
        t0 = time.perf_counter()
        report = Report.merge([run(cfg, args.seed, args.out)])
        wall = time.perf_counter() - t0
        checks = judge(report, cfg)

        def val(method, metric, group, report=report):
            try:
                return report.stat(method, metric, group).mean
            except KeyError:
                return float("nan")

        strong = f"{METHOD} (w={cfg.strong_guidance:g})"
        row = {
            "label": label,
            "seed": args.seed,
            "ae_batch_size": cfg.ae_batch_size,
            "ae_epochs": cfg.ae_epochs,
            "dit_spec": steps,
            "dit_rule": {
                "window": cfg.dit_window,
                "patience": cfg.dit_patience,
                "min_delta": cfg.dit_min_delta,
            },
            "dit_steps": val(METHOD, "dit_steps", G_UNCOND),
            "dit_plateau": val(METHOD, "dit_plateau", G_UNCOND),
            "dit_windows": next(
                (r.get("diffusion_windows") for r in report.records if "diffusion_windows" in r),
                None,
            ),
            "wall_s": wall,
            "recon_type_acc": val(RECON, "type_acc", G_RECON),
            "ae_steps": val(RECON, "ae_steps", G_RECON),
            "ae_plateau": val(RECON, "ae_plateau", G_RECON),
            "mmd": {m: val(m, "mmd", G_UNCOND) for m in (METHOD, GAUSSIAN, MLP, SCVI)},
            "corr_error": {m: val(m, "corr_error", G_UNCOND) for m in (METHOD, MLP)},
            "type_acc": {
                "w1": val(METHOD, "type_acc", G_TYPE),
                "w2": val(strong, "type_acc", G_TYPE),
            },
            "checks": [
                {"name": c.name, "holds": bool(c.holds), "detail": c.detail} for c in checks
            ],
        }
        (args.out / f"{label}.json").write_text(json.dumps(row, indent=2, ensure_ascii=False))
        mmd, corr = row["mmd"], row["corr_error"]
        held = ", ".join(_short(c["name"]) for c in row["checks"] if c["holds"])
        print(
            f"| {label} | {cfg.ae_batch_size} × {epochs} | {row['ae_steps']:.0f} "
            f"({'plateau' if row['ae_plateau'] == 1 else 'cap'}) | {row['dit_steps']:.0f}"
            f"{' (plateau)' if row['dit_plateau'] == 1 else ''} | {wall:.0f} | "
            f"{row['recon_type_acc']:.3f} | {mmd[METHOD]:.4f} | {mmd[GAUSSIAN]:.4f} | "
            f"{mmd[MLP]:.4f} | {mmd[SCVI]:.4f} | {corr[METHOD]:.3f} / {corr[MLP]:.3f} | "
            f"{row['type_acc']['w1']:.3f} | {row['type_acc']['w2']:.3f} | {held or 'none'} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
