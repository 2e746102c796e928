"""The README's Python examples run as written and print what the README says."""

import re
from pathlib import Path

import pytest

from icml26.shared.testing import run_quickstart

README_PATH = Path(__file__).parents[1] / "README.md"
README = README_PATH.read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.S)
# the quickstart's printed output follows it as the first ```text block
PRINTED = re.findall(r"```text\n(.*?)```", README, re.S)[0]

LINE = re.compile(r"^(\S+)\s+NFE\s+(\d+)\s+W2\s+([\d.]+)(?:\s+gap cut\s+([\d.]+)%)?\s*$")


def _parse(text: str) -> list[tuple]:
    rows = [LINE.match(line) for line in text.strip().splitlines()]
    assert all(rows), text
    return [m.groups() for m in rows]


def _check(printed: str) -> None:
    got, want = _parse(printed), _parse(PRINTED)
    assert [g[:2] for g in got] == [w[:2] for w in want]  # methods and NFEs exactly
    for g, w in zip(got, want, strict=True):
        assert float(g[2]) == pytest.approx(float(w[2]), abs=0.01)
        assert (g[3] is None) == (w[3] is None)
        if g[3] is not None:
            assert float(g[3]) == pytest.approx(float(w[3]), abs=0.2)


def test_quickstart_prints_the_readme_numbers(capsys):
    """In this interpreter (imports warm: under a second)."""
    exec(compile(BLOCKS[0], "README quickstart", "exec"), {})
    _check(capsys.readouterr().out)


@pytest.mark.slow
def test_quickstart_runs_as_written_in_a_fresh_interpreter():
    """As a user runs it (a cold interpreter imports torch and POT: over 15 s here)."""
    out = run_quickstart(README_PATH, timeout_s=600)
    assert out.returncode == 0, out.tail()
    _check(out.stdout)


@pytest.mark.slow
def test_training_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(BLOCKS[0] + BLOCKS[1], "README training", "exec"), scope)
    assert (tmp_path / "digits_flow.safetensors").is_file()
    assert scope["samples"].shape == (10, 64)
