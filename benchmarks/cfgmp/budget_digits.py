"""Budget study of the learned test bed: training budget -> loss plateau and the claim metric.

Trains the digits flow model with the plateau rule (and at fixed step counts), then
samples CFG and CFG-MP+ at a few guidance scales and reports the Fréchet distance in
the digits classifier's feature space and the class accuracy, with CPU seconds.

    python benchmarks/cfgmp/budget_digits.py [--seed 0] [--hidden 128] [--fixed 1500,4000]
"""

from __future__ import annotations

import argparse
import time

import torch

from icml26.cfgmp import ConditionalVelocityMLP, FlowNetConfig, cfg, cfg_mp_plus, sample
from icml26.cfgmp.data import load_digits_data
from icml26.cfgmp.metrics import frechet_distance
from icml26.cfgmp.models.classifier import train_classifier
from icml26.cfgmp.models.flownet import train_flow_matching
from icml26.shared import torch_generator, torch_threads


def evaluate(net, clf, real, scales, per_class, seed):
    labels = torch.arange(10).repeat_interleave(per_class)
    noise = torch.randn(len(labels), 64, generator=torch_generator(seed, "digits", "noise"))
    out = {}
    for w in scales:
        for name, g, steps in (
            ("CFG", cfg(w), 10),
            ("CFG@44", cfg(w), 22),
            ("CFG-MP+", cfg_mp_plus(w), 10),
        ):
            x = sample(net, noise, labels, g, steps=steps).x.clamp(-1, 1)
            with torch.no_grad():
                f = clf.features(x).numpy()
                acc = float((clf(x).argmax(1) == labels).float().mean())
            out[(name, w)] = (frechet_distance(f, real), acc)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--window", type=int, default=250)
    ap.add_argument("--patience", type=int, default=3)
    ap.add_argument("--cap", type=int, default=20000)
    ap.add_argument("--fixed", default="")
    ap.add_argument("--scales", default="1,2,4,7,10,15")
    ap.add_argument("--per-class", type=int, default=50)
    args = ap.parse_args()
    scales = [float(s) for s in args.scales.split(",")]
    with torch_threads(1):
        data = load_digits_data(seed=0)
        clf = train_classifier(
            data.x_train, data.y_train, generator=torch_generator(0, "classifier")
        )
        with torch.no_grad():
            real = clf.features(data.x_test).numpy()
        budgets = [("plateau", None)] + [(f"fixed {n}", int(n)) for n in args.fixed.split(",") if n]
        for tag, fixed in budgets:
            gen = torch_generator(args.seed, "digits", "init")
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
                net = ConditionalVelocityMLP(
                    FlowNetConfig(64, 10, hidden=args.hidden, depth=args.depth)
                )
            t0 = time.process_time()
            losses = train_flow_matching(
                net,
                data.x_train,
                data.y_train,
                steps=fixed or args.cap,
                batch_size=args.batch,
                lr=args.lr,
                generator=torch_generator(args.seed, "digits", "train"),
                plateau_window=None if fixed else args.window,
                patience=args.patience,
            )
            train_s = time.process_time() - t0
            w = args.window
            tail = sum(losses[-w:]) / min(w, len(losses))
            t0 = time.process_time()
            res = evaluate(net, clf, real, scales, args.per_class, args.seed)
            eval_s = time.process_time() - t0
            print(
                f"{tag}: {len(losses)} steps, last-window loss {tail:.4f}, "
                f"train {train_s:.1f} s, eval {eval_s:.1f} s (CPU)"
            )
            for name in ("CFG", "CFG@44", "CFG-MP+"):
                cells = "  ".join(
                    f"w={w:g}: {res[(name, w)][0]:6.1f}/{res[(name, w)][1]:.2f}" for w in scales
                )
                print(f"   {name:8s} FD/acc  {cells}")


if __name__ == "__main__":
    main()
