"""Reproduction: MER-DG against fusion, SimMMDG and the unimodal ensemble on CoOcc-MMDG.

``smoke``: CoOcc-MMDG with M = 2 modalities of 32 dims, 6 classes, 4 domains of 600
samples; leave-one-domain-out over the 4 domains; the brief's MLP sizes; Adam 1e-3 with
the balanced domain sampler; training stops at a training-loss plateau or the 40-epoch
cap, the same rule for every split; last-epoch target accuracy is the primary number,
with the source-validation-selected and the official oracle (best target epoch) beside
it. The frozen-encoder probe scores each modality's embedding on the target. The ρ = 0.5
control repeats fusion and fusion + MER with a weak co-occurrence.

``paper``: M = 3 modalities of 128 dims (MLP-generated class signal), 10 classes, 5
domains of 5 000 samples, all modality pairs and the triple, LARS with the official batch
16, λ_mer ∈ {0.3, 1, 3, 10}, variance-only and log-det-only ablations, the unimodal DG
baselines (MixStyle, RSC) and MBCD (:mod:`icml26.merdg.mbcd`); meant for a GPU.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path

import numpy as np

from icml26.merdg.batched import Job, train_many
from icml26.merdg.data import CoOccConfig, lodo_split, simulate_cooccurrence
from icml26.merdg.mer import MERConfig
from icml26.merdg.models import ModelConfig
from icml26.merdg.probe import ProbeConfig, probe_model
from icml26.merdg.train import METHODS, Method, TrainConfig
from icml26.shared import (
    Check,
    Headline,
    Paper,
    Report,
    Row,
    derive_seed,
    numpy_rng,
    progress,
    torch_threads,
)

log = logging.getLogger(__name__)

METHOD = "fusion+mer"
ALL = "all splits"
CONTROL = "ρ=0.5 control, all splits"


@dataclass(frozen=True)
class Config:
    """All knobs of a preset (JSON-able)."""

    sim: CoOccConfig = field(default_factory=CoOccConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    probe: ProbeConfig = field(default_factory=lambda: ProbeConfig(hidden=128))
    methods: tuple[str, ...] = ("fusion+mer", "fusion", "simmmdg+mer", "simmmdg", "unimodal")
    probe_methods: tuple[str, ...] = ("fusion+mer", "fusion")
    targets: tuple[int, ...] | None = None  # None: every domain in turn
    modality_sets: tuple[tuple[int, ...], ...] = ((0, 1),)
    mer_lambdas: tuple[float, ...] = ()  # extra fusion + MER rows at these λ_mer
    control_rho: float | None = 0.5
    control_methods: tuple[str, ...] = ("fusion+mer", "fusion")
    val_fraction: float = 0.2
    # thresholds of the claim, in accuracy points (ours; frozen after the budget study)
    gain_fusion: float = 3.0
    gain_simmmdg: float = 1.0
    gain_probe: float = 3.0
    val_margin: float = 2.0
    control_margin: float = 2.0
    device: str | None = "cpu"
    threads: int | None = 1


PRESETS = {
    "smoke": Config(),
    "paper": Config(
        sim=CoOccConfig(
            n_classes=10,
            n_domains=5,
            n_modalities=3,
            dim=128,
            latent=16,
            per_domain=5000,
            code_bits=4,
            signal="mlp",
        ),
        train=TrainConfig(
            epochs=40,
            batch_size=16,
            optimizer="lars",
            lr=0.3,
            weight_decay=1e-6,
            model=ModelConfig(
                encoder_hidden=256,
                encoder_layers=2,
                embed_dim=128,
                proj_hidden=512,
                proj_dim=128,
                fusion_hidden=512,
                trans_hidden=512,
            ),
        ),
        probe=ProbeConfig(),
        methods=(
            "fusion+mer",
            "fusion",
            "simmmdg+mer",
            "simmmdg",
            "unimodal",
            "fusion+var",
            "fusion+logdet",
            "fusion+mixstyle",
            "fusion+rsc",
            "mbcd",
        ),
        probe_methods=("fusion+mer", "fusion", "simmmdg+mer", "simmmdg"),
        modality_sets=((0, 1), (0, 2), (1, 2), (0, 1, 2)),
        mer_lambdas=(0.3, 1.0, 10.0),
        device=None,
        threads=None,
    ),
}


def _methods(config: Config) -> list[Method]:
    unknown = [m for m in config.methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; choose from {sorted(METHODS)}")
    out = [METHODS[m] for m in config.methods]
    for lam in config.mer_lambdas:
        out.append(
            Method(
                f"fusion+mer(λ={lam:g})", "fusion", mer=True, mer_config=MERConfig(lambda_mer=lam)
            )
        )
    return out


def _fits_batch(config: Config, n_sources: int) -> None:
    if config.train.batch_size % n_sources:
        raise ValueError(
            f"batch size {config.train.batch_size} is not divisible by the {n_sources} "
            "source domains"
        )


def make_split(
    config: Config, seed: int, target: int, modalities: tuple[int, ...], sim: CoOccConfig
):
    """The simulated leave-one-domain-out split of (seed, target, modality set, simulator)."""
    data = simulate_cooccurrence(
        sim, target=target, rng=numpy_rng(seed, "sim", f"{target}", f"{sim.rho}")
    )
    data = data.select_modalities(modalities)
    split = lodo_split(
        data, target, val_fraction=config.val_fraction, rng=numpy_rng(seed, "split", f"{target}")
    )
    _fits_batch(config, len(split.sources))
    return split


@dataclass(frozen=True)
class Cell:
    """One training run of a reproduction: a method on a (target, modality set, ρ) split."""

    target: int
    modalities: tuple[int, ...]
    method: Method
    sim: CoOccConfig
    control: bool = False
    probe: bool = False


def run_cells(config: Config, seed: int, cells: list[Cell], *, tick=None) -> list[dict]:
    """Train every cell (stacked by architecture, :func:`icml26.merdg.batched.train_many`)
    and return one record per cell; failed runs become records with an ``error``."""
    splits: dict[tuple, object] = {}
    jobs = []
    for c in cells:
        key = (c.target, c.modalities, c.sim)
        if key not in splits:
            splits[key] = make_split(config, seed, c.target, c.modalities, c.sim)
        jobs.append(Job(c.method, splits[key], seed=derive_seed(seed, "train", f"{c.target}")))
    t0 = time.process_time()
    results = train_many(jobs, config.train, device=config.device, progress_callback=tick)
    cpu_per_run = (time.process_time() - t0) / max(len(cells), 1)
    records = []
    for c, job, res in zip(cells, jobs, results, strict=True):
        base = {"seed": seed, "target": c.target, "method": c.method.name}
        if c.control:
            base["control"] = True
        if isinstance(res, Exception):  # reported as data, never hidden
            log.warning("%s failed on target %d: %s", c.method.name, c.target, res)
            records.append({**base, "error": str(res)})
            continue
        rec = {
            **base,
            "modalities": list(c.modalities),
            "rho": c.sim.rho,
            "target_acc": res.last_test_acc,
            "selected_acc": res.selected_test_acc,
            "oracle_acc": res.oracle_test_acc,
            "val_acc": res.last_val_acc,
            "epochs": res.epochs,
            "stopping": res.stopping,
            "cpu_seconds": cpu_per_run,  # the CPU time of all cells of the call, shared out
            "curves": {
                "train_loss": res.train_loss,
                "val_acc": res.val_acc,
                "test_acc": res.test_acc,
            },
        }
        if c.probe:
            rec.update(
                probe_model(res.model, job.split, config.probe, seed=derive_seed(seed, "probe"))
            )
        records.append(rec)
    return records


def run_split(
    config: Config,
    seed: int,
    target: int,
    modalities: tuple[int, ...],
    methods: list[Method],
    *,
    sim: CoOccConfig | None = None,
    probe_methods: tuple[str, ...] = (),
    tick=None,
) -> list[dict]:
    """Every method on one (seed, modality set, target) split; one record per method."""
    sim = sim or config.sim
    cells = [Cell(target, modalities, m, sim, probe=m.name in probe_methods) for m in methods]
    return run_cells(config, seed, cells, tick=tick)


METRICS = (
    "target_acc",
    "selected_acc",
    "oracle_acc",
    "val_acc",
    "epochs",
    "probe",
    "probe_concat",
    "logdet",
    "erank",
)


def _rows(records: list[dict], group_of) -> list[Row]:
    """One row per (group, method): each metric averaged over the seed's splits."""
    cells: dict[tuple[str, str], dict[str, list[float]]] = {}
    for rec in records:
        if "error" in rec:
            continue
        for group in group_of(rec):
            cell = cells.setdefault((group, rec["method"]), {})
            for k in METRICS:
                if k in rec:
                    scale = 100.0 if k.endswith("acc") or k.startswith("probe") else 1.0
                    cell.setdefault(k, []).append(scale * float(rec[k]))
    return [
        Row.of(m, group=g, **{k: float(np.mean(v)) for k, v in ms.items()})
        for (g, m), ms in cells.items()
    ]


