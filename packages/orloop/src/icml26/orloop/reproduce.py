"""Reproduction of ORLoopBench's claims: presets, ``run`` (one seed), ``judge``, ``PAPER``.

One seed: generate validated LP and MILP instances (all nine error types), train the
small GRPO policy on a separate training set, play every agent on the evaluation
set in the repair MDP, and score RR@5, DA, OP, FP, steps and semantic drift per
agent, overall, per difficulty tier and per error type; then the ORBias split
(in-distribution and out-of-distribution newsvendors) with a pull-to-centre agent.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from icml26.orloop.agents import evaluate
from icml26.orloop.baselines import (
    CopyIISAgent,
    GreedyDropAgent,
    HeuristicAgent,
    MinimalRepairAgent,
    PhaseOneBlameAgent,
    RandomAgent,
    RegenerateAgent,
)
from icml26.orloop.grpo import GRPOConfig, train_grpo
from icml26.orloop.metrics import EpisodeResult, diagnostic_scores, semantic_drift, summarize
from icml26.orloop.orbias import (
    PullToCentreAgent,
    RationalAgent,
    evaluate_bias,
    expected_pull_bias,
    sample_splits,
)
from icml26.orloop.policy import LearnedPolicy
from icml26.orloop.saboteur import ALL_TYPES, TIERS, generate, validate
from icml26.shared import Check, Headline, Paper, Report, Row, Stat, numpy_rng

LEARNED = "GRPO policy"
UNTRAINED = "untrained policy"
AGENTS = (
    "Random",
    "Heuristic",
    "GreedyDrop",
    "Regenerate",
    "MinimalRepair",
    "CopyIIS",
    "Phase-1 blame",
    UNTRAINED,
    LEARNED,
)
# the agents that diagnose: played a second time with the IIS hidden (DA_blind)
BLIND = ("CopyIIS", "Phase-1 blame", UNTRAINED, LEARNED)


@dataclass(frozen=True)
class Config:
    """All knobs of a preset (per seed)."""

    n_lp: int
    n_milp: int
    n_train: int
    train_milp_fraction: float
    grpo_iterations: int  # the cap; training stops earlier on a reward plateau
    group_size: int
    problems_per_batch: int
    learning_rate: float
    max_steps: int
    train_max_steps: int
    n_newsvendor: int
    alpha: float
    decision_noise: float
    grpo_patience: int = 5
    llm_base_url: str | None = None
    llm_model: str | None = None


PRESETS = {
    # 63 instances per seed (189 over the 3 seeds): the brief's 400 shrunk to fit
    # about a minute of CPU (instance counts shrink, thresholds do not)
    "smoke": Config(
        n_lp=48,
        n_milp=15,
        n_train=24,
        train_milp_fraction=0.25,
        grpo_iterations=40,
        group_size=8,
        problems_per_batch=8,
        learning_rate=0.1,
        max_steps=10,
        train_max_steps=5,
        n_newsvendor=1000,
        alpha=0.3,
        decision_noise=0.02,
    ),
    # an ORDebug-sized set (5,000 instances) and a longer GRPO run; set llm_base_url
    # and llm_model to add an OpenAI-compatible chat model to the agents
    "paper": Config(
        n_lp=3500,
        n_milp=1500,
        n_train=500,
        train_milp_fraction=0.3,
        grpo_iterations=200,
        group_size=8,
        problems_per_batch=8,
        learning_rate=0.05,
        max_steps=20,
        train_max_steps=5,
        n_newsvendor=1000,
        alpha=0.3,
        decision_noise=0.02,
    ),
}


def _rows_for(
    agent: str,
    group: str,
    results: list[EpisodeResult],
    full: bool,
    blind: list[EpisodeResult] | None = None,
) -> Row:
    s = summarize(results)
    full_keys = ("RR@5", "RR", "DA", "DP", "OP", "FP", "drift_rate", "steps")
    keys = full_keys if full else ("RR@5", "DA", "OP", "FP", "steps")
    s["drift_rate"] = s["drift"]  # share of successful repairs flagged as semantic drift
    metrics = {k: s[k] for k in keys if not math.isnan(s[k])}
    if blind is not None:
        b = summarize(blind)
        for k in ("DA_blind", "DP_blind"):
            if not math.isnan(b[k]):
                metrics[k] = b[k]
    return Row(method=agent, group=group, metrics={k: Stat.of(v) for k, v in metrics.items()})


def run(config: Config, seed: int, out: Path) -> Report:
    """One seed of the reproduction."""
    t0 = time.perf_counter()
    n = config.n_lp + config.n_milp
    test = list(generate(n, seed=seed, milp_fraction=config.n_milp / n, stream="orloop-eval"))
    train = list(
        generate(
            config.n_train,
            seed=seed,
            milp_fraction=config.train_milp_fraction,
            stream="orloop-train",
        )
    )
    t_gen = time.perf_counter() - t0
    policy, history = train_grpo(
        train,
        GRPOConfig(
            group_size=config.group_size,
            problems_per_batch=config.problems_per_batch,
            iterations=config.grpo_iterations,
            learning_rate=config.learning_rate,
            max_steps=config.train_max_steps,
            seed=seed,
            patience=config.grpo_patience,
        ),
    )
    t_train = time.perf_counter() - t0 - t_gen
    untrained = LearnedPolicy(seed=seed)
    untrained.name = UNTRAINED
    agents: list[Any] = [
        RandomAgent(seed),
        HeuristicAgent(),
        GreedyDropAgent(),
        RegenerateAgent(),
        MinimalRepairAgent(),
        CopyIISAgent(),
        PhaseOneBlameAgent(),
        untrained,
        policy,
    ]
    if config.llm_base_url and config.llm_model:
        from icml26.orloop.llm_client import ChatClient, LLMAgent

        agents.append(LLMAgent(ChatClient(config.llm_base_url, config.llm_model)))
    rows: list[Row] = []
    records: list[dict[str, Any]] = []
    fix_is_drop = {i.problem_id: all(e.op == "drop_row" for e in i.fix) for i in test}
    timings = {"generate_s": t_gen, "train_s": t_train}
    for agent in agents:
        t1 = time.perf_counter()
        results = evaluate(agent, test, max_steps=config.max_steps)
        # DA without the IIS: the IIS hidden, and the episode cut after the first action,
        # before which no agent can have seen an IIS (the diagnosing agents blame there)
        blind = (
            evaluate(agent, test, max_steps=1, reveal_iis=False) if agent.name in BLIND else None
        )
        timings[f"eval_{agent.name}_s"] = time.perf_counter() - t1
        rows.append(_rows_for(agent.name, "all", results, full=True, blind=blind))
        by_group: dict[str, list[EpisodeResult]] = defaultdict(list)
        for r in results:
            by_group[r.difficulty].append(r)
            by_group[f"type {r.error_type}"].append(r)
            by_group[r.family.upper()].append(r)
        for group in (*TIERS, "LP", "MILP", *(f"type {t}" for t in ALL_TYPES)):
            if by_group.get(group):
                rows.append(_rows_for(agent.name, group, by_group[group], full=False))
        for r in results:
            hits, size, said = diagnostic_scores(r.diagnosed, r.iis_sets)
            records.append(
                {
                    "seed": seed,
                    "kind": "episode",
                    "agent": agent.name,
                    "problem_id": r.problem_id,
                    "error_type": r.error_type,
                    "family": r.family,
                    "difficulty": r.difficulty,
                    "success": r.success,
                    "success_at_step": r.success_at_step,
                    "steps": r.steps,
                    "op": r.op,
                    "fp": r.fp,
                    "drift": semantic_drift(r),
                    "fix_is_drop": fix_is_drop[r.problem_id],
                    "da_hits": hits,
                    "iis_rows": size,
                    "diagnosed": said,
                }
            )
    for inst in test:
        check = validate(inst)  # re-solves: the flags set at generation are not trusted
        records.append(
            {
                "revalidated": check.ok,
                "iis_irreducible": check.iis_valid,
                "seed": seed,
                "kind": "instance",
                "problem_id": inst.problem_id,
                "family": inst.family,
                "error_type": inst.error_type,
                "variant": inst.meta.get("variant"),
                "iis_method": inst.iis.method,
                "iis_valid": inst.iis.valid,
                "iis_size": inst.iis.size,
                "difficulty": inst.difficulty,
            }
        )

    # ORBias
    in_dist, out_dist = sample_splits(
        numpy_rng(seed, "orbias"), config.n_newsvendor, config.n_newsvendor
    )
    pull = PullToCentreAgent(config.alpha, noise=config.decision_noise, seed=seed)
    rep = evaluate_bias(pull, in_dist, out_dist)
    rat = evaluate_bias(RationalAgent(), in_dist, out_dist)
    expected_drift = expected_pull_bias(out_dist, config.alpha) - expected_pull_bias(
        in_dist, config.alpha
    )
    rows.append(
        Row.of(
            pull.name,
            group="ORBias",
            bias_id=rep.bias_id,
            bias_ood=rep.bias_ood,
            bias_drift=rep.drift,
            alpha_hat=rep.alpha,
        )
    )
    rows.append(
        Row.of(
            "rational",
            group="ORBias",
            bias_id=rat.bias_id,
            bias_ood=rat.bias_ood,
            bias_drift=rat.drift,
        )
    )
    records.append(
        {
            "seed": seed,
            "kind": "orbias",
            "alpha": config.alpha,
            "alpha_hat": rep.alpha,
            "alpha_id": rep.alpha_id,
            "alpha_ood": rep.alpha_ood,
            "drift": rep.drift,
            "expected_drift": expected_drift,
            "grpo_rewards": [h["mean_reward"] for h in history],
            "grpo_iterations_run": len(history),
            "policy_theta": policy.theta.tolist(),
            "policy_phi": policy.phi.tolist(),
            **{k: round(v, 3) for k, v in timings.items()},
        }
    )
    notes = [
        "Agents act in the repair MDP with max_steps = "
        f"{config.max_steps}; OP and FP are means over successful episodes (official metrics.py).",
        "The learned policy is a linear softmax over candidate repairs plus a logistic "
        "diagnosis head, trained by GRPO on a separate training set (CPU-scale stand-in "
        "for the paper's 8B LLM).",
    ]
    return Report(rows=rows, records=records, notes=notes)


def _mean(report: Report, method: str, metric: str, group: str = "all") -> float:
    return report.stat(method, metric, group).mean


def _op_on_non_drop_fixes(report: Report, agent: str) -> tuple[float, int]:
    """Mean OP over the successful episodes whose ground-truth fix is not a row drop,
    failures counted as OP 0 (an unrepaired model preserves nothing)."""
    eps = [
        r
        for r in report.records
        if r.get("kind") == "episode" and r["agent"] == agent and not r.get("fix_is_drop", True)
    ]
    if not eps:
        return float("nan"), 0
    return float(np.mean([r["op"] if r["op"] is not None else 0.0 for r in eps])), len(eps)


def judge(report: Report, config: Config) -> list[Check]:
    """The issue's claims plus the solver sanity checks, on the merged report."""
    checks = []
    rr_l, rr_g = _mean(report, LEARNED, "RR@5"), _mean(report, "GreedyDrop", "RR@5")
    op_l, n_nd = _op_on_non_drop_fixes(report, LEARNED)
    op_g, _ = _op_on_non_drop_fixes(report, "GreedyDrop")
    checks.append(
        Check(
            "(1) learned RR@5 >= GreedyDrop RR@5 − 2 pts, and learned OP > GreedyDrop OP on the "
            "instances whose fix is not a drop (types A, C, H, H2, I; failures count OP 0)",
            rr_l >= rr_g - 0.02 and op_l > op_g,
            f"RR@5 {rr_l:.3f} vs {rr_g:.3f}; OP on {n_nd} non-drop episodes "
            f"{op_l:.3f} vs {op_g:.3f} (gap {op_l - op_g:+.3f})",
        )
    )
    parts, ok2 = [], True
    for drop_agent in ("GreedyDrop", "Regenerate"):
        rr = _mean(report, drop_agent, "RR")
        gaps = {
            (ref, m): _mean(report, ref, m) - _mean(report, drop_agent, m)
            for ref in ("MinimalRepair", LEARNED)
            for m in ("OP", "FP")
        }
        (ref, m), gap = max(gaps.items(), key=lambda kv: kv[1])
        ok2 &= rr >= 0.9 and gap >= 0.2
        parts.append(f"{drop_agent}: RR {rr:.3f}, largest gap {gap:+.3f} ({m} vs {ref})")
    checks.append(
        Check(
            "(2) semantic drift: GreedyDrop and Regenerate RR >= 90% with OP or FP >= 0.2 "
            "below MinimalRepair or the learned policy",
            ok2,
            "; ".join(parts),
        )
    )
    da = {a: _mean(report, a, "DA_blind") for a in BLIND}
    da = {a: (0.0 if math.isnan(v) else v) for a, v in da.items()}
    ref_agent = max(("Phase-1 blame", "CopyIIS", UNTRAINED), key=lambda a: da[a])
    checks.append(
        Check(
            "(3) DA without the IIS revealed: learned > the untrained policy and > the best "
            "scripted agent with the same information (phase-1 blame, CopyIIS)",
            da[LEARNED] > da[UNTRAINED] and da[LEARNED] > da[ref_agent],
            f"DA_blind learned {da[LEARNED]:.3f}, untrained {da[UNTRAINED]:.3f}, "
            f"phase-1 blame {da['Phase-1 blame']:.3f}, CopyIIS {da['CopyIIS']:.3f}; "
            f"with the IIS shown CopyIIS scores DA {_mean(report, 'CopyIIS', 'DA'):.3f}",
        )
    )
    orb = [r for r in report.records if r.get("kind") == "orbias"]
    errs = [abs(r["alpha_hat"] - r["alpha"]) for r in orb]
    signs = [np.sign(r["drift"]) == np.sign(r["expected_drift"]) for r in orb]
    checks.append(
        Check(
            f"(4) ORBias recovers α = {config.alpha} within ±0.02 under decision noise "
            f"{config.decision_noise:g} and the drift sign follows the construction (every seed)",
            bool(orb) and config.decision_noise > 0 and max(errs) <= 0.02 and all(signs),
            f"max |α̂ − α| = {max(errs):.4f}; drift signs match on {sum(signs)}/{len(signs)} seeds"
            if orb
            else "no ORBias records",
        )
    )
    inst = [r for r in report.records if r.get("kind") == "instance"]
    revalid = all(r.get("revalidated", False) for r in inst)
    irreducible = all(r.get("iis_irreducible", False) for r in inst)
    lp_ok = all(r["iis_valid"] and r["iis_method"] == "highs" for r in inst if r["family"] == "lp")
    integ = [r for r in inst if r.get("variant") == "integrality"]
    df_ok = all(r["iis_valid"] and r["iis_method"] == "deletion_filter" for r in integ)
    checks.append(
        Check(
            "(5) solver sanity, re-checked by solving: every instance revalidated (intended "
            "model OPTIMAL with its objective, sabotaged INFEASIBLE), every IIS irreducible; "
            "HiGHS IIS on every LP; deletion filter on every integrality-only MILP",
            bool(inst) and revalid and irreducible and lp_ok and df_ok,
            f"{sum(r.get('revalidated', False) for r in inst)}/{len(inst)} revalidated, "
            f"{sum(r.get('iis_irreducible', False) for r in inst)}/{len(inst)} irreducible; "
            f"{len(integ)} integrality-only MILPs",
        )
    )
    return checks


