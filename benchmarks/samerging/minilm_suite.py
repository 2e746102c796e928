"""The MiniLM suite at a CPU scale: full and PEFT LoRA experts on all-MiniLM-L6-v2.

Three template tasks (``MINILM_CPU``: 256 / 64 / 128 train / val / test sentences each),
heads fitted on the frozen base and never merged, experts stopped by their training-loss
plateau (the cap is far above it), then every merger of ``run_minilm``: task arithmetic
and TIES (λ on validation), SA-Merging (T = 10 and T = 1, λ = 1 and λ on validation),
magnitude × consensus, the LoRA mergers (rank-wise, element-wise, LoRA task arithmetic)
and peft's ``add_weighted_adapter`` (ties). ``--literal`` adds the literal sign reading,
``--peft ties cat`` more peft combinations. Needs the ``minilm`` extra. Prints a table
(mean ± sd over the seeds); ``--out`` writes JSON, rewritten after every seed.

    python benchmarks/samerging/minilm_suite.py --seeds 0 1 2 [--out minilm.json]
        [--save-experts experts/]   # keep the experts for minilm_peers.py
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np

from icml26.samerging.reproduce import MINILM_CPU, PRESETS, run_minilm
from icml26.shared import quiet_dependencies, torch_threads


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[100])
    ap.add_argument("--literal", action="store_true", help="add the literal sign reading")
    ap.add_argument("--peft", nargs="*", help="peft combinations (default: MINILM_CPU's)")
    ap.add_argument("--cap", type=int, help="experts' step cap (default: MiniLMConfig's)")
    ap.add_argument("--sizes", type=int, nargs=3, help="train, val, test sentences per task")
    ap.add_argument("--out", type=Path)
    ap.add_argument(
        "--save-experts", type=Path, help="keep each seed's experts in DIR/seed<k>/ (full, lora)"
    )
    ap.add_argument(
        "--experts-only", action="store_true",
        help="train and keep the full experts only (needs --save-experts; no merges)",
    )  # fmt: skip
    ap.add_argument(
        "--render", type=Path, nargs="+",
        help="print the tables of JSONs written by --out (runs of other seeds merged)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    if args.render:
        data = merge_runs([json.loads(p.read_text()) for p in args.render])
        print(f"seeds done {data['done']}; CPU per seed (s) {data['cpu_per_seed_s']}")
        render(data)
        return
    if args.experts_only and not args.save_experts:
        ap.error("--experts-only needs --save-experts")
    mc = replace(MINILM_CPU, literal=args.literal)
    if args.peft is not None:
        mc = replace(mc, peft=tuple(args.peft))
    if args.cap:
        mc = replace(
            mc, expert=replace(mc.expert, cap=args.cap), lora=replace(mc.lora, cap=args.cap)
        )
    if args.sizes:
        mc = replace(mc, sizes=tuple(args.sizes))
    config = PRESETS["smoke"]
    per: dict = defaultdict(lambda: defaultdict(list))
    stops: list[dict] = []
    t0, c0 = time.perf_counter(), time.process_time()
    seed_cpu: dict[int, float] = {}
    with torch_threads(1), quiet_dependencies():
        for seed in args.seeds:
            c1 = time.process_time()
            save = args.save_experts / f"seed{seed}" if args.save_experts else None
            rows, records = run_minilm(
                mc, config, seed, save_dir=save, experts_only=args.experts_only
            )
            seed_cpu[seed] = time.process_time() - c1
            stops += records
            for r in rows:
                for name, stat in r.metrics.items():
                    per[(r.group, r.method)][name].append(stat.mean)
            if args.out:
                _write(args.out, args.seeds, seed_cpu, per, stops, t0, c0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"seeds {args.seeds}; wall {wall:.0f} s, CPU {cpu:.0f} s (one torch thread)")
    print(f"CPU per seed (s): {seed_cpu}")
    if args.experts_only:
        for s in stops:
            print(f"seed {s['seed']} {s['suite']} {s['task']}: {s['steps']} steps, {s['reason']}")
        return
    render({"rows": {f"{g} | {m}": dict(v) for (g, m), v in per.items()}, "stopping": stops})


def merge_runs(runs: list[dict]) -> dict:
    """Several ``--out`` JSONs (disjoint seeds) as one: per-seed values concatenated."""
    done, cpu, rows, stops = [], {}, defaultdict(lambda: defaultdict(list)), []
    for data in runs:
        seeds = [int(x) for x in data.get("done", data["seeds"])]
        clash = set(seeds) & set(done)
        if clash:
            raise SystemExit(f"seed(s) {sorted(clash)} appear in more than one run")
        done += seeds
        cpu.update(data.get("cpu_per_seed_s") or {})
        for key, metrics in data["rows"].items():
            for name, values in metrics.items():
                rows[key][name] += values
        stops += data["stopping"]
    rows = {k: dict(v) for k, v in rows.items()}
    return {"done": done, "cpu_per_seed_s": cpu, "rows": rows, "stopping": stops}


def _fmt(v) -> str:
    if not v:
        return ""
    return f"{np.mean(v):.1f} ± {np.std(v, ddof=1) if len(v) > 1 else 0:.1f}"


def render(data: dict, margins=(2.0, 3.0, 1.0, 1.0, 1.0)) -> None:
    """The table (mean ± sd over seeds), the stopping summary and the claim's checks."""
    rows = data["rows"]
    print("| group | method | accuracy (%) | normalised (%) | λ | other |")
    print("|---|---|---|---|---|---|")
    for key, metrics in rows.items():
        group, method = key.split(" | ", 1)
        lam = metrics.get("scale")
        lam = "/".join(f"{x:g}" for x in lam) if lam else ""
        other = ", ".join(
            f"{k} {np.mean(v):.3g}"
            for k, v in metrics.items()
            if k not in ("accuracy", "normalised", "scale")
        )
        acc, norm = _fmt(metrics.get("accuracy")), _fmt(metrics.get("normalised"))
        print(f"| {group} | {method} | {acc} | {norm} | {lam} | {other} |")
    reasons = defaultdict(list)
    for s in data["stopping"]:
        reasons[s["suite"]].append((s["steps"], s["reason"]))
    for suite, v in reasons.items():
        steps = [a for a, _ in v]
        plateau = np.mean([r == "plateau" for _, r in v])
        print(
            f"{suite}: steps {np.mean(steps):.0f} (min {min(steps)}, max {max(steps)}), "
            f"plateau {plateau:.2f} of {len(v)}"
        )

    def acc(method, group="MiniLM full"):
        return float(np.mean(rows[f"{group} | {method}"]["accuracy"]))

    m_ties, m_ta, m_t1, m_mag, m_lora = margins
    sa = acc("SA-Merging")
    spear = rows["MiniLM full | Spearman(structural score, |τ|)"]
    lora = "MiniLM LoRA"
    rw, ew = acc("SA-Merging rank-wise", lora), acc("SA-Merging element-wise", lora)
    max_rank = max(rows["MiniLM LoRA | SA-Merging rank-wise"]["max_rank"])
    checks = [
        (f"SA ≥ TIES + {m_ties:g}", sa >= acc("TIES") + m_ties, f"{sa:.1f} vs {acc('TIES'):.1f}"),
        (f"SA ≥ TA + {m_ta:g}", sa >= acc("Task arithmetic") + m_ta,
         f"{sa:.1f} vs {acc('Task arithmetic'):.1f}"),
        ("SA > base + heads", sa > acc("Base + task heads"),
         f"{sa:.1f} vs {acc('Base + task heads'):.1f}"),
        (f"SA(T=10) ≥ SA(T=1) + {m_t1:g}", sa >= acc("SA-Merging T=1") + m_t1,
         f"{sa:.1f} vs {acc('SA-Merging T=1'):.1f}"),
        (f"SA ≥ mag×cons + {m_mag:g}", sa >= acc("Magnitude × consensus (iterative)") + m_mag,
         f"{sa:.1f} vs {acc('Magnitude × consensus (iterative)'):.1f}"),
        ("Spearman < 0.5 on ≥ half the tensors", np.mean(spear["fraction_below"]) >= 0.5,
         f"fraction {np.mean(spear['fraction_below']):.2f}, median ρ "
         f"{np.mean(spear['median_rho']):.3f}"),
        (f"LoRA rank-wise ≥ element-wise + {m_lora:g}, ranks ≤ r",
         rw >= ew + m_lora and max_rank <= MINILM_CPU.lora_rank,
         f"{rw:.1f} vs {ew:.1f}; max kept rank {max_rank:g}"),
    ]  # fmt: skip
    print("| check | holds | measured |")
    print("|---|---|---|")
    for name, ok, measured in checks:
        print(f"| {name} | {'yes' if ok else 'no'} | {measured} |")


def _write(out: Path, seeds, seed_cpu, per, stops, t0, c0) -> None:
    out.write_text(
        json.dumps(
            {
                "seeds": seeds,
                "done": list(seed_cpu),
                "cpu_per_seed_s": seed_cpu,
                "wall_s": time.perf_counter() - t0,
                "cpu_s": time.process_time() - c0,
                "rows": {f"{g} | {m}": dict(v) for (g, m), v in per.items()},
                "stopping": stops,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
