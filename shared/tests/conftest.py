"""A small fake paper, installed for the tests through a real entry point.

The fixture writes a module and a ``*.dist-info`` folder with an
``entry_points.txt`` into a temporary directory on ``sys.path``, exactly what pip
leaves behind, so discovery is exercised through ``importlib.metadata``.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import settings

# Wall-clock deadlines make property tests flaky on a loaded machine; the examples are tiny.
settings.register_profile("icml26", deadline=None)
settings.load_profile("icml26")

FAKE_MODULE = """
import dataclasses
from dataclasses import dataclass

from icml26.shared import Check, Headline, Paper, Report, Row, numpy_rng
from icml26.shared.progress import stage


@dataclass(frozen=True)
class Config:
    n: int
    gap: float
    mode: str = "ok"


def run(config, seed, out):
    if config.mode == "crash" and seed == 1:
        raise RuntimeError("the fake paper's solver diverged")
    if config.mode == "interrupt" and seed == 1:
        raise KeyboardInterrupt
    stage("fake stage for seed %d", seed)
    rng = numpy_rng(seed, "fake")
    noise = rng.normal(0, 0.01, size=2)
    return Report(
        rows=[
            Row.of("ours", group="easy", score=0.9 + config.gap + noise[0], seconds=1.0),
            Row.of("baseline", group="easy", score=0.9 + noise[1], seconds=2.0),
            Row.of("oracle", group="easy", score=2.0, seconds=5.0),
        ],
        records=[{"seed": seed, "n": config.n}],
    )


def judge(report, config):
    ours = report.stat("ours", "score", "easy").mean
    base = report.stat("baseline", "score", "easy").mean
    return [Check("ours beats baseline by 0.05", ours >= base + 0.05, f"{ours:.3f} vs {base:.3f}")]


def plot(report, out):
    from icml26.shared import errorbar_bars, new_figure, save_figure

    fig, ax = new_figure()
    errorbar_bars(ax, report.methods, [report.stat(m, "score", "easy") for m in report.methods])
    ax.set_ylabel("score")
    return [save_figure(fig, out / "scores.png", caption="Score per method, mean ± sd.")]


PAPER = Paper(
    name="fake",
    title="A fake paper for the CLI tests",
    arxiv="0000.00000",
    claim="Ours beats the baseline.",
    criterion="mean score gap >= 0.05",
    presets={
        "smoke": Config(n=3, gap=0.2),
        "paper": Config(n=30, gap=0.2),
        "weak": Config(n=3, gap=0.0),
        "crash": Config(n=3, gap=0.2, mode="crash"),
        "interrupt": Config(n=3, gap=0.2, mode="interrupt"),
    },
    run=run,
    judge=judge,
    plot=plot,
    method="ours",
    headline=Headline("score", ignore=("oracle",)),
    default_seeds=2,
    seconds_per_seed={"smoke": 0.01},
)

# A second paper from the same code, for the cross-paper summary
PAPER2 = dataclasses.replace(PAPER, name="fake2", title="A second fake paper")

NOT_A_PAPER = 42
"""


@pytest.fixture
def fake_install(tmp_path, monkeypatch) -> Path:
    """Install the fake paper (and a broken and a mislabelled one) on sys.path."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "icml26_fakepaper.py").write_text(textwrap.dedent(FAKE_MODULE))
    dist = site / "icml26_fake-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: icml26-fake\nVersion: 0.1\n"
        "Summary: A fake paper for the CLI tests\n"
    )
    (dist / "entry_points.txt").write_text(
        "[icml26.papers]\n"
        "fake = icml26_fakepaper:PAPER\n"
        "fake2 = icml26_fakepaper:PAPER2\n"
        "ghost = icml26_no_such_module:PAPER\n"
        "wrongtype = icml26_fakepaper:NOT_A_PAPER\n"
        "\n[icml26.commands]\n"
        "fakecmd = icml26_fakepaper_cmd:main\n"
    )
    (site / "icml26_fakepaper_cmd.py").write_text(
        "def main(argv):\n    print('fakecmd got', argv)\n    return 3\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICML26_QUIET", "1")
    yield site
    for mod in ("icml26_fakepaper", "icml26_fakepaper_cmd"):
        sys.modules.pop(mod, None)
