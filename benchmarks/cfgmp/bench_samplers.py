"""Samplers side by side: samples/s and NFE per sample; diffusers guiders as peers; the
cost of Anderson acceleration.

Three tables, each measured in one run on the same inputs:

1. every sampler (CFG, CFG-Zero*, APG, CFG-MP, CFG-MP+, CFG at CFG-MP's NFE) on the
   exact mixture velocity and on a digits-sized MLP: wall time, samples/s, NFE per
   sample, and the time ratio to CFG;
2. our guidance rules against diffusers' guiders (``diffusers.guiders``) plugged into
   the same Euler loop: time ratio and the largest difference of the samples;
3. Anderson's overhead per iteration (weights + mixing, both official solvers)
   against a Picard update, on DiT- and SD3-sized latents.

Usage: python benchmarks/cfgmp/bench_samplers.py [--quick] [--threads 1] [--out DIR]

Timings are wall-clock minima over repeats with ``--threads`` intra-op threads (1 by
default: the tensors are small and extra threads only spin on a loaded CPU).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from threadpoolctl import threadpool_limits

from icml26.cfgmp import (
    ConditionalVelocityMLP,
    FlowNetConfig,
    anderson_mix,
    anderson_weights,
    apg,
    cfg,
    cfg_mp,
    cfg_mp_plus,
    cfg_zero_star,
    ring_mixture,
    sample,
)
from icml26.cfgmp.guidance import Guider


def _time(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


class DiffusersRule:
    """A diffusers guider used as a guidance rule of our sampler (the peer)."""

    def __init__(self, guider, steps: int, on_data: bool = False):
        self.guider, self.steps, self.on_data = guider, steps, on_data
        self.scale = guider.guidance_scale

    def mode(self, step, t):
        return "both"  # diffusers evaluates both predictions at every step

    def init_state(self):
        return 0

    def combine(self, v_c, v_u, x, t, state):
        self.guider.set_state(step=state, num_inference_steps=self.steps, timestep=torch.tensor(t))
        if state == 0 and getattr(self.guider, "adaptive_projected_guidance_momentum", None):
            # APG creates its momentum buffer in prepare_inputs() at step 0
            from diffusers.guiders.adaptive_projected_guidance import MomentumBuffer

            self.guider.momentum_buffer = MomentumBuffer(
                self.guider.adaptive_projected_guidance_momentum
            )
        if self.on_data:
            s = 1.0 - t
            out = self.guider.forward(x + s * v_c, x + s * v_u).pred
            return (out - x) / s, state + 1
        return self.guider.forward(v_c, v_u).pred, state + 1


def table_samplers(repeats: int, quick: bool) -> list[dict]:
    rows = []
    torch.manual_seed(0)
    net = ConditionalVelocityMLP(FlowNetConfig(64, 10)).eval()
    flow = ring_mixture(8)
    setups = {
        "mixture (exact, 2-D)": (
            flow,
            torch.randn(1024 if quick else 4096, 2, dtype=torch.float64),
        ),
        "MLP (64-D digits net)": (net, torch.randn(250 if quick else 1000, 64)),
    }
    w = 4.0
    guiders: dict[str, Guider] = {
        "CFG": cfg(w),
        "CFG-Zero*": cfg_zero_star(w),
        "APG": apg(w, norm_threshold=4.0),
        "CFG-MP (K=2)": cfg_mp(w, 2),
        "CFG-MP+ (K=2)": cfg_mp_plus(w, 2),
        "CFG-MP+ (K=3, lstsq)": cfg_mp_plus(w, 3, solver="lstsq"),
    }
    for setup, (model, noise) in setups.items():
        labels = torch.arange(noise.shape[0]) % (8 if noise.shape[1] == 2 else 10)
        base = None
        for name, g in [*guiders.items(), ("CFG (22 steps)", cfg(w))]:
            steps = 22 if name.startswith("CFG (22") else 10
            sec, res = _time(
                lambda m=model, x=noise, y=labels, g=g, s=steps: sample(m, x, y, g, steps=s),
                repeats,
            )
            base = base or sec
            rows.append(
                {
                    "setup": setup,
                    "sampler": name,
                    "seconds": sec,
                    "samples_per_s": noise.shape[0] / sec,
                    "nfe_per_sample": res.nfe,
                    "model_calls": res.model_calls,
                    "time_vs_cfg": sec / base,
                }
            )
    return rows


def table_peers(repeats: int, quick: bool) -> list[dict]:
    try:
        from diffusers.guiders import (
            AdaptiveProjectedGuidance,
            ClassifierFreeGuidance,
            ClassifierFreeZeroStarGuidance,
        )
    except ImportError:
        return [
            {
                "peer": "diffusers not installed",
                "rule": "",
                "time_ratio": None,
                "max_abs_diff": None,
            }
        ]
    flow = ring_mixture(8)
    noise = torch.randn(1024 if quick else 4096, 2, dtype=torch.float64)
    labels = torch.arange(noise.shape[0]) % 8
    w, steps = 4.0, 10
    pairs = [
        ("CFG", cfg(w), ClassifierFreeGuidance(guidance_scale=w), False),
        # diffusers zero-inits by outputting 0 but still evaluates the model (2 NFEs)
        ("CFG-Zero*", cfg_zero_star(w), ClassifierFreeZeroStarGuidance(guidance_scale=w), False),
        # APG of the paper = diffusers' original formulation with scale w − 1, on D = x + (1 − t)v
        (
            "APG (on data prediction)",
            apg(w, norm_threshold=4.0),
            AdaptiveProjectedGuidance(
                guidance_scale=w - 1,
                adaptive_projected_guidance_momentum=-0.5,
                adaptive_projected_guidance_rescale=4.0,
                eta=0.0,
                use_original_formulation=True,
            ),
            True,
        ),
    ]
    rows = []
    for name, ours, peer, on_data in pairs:
        t_ours, r_ours = _time(lambda g=ours: sample(flow, noise, labels, g, steps=steps), repeats)
        peer_guider = Guider(DiffusersRule(peer, steps, on_data), None, "diffusers")
        t_peer, r_peer = _time(
            lambda g=peer_guider: sample(flow, noise, labels, g, steps=steps), repeats
        )
        rows.append(
            {
                "rule": name,
                "peer": f"diffusers {type(peer).__name__}",
                "ours_s": t_ours,
                "peer_s": t_peer,
                "time_ratio": t_ours / t_peer,
                "nfe_ours": r_ours.nfe,
                "nfe_peer": r_peer.nfe,
                "max_abs_diff": float((r_ours.x - r_peer.x).abs().max()),
            }
        )
    return rows


def table_anderson(repeats: int, quick: bool) -> list[dict]:
    shapes = {
        "DiT-XL-2-256 latents (8x4x32x32)": (8, 4 * 32 * 32),
        "SD3.5 1024px latents (2x16x128x128)": (2, 16 * 128 * 128),
    }
    if quick:
        shapes = dict(list(shapes.items())[:1])
    rows = []
    for name, (b, d) in shapes.items():
        z = torch.randn(b, 2, d)
        g = torch.randn(b, 2, d)
        t_picard, _ = _time(lambda g=g: g[:, -1].clone(), repeats * 5)
        for solver in ("gram", "lstsq"):

            def step(solver=solver, z=z, g=g):
                return anderson_mix(z, g, anderson_weights(g - z, solver=solver), 1.0)

            t_aa, _ = _time(step, repeats * 5)
            rows.append(
                {
                    "latents": name,
                    "solver": solver,
                    "anderson_ms": 1e3 * t_aa,
                    "picard_ms": 1e3 * t_picard,
                    "overhead_ms": 1e3 * (t_aa - t_picard),
                }
            )
    return rows


def _markdown(title: str, rows: list[dict]) -> str:
    if not rows:
        return ""
    keys = list(rows[0])

    def fmt(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    lines = [f"### {title}", "", "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(fmt(r.get(k)) for k in keys) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples and repeats")
    parser.add_argument("--threads", type=int, default=1, help="torch/BLAS threads")
    parser.add_argument("--out", default="results/cfgmp/bench")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else 3
    torch.set_grad_enabled(False)
    torch.set_num_threads(args.threads)
    threadpool_limits(limits=args.threads)
    try:  # diffusers warns that its guiders are experimental, once per guider
        from diffusers.utils import logging as diffusers_logging

        diffusers_logging.set_verbosity_error()
    except ImportError:
        pass
    tables = {
        "samplers (w = 4, N = 10)": table_samplers(repeats, args.quick),
        "ours vs diffusers guiders (mixture, w = 4)": table_peers(repeats, args.quick),
        "Anderson cost per iteration (m = 1)": table_anderson(repeats, args.quick),
    }
    md = f"threads: {args.threads}; device: cpu\n\n" + "\n".join(
        _markdown(k, v) for k, v in tables.items()
    )
    print(md)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "samplers.json").write_text(json.dumps(tables, indent=2))
    (out / "samplers.md").write_text(md)
    print(f"written to {out}/samplers.json and samplers.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
