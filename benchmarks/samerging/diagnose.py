"""Why SA-Merging loses on Digits-8: pruning quality against interference (development seeds).

For the smoke suite (mixed-scale base) on development seeds:

1. *Own-task retention* — each expert's task vector pruned alone (N = 1, so consensus is
   its own sign) to the same density (1 − p)^T by SA-Merging, the literal sign reading,
   magnitude, and SynFlow without consensus; accuracy of ``θ_0 + m_n ⊙ τ_n`` on task n.
   This isolates the pruning criterion from merging.
2. *Kept-vector retention in the merge* — the same with the masks of the N = 8 merge.
3. *λ curve* — test accuracy of ``θ_0 + λ Σ_n m_n ⊙ τ_n`` for each method over λ.

    python benchmarks/samerging/diagnose.py [--seeds 100]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from icml26.samerging.merge import sa_merge
from icml26.samerging.reproduce import PRESETS, _base, _mean_acc, _Suite
from icml26.samerging.suites import accuracy
from icml26.shared import quiet_dependencies, torch_threads

VARIANTS = {
    "SA (sign-aware)": {},
    "SA (literal sign)": {"saliency": "literal"},
    "magnitude × consensus": {"score": "magnitude"},
    "SynFlow without consensus": {"consensus": False},
}
LAMBDAS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[100])
    args = ap.parse_args(argv)
    config = PRESETS["smoke"]
    c0 = time.process_time()
    own, kept, curve = {}, {}, {}
    with torch_threads(1), quiet_dependencies():
        tasks, base, _ = _base(
            config.widths, config.noise, config.data_seed, config.base_seed, config.pretrain
        )
        for seed in args.seeds:
            s = _Suite(base, tasks, config, seed, config.unit_spread)
            b = s.base
            full = s.expert_acc
            for name, opts in VARIANTS.items():
                alone = []
                for ex, h, t in zip(s.experts, s.heads, tasks, strict=True):
                    res = sa_merge(b, [ex], path=s.path, **opts)
                    alone.append(accuracy(res.state_dict, h, t))
                own.setdefault(name, []).append(100 * np.mean(alone))
                res = sa_merge(b, s.experts, path=s.path, **opts)
                ret = [
                    accuracy({k: b[k] + tv[k] for k in b}, h, t)
                    for tv, h, t in zip(res.task_vectors, s.heads, tasks, strict=True)
                ]
                kept.setdefault(name, []).append(100 * np.mean(ret))
                for lam in LAMBDAS:
                    st = {k: b[k] + lam * (res.state_dict[k] - b[k]) for k in b}
                    acc = 100 * _mean_acc(st, s.heads, tasks, "test").mean()
                    curve.setdefault(name, {}).setdefault(lam, []).append(acc)
            own.setdefault("unpruned expert", []).append(100 * full.mean())
            kept.setdefault("unpruned expert", []).append(100 * full.mean())
            base_acc = 100 * _mean_acc(b, s.heads, tasks, "test").mean()
    print(f"seeds {args.seeds}; CPU {time.process_time() - c0:.0f} s; base + heads {base_acc:.1f}")
    print("| criterion | own task, pruned alone (N = 1) | own task, masks of the N = 8 merge |")
    print("|---|---|---|")
    for name in own:
        print(f"| {name} | {np.mean(own[name]):.1f} | {np.mean(kept[name]):.1f} |")
    print("| method | " + " | ".join(f"λ = {x:g}" for x in LAMBDAS) + " |")
    print("|---|" + "---|" * len(LAMBDAS))
    for name, c in curve.items():
        print(f"| {name} | " + " | ".join(f"{np.mean(c[x]):.1f}" for x in LAMBDAS) + " |")


if __name__ == "__main__":
    main()
