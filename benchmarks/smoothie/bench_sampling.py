"""Sampling cost per space, masked diffusion and AR decoding; our distance kernel vs torch.cdist.

One untrained denoiser per regime (the cost of sampling does not depend on the weights),
the same network for every method, the same N for every diffusion method. For each regime
(V, L, N): tokens/s (generated tokens per wall second, batch 16) and peak extra memory of the
sampling loop (CUDA: ``max_memory_allocated``; CPU: the largest latent tensor of one step,
B·L·V or B·L·d floats, which is what the Smoothie/simplex latent adds), and the ratios
Smoothie/simplex. The distance kernel ``‖a‖² − 2a·Eᵀ + ‖E‖²`` is timed against
``torch.cdist(a, E)**2`` on the same input and checked to 1e-4 (relative).

No library on PyPI implements Smoothie, TESS or MDLM sampling (the PyPI names ``mdlm`` and
``sedd`` are unrelated projects), so the peers are this package's own baselines on the same
network; the kernel's peer is ``torch.cdist``.

    python benchmarks/smoothie/bench_sampling.py [--quick]

Writes ``results/smoothie/bench/sampling.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from icml26.shared import quiet_dependencies
from icml26.smoothie import (
    ArctanSchedule,
    Autoregressive,
    Denoiser,
    DenoiserConfig,
    MaskedDiffusion,
    SimplexSpace,
    SmoothieSpace,
    pairwise_sq_distances,
    sample,
)


def timed(fn, device):
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    if device == "cuda":
        torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else 0
    return time.perf_counter() - wall, time.process_time() - cpu, peak, out


def regime(v, length, steps, batch, device):
    d = 32
    g = torch.Generator(device=device).manual_seed(0)
    emb = torch.randn(v, d, generator=g, device=device)
    cfg = DenoiserConfig(
        embed_dim=d,
        hidden=32,
        heads=2,
        layers=4,
        encoder_layers=1,
        max_len=length,
        max_src_len=length,
        mlp_ratio=2.0,
    )
    torch.manual_seed(0)
    src = torch.randint(0, v, (batch, length), generator=g, device=device)
    model = Denoiser(cfg).to(device)
    spaces = {
        "Smoothie": SmoothieSpace(ArctanSchedule(sigma_min=0.3, sigma_max=22.0)),
        "simplex": SimplexSpace(),
    }
    rows = {}
    for name, space in spaces.items():
        sample(space, model, emb, length=length, src=src, steps=1, generator=g)  # warm-up
        w, c, peak, _ = timed(
            lambda space=space: sample(
                space, model, emb, length=length, src=src, steps=steps, generator=g
            ),
            device,
        )
        latent = batch * length * space.latent_size(emb) * 4
        rows[name] = {"tokens_per_s": batch * length / w, "cpu_s": c, "peak_bytes": peak or latent}
    if device == "cpu":
        mdlm = MaskedDiffusion(cfg, emb)
        w, c, _, _ = timed(lambda: mdlm.sample(length=length, src=src, steps=steps), device)
        rows["masked diffusion"] = {
            "tokens_per_s": batch * length / w,
            "cpu_s": c,
            "peak_bytes": batch * length * v * 8,
        }
        ar = Autoregressive(cfg, emb)
        w, c, _, _ = timed(lambda: ar.sample(length=length, src=src), device)
        rows["autoregressive"] = {
            "tokens_per_s": batch * length / w,
            "cpu_s": c,
            "peak_bytes": batch * length * v * 4,
        }
    return rows


def kernel(v, n, d, device, repeats=5):
    g = torch.Generator(device=device).manual_seed(1)
    a, e = (
        torch.randn(n, d, generator=g, device=device),
        torch.randn(v, d, generator=g, device=device),
    )
    ours = pairwise_sq_distances(a, e)
    ref = torch.cdist(a, e) ** 2
    err = float(((ours - ref).abs() / ref.abs().clamp_min(1.0)).max())
    t_ours = min(timed(lambda: pairwise_sq_distances(a, e), device)[0] for _ in range(repeats))
    t_ref = min(timed(lambda: torch.cdist(a, e) ** 2, device)[0] for _ in range(repeats))
    return {
        "V": v,
        "rows": n,
        "ours_s": t_ours,
        "cdist_s": t_ref,
        "speedup": t_ref / t_ours,
        "max_rel_err": err,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="V ∈ {250, 8k}, L = 12, N = 10")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default="results/smoothie/bench")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.quick:
        grid = [(v, 12, 10) for v in (250, 8000)]
    else:
        grid = [
            (v, length, n) for v in (250, 8000, 30000) for length in (12, 64) for n in (50, 200)
        ]
    results = {"device": args.device, "regimes": [], "kernel": []}
    with quiet_dependencies():
        for v, length, n in grid:
            rows = regime(v, length, n, 16, args.device)
            ratio_speed = rows["Smoothie"]["tokens_per_s"] / rows["simplex"]["tokens_per_s"]
            ratio_mem = rows["Smoothie"]["peak_bytes"] / rows["simplex"]["peak_bytes"]
            results["regimes"].append(
                {
                    "V": v,
                    "L": length,
                    "N": n,
                    "methods": rows,
                    "smoothie_over_simplex_speed": ratio_speed,
                    "smoothie_over_simplex_memory": ratio_mem,
                }
            )
            print(
                f"V={v} L={length} N={n}: Smoothie/simplex tokens/s {ratio_speed:.2f}, "
                f"memory {ratio_mem:.2f}",
                flush=True,
            )
        for v in (250, 8000) if args.quick else (250, 8000, 30000):
            k = kernel(v, 16 * 12, 32, args.device)
            results["kernel"].append(k)
            print(f"kernel V={v}: {k['speedup']:.2f}× cdist, max rel err {k['max_rel_err']:.1e}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sampling.json").write_text(json.dumps(results, indent=2))
    lines = [
        "| V | L | N | method | tokens/s | CPU s | peak bytes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results["regimes"]:
        for m, s in r["methods"].items():
            lines.append(
                f"| {r['V']} | {r['L']} | {r['N']} | {m} | {s['tokens_per_s']:.0f} | "
                f"{s['cpu_s']:.2f} | {s['peak_bytes']} |"
            )
    (out / "sampling.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
