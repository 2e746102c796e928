"""Reproduction of the CMR claim: CARvE vs the paper's baselines on a growing hub.

One seed = one simulated hub (4 experiences), one frozen encoder, and every method
trained on the same features with the same budget. Rows:

- group ``final``: M/F/D accuracy averaged over the 4 experiences after the last one,
  and M/F/D forgetting, in percentage points (the paper's table);
- groups ``after E1`` … ``after E4``: accuracy averaged over the experiences seen so
  far and forgetting so far (the curve of the plot).

``smoke`` is the CPU scale (4 x ~60 models); ``paper`` the paper's (4 x ~500 models,
K = 64, 5 epochs, official learning rates; meant for a GPU).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from icml26.carve.baselines import (
    EWC,
    RANDOM_REPLAY,
    SEQUENTIAL_FT,
    BM25Retrieval,
    CardRetrieval,
    retrieval_stream,
    ties_merge_stream,
)
from icml26.carve.candidates import CandidateSpec
from icml26.carve.carve import CARVE, ContinualRouter, TrainConfig, with_strategy
from icml26.carve.encoders import make_encoder
from icml26.carve.hub import TASKS, HubConfig, simulate_hub
from icml26.carve.metrics import LEVELS, AccuracyMatrix
from icml26.shared import (
    Check,
    Headline,
    Paper,
    Report,
    Row,
    new_figure,
    numpy_rng,
    save_figure,
    torch_threads,
)

log = logging.getLogger(__name__)

ZERO_SHOT, BM25, SEQ, EWC_NAME, REPLAY, TIES, METHOD, JOINT = (
    "Zero-shot (cosine)", "Zero-shot (BM25)", "Sequential FT", "EWC", "Random replay 10%",
    "TIES merge", "CARvE 10%", "Joint (upper bound)",
)  # fmt: skip
ALL_METHODS = (ZERO_SHOT, BM25, SEQ, EWC_NAME, REPLAY, TIES, METHOD, JOINT)
SHORT = {"model": "M", "family": "F", "domain": "D"}


@dataclass(frozen=True)
class Config:
    """Everything one preset fixes: the hub, the encoder, the router training."""

    hub: HubConfig = field(default_factory=HubConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    encoder: str = "hashed"
    encoder_dim: int = 1024
    replay_ratio: float = 0.1
    ties_density: float = 0.5
    methods: tuple[str, ...] = ALL_METHODS
    threads: int = 1
    device: str | None = None

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in ALL_METHODS]
        if unknown:
            raise ValueError(f"unknown methods {unknown}; known: {ALL_METHODS}")
        if self.encoder not in ("hashed", "minilm"):
            raise ValueError(f"encoder must be 'hashed' or 'minilm', got {self.encoder!r}")


SMOKE = Config(
    hub=HubConfig(n_experiences=4, n_domains=16, models_per_experience=60,
                  train_per_model=16, test_per_model=6),
    train=TrainConfig(embedding_dim=128, adapter_hidden=128, epochs=3, batch_size=128,
                      lr_scale=10.0, candidates=CandidateSpec(32, 16, 6, 9), mine_every=20),
)  # fmt: skip
PAPER_SCALE = Config(
    hub=HubConfig(n_experiences=4, n_domains=len(TASKS),
                  models_per_experience=500, train_per_model=14, test_per_model=4),
    train=TrainConfig(embedding_dim=256, adapter_hidden=256, epochs=5, batch_size=128),
    threads=0,
)  # fmt: skip
PRESETS = {"smoke": SMOKE, "paper": PAPER_SCALE}


def _rows(method: str, acc: AccuracyMatrix, seconds: float, final_only: bool) -> list[Row]:
    metrics: dict[str, float] = {}
    for level in LEVELS:
        metrics[f"{SHORT[level]}-Acc"] = 100 * acc.average(level)
    if not final_only:
        for level in LEVELS:
            metrics[f"{SHORT[level]}-FGT"] = 100 * acc.forgetting(level)
    metrics["train_s"] = seconds
    rows = [Row.of(method, group="final", **metrics)]
    if not final_only:
        for t in range(acc.n_experiences):
            rows.append(
                Row.of(
                    method,
                    group=f"after E{t + 1}",
                    **{f"{SHORT[lv]}-Acc": 100 * acc.average(lv, t) for lv in LEVELS},
                    **{"D-FGT": 100 * acc.forgetting("domain", t)},
                )
            )
    return rows


def run(config: Config, seed: int, out: Path) -> Report:
    """One seed: simulate the hub, encode it, run every method, return the rows."""
    with torch_threads(config.threads):
        return _run(config, seed, Path(out))


def _run(config: Config, seed: int, out: Path) -> Report:
    hub = simulate_hub(config.hub, numpy_rng(seed, "hub"))
    kwargs = {"dim": config.encoder_dim} if config.encoder == "hashed" else {
        "cache_dir": out / "embedding-cache"}  # fmt: skip
    encoder = make_encoder(config.encoder, **kwargs)
    xs_train = [encoder.encode(e.train.texts) for e in hub.experiences]
    xs_test = [encoder.encode(e.test.texts) for e in hub.experiences]
    dim = xs_train[0].shape[1]
    rows: list[Row] = []
    records: list[dict] = []

    def add(method: str, acc: AccuracyMatrix, seconds: float, final_only: bool = False) -> None:
        rows.extend(_rows(method, acc, seconds, final_only))
        records.append({"seed": seed, "method": method, "accuracy": acc.to_dict(),
                        "train_s": seconds})  # fmt: skip
        log.info("seed %d %s: D-Acc %.3f (%.1fs)", seed, method, acc.average("domain"), seconds)

    for method in config.methods:
        t0 = time.perf_counter()
        if method == ZERO_SHOT:
            cards = CardRetrieval(encoder.encode(hub.cards))
            acc = retrieval_stream(hub, lambda k, n, cards=cards: cards.predict(xs_test[k], n))
            add(method, acc, time.perf_counter() - t0)
        elif method == BM25:
            bm25 = BM25Retrieval(hub.cards)
            texts = [e.test.texts for e in hub.experiences]
            acc = retrieval_stream(hub, lambda k, n, b=bm25, q=texts: b.predict(q[k], n))
            add(method, acc, time.perf_counter() - t0)
        elif method == TIES:
            acc = ties_merge_stream(hub, xs_train, xs_test, train=config.train, seed=seed,
                                    density=config.ties_density, device=config.device)  # fmt: skip
            add(method, acc, time.perf_counter() - t0)
        elif method == JOINT:
            learner = ContinualRouter(hub, dim, train=config.train, strategy=SEQUENTIAL_FT,
                                      seed=seed, device=config.device)  # fmt: skip
            learner.learn_jointly(xs_train)
            # tested once, after every experience: only the last row of A is defined
            acc = AccuracyMatrix(len(hub.experiences))
            last = len(hub.experiences) - 1
            for k, a in enumerate(learner.evaluate(last, xs_test)):
                acc.record(last, k, a)
            add(method, acc, time.perf_counter() - t0, final_only=True)
        else:
            strategy = {SEQ: SEQUENTIAL_FT, EWC_NAME: EWC, REPLAY: RANDOM_REPLAY,
                        METHOD: CARVE}[method]  # fmt: skip
            if strategy.replay is not None:
                strategy = with_strategy(strategy, replay_ratio=config.replay_ratio)
            learner = ContinualRouter(hub, dim, train=config.train, strategy=strategy,
                                      seed=seed, device=config.device)  # fmt: skip
            add(method, learner.fit_stream(xs_train, xs_test), time.perf_counter() - t0)
    notes = (
        [
            "hub per experience (seed 0 shown): "
            + "; ".join(
                f"{s['experience']}: +{s['new_models']} models ({s['registered']} "
                f"registered), {s['domains']} domains, {s['train_queries']} train / "
                f"{s['test_queries']} test queries"
                for s in hub.summary()
            )
        ]
        if seed == 0
        else []
    )
    notes.append(
        f"encoder: {encoder.name}; accuracies and forgetting in percentage points; "
        "argmax over every registered model; forgetting = mean over past experiences of "
        "(accuracy right after learning it - accuracy at the end)"
    )
    return Report(rows=rows, records=records, notes=notes)


def judge(report: Report, config: Config) -> list[Check]:
    """The issue's claim plus the brief's sanity criteria, on means over seeds."""

    def mean(method: str, metric: str) -> float:
        return report.stat(method, metric, "final").mean

    checks = []
    carve_d, replay_d = mean(METHOD, "D-Acc"), mean(REPLAY, "D-Acc")
    checks.append(Check(
        "(a) CARvE D-Acc >= random replay D-Acc + 3 pp",
        carve_d >= replay_d + 3.0, f"{carve_d:.1f} vs {replay_d:.1f} ({carve_d - replay_d:+.1f})",
    ))  # fmt: skip
    carve_f, replay_f = mean(METHOD, "D-FGT"), mean(REPLAY, "D-FGT")
    checks.append(Check(
        "(b) CARvE D-FGT <= 0.6 x random replay D-FGT",
        carve_f <= 0.6 * replay_f,
        f"{carve_f:.1f} vs {replay_f:.1f} (ratio {carve_f / max(replay_f, 1e-9):.2f})",
    ))  # fmt: skip
    weak = {m: mean(m, "D-Acc") for m in (ZERO_SHOT, BM25, SEQ) if m in report.methods}
    best = max(weak, key=weak.__getitem__)
    checks.append(Check(
        "(c) CARvE D-Acc >= best of zero-shot retrieval and sequential FT + 10 pp",
        carve_d >= weak[best] + 10.0, f"{carve_d:.1f} vs {weak[best]:.1f} ({best})",
    ))  # fmt: skip
    zs_m = max(mean(m, "M-Acc") for m in (ZERO_SHOT, BM25) if m in report.methods)
    checks.append(Check(
        "(d) CARvE M-Acc >= zero-shot retrieval M-Acc + 15 pp",
        mean(METHOD, "M-Acc") >= zs_m + 15.0, f"{mean(METHOD, 'M-Acc'):.1f} vs {zs_m:.1f}",
    ))  # fmt: skip
    seq_f = mean(SEQ, "D-FGT")
    checks.append(Check(
        "(e) the hub induces forgetting: sequential FT D-FGT >= 20 pp", seq_f >= 20.0,
        f"{seq_f:.1f}",
    ))  # fmt: skip
    joint_d = mean(JOINT, "D-Acc")
    checks.append(Check(
        "(f) CARvE D-Acc >= joint training D-Acc - 3 pp", carve_d >= joint_d - 3.0,
        f"{carve_d:.1f} vs {joint_d:.1f}",
    ))  # fmt: skip
    return checks


def plot(report: Report, out: Path) -> list[Path]:
    """Accuracy over experiences (D and M), one line per method, mean over seeds."""
    groups = [g for g in report.groups if g.startswith("after E")]
    fig, axes = new_figure(1, 2, size=(10, 4))
    for ax, metric in zip(axes, ("D-Acc", "M-Acc"), strict=True):
        for method in report.methods:
            ys = [report.stat(method, metric, g).mean for g in groups
                  if any(r.method == method and r.group == g for r in report.rows)]  # fmt: skip
            if len(ys) == len(groups):
                ax.plot(range(1, len(groups) + 1), ys, marker="o", label=method)
            else:
                ax.axhline(report.stat(method, metric, "final").mean, ls="--", color="grey",
                           label=method)  # fmt: skip
        ax.set_xlabel("after experience")
        ax.set_ylabel(f"{metric} over seen experiences (%)")
        ax.set_xticks(range(1, len(groups) + 1))
    axes[1].legend(fontsize=7)
    return [save_figure(fig, Path(out) / "accuracy_over_experiences.png")]


PAPER = Paper(
    name="carve",
    title="Continual Model Routing in Evolving Model Hubs",
    arxiv="2605.28577",
    claim=(
        "With 10% replay, CARvE reaches a higher final domain accuracy than random replay "
        "(+3 pp or more) with at most 0.6x its forgetting, and well above zero-shot "
        "retrieval and sequential fine-tuning."
    ),
    criterion=(
        "means over seeds: (a) CARvE D-Acc >= random replay + 3 pp; (b) CARvE D-FGT <= "
        "0.6 x random replay's; (c) CARvE D-Acc >= best of zero-shot/sequential FT + 10 pp; "
        "(d) CARvE M-Acc >= zero-shot M-Acc + 15 pp; (e) sequential FT D-FGT >= 20 pp; "
        "(f) CARvE D-Acc >= joint training - 3 pp"
    ),
    presets=PRESETS,
    run=run,
    judge=judge,
    plot=plot,
    method=METHOD,
    headline=Headline("D-Acc", higher_is_better=True, group="final", ignore=(JOINT,)),
    default_seeds=3,
    code="collagelab/CMR",
    authors="Jack Bell, Giacomo Carfì, Gerlando Gramaglia, Vincenzo Lomonaco",
)
