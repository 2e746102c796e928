"""Per-example-gradient DP-GD steps per second: ours against opacus on the same CNN.

Both take the full-batch clipped step W ← W − η((1/n) Σ clip_C(∇ℓ_i) + N(0, (zC/n)² I)) on
the two-layer ReLU³ CNN (opacus wraps ``TwoLayerCNN``, one ``nn.Linear`` over the patches,
through ``PrivacyEngine.make_private`` with a full-batch loader); with z = 0 both must
reach the same weights (checked). Ours runs the fused closed-form engine and the generic
``torch.func.vmap(grad)`` engine. Wall and CPU time per step, one torch thread, ratios
measured side by side in one process.

    uv run python benchmarks/dpfeature/bench_opacus.py --out results/dpfeature/bench
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import torch

from icml26.dpfeature import TrainConfig, TwoLayerCNN, init_weights, make_multipatch, stack, train
from icml26.shared import quiet_dependencies, torch_threads


def _opacus_steps(x, y, w0, steps, eta, clip, z):
    from opacus import PrivacyEngine

    net = TwoLayerCNN.from_weights(w0)
    opt = torch.optim.SGD(net.parameters(), lr=eta)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, y), batch_size=len(x), shuffle=False
    )
    engine = PrivacyEngine(accountant="prv")
    net, opt, loader = engine.make_private(
        module=net,
        optimizer=opt,
        data_loader=loader,
        noise_multiplier=z,
        max_grad_norm=clip,
        poisson_sampling=False,
    )
    xb, yb = next(iter(loader))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.softplus(-yb * net(xb)).mean()
        loss.backward()
        opt.step()

    step()  # warm-up (hooks, allocations)
    net2 = net._module if hasattr(net, "_module") else net
    with torch.no_grad():
        net2.filters.weight.copy_(w0.reshape(-1, w0.shape[-1]))
    w_start, c_start = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    wall, cpu = time.perf_counter() - w_start, time.process_time() - c_start
    return net2.weights().clone(), wall / steps, cpu / steps


def _ours(x, y, mu, noise, w0, steps, eta, clip, engine, z_is_zero):
    from icml26.dpfeature.data import MultiPatch

    data = stack([MultiPatch(x, y, mu, noise, torch.zeros(len(x), dtype=torch.long), 1.0)])
    cfg = TrainConfig(
        method="dp_gd",
        epsilon=4.0,
        steps=steps,
        eta=eta,
        clip=clip,
        engine=engine,
        window=10 * steps,
        record_every=10 * steps,
        z=0.0 if z_is_zero else 34.19,
    )
    train(data, w0[None], TrainConfig(steps=1, engine=engine))  # warm-up
    w_start, c_start = time.perf_counter(), time.process_time()
    res = train(data, w0[None], cfg, generator=torch.Generator().manual_seed(0))
    wall, cpu = time.perf_counter() - w_start, time.process_time() - c_start
    return res.w[0], wall / steps, cpu / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("results/dpfeature/bench"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with torch_threads(1), quiet_dependencies(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n, d in ((40, 2000), (200, 2000), (40, 10_000), (200, 10_000)):
            g = torch.Generator().manual_seed(0)
            data = make_multipatch(n, d, 16.0, generator=g)
            w0 = init_weights(10, d, 0.01, generator=g)
            z = 34.19  # ε = 4 at T = 1000, δ = 1e-5
            _, t_wall, t_cpu = _opacus_steps(data.x, data.y, w0, args.steps, 0.5, 1.0, z)
            row = {"n": n, "d": d, "opacus_ms": 1e3 * t_wall, "opacus_cpu_ms": 1e3 * t_cpu}
            for engine in ("fused", "vmap"):
                _, o_wall, o_cpu = _ours(
                    data.x, data.y, data.mu, data.noise, w0, args.steps, 0.5, 1.0, engine, False
                )
                row[f"ours_{engine}_ms"] = 1e3 * o_wall
                row[f"ours_{engine}_cpu_ms"] = 1e3 * o_cpu
                row[f"speedup_{engine}_cpu"] = t_cpu / o_cpu
            # equality at z = 0 (no noise): 5 clipped steps from the same W⁽⁰⁾
            w_op, _, _ = _opacus_steps(data.x, data.y, w0, 5, 0.5, 1.0, 0.0)
            w_us, _, _ = _ours(data.x, data.y, data.mu, data.noise, w0, 5, 0.5, 1.0, "fused", True)
            row["max_abs_weight_gap_z0"] = float((w_op - w_us).abs().max())
            rows.append(row)
            print(json.dumps(row), flush=True)
    (args.out / "bench_opacus.json").write_text(json.dumps(rows, indent=1))
    lines = [
        "| n | d | opacus CPU ms/step | ours fused | ours vmap | speed-up fused | speed-up vmap "
        "| max weight gap at z = 0 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['d']} | {r['opacus_cpu_ms']:.1f} | {r['ours_fused_cpu_ms']:.1f} | "
            f"{r['ours_vmap_cpu_ms']:.1f} | {r['speedup_fused_cpu']:.1f}× | "
            f"{r['speedup_vmap_cpu']:.1f}× | {r['max_abs_weight_gap_z0']:.1e} |"
        )
    (args.out / "bench_opacus.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
