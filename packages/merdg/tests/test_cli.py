"""The command line: simulate and train, clear errors, no torch warnings in the output."""

import json
import os
import subprocess
import sys

import pytest

from icml26.merdg import cli


def test_simulate_and_train_through_the_cli(tmp_path, capsys):
    data = tmp_path / "d.npz"
    assert cli.main(["simulate", str(data), "--per-domain", "60", "--target", "2"]) == 0
    out = tmp_path / "run"
    code = cli.main(
        ["train", str(data), str(out), "--target", "2", "--epochs", "2", "--batch-size", "12"]
    )
    assert code == 0
    result = json.loads((out / "result.json").read_text())
    assert result["epochs"] == 2 and result["world_size"] == 1
    assert (out / "model.safetensors").exists()
    assert cli.main(["train", str(data), str(out), "--target", "2", "--batch-size", "10"]) == 2
    assert "not divisible" in capsys.readouterr().err


@pytest.mark.slow  # two fresh interpreters importing torch
def test_cli_output_has_no_warnings(tmp_path):
    data = tmp_path / "d.npz"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = [sys.executable, "-m", "icml26.merdg.cli"]
    subprocess.run(
        [*run, "simulate", str(data), "--per-domain", "60"],
        check=True,
        env=env,
        capture_output=True,
    )
    args = ["train", str(data), str(tmp_path / "o"), "--target", "0", "--epochs", "1"]
    done = subprocess.run(
        [*run, *args, "--batch-size", "12"], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stdout + done.stderr
    assert done.stdout.startswith("trained fusion+mer")
