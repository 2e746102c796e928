"""``icml26 geocode``: generate, render, clear errors, no font warnings."""

from __future__ import annotations

import subprocess
import sys

import pytest

from icml26.geocode.cli import main


def test_generate_writes_the_layout_and_rejects_bad_n(tmp_path, capsys):
    assert main(["generate", "--n", "2", "--out", str(tmp_path), "--tier", "textbook",
                 "--size", "64"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "2 verified problems" in out and "rejected per stage" in out
    assert (tmp_path / "problems.jsonl").is_file() and (tmp_path / "funnel.json").is_file()
    assert len(list((tmp_path / "images").glob("*.png"))) == 2
    assert main(["generate", "--n", "0", "--out", str(tmp_path)]) == 2
    assert "--n must be a positive integer" in capsys.readouterr().err


@pytest.mark.slow  # a fresh interpreter imports matplotlib and torch
def test_cli_output_has_no_font_warnings(tmp_path):
    code = (
        "from icml26.geocode.cli import main; import sys; "
        f"sys.exit(main(['generate', '--n', '1', '--out', {str(tmp_path)!r}, '--size', '64']))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "findfont" not in done.stderr and "Warning" not in done.stderr