def run(config: Config, seed: int, out: Path) -> Report:
    """One seed of a preset: every modality set × target split, every method."""
    methods = _methods(config)
    targets = config.targets if config.targets is not None else tuple(range(config.sim.n_domains))
    control = config.control_rho is not None and config.control_methods
    ctl_methods = [METHODS[m] for m in config.control_methods] if control else []
    total = len(config.modality_sets) * len(targets) * (len(methods) + len(ctl_methods))
    cells = []
    for mods in config.modality_sets:
        for target in targets:
            for m in methods:
                cells.append(
                    Cell(target, mods, m, config.sim, probe=m.name in config.probe_methods)
                )
            if control:
                ctl = replace(config.sim, rho=config.control_rho)
                cells += [Cell(target, mods, m, ctl, control=True) for m in ctl_methods]
    with torch_threads(config.threads), progress(total=total, desc=f"merdg seed {seed}") as bar:
        records = run_cells(config, seed, cells, tick=lambda: bar.update(1))
    multi = len(config.modality_sets) > 1

    def groups(rec: dict) -> list[str]:
        mods = "+".join(map(str, rec.get("modalities", [])))
        tag = f"M={mods}, " if multi else ""
        if rec.get("control"):
            return [CONTROL]
        return [f"{tag}target={rec['target']}", ALL]

    report = Report(rows=_rows(records, groups), records=records)
    report.notes.append(
        "Accuracies in percent; 'all splits' rows average the leave-one-domain-out splits of "
        "a seed, cells are mean ± sd over seeds. target_acc is the last epoch; selected_acc "
        "the best source-validation epoch; oracle_acc the best target epoch (the official "
        "BestTestAcc, reads target labels)."
    )
    errors = [r for r in records if "error" in r]
    if errors:
        report.notes.append(
            f"{len(errors)} runs failed: " + "; ".join(r["error"] for r in errors[:3])
        )
    return report