def plot(report: Report, out: Path) -> list[Path]:
    from icml26.shared import errorbar_bars, new_figure, save_figure

    agents = [a for a in AGENTS if any(r.method == a and r.group == "all" for r in report.rows)]
    fig, axes = new_figure(1, 3, size=(13, 3.6))
    names = {
        "RR@5": "repair rate within 5 steps",
        "OP": "optimality preservation",
        "FP": "constraint preservation",
    }
    for ax, metric in zip(axes, ("RR@5", "OP", "FP"), strict=True):
        stats = [report.stat(a, metric, "all") for a in agents]
        errorbar_bars(ax, agents, stats)
        ax.set_ylabel(names[metric])
        ax.set_ylim(0, 1.05)
        ax.tick_params(axis="x", labelrotation=40, labelsize=7)
    return [
        save_figure(
            fig,
            out / "agents.png",
            caption="Repair rate within 5 steps (RR@5), optimality preservation (OP) and "
            "constraint preservation (FP) of every agent on the generated instances; bars are "
            "means over seeds, error bars one standard deviation.",
        )
    ]


PAPER = Paper(
    name="orloop",
    title="ORLoopBench: Solver-in-the-Loop Benchmarks for Self-Correction and Behavioral "
    "Rationality in Operations Research",
    arxiv="2601.21008",
    claim="With the official type H (a bound-only IIS) in the mix, a policy trained with "
    "solver-verified GRPO repairs infeasible LP/MILP models as often as greedy constraint "
    "dropping while preserving the objective better where dropping loses it, and diagnoses "
    "the IIS before seeing it better than its untrained self and the best scripted agent "
    "with the same information; drop-based and regenerating repairs show semantic drift; "
    "the ORBias metric recovers a pull-to-centre decision bias.",
    criterion="(1) learned RR@5 >= GreedyDrop − 2 pts and OP > GreedyDrop on non-drop fixes; "
    "(2) GreedyDrop and Regenerate RR >= 90% with OP or FP >= 0.2 below MinimalRepair or the "
    "learned policy; (3) DA without the IIS revealed: learned > untrained policy and > phase-1 "
    "blame / CopyIIS; (4) ORBias α recovered within ±0.02 under noise with the drift sign of "
    "the construction; (5) solver sanity re-checked by solving.",
    presets=PRESETS,
    run=run,
    judge=judge,
    plot=plot,
    method=LEARNED,
    headline=Headline("RR@5", higher_is_better=True, group="all"),
    default_seeds=3,
    code="Archer222arc/LLM-for-OR",
    authors="Ruicheng Ao, David Simchi-Levi, Xinshang Wang",
)
