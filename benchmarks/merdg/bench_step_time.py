"""Step time of fusion + MER against plain fusion and against SimMMDG's SupCon term.

One training step (forward, backward, Adam) of the late-fusion model on random inputs,
for batch 16/64/256, projection width D 32/128 and M 2/3 modalities; side by side in one
process: the three steps of a size are interleaved round by round (so contention on a
shared machine hits them alike) and timed by this thread's CPU time (wall time beside
it), medians over repeats, one torch thread. Ratios: (fusion + MER) / fusion and
(fusion + SupCon) / fusion. The variance floor is also timed against ``lightly``'s VICReg
variance term when that library is installed (equal within 1e-6 is asserted).

    uv run python benchmarks/merdg/bench_step_time.py [--repeats 30] [--out results/merdg/bench]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from icml26.merdg import MERConfig, ModelConfig, MultimodalNet, mer_penalty, supcon_loss
from icml26.merdg.mer import _variance_floor, variance_floor_loss


def _step_fn(model, opt, xs, y, kind):
    def step():
        emb = model.embed(xs)
        loss = F.cross_entropy(model.logits_from(emb), y)
        if kind != "fusion":
            z = [p(e) for p, e in zip(model.proj, emb, strict=True)]
            if kind == "fusion+mer":
                loss = loss + mer_penalty(z, MERConfig())
            else:  # SimMMDG's SupCon term on L2-normalised projections
                loss = loss + 3.0 * supcon_loss(
                    torch.stack([F.normalize(v, dim=1) for v in z], 1), y
                )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def _median_time(fn, repeats: int) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.thread_time()
        fn()
        times.append(time.thread_time() - t0)
    return float(np.median(times))


def _interleaved(fns: dict, repeats: int) -> tuple[dict[str, float], dict[str, float]]:
    """Median thread-CPU and wall seconds per call of each function, calls interleaved."""
    for fn in fns.values():
        for _ in range(3):
            fn()
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    wall: dict[str, list[float]] = {k: [] for k in fns}
    names = list(fns)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:  # rotate the order
            c0, w0 = time.thread_time(), time.perf_counter()
            fns[name]()
            cpu[name].append(time.thread_time() - c0)
            wall[name].append(time.perf_counter() - w0)
    return (
        {k: float(np.median(v)) for k, v in cpu.items()},
        {k: float(np.median(v)) for k, v in wall.items()},
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--out", default="results/merdg/bench")
    p.add_argument("--floor-only", action="store_true", help="only the floor vs lightly")
    args = p.parse_args()
    torch.set_num_threads(1)
    rows = []
    for m in () if args.floor_only else (2, 3):
        for d in (32, 128):
            for n in (16, 64, 256):
                g = torch.Generator().manual_seed(0)
                xs = [torch.randn(n, 32, generator=g) for _ in range(m)]
                y = torch.randint(0, 6, (n,), generator=g)
                cfg = ModelConfig(proj_dim=d, proj_hidden=max(64, d), embed_dim=32)
                fns = {}
                for kind in ("fusion", "fusion+mer", "fusion+supcon"):
                    torch.manual_seed(0)
                    model = MultimodalNet([32] * m, 6, "fusion", cfg)
                    opt = torch.optim.Adam(model.parameters(), 1e-3)
                    fns[kind] = _step_fn(model, opt, xs, y, kind)
                t, w = _interleaved(fns, args.repeats)
                rows.append(
                    {
                        "M": m, "D": d, "batch": n,
                        "fusion_ms": 1e3 * t["fusion"],
                        "mer_ratio": t["fusion+mer"] / t["fusion"],
                        "supcon_ratio": t["fusion+supcon"] / t["fusion"],
                        "mer_ratio_wall": w["fusion+mer"] / w["fusion"],
                        "supcon_ratio_wall": w["fusion+supcon"] / w["fusion"],
                    }
                )  # fmt: skip
    floor = {}
    try:
        from lightly.loss.vicreg_loss import variance_loss
    except ImportError:
        floor["lightly"] = "not installed"
    else:
        for n, d in ((16, 32), (64, 32), (256, 128)):
            z = torch.randn(n, d, generator=torch.Generator().manual_seed(1))
            # interleaved repeats, so contention hits both alike
            ours, kernel, theirs = [], [], []
            for _ in range(5):
                ours.append(_median_time(lambda z=z: variance_floor_loss(z), args.repeats))
                kernel.append(_median_time(lambda z=z: _variance_floor(z), args.repeats))
                theirs.append(_median_time(lambda z=z: variance_loss(z, eps=1e-4), args.repeats))
            diff = abs(float(variance_floor_loss(z)) - float(variance_loss(z, eps=1e-4)))
            assert diff < 1e-6, diff
            floor[f"N={n},D={d}"] = {
                "abs_diff": diff,
                "lightly_us": 1e6 * float(np.median(theirs)),
                "checked_ratio": float(np.median(ours) / np.median(theirs)),
                "kernel_ratio": float(np.median(kernel) / np.median(theirs)),
            }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "step_time.json").write_text(json.dumps({"rows": rows, "floor": floor}, indent=2))
    print(
        "| M | D | batch | fusion step (CPU ms) | +MER ratio (CPU) | +SupCon ratio (CPU) "
        "| +MER ratio (wall) |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['M']} | {r['D']} | {r['batch']} | {r['fusion_ms']:.2f} | "
            f"{r['mer_ratio']:.2f} | {r['supcon_ratio']:.2f} | {r['mer_ratio_wall']:.2f} |"
        )
    print("variance floor vs lightly (checked = the public function with its input checks,")
    print("kernel = the unchecked term the training loop calls):")
    for k, v in floor.items():
        print(f"  {k}: {v}")


if __name__ == "__main__":
    main()