def _mean(report: Report, method: str, metric: str, group: str = ALL) -> float:
    return report.stat(method, metric, group).mean


def _paired(report: Report, a: str, b: str, metric: str, group: str = ALL) -> tuple[float, float]:
    va = np.array(report.stat(a, metric, group).values)
    vb = np.array(report.stat(b, metric, group).values)
    d = va - vb
    return float(d.mean()), float(d.std(ddof=1)) if len(d) > 1 else 0.0


def judge(report: Report, config: Config) -> list[Check]:
    """The five parts of the smoke claim on the merged report (points = accuracy %)."""
    checks = []
    methods = set(report.methods)

    def gain(a: str, b: str, metric: str = "target_acc", group: str = ALL) -> str:
        m, s = _paired(report, a, b, metric, group)
        ma, mb = _mean(report, a, metric, group), _mean(report, b, metric, group)
        return f"{a} {ma:.1f} vs {b} {mb:.1f} (paired gain {m:+.1f} ± {s:.1f})"

    if {"fusion+mer", "fusion"} <= methods:
        g, _ = _paired(report, "fusion+mer", "fusion", "target_acc")
        ok = g >= config.gain_fusion
        detail = gain("fusion+mer", "fusion")
        if "unimodal" in methods:
            u = _mean(report, "fusion+mer", "target_acc") - _mean(report, "unimodal", "target_acc")
            ok = ok and u >= 0
            detail += f"; vs unimodal ensemble {u:+.1f}"
        checks.append(
            Check(
                f"(1) fusion + MER ≥ fusion + {config.gain_fusion:g} points on the target (last "
                "epoch), and ≥ the unimodal ensemble",
                bool(ok),
                detail,
            )
        )
    if {"simmmdg+mer", "simmmdg"} <= methods:
        g, _ = _paired(report, "simmmdg+mer", "simmmdg", "target_acc")
        checks.append(
            Check(
                f"(2) SimMMDG + MER ≥ SimMMDG + {config.gain_simmmdg:g} points on the target",
                bool(g >= config.gain_simmmdg),
                gain("simmmdg+mer", "simmmdg"),
            )
        )
    if {"fusion+mer", "fusion"} <= methods:
        try:
            g, _ = _paired(report, "fusion+mer", "fusion", "probe")
            dl, _ = _paired(report, "fusion+mer", "fusion", "logdet")
            checks.append(
                Check(
                    f"(3) probe target accuracy of fusion + MER ≥ fusion's + {config.gain_probe:g} "
                    "with a larger feature log-det",
                    bool(g >= config.gain_probe and dl > 0),
                    gain("fusion+mer", "fusion", "probe") + f"; log-det/D gain {dl:+.3f}",
                )
            )
        except KeyError:
            pass
        g, _ = _paired(report, "fusion+mer", "fusion", "val_acc")
        checks.append(
            Check(
                f"(4) source validation of fusion + MER within {config.val_margin:g} points "
                "of fusion's",
                bool(abs(g) <= config.val_margin),
                gain("fusion+mer", "fusion", "val_acc"),
            )
        )
        if CONTROL in report.groups:
            g, _ = _paired(report, "fusion+mer", "fusion", "target_acc", CONTROL)
            checks.append(
                Check(
                    f"(5) ρ = 0.5 control: |fusion + MER − fusion| ≤ "
                    f"{config.control_margin:g} points",
                    bool(abs(g) <= config.control_margin),
                    gain("fusion+mer", "fusion", "target_acc", CONTROL),
                )
            )
    return checks


