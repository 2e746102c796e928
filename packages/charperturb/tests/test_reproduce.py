import pytest

from icml26.charperturb.reproduce import PAPER, PRESETS, judge, run, tiny_config
from icml26.shared import Report


def test_presets_are_frozen_and_registered():
    assert set(PRESETS) >= {"smoke", "paper"}
    with pytest.raises(AttributeError):
        PRESETS["smoke"].n_sentences = 1
    assert PAPER.name == "charperturb" and PAPER.arxiv == "2510.14365"


def test_tiny_run_judges_the_deterministic_parts(tmp_path):
    cfg = tiny_config()
    rep = Report.merge([run(cfg, 0, tmp_path)])
    checks = {c.name[:3]: c for c in judge(rep, cfg)}
    assert checks["(a)"].holds is not None
    assert checks["(b)"].holds  # exact inversion for every set
    cf = next(c for c in judge(rep, cfg) if "Cf-only" in c.name)
    assert cf.holds
    assert rep.stat("strip Cf", "removed_share", "sanitiser vs").mean == 0.0
    assert rep.stat("strip Cf", "removed_share", "sanitiser zero_width").mean == 1.0
    assert rep.stat("set-aware sanitiser", "exact_rate", "sanitiser tags").mean == 1.0
    frag = rep.stat("UCC-Inj vs k=3", "tokens_per_visible_char", "fragmentation cl100k").mean
    clean = rep.stat("clean (k=0)", "tokens_per_visible_char", "fragmentation cl100k").mean
    assert frag > 3 * clean
    assert any(r["kind"] == "token_ids" for r in rep.records)
    fx = [r for r in rep.records if r["kind"] == "fixture"]
    assert {r["model"] for r in fx} == {"clean-trained", "noise-trained"}
    assert all(r["stopping"]["reason"] in ("plateau", "cap") for r in fx)
