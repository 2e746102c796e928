"""PRISM vs PRISM-less at the same size: pseudo-log-likelihood throughput and training speed.

Both models share the backbone; PRISM adds the origin head, the conditioning, the
α-gate and the 53-way output. Measured in one run on the same simulated sequences:

- PLL throughput (sequences/s, every residue masked once, positions batched);
- the batched PLL against the one-position-at-a-time loop (same model, same input);
- training throughput (tokens/s) with the fine-tuning losses.

    python benchmarks/prism/bench_throughput.py [--quick] [--size tiny|35m] [--device cpu|cuda]

Writes results/prism/bench/throughput.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml26.prism import (
    ModelConfig,
    TrainConfig,
    build_model,
    pseudo_log_likelihood,
    pseudo_log_likelihood_loop,
    simulate_repertoire,
    train,
)


def timed(fn, repeats: int = 1) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sequences and steps")
    ap.add_argument("--size", choices=("tiny", "35m"), default="tiny")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--out", default="results/prism/bench")
    ap.add_argument(
        "--threads", type=int, default=1, help="CPU intra-op threads (1 avoids OpenMP spinning)"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    n_seq = 4 if args.quick else 16
    steps = 5 if args.quick else 30
    _, rep = simulate_repertoire(np.random.default_rng(0), 40, 2)
    seqs = rep.cased()[:n_seq]
    size = ModelConfig.tiny if args.size == "tiny" else ModelConfig.esm2_35m
    rows = []
    models = {}
    for kind in ("prism", "prismless"):
        torch.manual_seed(0)
        models[kind] = build_model(size(kind=kind)).to(args.device).eval()
    for kind, model in models.items():
        with torch.no_grad():
            pseudo_log_likelihood(model, seqs[:1])  # warm-up
            t_batched = timed(lambda m=model: pseudo_log_likelihood(m, seqs, batch_size=256), 2)
            t_loop = timed(lambda m=model: pseudo_log_likelihood_loop(m, seqs[0]))
        cfg = TrainConfig.finetune(steps=steps, batch_size=32, warmup_steps=1, grad_accumulation=1)
        torch.manual_seed(0)
        fresh = build_model(size(kind=kind))
        res = train(fresh, rep, cfg, device=args.device)
        rows.append(
            {
                "model": "PRISM" if kind == "prism" else "PRISM-less",
                "parameters": model.num_parameters(),
                "pll_seq_per_s": n_seq / t_batched,
                "loop_seq_per_s": 1.0 / t_loop,
                "batched_speedup": (n_seq / t_batched) / (1.0 / t_loop),
                "train_tokens_per_s": res.tokens_per_second,
            }
        )
    p, pl = rows
    ratios = {
        "pll_throughput_prism_over_prismless": p["pll_seq_per_s"] / pl["pll_seq_per_s"],
        "train_throughput_prism_over_prismless": (
            p["train_tokens_per_s"] / pl["train_tokens_per_s"]
        ),
    }
    head = (
        "| model | params | PLL seq/s (batched) | PLL seq/s (loop) | batched/loop "
        "| train tokens/s |"
    )
    lines = [head, "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['parameters']:,} | {r['pll_seq_per_s']:.2f} | "
            f"{r['loop_seq_per_s']:.2f} | {r['batched_speedup']:.1f}× | "
            f"{r['train_tokens_per_s']:,.0f} |"
        )
    lines.append("")
    lines.append(
        f"PRISM / PRISM-less: PLL throughput {ratios['pll_throughput_prism_over_prismless']:.2f}×, "
        f"training throughput {ratios['train_throughput_prism_over_prismless']:.2f}×"
    )
    lines.append(
        f"({args.size} models, {args.device}, {n_seq} sequences of "
        f"~{np.mean([len(s) for s in seqs]):.0f} residues)"
    )
    table = "\n".join(lines)
    print(table)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    payload = {
        "size": args.size,
        "device": args.device,
        "quick": args.quick,
        "rows": rows,
        "ratios": ratios,
    }
    (out / "throughput.json").write_text(json.dumps(payload, indent=2))
    (out / "throughput.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
