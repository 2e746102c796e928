"""The reproduction: a tiny configuration of the same code in the fast tier; the smoke preset
(3 seeds) in the slow tier."""

import dataclasses

import pytest

from icml26.diting.model import DitingConfig
from icml26.diting.reproduce import PAPER, PRESETS, Config, judge, run
from icml26.diting.training import TrainConfig
from icml26.shared import Report, reproduce

TINY = Config(
    n_cells=16,
    early_cycle_threshold=20,
    charge_discharge_length=8,
    snrs=(2.0,),
    biased_snrs=(),
    eval_windows=(10, 20),
    fit_windows=3,
    model=DitingConfig(
        early_cycle_threshold=20, charge_discharge_length=8, diting_prototype_cycles=4
    ),
    train=TrainConfig(max_epochs=2, min_window=5, batch_size=32),
)


def test_tiny_run_and_judge(tmp_path):
    report = Report.merge([run(TINY, 0, tmp_path)])
    assert report.groups == ["SNR=2"]
    assert {"DITING", "CPMLP", "Dummy", "Severson variance", "Drift slope",
            "DITING (mean prototype)", "DITING (one branch)"} <= set(report.methods)  # fmt: skip
    for method in report.methods:
        assert report.stat(method, "mape", "SNR=2").mean >= 0
        assert 0 <= report.stat(method, "acc15", "SNR=2").mean <= 1
    checks = judge(report, TINY)
    names = " ".join(c.name for c in checks)
    assert "Severson" in names and "medoid" in names and "two branches" in names
    ours = report.stat("DITING", "mape", "SNR=2").mean
    ratio_check = next(c for c in checks if "best baseline" in c.name)
    best = min(report.stat(m, "mape", "SNR=2").mean for m in
               ("Dummy", "Severson variance", "Severson full", "Drift slope", "CPMLP"))  # fmt: skip
    assert (ours <= 0.85 * best) or not ratio_check.holds
    stops = [r for r in report.records if "stopping" in r]
    assert stops and all(r["stopping"]["reason"] in ("plateau", "cap") for r in stops)


def test_presets_and_descriptor():
    assert PAPER.name == "diting" and set(PRESETS) == {"smoke", "paper"}
    smoke = PRESETS["smoke"]
    assert smoke.snrs == (5.0, 2.0, 1.0) and smoke.biased_snrs == (2.0,)
    assert smoke.charge_discharge_length == 60 and smoke.early_cycle_threshold == 100
    assert PRESETS["paper"].charge_discharge_length == 300
    assert dataclasses.asdict(smoke)["model"]["diting_prototype_cycles"] == 8


@pytest.mark.slow
def test_smoke_preset_three_seeds(tmp_path):
    report = reproduce(PAPER, preset="smoke", seeds=3, out=tmp_path)
    assert len(report.checks) >= 5
    for c in report.checks:
        if "best baseline" in c.name:
            ratio = float(c.detail.split("ratio ")[1].rstrip(")"))
            limit = 0.85 if "SNR=5" not in c.name else 1.05
            assert c.holds <= (ratio <= limit + 5e-3)


def test_no_dependency_warnings_reach_the_user(tmp_path):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run(dataclasses.replace(TINY, ablation_snr=None), 1, tmp_path)
    leaked = [str(w.filename) for w in caught if any(k in str(w.filename) for k in
              ("sklearn", "torch", "/ot/", "pybamm"))]  # fmt: skip
    assert not leaked, leaked
