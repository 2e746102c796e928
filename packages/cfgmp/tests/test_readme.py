"""The README's Python examples run as written."""

import re
from pathlib import Path

import pytest

BLOCKS = re.findall(
    r"```python\n(.*?)```", (Path(__file__).parents[1] / "README.md").read_text(), re.S
)


def test_quickstart_runs(capsys):
    exec(compile(BLOCKS[0], "README quickstart", "exec"), {})
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["CFG", "CFG-Zero*", "CFG-MP", "CFG-MP+"]
    assert "NFE 44" in lines[2] and "gap cut" in lines[3]


@pytest.mark.slow
def test_training_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(BLOCKS[0] + BLOCKS[1], "README training", "exec"), scope)
    assert (tmp_path / "digits_flow.safetensors").is_file()
    assert scope["samples"].shape == (10, 64)
