from __future__ import annotations

import pytest

from icml26.shared import BrokenPaper, Headline, Paper, UnknownPaper, UnknownPreset, discover
from icml26.shared.results import Check, Report


def _paper(**over):
    kw = {
        "name": "x",
        "title": "t",
        "arxiv": None,
        "claim": "c",
        "criterion": "k",
        "presets": {"smoke": 1, "paper": 2},
        "run": lambda config, seed, out: Report(rows=[]),
        "judge": lambda report, config: [Check("ok", True)],
        "method": "m",
        "headline": Headline("acc"),
    }
    kw.update(over)
    return Paper(**kw)


def test_get_imports_only_the_paper_asked_for(fake_install):
    import sys

    reg = discover()
    assert reg.get("fake").name == "fake"
    assert "ghost" not in reg._broken  # not imported yet
    assert "icml26_fakepaper" in sys.modules


def test_discover_finds_fake_and_collects_failures(fake_install):
    reg = discover()
    assert "fake" in reg.papers
    assert set(reg.broken) >= {"ghost", "wrongtype"}
    assert reg.get("fake").distribution == "icml26-fake"
    with pytest.raises(BrokenPaper, match="ghost"):
        reg.get("ghost")
    with pytest.raises(UnknownPaper, match=r"known papers: .*fake"):
        reg.get("nope")


def test_paper_validates_its_fields():
    with pytest.raises(ValueError, match="lacks presets"):
        _paper(presets={"smoke": 1})
    with pytest.raises(ValueError, match="lowercase"):
        _paper(name="Bad Name")
    with pytest.raises(ValueError, match="default_seeds"):
        _paper(default_seeds=0)


def test_unknown_preset_names_the_presets():
    with pytest.raises(UnknownPreset, match="presets: smoke, paper"):
        _paper().preset("large")


def test_headline_ignore_takes_exact_names_and_patterns():
    from icml26.shared import Headline

    head = Headline("z", ignore=("oracle", "fine-tune *", "[x]"))
    assert head.ignores("oracle") and head.ignores("fine-tune official @2e-05")
    assert head.ignores("[x]")  # an exact name wins even where it reads as a pattern
    assert not head.ignores("clean") and not head.ignores("oracle ceiling")