def plot(report: Report, out: Path) -> list[Path]:
    """Target accuracy per split and method (mean ± sd over seeds), and mean curves."""
    from icml26.shared import errorbar_bars, errorbar_lines, new_figure, save_figure

    paths = []
    fig, ax = new_figure(size=(7.0, 3.4))
    methods = [
        m for m in report.methods if any(r.method == m and r.group == ALL for r in report.rows)
    ]
    errorbar_bars(ax, methods, [report.stat(m, "target_acc", ALL) for m in methods])
    ax.set_ylabel("target-domain top-1 accuracy (%)")
    ax.set_xlabel("method")
    paths.append(
        save_figure(
            fig,
            out / "target_accuracy.png",
            caption="Top-1 accuracy on the held-out target domain at the last epoch, averaged "
            "over the leave-one-domain-out splits, mean ± sd over seeds (MER: modality-entropy "
            "regularisation; SimMMDG: simple multimodal domain generalisation).",
        )
    )
    curves: dict[str, list[list[float]]] = {}
    for rec in report.records:
        if "curves" in rec and not rec.get("control"):
            curves.setdefault(rec["method"], []).append(rec["curves"]["test_acc"])
    if curves:
        from icml26.shared import Stat

        fig, ax = new_figure(size=(6.0, 3.4))
        for method, runs in curves.items():
            n = min(len(r) for r in runs)
            xs = list(range(1, n + 1))
            stats = [Stat.of([100 * r[i] for r in runs]) for i in range(n)]
            errorbar_lines(ax, xs, stats, label=method)
        ax.set_xlabel("epoch")
        ax.set_ylabel("target-domain top-1 accuracy (%)")
        ax.legend(fontsize=7)
        paths.append(
            save_figure(
                fig,
                out / "target_curves.png",
                caption="Target-domain accuracy against epochs, mean ± sd over seeds and "
                "splits (truncated to the shortest run of a method).",
            )
        )
    return paths


PAPER = Paper(
    name="merdg",
    title="MER-DG: Modality-Entropy Regularization for Multimodal Domain Generalization",
    arxiv="2605.01967",
    claim="On the CoOcc-MMDG simulator (a cross-modal code predictive only in the source "
    "domains), adding the MER-DG loss to late fusion raises last-epoch target accuracy by "
    "≥ 3 points over fusion and to at least the unimodal ensemble, SimMMDG + MER beats "
    "SimMMDG by ≥ 1 point, the frozen encoders keep more target-usable information, source "
    "validation stays within 2 points, and a weak co-occurrence (ρ = 0.5) shows no gain.",
    criterion="Leave-one-domain-out over 4 domains × seeds, last epoch, paired over seeds: "
    "(1) fusion+MER − fusion ≥ 3 and fusion+MER ≥ unimodal; (2) SimMMDG+MER − SimMMDG ≥ 1; "
    "(3) per-modality probe target accuracy gain ≥ 3 with larger log-det; (4) source-val "
    "|gain| ≤ 2; (5) ρ = 0.5 control |gain| ≤ 2.",
    presets=PRESETS,
    run=run,
    judge=judge,
    plot=plot,
    method=METHOD,
    headline=Headline("target_acc", higher_is_better=True, group=ALL, ignore=("simmmdg+mer",)),
    default_seeds=3,
    code="https://github.com/olivesgatech/MER-DG",
    authors="Yavuz Yarici, Ghassan AlRegib",
)


def modality_sets(n: int) -> tuple[tuple[int, ...], ...]:
    """All pairs and the full set of ``n`` modalities (the paper's protocol)."""
    pairs = tuple(combinations(range(n), 2))
    return (*pairs, tuple(range(n))) if n > 2 else pairs
