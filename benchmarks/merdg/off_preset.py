"""Off-preset rechecks of the smoke claim: other seeds, ρ, code amplitude, M = 3.

The smoke preset's training and sizes, 4 leave-one-domain-out splits, on seeds that the
smoke table does not use (default 3 and 4); one simulator knob changed per variant:

- ``preset``: the smoke simulator itself (other seeds only);
- ``rho=0.8``: a weaker co-occurrence in the source domains;
- ``amplitude=2``: a smaller code amplitude κ (2σ instead of 3σ);
- ``M=3``: three modalities (the code is shared by every pair with modality 0).

Methods: fusion, fusion + MER and the unimodal ensemble (``--simmmdg`` adds SimMMDG
and SimMMDG + MER; ``--mbcd`` adds MBCD on the variants named by ``--mbcd-variants``,
default the preset simulator only, since MBCD trains one run at a time).
``--variants`` picks a subset of the variants. Per variant: split-averaged last-epoch
target accuracy (mean ± sd over seeds), the paired gain of fusion + MER over fusion,
its margin over the unimodal ensemble, and the source-validation gap. CPU time is printed.

    uv run python benchmarks/merdg/off_preset.py
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.merdg.reproduce import PRESETS, Cell, run_cells
from icml26.merdg.train import METHODS
from icml26.shared import torch_threads


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[3, 4])
    p.add_argument("--targets", type=int, nargs="+", default=[0, 1, 2, 3])
    p.add_argument("--simmmdg", action="store_true")
    p.add_argument("--mbcd", action="store_true", help="add MBCD (reconstructed)")
    p.add_argument("--mbcd-variants", nargs="+", default=["preset"])
    p.add_argument("--variants", nargs="+", default=None, help="default: all four")
    p.add_argument("--epochs", type=int, default=None, help="cap (default: the preset's)")
    p.add_argument("--out", default="results/merdg/off_preset")
    args = p.parse_args()
    base = replace(PRESETS["smoke"], probe_methods=())
    if args.epochs is not None:
        base = replace(base, train=replace(base.train, epochs=args.epochs))
    variants = {
        "preset": (base.sim, (0, 1)),
        "rho=0.8": (replace(base.sim, rho=0.8), (0, 1)),
        "amplitude=2": (replace(base.sim, amplitude=2.0), (0, 1)),
        "M=3": (replace(base.sim, n_modalities=3), (0, 1, 2)),
    }
    if args.variants is not None:
        unknown = set(args.variants) - set(variants)
        if unknown:
            raise SystemExit(f"unknown variants {sorted(unknown)}; choose from {list(variants)}")
        variants = {k: v for k, v in variants.items() if k in args.variants}
    methods = ["fusion", "fusion+mer", "unimodal"]
    if args.simmmdg:
        methods += ["simmmdg", "simmmdg+mer"]
    extra = {"mbcd": set(args.mbcd_variants) & set(variants)} if args.mbcd else {}
    acc: dict = {}  # variant -> method -> metric -> [per-seed split means]
    t0 = time.process_time()
    with torch_threads(1):
        for seed in args.seeds:
            cells = [
                Cell(t, mods, METHODS[m], sim)
                for name, (sim, mods) in variants.items()
                for t in args.targets
                for m in methods + [e for e, where in extra.items() if name in where]
            ]
            recs = run_cells(base, seed, cells)
            for name, (sim, mods) in variants.items():
                for m in methods + [e for e, where in extra.items() if name in where]:
                    sel = [
                        r
                        for c, r in zip(cells, recs, strict=True)
                        if c.sim == sim and c.modalities == mods and c.method.name == m
                    ]
                    ok = [r for r in sel if "target_acc" in r]
                    cell = acc.setdefault(name, {}).setdefault(m, {"target": [], "val": []})
                    cell["target"].append(100 * float(np.mean([r["target_acc"] for r in ok])))
                    cell["val"].append(100 * float(np.mean([r["val_acc"] for r in ok])))
            print(f"seed {seed} done, {time.process_time() - t0:.0f} CPU-s", flush=True)
    cpu = time.process_time() - t0
    rows = []
    shown = methods + list(extra)
    print("| variant | " + " | ".join(shown) + " | MER − fusion | MER − unimodal | val gap |")
    print("|---|" + "---|" * (len(shown) + 3))
    for name, cells in acc.items():
        t = {m: np.array(cells[m]["target"]) for m in shown if m in cells}
        gain = t["fusion+mer"] - t["fusion"]
        uni = t["fusion+mer"] - t["unimodal"]
        val = np.array(cells["fusion+mer"]["val"]) - np.array(cells["fusion"]["val"])

        def ms(v):
            return f"{v.mean():.1f} ± {v.std(ddof=1) if len(v) > 1 else 0.0:.1f}"

        print(
            f"| {name} | "
            + " | ".join(ms(t[m]) if m in t else "–" for m in shown)
            + f" | {ms(gain)} | {ms(uni)} | {ms(val)} |"
        )
        rows.append({"variant": name, **{m: v.tolist() for m, v in t.items()}})
    print(f"\nseeds {args.seeds}; {cpu:.0f} CPU-s in all")
    path = Path(args.out)
    path.mkdir(parents=True, exist_ok=True)
    (path / "off_preset.json").write_text(
        json.dumps({"seeds": args.seeds, "rows": rows, "cpu_seconds": cpu}, indent=2)
    )


if __name__ == "__main__":
    main()
