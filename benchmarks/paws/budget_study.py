"""Budget study and off-preset check on seeds the smoke preset never used.

At n = 500 preferences (N = 20) and on seeds 10–12 by default: filtered BC, P-IQL-lite,
PAWS and its per-step ablation at the preset's budget, PAWS at n_eff targets 2–50%, and
PAWS with the policy's gradient-step cap cut to 250 / 500 / 1000 (the plateau rule
still applies under the cap). Mean ± sd over the seeds:

    uv run python benchmarks/paws/budget_study.py --seeds 10 11 12
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from icml26.paws import (
    PAWSConfig,
    PointMass,
    PointMassConfig,
    PolicyConfig,
    behaviour_episodes,
    evaluate_policy,
    filtered_bc,
    fit_advantage,
    fit_paws,
    make_preferences,
    normalised_return,
    piql_lite,
    reference_returns,
)
from icml26.shared import numpy_rng, quiet_dependencies


def one_seed(seed: int, n: int, length: int, fractions, caps) -> dict[str, float]:
    env = PointMass(PointMassConfig(period=length))
    episodes = behaviour_episodes(env, 200, numpy_rng(seed, "behaviour"))
    starts = env.starts(50, numpy_rng(seed, "eval-starts"))
    refs = reference_returns(env, starts, seed)

    def score(act) -> float:
        return normalised_return(evaluate_policy(act, env, starts).mean, *refs)

    pairs = make_preferences(episodes, n, length, numpy_rng(seed, "prefs", n))
    adv = fit_advantage(pairs, seed=seed, device="cpu")
    pc = PolicyConfig(cap=2000)
    out = {"filtered BC": score(filtered_bc(pairs, pc, seed=seed, device="cpu").policy.act)}
    fit, _ = piql_lite(pairs, episodes, policy_config=pc, reward_model=adv, seed=seed, device="cpu")
    out["P-IQL-lite"] = score(fit.policy.act)
    base = PAWSConfig(policy=pc)
    step = fit_paws(pairs, replace(base, weighting="step"), advantage=adv, seed=seed, device="cpu")
    out["PAWS per-step"] = score(step.act)
    for f in fractions:
        res = fit_paws(pairs, replace(base, neff_fraction=f), advantage=adv, seed=seed,
                       device="cpu")  # fmt: skip
        out[f"PAWS n_eff {100 * f:g}%"] = score(res.act)
        out[f"PAWS n_eff {100 * f:g}% steps"] = res.policy_fit.plateau["steps"]
    for cap in caps:
        res = fit_paws(pairs, replace(base, policy=PolicyConfig(cap=cap)), advantage=adv,
                       seed=seed, device="cpu")  # fmt: skip
        out[f"PAWS cap {cap}"] = score(res.act)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[10, 11, 12])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--length", type=int, default=20)
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.02, 0.1, 0.5])
    ap.add_argument("--caps", type=int, nargs="*", default=[250, 500, 1000])
    ap.add_argument("--out", type=Path, default=Path("results/paws/budget"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    per_seed = []
    with quiet_dependencies():
        for s in args.seeds:
            per_seed.append(one_seed(s, args.n, args.length, args.fractions, args.caps))
            print(json.dumps({"seed": s, **{k: round(v, 3) for k, v in per_seed[-1].items()}}))
    print(f"| method (n = {args.n}, N = {args.length}, seeds {args.seeds}) | normalised return |")
    print("|---|---|")
    for k in per_seed[0]:
        v = np.array([p[k] for p in per_seed], dtype=float)
        print(f"| {k} | {v.mean():.3f} ± {v.std(ddof=1) if v.size > 1 else 0.0:.3f} |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "budget_study.json").write_text(json.dumps(per_seed, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
