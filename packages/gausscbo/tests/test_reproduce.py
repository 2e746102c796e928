"""The smoke reproduction's code path on fewer runs (same settings otherwise)."""

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from icml26.gausscbo.reproduce import PAPER, PRESETS, judge, plot, run
from icml26.shared import Report

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    config = dataclasses.replace(PRESETS["smoke"], runs=8, advi_steps=0, mc_samples=256)
    out = tmp_path_factory.mktemp("smoke")
    rep = Report.merge([run(config, 0, out)])
    return config, rep, out


def test_smoke_claim_checks(report):
    config, rep, _ = report
    checks = judge(rep, config)
    assert [c.name[:3] for c in checks] == ["(a)", "(b)", "(c)", "(d)"]
    # CBO beats the BW flow on the multimodal targets (paired, same starts)
    assert checks[0].holds and checks[1].holds and checks[2].holds, checks
    runs = [r for r in rep.records if r["kind"] == "run"]
    assert len(runs) == 16 and {"cbo", "bw", "svgd", "var_ratio"} <= set(runs[0])
    d_cbo = np.median([r["cbo"] for r in runs if r["target"] == "D"])
    assert d_cbo == pytest.approx(0.2351, abs=0.01)  # the official notebook's median on D
    # (d) is measured: with σ = 5 > √(2λ) the ensemble's mean-square spread grows
    ratios = np.array([r["var_ratio"] for r in runs])
    assert checks[3].holds == (np.mean(ratios < 0.05) >= 0.9)


def test_rows_and_plots(report):
    _, rep, out = report
    assert rep.stat("CBO", "kl_median", "D").mean < rep.stat("BW", "kl_median", "D").mean
    assert {"CBO", "BW", "SVGD"} <= set(rep.methods)
    paths = plot(rep, out)
    assert [p.name for p in paths] == ["kl_vs_time.png", "final_gaussians.png"]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert PAPER.name == "gausscbo" and set(PAPER.presets) >= {"smoke", "paper"}


def test_readme_quickstart_runs():
    text = README.read_text()
    block = re.search(r"## Quickstart.*?```python\n(.*?)```", text, re.S).group(1)
    exec(compile(block, "README-quickstart", "exec"), {})


@pytest.mark.slow
def test_paper_preset_code_path(tmp_path):
    config = dataclasses.replace(
        PRESETS["paper"], targets=("B",), runs=2, steps=20, advi_steps=0, mc_samples=64,
        sigma_sweep=(3.0,), n_sweep=(4,), base_update_every=(5,), d10_instances=1,
        d10_steps=10, d10_particles=8, multiswarm_runs=1,
    )  # fmt: skip
    rep = run(config, 0, tmp_path)
    assert {"FR", "CBO σ=3", "CBO N=4", "CBO base update /5"} <= set(rep.methods)
    assert "d=10" in rep.groups and any("d = 10" in n for n in rep.notes)
