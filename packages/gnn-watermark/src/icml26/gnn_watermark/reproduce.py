"""Reproduction of the paper's claims: presets ``smoke`` / ``paper``, ``run``, ``judge``, ``PAPER``.

Per seed and per (graph, architecture) the run trains, on the same graph and budget:

- A, the clean classifier, and K more clean classifiers from other initialisations
  (the false-positive control and the clean-model null);
- B, the explanation-watermarked classifier (the paper's method);
- C, the backdoor-trigger watermark (baseline);

then verifies B (and every clean model) with the secret key under the official,
analytic, random-subgraph and clean-model nulls, and attacks B by fine-tuning on 20 %
of the nodes at 0.1× lr, magnitude pruning and knowledge distillation.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from icml26.gnn_watermark.attacks import STUDENT, attacker_nodes, distill, fine_tune, prune
from icml26.gnn_watermark.baselines import (
    random_trigger_graph,
    train_backdoor_watermarked,
    trigger_verification,
)
from icml26.gnn_watermark.data import GRAPH_SIZES, sbm_bow, sized_sbm_bow
from icml26.gnn_watermark.key import generate_key
from icml26.gnn_watermark.model import ModelConfig
from icml26.gnn_watermark.verify import (
    NullDistribution,
    analytic_null,
    leave_one_out_p,
    match_count,
    random_subgraph_null,
    verify_ownership,
)
from icml26.gnn_watermark.watermark import (
    DATASET_SETTINGS,
    TrainConfig,
    accuracy,
    train_clean,
    train_watermarked,
)
from icml26.shared import Check, Headline, Paper, Report, Row, derive_seed, torch_threads

log = logging.getLogger(__name__)

METHOD = "explanation watermark"
CLEAN = "clean"
BACKDOOR = "backdoor watermark"
CLEAN_POOL = "clean models (FPR)"


@dataclass(frozen=True)
class Config:
    """All knobs of a preset. ``graphs`` name sizes in ``data.GRAPH_SIZES`` ("smoke" is the
    brief's SBM-BoW: N = 2000, F = 300, C = 5). With ``dataset_settings`` each graph
    trains with the official preset of the dataset it mimics (lr, epochs, r, ε,
    augmentation); otherwise with the explicit values below."""

    graphs: tuple[str, ...] = ("smoke",)
    archs: tuple[str, ...] = ("GCN",)
    hidden: int = 64
    num_layers: int = 2
    dropout: float = 0.1
    dataset_settings: bool = False
    lr: float = 5e-3
    epochs: int = 150
    coef_wmk: float = 50.0
    epsilon: float = 0.05
    pcgrad: bool = True
    # key: T subgraphs of n_s nodes (0: size_fraction of the training nodes), M features
    num_subgraphs: int = 5
    subgraph_size: int = 20
    size_fraction: float = 0.005
    watermark_size: int = 30
    watermark_percent: float = 3.0
    # verification
    null_subgraphs: int = 60
    null_tuples: int = 200
    clean_models: int = 7
    alpha: float = 0.01
    # attacks on the watermarked model
    finetune_fraction: float = 0.2
    finetune_lr_scales: tuple[float, ...] = (0.1,)
    finetune_epochs: int = 50
    prune_rates: tuple[float, ...] = (0.1, 0.3, 0.5, 0.7, 0.9)
    prune_structured: bool = False
    kd_epochs: int = 150
    kd_alpha: float = 0.8
    kd_temperature: float = 4.0
    # backdoor baseline
    trigger_fraction: float = 0.05
    trigger_edge_prob: float = 0.05
    trigger_ones: float = 0.5
    trigger_alpha: float = 0.2
    trigger_target: bool = True
    # execution
    torch_threads: int | None = 1
    device: str | None = None


PRESETS = {
    "smoke": Config(),
    "paper": Config(
        graphs=("photo", "cs", "pubmed"),
        archs=("GCN", "SAGE", "GAT"),
        hidden=256,
        num_layers=3,
        dataset_settings=True,
        num_subgraphs=7,
        subgraph_size=0,
        watermark_size=0,
        null_subgraphs=100,
        null_tuples=1000,
        clean_models=9,
        finetune_lr_scales=(0.1, 1.0),
        prune_rates=tuple(round(r, 2) for r in np.linspace(0.1, 0.9, 9)),
        kd_epochs=200,
        torch_threads=None,
    ),
}


def _graph(name: str, seed: int):
    if name == "smoke":
        return sbm_bow(seed=seed)
    if name == "tiny":  # for the fast tests of this module
        return sbm_bow(
            400, 4, 80, p_in=0.04, p_out=0.002, topic_features=12, common_features=10, seed=seed
        )
    if name not in GRAPH_SIZES:
        raise ValueError(f"unknown graph {name!r}; known: {sorted(GRAPH_SIZES)}")
    return sized_sbm_bow(name, seed=seed)


def _settings(cfg: Config, graph: str, arch: str) -> tuple[ModelConfig, TrainConfig]:
    model = ModelConfig(
        arch=arch, hidden=cfg.hidden, num_layers=cfg.num_layers, dropout=cfg.dropout
    )
    if cfg.dataset_settings and graph in DATASET_SETTINGS:
        return model, replace(DATASET_SETTINGS[graph][1], pcgrad=cfg.pcgrad)
    train = TrainConfig(
        lr=cfg.lr, epochs=cfg.epochs, coef_wmk=cfg.coef_wmk, epsilon=cfg.epsilon, pcgrad=cfg.pcgrad
    )
    return model, train


def run(config: Config, seed: int, out: Path) -> Report:
    """One seed: every (graph, architecture) of the preset."""
    rows, records, notes = [], [], []
    with torch_threads(config.torch_threads):
        for graph in config.graphs:
            for arch in config.archs:
                r, rec = _run_one(config, graph, arch, seed)
                rows += r
                records.append(rec)
    notes.append(
        "z_official counts sign matches 'with zeros' against Binomial(F, 2·2^-T) as the "
        "official code does; features absent from every secret subgraph 'match' for free, "
        "so the fpr_official column shows how often it flags clean models."
    )
    notes.append(
        "z_subgraph: random-subgraph null of the suspect itself; z_clean: null of the "
        "independently trained clean models (leave-one-out for the clean rows). Ownership "
        f"is claimed (a model is flagged) when p < {config.alpha} under the null in question."
    )
    notes.append(
        f"Fine-tuning uses {config.finetune_fraction:.0%} of the nodes (the validation split, "
        "disjoint from the key); test accuracy stays held out."
    )
    return Report(rows=rows, records=records, notes=notes)


def _run_one(cfg: Config, graph: str, arch: str, seed: int) -> tuple[list[Row], dict]:
    group = f"{graph}/{arch}"
    device = torch.device(cfg.device) if cfg.device else None
    data = _graph(graph, seed)
    num_classes = int(data.y.max()) + 1
    key = generate_key(
        data,
        num_subgraphs=cfg.num_subgraphs,
        subgraph_size=cfg.subgraph_size or None,
        size_fraction=cfg.size_fraction,
        watermark_size=cfg.watermark_size or None,
        watermark_percent=cfg.watermark_percent,
        seed=derive_seed(seed, "key"),
    )
    model_cfg, train_cfg = _settings(cfg, graph, arch)
    init = derive_seed(seed, "init")

    t0 = time.perf_counter()
    clean = train_clean(data, model_cfg, train_cfg, seed=init, device=device).model
    t_clean = time.perf_counter() - t0
    t0 = time.perf_counter()
    wm = train_watermarked(data, key, model_cfg, train_cfg, seed=init, device=device)
    t_wm = time.perf_counter() - t0
    others = [
        train_clean(
            data, model_cfg, train_cfg, seed=derive_seed(seed, "null", i), device=device
        ).model
        for i in range(cfg.clean_models)
    ]
    pool = [clean, *others]

    # -- verification nulls ---------------------------------------------------------
    clean_counts = [float(match_count(m, data, key)) for m in pool]
    clean_null = NullDistribution(tuple(clean_counts), "clean")
    loo_p = leave_one_out_p(clean_counts)

    def check(model, tag: str):
        null, _ = random_subgraph_null(
            model,
            data,
            key,
            num_subgraphs=cfg.null_subgraphs,
            num_tuples=cfg.null_tuples,
            seed=derive_seed(seed, tag),
        )
        return verify_ownership(model, data, key, subgraph_null=null, clean_null=clean_null)

    acc_clean = accuracy(clean, data)
    acc_wm = accuracy(wm.model, data)
    v_wm = check(wm.model, "wm")

    # -- clean models: false positives --------------------------------------------
    fp = {"subgraph": [], "clean": [], "official": [], "analytic": []}
    pool_ver = []
    for i, m in enumerate(pool):
        null, _ = random_subgraph_null(
            m,
            data,
            key,
            num_subgraphs=cfg.null_subgraphs,
            num_tuples=cfg.null_tuples,
            seed=derive_seed(seed, "fp", i),
        )
        v = verify_ownership(m, data, key, subgraph_null=null)
        pool_ver.append(v)
        fp["subgraph"].append(v.p_subgraph < cfg.alpha)
        fp["clean"].append(loo_p[i] < cfg.alpha)
        fp["official"].append(v.p_official < cfg.alpha)
        fp["analytic"].append(v.p_analytic < cfg.alpha)
    v_clean = pool_ver[0]
    z_clean_loo = NullDistribution(tuple(clean_counts[1:]), "clean").z(clean_counts[0])

    # -- backdoor baseline -----------------------------------------------------------
    target = int(derive_seed(seed, "target") % num_classes) if cfg.trigger_target else None
    trigger = random_trigger_graph(
        max(2, int(cfg.trigger_fraction * data.num_nodes)),
        data.num_features,
        num_classes,
        edge_prob=cfg.trigger_edge_prob,
        ones_fraction=cfg.trigger_ones,
        target_label=target,
        seed=derive_seed(seed, "trigger"),
    )
    t0 = time.perf_counter()
    bd = train_backdoor_watermarked(
        data, trigger, model_cfg, train_cfg, alpha=cfg.trigger_alpha, seed=init, device=device
    ).model
    t_bd = time.perf_counter() - t0
    tv_bd = trigger_verification(bd, trigger, num_classes)
    tv_pool = [trigger_verification(m, trigger, num_classes) for m in pool]

    rows = [
        Row.of(
            CLEAN,
            group=group,
            test_acc=acc_clean,
            mi=v_clean.mi,
            z_official=v_clean.z_official,
            z_analytic=v_clean.z_analytic,
            z_subgraph=v_clean.z_subgraph,
            z_clean=z_clean_loo,
            trigger_acc=tv_pool[0].trigger_accuracy,
            train_s=t_clean,
        ),
        Row.of(
            METHOD,
            group=group,
            test_acc=acc_wm,
            mi=v_wm.mi,
            z_official=v_wm.z_official,
            z_analytic=v_wm.z_analytic,
            z_subgraph=v_wm.z_subgraph,
            z_clean=v_wm.z_clean,
            alignment=v_wm.alignment,
            train_s=t_wm,
        ),
        Row.of(
            BACKDOOR,
            group=group,
            test_acc=accuracy(bd, data),
            trigger_acc=tv_bd.trigger_accuracy,
            trigger_z=tv_bd.z,
            train_s=t_bd,
        ),
    ]
    rec = {
        "seed": seed,
        "group": group,
        "num_features": data.num_features,
        "key": {"T": key.num_subgraphs, "n_s": key.subgraph_size, "M": int(key.positions.numel())},
        "analytic_null": analytic_null(data.num_features, key.num_subgraphs),
        "acc": {"clean": acc_clean, "watermarked": acc_wm},
        "watermarked": v_wm.as_dict(),
        "clean_pool": [v.as_dict() for v in pool_ver],
        "clean_pool_mi": clean_counts,
        "clean_pool_loo_p": loo_p,
        "backdoor": {
            "target": target,
            "model": tv_bd.__dict__,
            "clean_pool": [t.__dict__ for t in tv_pool],
        },
        "attacks": {},
    }

    # -- attacks on B ----------------------------------------------------------------
    nodes = attacker_nodes(
        data,
        cfg.finetune_fraction,
        exclude=key.nodes,
        pool="val",
        seed=derive_seed(seed, "attacker"),
    )
    attacked = []
    for scale in cfg.finetune_lr_scales:
        name = f"fine-tune {cfg.finetune_fraction:.0%} @{scale:g}×lr"
        m = fine_tune(
            wm.model,
            data,
            nodes,
            lr=scale * train_cfg.lr,
            epochs=cfg.finetune_epochs,
            seed=derive_seed(seed, "ft"),
        )
        attacked.append((name, m))
        if scale == cfg.finetune_lr_scales[0]:
            bd_ft = fine_tune(
                bd,
                data,
                nodes,
                lr=scale * train_cfg.lr,
                epochs=cfg.finetune_epochs,
                seed=derive_seed(seed, "ft"),
            )
            tv = trigger_verification(bd_ft, trigger, num_classes)
            rows.append(
                Row.of(
                    f"backdoor after {name}",
                    group=group,
                    test_acc=accuracy(bd_ft, data),
                    trigger_acc=tv.trigger_accuracy,
                    trigger_z=tv.z,
                )
            )
    kind = "structured" if cfg.prune_structured else "magnitude"
    for rate in cfg.prune_rates:
        attacked.append(
            (f"{kind} prune {rate:.0%}", prune(wm.model, rate, structured=cfg.prune_structured))
        )
    student = replace(STUDENT, dropout=cfg.dropout)
    attacked.append(
        (
            "distillation",
            distill(
                wm.model,
                data,
                student_config=student,
                alpha=cfg.kd_alpha,
                temperature=cfg.kd_temperature,
                epochs=cfg.kd_epochs,
                lr=train_cfg.lr,
                seed=derive_seed(seed, "kd"),
            ),
        )
    )
    for name, m in attacked:
        v = check(m, name)
        acc = accuracy(m, data)
        rows.append(
            Row.of(
                name,
                group=group,
                test_acc=acc,
                mi=v.mi,
                z_official=v.z_official,
                z_analytic=v.z_analytic,
                z_subgraph=v.z_subgraph,
                z_clean=v.z_clean,
                alignment=v.alignment,
            )
        )
        rec["attacks"][name] = {"test_acc": acc, **v.as_dict()}

    rows.append(
        Row.of(
            CLEAN_POOL,
            group=group,
            mi=float(np.mean(clean_counts)),
            fpr_subgraph=float(np.mean(fp["subgraph"])),
            fpr_clean=float(np.mean(fp["clean"])),
            fpr_official=float(np.mean(fp["official"])),
            fpr_analytic=float(np.mean(fp["analytic"])),
            fpr_backdoor=float(np.mean([t.owned(cfg.alpha) for t in tv_pool])),
        )
    )
    rec["fp_flags"] = {k: [bool(b) for b in v] for k, v in fp.items()}
    return rows, rec


# -- the claim --------------------------------------------------------------------------


def _finetune_name(cfg: Config) -> str:
    return f"fine-tune {cfg.finetune_fraction:.0%} @{cfg.finetune_lr_scales[0]:g}×lr"


def _prune_name(cfg: Config, rate: float = 0.3) -> str:
    kind = "structured" if cfg.prune_structured else "magnitude"
    return f"{kind} prune {rate:.0%}"


def judge(report: Report, config: Config) -> list[Check]:
    """The issue's claim, on the means over seeds, for every (graph, architecture)."""
    groups = [f"{g}/{a}" for g in config.graphs for a in config.archs]

    def worst(method: str, metric: str, reduce=min) -> tuple[float, str]:
        vals = {g: report.stat(method, metric, g).mean for g in groups}
        g = reduce(vals, key=vals.__getitem__)
        return vals[g], g

    def detail(method: str, metric: str) -> str:
        return "; ".join(
            f"{g}: mean {report.stat(method, metric, g).mean:.2f} "
            f"(seeds {', '.join(f'{v:.2f}' for v in report.stat(method, metric, g).values)})"
            for g in groups
        )

    checks = []
    for null in ("z_subgraph", "z_clean"):
        z, _ = worst(METHOD, null)
        checks.append(
            Check(f"(a) watermarked model verifies with {null} >= 4", z >= 4, detail(METHOD, null))
        )
    drops = {
        g: 100 * (report.stat(CLEAN, "test_acc", g).mean - report.stat(METHOD, "test_acc", g).mean)
        for g in groups
    }
    worst_drop = max(drops.values())
    checks.append(
        Check(
            "(b) test accuracy drops <= 2 points vs the clean model",
            worst_drop <= 2.0,
            "; ".join(f"{g}: {d:+.2f} points" for g, d in drops.items()),
        )
    )
    ft, pr = _finetune_name(config), _prune_name(config)
    for name, label in (
        (ft, "(c) after fine-tuning on 20% of the nodes at 0.1× lr"),
        (pr, "(d) after 30% pruning"),
    ):
        for null in ("z_subgraph", "z_clean"):
            z, _ = worst(name, null)
            checks.append(Check(f"{label}: {null} >= 3", z >= 3, detail(name, null)))
    for null in ("fpr_subgraph", "fpr_clean"):
        rate, _ = worst(CLEAN_POOL, null, reduce=max)
        n = (config.clean_models + 1) * len(report.seeds or [0])
        checks.append(
            Check(
                f"(e) clean models not flagged: {null} <= 5% (p < {config.alpha})",
                rate <= 0.05,
                f"{detail(CLEAN_POOL, null)} over {n} clean models per group",
            )
        )
    return checks


def plot(report: Report, out: Path) -> list[Path]:
    from icml26.shared import new_figure, save_figure

    paths = []
    for group in report.groups:
        methods = [m for m in report.methods if _has(report, m, "z_subgraph", group)]
        fig, ax = new_figure(size=(7.5, 3.6))
        x = np.arange(len(methods))
        for k, metric in enumerate(("z_subgraph", "z_clean", "z_official")):
            means = [report.stat(m, metric, group).mean for m in methods]
            sds = [report.stat(m, metric, group).sd for m in methods]
            ax.bar(x + (k - 1) * 0.27, means, 0.27, yerr=sds, label=metric)
        ax.axhline(4, color="k", ls="--", lw=0.8)
        ax.axhline(3, color="k", ls=":", lw=0.8)
        ax.set_xticks(x, methods, rotation=35, ha="right", fontsize=7)
        ax.set_ylabel("verification z")
        ax.set_title(f"{group}: ownership z per model (mean ± sd over seeds)", fontsize=9)
        ax.legend(fontsize=7)
        paths.append(save_figure(fig, out / f"z_{group.replace('/', '_')}.png"))
    return paths


def _has(report: Report, method: str, metric: str, group: str) -> bool:
    try:
        report.stat(method, metric, group)
    except KeyError:
        return False
    return True


PAPER = Paper(
    name="gnn-watermark",
    title="Watermarking Graph Neural Networks via Explanations for Ownership Protection",
    arxiv="2501.05614",
    claim=(
        "Watermarked models verify with z >= 4; test accuracy drops <= 2 points vs clean; "
        "z >= 3 after fine-tuning on 20% of data and after 30% pruning; independently "
        "trained clean models are not flagged (empirical false-positive rate <= 5%)."
    ),
    criterion=(
        "Means over seeds, every graph/architecture: z >= 4 for the watermarked model under "
        "the random-subgraph null and the clean-model null; clean minus watermarked test "
        "accuracy <= 2 points; z >= 3 under both nulls after fine-tuning (20% of nodes, 0.1× "
        "lr, 50 epochs) and after 30% magnitude pruning; share of clean models flagged at "
        "p < 0.01 <= 5% under both nulls."
    ),
    presets=PRESETS,
    run=run,
    judge=judge,
    plot=plot,
    method=METHOD,
    headline=Headline("z_clean", higher_is_better=True, group=None),
    default_seeds=3,
    code="Shi-D/Explanation_Watermarking_GNN",
    authors="Jane Downer, Yingdan Shi, Ziyan Liu, Ren Wang, Binghui Wang",
)
