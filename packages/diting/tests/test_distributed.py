"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) train DITING through the CLI:
data parallelism, one writer."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

HARNESS = textwrap.dedent(
    """
    import importlib, json, os, sys
    import torch
    from icml26.diting import cli

    T = importlib.import_module("icml26.diting.training")
    M = importlib.import_module("icml26.diting.model")
    record_dir = sys.argv[1]
    rank = int(os.environ["RANK"])
    seen = {"saves": 0}
    train, save = T.train_regressor, M.save_model

    def spy_train(model, fleet, config, **kw):
        res = train(model, fleet, config, **kw)
        flat = torch.cat([p.detach().flatten() for p in model.parameters()])
        seen.update(world=res.world_size, samples=res.samples, losses=res.losses,
                    params=flat.double().tolist(), dist_world=torch.distributed.get_world_size())
        return res

    def spy_save(model, directory, **kw):
        seen["saves"] += 1
        return save(model, directory, **kw)

    T.train_regressor, M.save_model = spy_train, spy_save
    code = cli.main(sys.argv[2:])
    with open(os.path.join(record_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(seen, fh)
    sys.exit(code)
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_cpu_processes_train_one_model_and_write_once(tmp_path):
    from icml26.diting import load_model

    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    records = tmp_path / "records"
    records.mkdir()
    ckpt = tmp_path / "ckpt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        str(harness), str(records), "train", str(ckpt), "--cells", "8", "--length", "8",
        "--max-epochs", "2", "--batch-size", "4", "--device", "cpu",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((records / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == r0["dist_world"] == 2
    assert len(r0["samples"]) == len(r1["samples"]) == 8 * 4 // 2  # each rank half the windows
    assert r0["samples"] != r1["samples"]
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert r0["losses"] == r1["losses"]  # the rule sees the global mean loss on every rank
    assert (r0["saves"], r1["saves"]) == (1, 0)
    assert sorted(p.name for p in ckpt.iterdir()) == ["config.json", "model.safetensors"]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("trained")]
    assert len(lines) == 1 and "on 2 processes" in lines[0], proc.stdout
    model, _ = load_model(ckpt)
    saved = np.concatenate([p.detach().double().flatten().numpy() for p in model.parameters()])
    np.testing.assert_allclose(saved, r0["params"], rtol=0, atol=1e-6)


@pytest.mark.slow  # about 30 s on a loaded 2-core machine
def test_cli_train_writes_a_checkpoint(tmp_path, capsys):
    from icml26.diting import cli, load_model

    assert cli.main(["train", str(tmp_path / "c"), "--cells", "6", "--length", "8",
                     "--max-epochs", "1"]) == 0  # fmt: skip
    assert "trained DITING for 1 epochs" in capsys.readouterr().out
    model, extra = load_model(tmp_path / "c")
    assert extra["stopping"]["steps"] == 1 and model.config.charge_discharge_length == 8


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_run_with_its_error(tmp_path):
    """Rank 1 raises at its first backward pass while rank 0 waits in the gradient
    all-reduce: the launcher must end the run with the error, no checkpoint, no hang."""
    from icml26.shared.testing import FAILURE_MESSAGE, failing_rank_script, torchrun

    entry = "import sys\nfrom icml26.diting import cli\nsys.exit(cli.main(sys.argv[1:]))"
    script = failing_rank_script(tmp_path / "fail.py", "torch.autograd:backward", entry)
    ckpt = tmp_path / "failed"
    done = torchrun(
        [
            script,
            "train",
            str(ckpt),
            "--cells",
            "8",
            "--length",
            "8",
            "--max-epochs",
            "2",
            "--batch-size",
            "4",
            "--device",
            "cpu",
        ],
        timeout_s=300,
    )
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.stderr + done.stdout, done.tail()
    assert not (ckpt / "model.safetensors").exists()
