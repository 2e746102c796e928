"""The reproduction: a reduced run of the same code in the fast tier, the smoke preset as `slow`."""

from __future__ import annotations

import pytest

from icml26.gnn_watermark.reproduce import (
    BACKDOOR,
    CLEAN,
    CLEAN_POOL,
    METHOD,
    PAPER,
    PRESETS,
    Config,
    judge,
    plot,
    run,
)
from icml26.shared import Report, reproduce

TINY = Config(
    graphs=("tiny",),
    hidden=32,
    epochs=40,
    lr=1e-2,
    num_subgraphs=4,
    subgraph_size=16,
    watermark_size=12,
    null_subgraphs=20,
    null_tuples=50,
    clean_models=3,
    finetune_epochs=5,
    finetune_lrs=(1e-4, 5e-4),
    prune_structured_rates=(0.3,),
    prune_unstructured_rates=(0.3,),
    kd_epochs=10,
)


def test_reduced_run_computes_every_check(tmp_path):
    rep = run(TINY, 0, tmp_path)
    rep.seeds = [0]
    merged = Report.merge([rep])
    group = "tiny/GCN"
    swept = [f"fine-tune {a.name} @{lr:.0e}" for a in TINY.finetune_attacks for lr in (1e-4, 5e-4)]
    for method in (
        CLEAN,
        METHOD,
        BACKDOOR,
        CLEAN_POOL,
        "distillation",
        "structured prune 30%",
        "unstructured prune 30%",
        *swept,
    ):
        merged.row(method, group)
    assert "fine-tune official @1e-04" in swept
    checks = judge(merged, TINY)
    assert len(checks) == 11 and all(isinstance(c.holds, bool) and c.detail for c in checks)
    assert "surviving range" in next(c.detail for c in checks if c.name.startswith("(c)"))
    figures = plot(merged, tmp_path)
    assert [p.name for p in figures] == ["robustness_tiny_GCN.png", "z_tiny_GCN.png"]
    assert all(p.caption for p in figures)
    # what is true at any scale: the watermark raises the match count far above clean models,
    # the backdoor memorises its trigger, and rates are rates
    assert merged.stat(METHOD, "mi", group).mean > merged.stat(CLEAN_POOL, "mi", group).mean + 5
    assert merged.stat(METHOD, "z_clean", group).mean > merged.stat(CLEAN, "z_clean", group).mean
    assert merged.stat(METHOD, "alignment", group).mean > 0.8
    assert merged.stat(BACKDOOR, "trigger_acc", group).mean > 0.9
    for metric in ("fpr_subgraph", "fpr_clean", "fpr_official", "fpr_backdoor"):
        assert 0.0 <= merged.stat(CLEAN_POOL, metric, group).mean <= 1.0
    assert len(rep.records) == 1 and rep.records[0]["seed"] == 0


def test_presets_are_registered():
    assert set(PAPER.presets) == {"smoke", "paper"} and PAPER.method == METHOD
    assert PRESETS["paper"].archs == ("GCN", "SAGE", "GAT")
    assert PRESETS["paper"].graphs == ("photo", "cs", "pubmed")


@pytest.mark.slow
def test_smoke_preset(tmp_path):
    report = reproduce(PAPER, preset="smoke", seeds=3, out=tmp_path)
    checks = {c.name: c.holds for c in report.checks}
    assert len(checks) == 11
    for name, holds in checks.items():
        assert holds, name
