"""The reproduction: a reduced run of the same code in the fast tier; the smoke preset (3 seeds)
behind ``slow``."""

import dataclasses

import pytest

from icml26.prism.data import SimConfig
from icml26.prism.reproduce import PAPER, PRESETS, PROFILE_MM, PROFILE_NGL, judge
from icml26.shared import Report, reproduce

PROFILES = (PROFILE_NGL, PROFILE_MM)


def _reduced():
    smoke = PRESETS["smoke"]
    return dataclasses.replace(
        smoke,
        sim=SimConfig(n_germlines=3, generations=10),
        model=smoke.model.replace(d_model=16, d_ff=32, n_layers=1),
        train_lineages=12,
        per_lineage=3,
        eval_sequences=4,
        probe_sequences=6,
        n_scans=2,
        gen_samples=4,
        gen_mutations=2,
        pretrain=smoke.pretrain.replace(steps=2, warmup_steps=1),
        finetune=smoke.finetune.replace(steps=2, warmup_steps=1),
    )


def test_reduced_run_produces_every_row_and_check(tmp_path):
    cfg = _reduced()
    rep = PAPER.run(cfg, 0, tmp_path)
    merged = Report.merge([rep])
    checks = judge(merged, cfg)
    assert len(checks) == 5
    assert all(isinstance(c.holds, bool) for c in checks)
    for g in ("CDR·NGL", "CDR·GL", "FR·NGL", "FR·GL"):
        assert merged.stat("PRISM", "ppl", g).mean > 1.0
        assert merged.stat("PRISM-less", "ppl", g).mean > 1.0
    for m in ("PRISM", "PRISM-less", "PRISM (masked marginal)", "BLOSUM62", *PROFILES):
        assert -1.0 <= merged.stat(m, "spearman", "zero-shot mean").mean <= 1.0
    ident = merged.stat("PRISM · gl", "germline_identity", "generation").mean
    assert 0.5 < ident <= 1.0
    assert PAPER.plot(merged, tmp_path)[0].exists()


@pytest.mark.slow
def test_smoke_preset(tmp_path):
    """The smoke preset computes every check; the claim itself does not hold at this scale
    (see the README's Results), so a failed claim is reported as an expected failure."""
    report = reproduce(PAPER, preset="smoke", seeds=3, out=tmp_path)
    assert len(report.checks) == 5
    for m in ("PRISM", "PRISM-less"):
        rho = report.stat(m, "spearman", "zero-shot mean")
        assert len(rho.values) == 3 and -1.0 <= rho.mean <= 1.0
        assert report.stat(m, "ppl", "CDR·NGL").mean > 1.0
    # the simulated data carry the paper's mechanism: from counted site statistics the
    # wt-centred NGL score correlates positively with fitness, the masked marginal negatively
    counted = [report.stat(m, "spearman", "zero-shot mean").mean for m in PROFILES]
    assert counted[0] > 0 > counted[1] and counted[0] - counted[1] >= 0.15, counted
    failed = [c.name + ": " + c.detail for c in report.checks if not c.holds]
    if failed:
        pytest.xfail("claim not reproduced at smoke scale: " + "; ".join(failed))
