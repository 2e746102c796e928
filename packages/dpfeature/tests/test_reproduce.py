import dataclasses

import pytest

from icml26.dpfeature.reproduce import PAPER, PRESETS, Config, judge, run, snr_star, tiny_config
from icml26.shared import Report, discover


def test_paper_is_registered_with_both_presets():
    paper = discover().get("dpfeature")
    assert paper is PAPER or paper.name == "dpfeature"
    assert set(PRESETS) >= {"smoke", "paper"}
    smoke = PRESETS["smoke"]
    assert (smoke.n, smoke.d, smoke.m, smoke.q) == (40, 2000, 10, 3.0)
    assert set(smoke.mu_norms) >= {2, 4, 6, 8, 12, 16, 24}


def test_tiny_reproduction_runs_and_judges(tmp_path):
    config = tiny_config()
    report = Report.merge([run(config, seed, tmp_path) for seed in (0, 1)])
    checks = {c.name[:3]: c for c in judge(report, config)}
    assert checks["(a)"].holds  # GD: chance at ‖μ‖ = 2, learned at ‖μ‖ = 30 (d = 400)
    gd_hi = report.stat("GD", "test_error", config.group(30.0))
    assert gd_hi.n == 2 and gd_hi.mean < 0.1
    for row in report.rows:
        for stat in row.metrics.values():
            assert all(v == v for v in stat.values)  # no NaN anywhere, diverged or not
    assert report.stat("class-mean", "test_error", config.group(30.0)).mean < 0.05


def test_snr_star_and_bad_grids():
    config = tiny_config()
    assert snr_star([0.5, 0.2, 0.05, 0.0], config) == 2
    assert snr_star([0.5, 0.4], config) is None
    with pytest.raises(ValueError, match="positive"):
        Config(mu_norms=(0.0, 2.0))
    with pytest.raises(ValueError, match="positive"):
        Config(mu_norms=(-1.0, 2.0))
    with pytest.raises(ValueError, match="increasing"):
        Config(mu_norms=(4.0, 2.0))
    with pytest.raises(ValueError, match="epsilons"):
        Config(epsilons=(0.0,))


@pytest.mark.slow  # the smoke preset, three seeds (minutes on a shared 2-core CPU)
def test_smoke_preset_reproduces_the_claim(tmp_path):
    from icml26.shared import reproduce

    report = reproduce(PAPER, preset="smoke", seeds=3, out=tmp_path)
    names = {c.name[:3]: c.holds for c in report.checks}
    assert names["(a)"] and names["(e)"]
    assert report.holds is not None


@pytest.mark.slow
def test_cli_output_has_no_dependency_warnings(tmp_path):
    import os
    import subprocess
    import sys

    code = (
        "import dataclasses\n"
        "from icml26.dpfeature.reproduce import PAPER, tiny_config\n"
        "from icml26.shared import reproduce\n"
        "cfg = dataclasses.replace(tiny_config(), accountants=True, steps=20)\n"
        "paper = dataclasses.replace(PAPER, presets={'smoke': cfg, 'paper': cfg})\n"
        f"reproduce(paper, preset='smoke', seeds=1, out={str(tmp_path)!r})\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Warning" not in proc.stderr and "warn" not in proc.stderr.lower(), proc.stderr


def test_config_is_frozen_json_able():
    config = PRESETS["smoke"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.n = 3  # type: ignore[misc]
    assert dataclasses.asdict(config)["mu_norms"][0] == 2
