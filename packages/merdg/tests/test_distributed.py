"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) train through the CLI:
real data parallelism, one writer."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

HARNESS = textwrap.dedent(
    """
    import importlib, json, os, sys
    import torch
    from icml26.merdg import cli

    T = importlib.import_module("icml26.merdg.train")
    record_dir = sys.argv[1]
    rank = int(os.environ["RANK"])
    seen = {}
    train = T.train_method

    def spy(method, split, config=None, **kw):
        res = train(method, split, config, **kw)
        flat = torch.cat([p.detach().flatten() for p in res.model.parameters()])
        seen.update(
            samples=res.samples_seen, losses=res.train_loss, params=flat.double().tolist(),
            world=torch.distributed.get_world_size(),
        )
        return res

    T.train_method = spy  # the CLI imports the function at call time
    code = cli.main(sys.argv[2:])
    with open(os.path.join(record_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(seen, fh)
    sys.exit(code)
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_cpu_processes_train_one_model_and_write_once(tmp_path):
    import numpy as np
    from safetensors.numpy import load_file

    from icml26.merdg import cli

    data = tmp_path / "d.npz"
    assert cli.main(["simulate", str(data), "--per-domain", "60", "--target", "0"]) == 0
    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    records = tmp_path / "records"
    records.mkdir()
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        str(harness), str(records),
        "train", str(data), str(out), "--target", "0", "--epochs", "2", "--batch-size", "12",
        "--device", "cpu",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((records / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    assert len(r0["samples"]) == len(r1["samples"]) > 0
    assert not set(r0["samples"]) & set(r1["samples"])  # different shards
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert r0["losses"] == r1["losses"]  # the epoch loss is averaged across ranks
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors", "result.json"]
    assert json.loads((out / "result.json").read_text())["world_size"] == 2
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("trained")]
    assert len(lines) == 1 and "on 2 processes" in lines[0], proc.stdout
    saved = load_file(str(out / "model.safetensors"))
    assert saved and all(np.isfinite(v).all() for v in saved.values())


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_run_with_its_error(tmp_path):
    """Rank 1 raises at its first backward pass while rank 0 waits in the gradient
    all-reduce: the launcher must end the run with the error, no checkpoint, no hang."""
    from icml26.merdg import cli as merdg_cli
    from icml26.shared.testing import FAILURE_MESSAGE, failing_rank_script, torchrun

    data = tmp_path / "d.npz"
    assert merdg_cli.main(["simulate", str(data), "--per-domain", "60", "--target", "0"]) == 0
    entry = "import sys\nfrom icml26.merdg import cli\nsys.exit(cli.main(sys.argv[1:]))"
    script = failing_rank_script(tmp_path / "fail.py", "torch.autograd:backward", entry)
    ckpt = tmp_path / "failed"
    done = torchrun(
        [
            script,
            "train",
            str(data),
            str(ckpt),
            "--target",
            "0",
            "--epochs",
            "2",
            "--batch-size",
            "12",
            "--device",
            "cpu",
        ],
        timeout_s=300,
    )
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.stderr + done.stdout, done.tail()
    assert not (ckpt / "model.safetensors").exists()
