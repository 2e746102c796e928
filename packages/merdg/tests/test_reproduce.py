"""A tiny configuration of the reproduction runs end to end; the smoke preset is slow."""

from dataclasses import replace

import pytest

from icml26.merdg.data import CoOccConfig
from icml26.merdg.models import ModelConfig
from icml26.merdg.probe import ProbeConfig
from icml26.merdg.reproduce import ALL, CONTROL, PAPER, PRESETS, judge, run
from icml26.merdg.train import TrainConfig
from icml26.shared import Report


def test_tiny_reproduction_has_every_row_and_check(tmp_path):
    cfg = replace(
        PRESETS["smoke"],
        sim=CoOccConfig(per_domain=60),
        train=TrainConfig(
            epochs=2,
            batch_size=30,
            model=ModelConfig(
                encoder_hidden=8,
                embed_dim=8,
                proj_hidden=8,
                proj_dim=8,
                fusion_hidden=8,
                trans_hidden=8,
            ),
        ),
        probe=ProbeConfig(hidden=8, epochs=2),
        targets=(0, 3),
    )
    reports = [run(cfg, seed, tmp_path) for seed in (0, 1)]
    merged = Report.merge(reports)
    assert set(merged.methods) == set(cfg.methods)
    assert {ALL, CONTROL, "target=0", "target=3"} <= set(merged.groups)
    assert merged.stat("fusion+mer", "target_acc", ALL).n == 2
    assert "probe" in merged.row("fusion", ALL).metrics
    checks = judge(merged, cfg)
    assert len(checks) == 5 and all(isinstance(c.holds, bool) for c in checks)
    assert PAPER.presets["paper"].sim.n_modalities == 3


@pytest.mark.slow
def test_smoke_preset_runs_and_is_judged(tmp_path):
    cfg = PRESETS["smoke"]
    merged = Report.merge([run(cfg, s, tmp_path) for s in range(3)])
    checks = judge(merged, cfg)
    assert len(checks) == 5
    # the unimodal ensemble is immune to the co-occurrence: it beats plain fusion on the target
    assert (
        merged.stat("unimodal", "target_acc", ALL).mean
        > merged.stat("fusion", "target_acc", ALL).mean
    )
