"""The icml26 command, driven through the fake paper of conftest.py."""

from __future__ import annotations

import json

import pytest

from icml26.shared.cli import EXIT_CLAIM_FAILED, EXIT_CRASHED, EXIT_OK, EXIT_USAGE, main


def test_list_reads_metadata_without_importing(fake_install, capsys):
    import sys

    assert main(["list"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "fake" in out and "ghost" in out and "wrongtype" in out
    assert "A fake paper for the CLI tests" in out  # the distribution's Summary
    assert "icml26_fakepaper" not in sys.modules  # nothing was imported
    assert "BROKEN" not in out


def test_list_check_shows_papers_and_broken_plugins(fake_install, capsys):
    assert main(["list", "--check"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "fake" in out and "A fake paper" in out
    assert "ghost" in out and "BROKEN" in out and "ModuleNotFoundError" in out
    assert "wrongtype" in out and "not an icml26 Paper" in out


def test_info_prints_presets(fake_install, capsys):
    assert main(["info", "fake"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "smoke" in out and '"gap": 0.2' in out and "0000.00000" in out


def test_reproduce_writes_report_and_figure(fake_install, capsys):
    assert main(["reproduce", "fake", "--seeds", "3", "--check"]) == EXIT_OK
    out_dir = fake_install.parent / "results" / "fake" / "smoke"
    data = json.loads((out_dir / "report.json").read_text())
    assert data["schema_version"] == 1
    assert data["holds"] is True
    assert data["seeds"] == [0, 1, 2]
    ours = next(r for r in data["rows"] if r["method"] == "ours")
    assert ours["metrics"]["score"]["n"] == 3
    assert data["environment"]["config"] == {"n": 3, "gap": 0.2, "mode": "ok"}
    assert "icml26-shared" in data["environment"]["packages"]
    assert (out_dir / "report.md").read_text().startswith("# fake — preset `smoke`")
    assert (out_dir / "scores.png").stat().st_size > 0
    assert "| easy | ours |" in capsys.readouterr().out


def test_check_fails_when_claim_does_not_hold(fake_install, tmp_path):
    assert main(["reproduce", "fake", "--preset", "weak", "--out", str(tmp_path / "o")]) == EXIT_OK
    code = main(["reproduce", "fake", "--preset", "weak", "--check", "--out", str(tmp_path / "o")])
    assert code == EXIT_CLAIM_FAILED
    data = json.loads((tmp_path / "o" / "fake" / "weak" / "report.json").read_text())
    assert data["holds"] is False


def test_unknown_paper_lists_known(fake_install, capsys):
    assert main(["reproduce", "nosuchpaper"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "nosuchpaper" in err and "fake" in err


def test_unknown_preset_lists_presets(fake_install, capsys):
    assert main(["reproduce", "fake", "--preset", "nosuch"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "nosuch" in err and "smoke" in err and "paper" in err


@pytest.mark.parametrize("seeds", ["0", "-1", "two"])
def test_bad_seed_count_is_usage_error(fake_install, seeds, capsys):
    assert main(["reproduce", "fake", "--seeds", seeds]) == EXIT_USAGE
    assert "--seeds" in capsys.readouterr().err


def test_reproduce_needs_name_or_all(fake_install):
    assert main(["reproduce"]) == EXIT_USAGE
    assert main(["reproduce", "fake", "--all"]) == EXIT_USAGE


def test_broken_paper_is_reported_by_name(fake_install, capsys):
    assert main(["reproduce", "ghost"]) == EXIT_CRASHED
    assert "ghost" in capsys.readouterr().err


def test_all_prints_summary_and_fails_check_on_broken(fake_install, capsys, monkeypatch):
    from icml26.shared import registry

    real = registry.discover

    def only_fake():  # the fake papers alone, whatever else is installed
        eps = real().entry_points
        return registry.Registry({k: v for k, v in eps.items() if k in ("fake", "ghost")})

    monkeypatch.setattr("icml26.shared.cli.discover", only_fake)
    # a paper that fails to load is a crash, with or without --check
    assert main(["reproduce", "--all", "--seeds", "2"]) == EXIT_CRASHED
    out = capsys.readouterr().out
    # the oracle row is ignored: the best baseline is "baseline"
    assert "(baseline)" in out and "| fake |" in out and "| 1/1 |" in out
    assert "ghost" in out and "error" in out
    assert main(["reproduce", "--all", "--seeds", "1", "--check"]) == EXIT_CRASHED


def test_package_subcommand_is_dispatched(fake_install, capsys):
    assert main(["fakecmd", "a", "--b"]) == 3
    assert "fakecmd got ['a', '--b']" in capsys.readouterr().out


def test_package_subcommand_after_global_flags(fake_install, capsys):
    assert main(["-v", "fakecmd", "x"]) == 3
    assert "fakecmd got ['x']" in capsys.readouterr().out
