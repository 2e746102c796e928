"""Budget study of the IQL critics (P-IQL, Preference Transformer + IQL, IPL).

The claim metric (normalised return on the point mass, n = 500, N = 20) against the
critic's gradient-step cap, with the plateau rule on (the smoke preset's rule: windows of
100 steps, patience 5, min_delta 1%; the preset's cap is 3 000). Under a fixed seed a run
with cap c is the first c steps of a run with a larger cap, so one critic run per method
and seed, to the largest cap or its plateau, gives every cap: at each cap on the grid
the policy is extracted (the same AWR projection and policy plateau rule as the preset)
from the critic as it stands, and scored. A cap past the plateau's stop gives the stop's
policy. ``--patience`` raises the plateau's patience (the rule's sensitivity study).
On seeds the preset never uses (10, 11 by default):

    uv run python benchmarks/paws/iql_budget.py --seeds 10 11
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch

from icml26.paws import (
    AdvantageConfig,
    PointMass,
    PolicyConfig,
    PreferenceTransformer,
    behaviour_episodes,
    evaluate_policy,
    fit_advantage,
    make_preferences,
    normalised_return,
    reference_returns,
)
from icml26.paws.baselines import IPLConfig, ipl
from icml26.paws.iql import IQLConfig, advantage_weights, fit_iql, iql_transitions
from icml26.paws.policy import fit_weighted_mle
from icml26.paws.preference_transformer import relabel_episodes
from icml26.shared import numpy_rng, quiet_dependencies

METHODS = ("P-IQL", "PT+IQL", "IPL")


def one_seed(seed: int, n: int, caps: list[int], patience: int, methods) -> dict[str, dict]:
    env = PointMass()
    length = env.config.period
    episodes = behaviour_episodes(env, 200, numpy_rng(seed, "behaviour"))
    starts = env.starts(50, numpy_rng(seed, "eval-starts"))
    refs = reference_returns(env, starts, seed)
    pairs = make_preferences(episodes, n, length, numpy_rng(seed, "prefs", n))
    pc = PolicyConfig(cap=2000)
    iql = IQLConfig(cap=max(caps), plateau_patience=patience)
    obs, act = episodes.steps()
    out: dict[str, dict] = {}

    def tracker(name: str, obs: np.ndarray, act: np.ndarray):
        res: dict = {"scores": {}}
        out[name] = res

        def on_step(step: int, critic) -> None:
            if step in caps:
                w = advantage_weights(critic, obs, act, iql)
                pol = fit_weighted_mle(obs, act, w, pc, seed=seed, device="cpu")
                ev = evaluate_policy(pol.policy.act, env, starts)
                res["scores"][step] = normalised_return(ev.mean, *refs)

        return res, on_step

    def finish(res: dict, summary: dict, critic, obs, act) -> None:
        res["stop"] = {"steps": summary["steps"], "reason": summary["reason"]}
        if summary["steps"] not in res["scores"]:
            w = advantage_weights(critic, obs, act, iql)
            pol = fit_weighted_mle(obs, act, w, pc, seed=seed, device="cpu")
            ev = evaluate_policy(pol.policy.act, env, starts)
            res["scores"][summary["steps"]] = normalised_return(ev.mean, *refs)

    for method in methods:
        c0 = time.process_time()
        if method == "IPL":
            res, on_step = tracker(method, obs, act)
            captured = {}

            def keep(step: int, critic, on_step=on_step, captured=captured) -> None:
                captured["critic"] = critic
                on_step(step, critic)

            _, info = ipl(pairs, episodes, IPLConfig(iql=iql, cap=max(caps),
                          plateau_patience=patience), pc, seed=seed, device="cpu",
                          on_step=keep)  # fmt: skip
            finish(res, info["critic_plateau"], captured["critic"], obs, act)
        else:
            if method == "P-IQL":
                reward = fit_advantage(pairs, seed=seed, device="cpu").model.per_step(
                    episodes.obs, episodes.act
                )
            else:
                torch.manual_seed(seed)
                model = PreferenceTransformer(pairs.obs_dim, pairs.act_dim, pairs.length,
                                              alignment=pairs.alignment)  # fmt: skip
                fit = fit_advantage(pairs, AdvantageConfig(), seed=seed, device="cpu",
                                    model=model)  # fmt: skip
                reward = relabel_episodes(fit.model, episodes)
            data = iql_transitions(episodes, reward, iql)
            res, on_step = tracker(method, data.obs, data.act)
            critic, summary = fit_iql(data, iql, seed=seed, device="cpu", on_step=on_step)
            finish(res, summary, critic, data.obs, data.act)
        res["cpu_s"] = time.process_time() - c0
    return out


def score_at(res: dict, cap: int) -> float:
    """The score a run with this cap would give: the last checkpoint ≤ the stop."""
    return res["scores"][min(cap, res["stop"]["steps"])]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[10, 11])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--caps", type=int, nargs="+", default=[500, 1000, 2000, 3000, 6000, 10000])
    ap.add_argument("--patience", type=int, default=5)
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--out", type=Path, default=Path("results/paws/iql_budget"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    caps = sorted(args.caps)
    per_seed = []
    with quiet_dependencies():
        for s in args.seeds:
            per_seed.append(one_seed(s, args.n, caps, args.patience, args.methods))
            print(json.dumps({"seed": s, **per_seed[-1]}), flush=True)
    print(f"| method (n = {args.n}, patience {args.patience}) | "
          + " | ".join(f"cap {c}" for c in caps) + " | stopped at (reason) | CPU s |")  # fmt: skip
    print("|---|" + "---|" * (len(caps) + 2))
    for m in args.methods:
        cells = []
        for c in caps:
            v = np.array([score_at(p[m], c) for p in per_seed])
            sd = v.std(ddof=1) if v.size > 1 else 0.0
            cells.append(f"{v.mean():.3f} ± {sd:.3f}")
        stops = ", ".join(f"{p[m]['stop']['steps']} ({p[m]['stop']['reason']})" for p in per_seed)
        cpu = np.mean([p[m]["cpu_s"] for p in per_seed])
        print(f"| {m} | " + " | ".join(cells) + f" | {stops} | {cpu:.0f} |")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"iql_budget_p{args.patience}.json").write_text(
        json.dumps(per_seed, indent=2, default=str)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
