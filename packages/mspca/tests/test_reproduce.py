"""The claim, at reduced trial counts in the fast tier and as the real smoke preset under `slow`."""

import dataclasses
import json

import pytest

from icml26.mspca.finite_n import wilson
from icml26.mspca.reproduce import ALGORITHM1, METHOD, OFFICIAL_VOTE, PAPER, PRESETS, VOTE, Config
from icml26.shared import reproduce
from icml26.shared.cli import main

# Same code, smaller: c = 0.9 at d = 270, n = 300, two trials per π. Single trials fail
# often at this n (a quarter of them for the official variant at n = 250, see the
# README's finite-n study), so the fast tier asserts what holds by far: (c) and (d), the
# best MS-PCA variant ahead of centered PCA by 0.5, and the structure of the report;
# the smoke preset (slow tier) must pass every check.
SMALL = Config(
    d=270,
    n=300,
    fractions=(0.05, 0.20),
    trials=2,
    paired_baselines=("RPCA-AAP",),
    paired_trials=1,
    control_trials=2,
    vote=0,
)


@pytest.mark.slow  # about a minute alone on 2 cores: both variants, RPCA-AAP, compilation
def test_reduced_smoke_reproduces_the_margins(tmp_path):
    paper = dataclasses.replace(PAPER, presets={**PAPER.presets, "small": SMALL})
    report = reproduce(paper, preset="small", seeds=1, out=tmp_path)
    names = [c.name for c in report.checks]
    assert [n[:3] for n in names] == ["(a)", "(b)", "(c)", "(d)", "(e)"]
    holds = {c.name[:3]: c.holds for c in report.checks}
    assert holds["(c)"] and holds["(d)"], report.to_markdown()
    for group in ("π=5%", "π=20%"):
        for method in (METHOD, ALGORITHM1):
            row = report.row(method, group)
            assert {"alignment", "median_alignment", "failure_rate"} <= set(row.metrics)
        best = max(report.stat(m, "alignment", group).mean for m in (METHOD, ALGORITHM1))
        assert best >= report.stat("centered PCA", "alignment", group).mean + 0.5
    saved = json.loads((tmp_path / "mspca" / "small" / "report.json").read_text())
    assert saved["holds"] is report.holds and saved["environment"]["config"]["trials"] == 2
    assert (tmp_path / "mspca" / "small" / "alignment.png").exists()


def test_presets_are_the_papers_settings():
    smoke, paper = PRESETS["smoke"], PRESETS["paper"]
    assert (smoke.d, smoke.n) == (900, 1000) == (paper.d, paper.n)
    assert smoke.fractions == paper.fractions == (0.05, 0.10, 0.15, 0.20)
    assert paper.trials * PAPER.default_seeds >= 200
    assert paper.sweep is not None and len(paper.sweep.ns) == 15
    assert paper.finite_n is not None
    assert paper.finite_n.ns == (250, 500, 1000, 2000)
    # ±3 points (Wilson 95%) at the highest failure rate measured at each n
    measured = {250: 0.29, 500: 0.207, 1000: 0.128, 2000: 0.062}
    for n, rate in measured.items():
        trials = paper.finite_n.trials_at(n)
        low, high = wilson(round(rate * trials), trials)
        assert (high - low) / 2 <= 0.03, (n, trials, low, high)
    assert {"RPCA-AAP", "Tyler", "Huber", "l1-PCA"} <= set(paper.paired_baselines)


@pytest.mark.slow
def test_smoke_preset_from_the_cli_passes_every_check(tmp_path):
    code = main(["reproduce", "mspca", "--check", "--out", str(tmp_path)])
    saved = json.loads((tmp_path / "mspca" / "smoke" / "report.json").read_text())
    failed = [c["name"] for c in saved["checks"] if not c["holds"]]
    assert code == 0 and not failed, failed


@pytest.mark.slow
def test_paper_extensions_add_their_rows(tmp_path):
    # The majority votes run in `paper` only: the reduced setting with them switched on
    # must report both per π (and a π without a paired subset leaves check (c) out).
    config = dataclasses.replace(SMALL, fractions=(0.10,), vote=3)
    paper = dataclasses.replace(PAPER, presets={**PAPER.presets, "ext": config})
    report = reproduce(paper, preset="ext", seeds=1, out=tmp_path)
    for method in (VOTE, OFFICIAL_VOTE):
        assert report.stat(method, "alignment", "π=10%").mean > 0.5
    assert [c.name[:3] for c in report.checks] == ["(a)", "(b)", "(d)", "(e)"]
