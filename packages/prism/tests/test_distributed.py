"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) train through the package CLI:
real data parallelism, one writer."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

# Wraps the CLI's train and save_checkpoint to record, per rank, what the run did; the CLI
# itself runs unchanged.
HARNESS = textwrap.dedent(
    """
    import importlib, json, os, sys
    import torch
    from icml26.prism import cli

    # the package re-exports the function ``train``; take the modules themselves
    T = importlib.import_module("icml26.prism.train")
    C = importlib.import_module("icml26.prism.checkpoint")

    record_dir = sys.argv[1]
    rank = int(os.environ["RANK"])
    seen = {"saves": 0}
    train, save = T.train, C.save_checkpoint

    def spy_train(model, data, config, **kw):
        res = train(model, data, config, **kw)
        flat = torch.cat([p.detach().flatten().cpu() for p in model.parameters()])
        seen.update(
            world=res.world_size,
            samples=res.samples,
            losses=res.losses,
            params=flat.double().tolist(),
            dist_world=torch.distributed.get_world_size(),
        )
        return res

    def spy_save(model, directory):
        seen["saves"] += 1
        return save(model, directory)

    T.train, C.save_checkpoint = spy_train, spy_save
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

    from icml26.prism import cli
    from icml26.prism.checkpoint import load_checkpoint

    rep = tmp_path / "rep.tsv"
    assert cli.main(["simulate", str(rep), "--lineages", "20", "--per-lineage", "3"]) == 0
    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    records = tmp_path / "records"
    records.mkdir()
    ckpt = tmp_path / "ckpt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        str(harness), str(records),
        "train", str(rep), str(ckpt), "--steps", "3", "--batch-size", "4", "--device", "cpu",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[:3000]
    r0, r1 = (json.loads((records / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == r0["dist_world"] == 2
    # different shards of one seeded order, each rank its own batches
    assert len(r0["samples"]) == len(r1["samples"]) == 3 * 4
    assert r0["samples"] != r1["samples"]
    # data parallelism: the same parameters on both ranks after training
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert r0["losses"] != r1["losses"]  # each rank's loss is its own shard's
    # one writer, one set of result lines
    assert (r0["saves"], r1["saves"]) == (1, 0)
    assert sorted(p.name for p in ckpt.iterdir()) == ["config.json", "model.safetensors"]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("trained")]
    assert len(lines) == 1 and "on 2 processes" in lines[0], proc.stdout
    model = load_checkpoint(ckpt)
    saved = np.concatenate([p.detach().double().flatten().numpy() for p in model.parameters()])
    np.testing.assert_allclose(saved, r0["params"], rtol=0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_run_with_its_error(tmp_path):
    """Rank 1 raises at its first backward pass while rank 0 waits in the gradient
    all-reduce: the launcher must end the run with the error, no checkpoint, no hang."""
    from icml26.prism import cli as prism_cli
    from icml26.shared.testing import FAILURE_MESSAGE, failing_rank_script, torchrun

    rep = tmp_path / "rep.tsv"
    assert prism_cli.main(["simulate", str(rep), "--lineages", "20", "--per-lineage", "3"]) == 0
    entry = "import sys\nfrom icml26.prism import cli\nsys.exit(cli.main(sys.argv[1:]))"
    script = failing_rank_script(tmp_path / "fail.py", "torch.autograd:backward", entry)
    ckpt = tmp_path / "failed"
    done = torchrun(
        [
            script,
            "train",
            str(rep),
            str(ckpt),
            "--steps",
            "3",
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
