"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) train one arm through the
CLI: each rank draws its own batches, gradients are averaged, one writer."""

from __future__ import annotations

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
    from icml26.geocode import cli
    A = importlib.import_module("icml26.geocode.align")
    record_dir = sys.argv[1]
    rank = int(os.environ["RANK"])
    seen = {"saves": 0}
    train, save = A.train, A.save_checkpoint
    def spy_train(*a, **kw):
        res = train(*a, **kw)
        flat = torch.cat([p.detach().flatten() for p in res.model.parameters()])
        seen.update(world=res.world_size, samples=res.samples, losses=res.losses,
                    params=flat.double().tolist())
        return res
    def spy_save(res, d):
        seen["saves"] += 1
        return save(res, d)
    A.train, A.save_checkpoint = spy_train, spy_save
    code = cli.main(sys.argv[2:])
    with open(os.path.join(record_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(seen, fh)
    sys.exit(code)
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_processes_train_one_model_and_write_once(tmp_path, problems):
    from icml26.geocode.align import load_checkpoint
    from icml26.geocode.dataset import Funnel, Synthesis, export

    data = export(Synthesis(problems * 2, Funnel()), tmp_path / "data")
    (tmp_path / "h.py").write_text(HARNESS)
    rec = tmp_path / "rec"
    rec.mkdir()
    ckpt = tmp_path / "ckpt"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(tmp_path / "h.py"), str(rec), "train", str(data), str(ckpt), "--cap", "3",
           "--batch-size", "4"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((rec / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    assert len(r0["samples"]) == len(r1["samples"]) == 3 * 4
    assert r0["samples"] != r1["samples"]
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert (r0["saves"], r1["saves"]) == (1, 0)
    assert sorted(p.name for p in ckpt.iterdir()) == ["config.json", "model.safetensors"]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("trained")]
    assert len(lines) == 1 and "on 2 processes" in lines[0]
    model = load_checkpoint(ckpt).model
    saved = np.concatenate([p.detach().double().flatten().numpy() for p in model.parameters()])
    np.testing.assert_allclose(saved, r0["params"], rtol=0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_run_with_its_error(tmp_path, problems):
    """Rank 1 raises at its first backward pass while rank 0 waits in the gradient
    all-reduce: the launcher must end the run with the error, no checkpoint, no hang."""
    from icml26.geocode.dataset import Funnel, Synthesis, export
    from icml26.shared.testing import FAILURE_MESSAGE, launch_with_failing_rank

    data = export(Synthesis(problems * 2, Funnel()), tmp_path / "data")
    ckpt = tmp_path / "failed"
    args = ["train", str(data), str(ckpt), "--cap", "3", "--batch-size", "4"]
    done = launch_with_failing_rank("icml26.geocode.cli", args, workdir=tmp_path)
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.output, done.tail()
    assert not (ckpt / "model.safetensors").exists()


REPRO_HARNESS = textwrap.dedent(
    """
    import dataclasses, json, os, sys
    import torch
    from icml26.geocode import reproduce as R
    from icml26.shared import Report
    from icml26.shared.reproduction import reproduce
    out, record_dir = sys.argv[1], sys.argv[2]
    seen = {"trained": [], "writes": 0}
    train, write = R.train, Report.write
    def spy_train(*a, **kw):
        res = train(*a, **kw)
        flat = torch.cat([p.detach().flatten() for p in res.model.parameters()])
        seen["trained"].append({"world": res.world_size, "samples": res.samples,
                                "params": flat.double().tolist()})
        return res
    def spy_write(self, *a, **kw):
        seen["writes"] += 1
        return write(self, *a, **kw)
    R.train, Report.write = spy_train, spy_write
    cfg = dataclasses.replace(R.TINY, cache=os.path.join(out, "cache"))
    paper = dataclasses.replace(R.PAPER, presets={"smoke": cfg, "paper": cfg})
    rep = reproduce(paper, preset="smoke", seeds=[0], out=out)
    seen["accuracy"] = [r.metrics["accuracy"].mean for r in rep.rows if r.method == "none arm"]
    rank = int(os.environ["RANK"])
    with open(os.path.join(record_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(seen, fh)
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_two_process_tiny_reproduction_shards_and_writes_one_report(tmp_path):
    """The reproduction under two gloo processes: each training run sees two shards of
    one batch stream and ends with the same parameters on both ranks; the evaluation is
    gathered (the same accuracy on both ranks); rank 0 alone writes the report."""
    (tmp_path / "h.py").write_text(REPRO_HARNESS)
    rec, out = tmp_path / "rec", tmp_path / "out"
    rec.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(tmp_path / "h.py"), str(out), str(rec)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((rec / f"rank{r}.json").read_text()) for r in (0, 1))
    assert len(r0["trained"]) == len(r1["trained"]) == 5  # three arms, blind, textbook code arm
    for a, b in zip(r0["trained"], r1["trained"], strict=True):
        assert a["world"] == b["world"] == 2
        assert a["samples"] and a["samples"] != b["samples"]
        np.testing.assert_allclose(a["params"], b["params"], rtol=0, atol=1e-6)
    assert r0["accuracy"] == r1["accuracy"] and r0["accuracy"]
    assert (r0["writes"], r1["writes"]) == (1, 0)
    reports = list(out.rglob("report.json"))
    assert len(reports) == 1, reports
