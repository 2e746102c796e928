"""Exit codes, interrupted runs, progress lines and the cross-paper summary."""

from __future__ import annotations

import json

import pytest

from icml26.shared import registry
from icml26.shared.cli import (
    EXIT_CLAIM_FAILED,
    EXIT_CRASHED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    main,
)


@pytest.fixture
def only(monkeypatch):
    """Restrict discovery to the named fake papers, whatever else is installed."""

    def restrict(*names):
        real = registry.discover

        def discover():
            eps = real().entry_points
            return registry.Registry({k: v for k, v in eps.items() if k in names})

        monkeypatch.setattr("icml26.shared.cli.discover", discover)

    return restrict


def test_crash_is_exit_3_with_one_line_and_a_traceback_file(fake_install, capsys):
    assert main(["reproduce", "fake", "--preset", "crash", "--seeds", "2"]) == EXIT_CRASHED
    err = capsys.readouterr().err
    line = [ln for ln in err.splitlines() if "crashed" in ln]
    assert len(line) == 1 and "RuntimeError: the fake paper's solver diverged" in line[0]
    assert "Traceback" not in err
    staging = fake_install.parent / "results" / "fake" / ".crash.incomplete"
    assert "RuntimeError" in (staging / "traceback.txt").read_text()
    assert (staging / "INCOMPLETE").read_text().startswith("crashed")
    assert not (fake_install.parent / "results" / "fake" / "crash").exists()


def test_crash_under_all_is_exit_3_without_check(fake_install, only, capsys):
    only("fake", "fake2")
    assert main(["reproduce", "--all", "--preset", "crash", "--seeds", "2"]) == EXIT_CRASHED
    out = capsys.readouterr().out
    assert out.count("crashed") >= 2


def test_interrupt_is_130_and_leaves_no_complete_looking_report(fake_install, capsys):
    results = fake_install.parent / "results" / "fake"
    # an earlier complete run of the same preset is kept, untouched
    assert main(["reproduce", "fake", "--preset", "smoke", "--seeds", "1"]) == EXIT_OK
    before = (results / "smoke" / "report.json").read_text()
    assert main(["reproduce", "fake", "--preset", "interrupt", "--seeds", "3"]) == EXIT_INTERRUPTED
    assert "interrupted" in capsys.readouterr().err
    assert not (results / "interrupt").exists()
    marker = results / ".interrupt.incomplete" / "INCOMPLETE"
    assert marker.read_text().startswith("interrupted")
    assert not (results / ".interrupt.incomplete" / "report.json").exists()
    assert (results / "smoke" / "report.json").read_text() == before


def test_rerun_replaces_the_report_only_when_complete(fake_install):
    results = fake_install.parent / "results" / "fake" / "smoke"
    assert main(["reproduce", "fake", "--seeds", "1"]) == EXIT_OK
    assert json.loads((results / "report.json").read_text())["seeds"] == [0]
    assert main(["reproduce", "fake", "--seeds", "2"]) == EXIT_OK
    assert json.loads((results / "report.json").read_text())["seeds"] == [0, 1]
    assert not (results.parent / ".smoke.incomplete").exists()
    assert not (results.parent / ".smoke.old").exists()


def test_unwritable_out_is_a_usage_error_in_one_line(fake_install, tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("")
    assert main(["reproduce", "fake", "--out", str(blocker / "x")]) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write results" in err[0]


def test_broken_pipe_on_stdout_exits_quietly(fake_install, monkeypatch):
    class ClosedPipe:
        def write(self, _):
            raise BrokenPipeError

        def flush(self):
            raise BrokenPipeError

    monkeypatch.setattr("sys.stdout", ClosedPipe())
    assert main(["info", "fake"]) == EXIT_OK


def test_version(capsys):
    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.startswith("icml26 ")


def test_progress_lines_on_stderr_and_quiet(fake_install, capsys):
    assert main(["reproduce", "fake", "--seeds", "2"]) == EXIT_OK
    err = capsys.readouterr().err
    assert "icml26: fake/smoke: seed 1/2" in err and "seed 2/2 done" in err
    assert "fake stage for seed 1" in err
    assert all(line.startswith("icml26:") for line in err.splitlines() if line.strip())
    assert main(["-q", "reproduce", "fake", "--seeds", "2"]) == EXIT_OK
    assert capsys.readouterr().err == ""


def test_verbose_raises_only_our_loggers(fake_install, capsys):
    import logging

    assert main(["-v", "reproduce", "fake", "--seeds", "1"]) == EXIT_OK
    assert logging.getLogger("icml26").level == logging.INFO
    assert logging.getLogger("jax").getEffectiveLevel() >= logging.WARNING
    logging.getLogger("some.dependency").info("dependency chatter")
    assert "dependency chatter" not in capsys.readouterr().err


def test_all_writes_summary_files_and_status_reads_them(fake_install, only, capsys):
    only("fake", "fake2")
    root = fake_install.parent / "results"
    assert main(["status"]) == EXIT_OK
    assert "no summary" in capsys.readouterr().err
    assert main(["reproduce", "--all", "--seeds", "2", "--check"]) == EXIT_OK
    data = json.loads((root / "summary.json").read_text())
    assert [p["paper"] for p in data["papers"]] == ["fake", "fake2"]
    assert all(p["checks_held"] == 1 and p["checks_total"] == 1 for p in data["papers"])
    assert data["papers"][0]["baseline_name"] == "baseline"
    md = (root / "summary.md").read_text()
    assert "| fake2 |" in md and "2 of 2 checks held" in md
    assert (root / "summary.png").stat().st_size > 1000
    capsys.readouterr()
    assert main(["status"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "| fake |" in out and "| fake2 |" in out and "1/1" in out


def test_all_with_failing_claims_is_1_only_under_check(fake_install, only):
    only("fake", "fake2")
    assert main(["reproduce", "--all", "--preset", "weak", "--seeds", "1"]) == EXIT_OK
    args = ["reproduce", "--all", "--preset", "weak", "--seeds", "1", "--check"]
    assert main(args) == EXIT_CLAIM_FAILED


def test_report_md_has_captions_under_figures(fake_install):
    assert main(["reproduce", "fake", "--seeds", "2"]) == EXIT_OK
    md = (fake_install.parent / "results" / "fake" / "smoke" / "report.md").read_text()
    assert "![scores.png](scores.png)\n\n*Score per method, mean ± sd.*" in md
    data = json.loads(
        (fake_install.parent / "results" / "fake" / "smoke" / "report.json").read_text()
    )
    assert data["captions"] == {"scores.png": "Score per method, mean ± sd."}
    assert data["environment"]["finished_at"]


def test_status_rebuild_summarises_reports_run_one_by_one(fake_install, only, capsys):
    only("fake", "fake2")
    root = fake_install.parent / "results"
    assert main(["reproduce", "fake", "--seeds", "2"]) == EXIT_OK
    assert main(["status", "--rebuild"]) == EXIT_OK
    data = json.loads((root / "summary.json").read_text())
    assert [p["paper"] for p in data["papers"]] == ["fake"]  # fake2 has no report yet
    assert data["papers"][0]["checks_held"] == 1
