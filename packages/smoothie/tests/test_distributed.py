"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) train one Smoothie denoiser:
real data parallelism, identical replicas, one writer."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from icml26.shared.testing import accelerate_launch

HARNESS = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import torch
    import torch.distributed as dist
    from icml26.shared import is_main_process
    from icml26.smoothie import (ArctanSchedule, Denoiser, DenoiserConfig, SmoothieSpace,
        SynonymTask, TrainConfig, fit_sigmas, save_checkpoint, synonym_task, train_diffusion)

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    out = sys.argv[1]
    data = synonym_task(SynonymTask(concepts=8, synonyms=2, dim=16, max_len=6, min_len=2,
                                    n_train=128, n_test=4), np.random.default_rng(0))
    smin, smax = fit_sigmas(data.embeddings)
    space = SmoothieSpace(ArctanSchedule(sigma_min=smin, sigma_max=smax))
    torch.manual_seed(dist.get_rank())  # different inits: the broadcast must align them
    model = Denoiser(DenoiserConfig(embed_dim=16, hidden=16, heads=2, layers=2,
                                    encoder_layers=1, max_len=6, max_src_len=6))
    res = train_diffusion(space, model, data.embeddings, data.train_trg, data.train_src,
                          data.mask(data.train_src),
                          TrainConfig(batch_size=8, cap=3, warmup=1, window=1), seed=0)
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    if is_main_process():
        save_checkpoint(model, os.path.join(out, "model.safetensors"))
    rec = {"world": dist.get_world_size(), "samples": res.samples, "losses": res.losses,
           "params": flat.double().tolist()}
    with open(os.path.join(out, f"rank{dist.get_rank()}.json"), "w") as fh:
        json.dump(rec, fh)
    dist.destroy_process_group()
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_cpu_processes_train_one_model_and_write_once(tmp_path):
    import numpy as np

    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(harness),
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    assert len(r0["samples"]) == len(r1["samples"]) == 3 * 4
    assert not set(r0["samples"]) & set(r1["samples"])  # different shards
    assert r0["losses"] == r1["losses"]  # the all-reduced loss
    np.testing.assert_array_equal(r0["params"], r1["params"])  # identical replicas
    assert sorted(p.name for p in tmp_path.glob("*.safetensors")) == ["model.safetensors"]


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_run_with_its_error(tmp_path):
    """Rank 1 raises at its first backward pass while rank 0 waits for it in a
    collective: the launcher must end the run with the error, no checkpoint, no hang."""
    from icml26.shared.testing import FAILURE_MESSAGE, failing_rank_script, torchrun

    script = failing_rank_script(tmp_path / "fail.py", "torch.autograd:backward", HARNESS)
    done = torchrun([script, str(tmp_path)], timeout_s=300)
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.output, done.tail()
    assert not list(tmp_path.rglob("*.safetensors"))


# The same run under ``accelerate launch``: the script joins no group itself, the
# training loop does (through accelerate's PartialState), and accelerate's own state
# must say it saw a two-process CPU run.
ACCELERATE_HARNESS = (
    HARNESS.replace('dist.init_process_group("gloo")', "assert not dist.is_initialized()")
    .replace("dist.destroy_process_group()\n", "")
    .replace("torch.manual_seed(dist.get_rank())", 'torch.manual_seed(int(os.environ["RANK"]))')
)
ACCELERATE_HARNESS += textwrap.dedent(
    """
    from accelerate import PartialState
    state = PartialState()
    with open(os.path.join(out, f"state{state.process_index}.json"), "w") as fh:
        json.dump({"type": str(state.distributed_type), "n": state.num_processes}, fh)
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_accelerate_launch_two_cpu_processes_train_one_model_and_write_once(tmp_path):
    """``accelerate launch --multi_gpu --num_processes 2`` on a machine without CUDA
    starts two processes that accelerate runs as MULTI_CPU (gloo); offline, no config file."""
    import numpy as np

    assert "init_process_group" not in ACCELERATE_HARNESS
    harness = tmp_path / "harness.py"
    harness.write_text(ACCELERATE_HARNESS)
    done = accelerate_launch([harness, tmp_path], timeout_s=600)
    assert done.returncode == 0, done.tail()
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    assert len(r0["samples"]) == len(r1["samples"]) == 3 * 4
    assert not set(r0["samples"]) & set(r1["samples"])  # different shards
    assert r0["losses"] == r1["losses"]  # the all-reduced loss
    np.testing.assert_array_equal(r0["params"], r1["params"])  # identical replicas
    assert sorted(p.name for p in tmp_path.glob("*.safetensors")) == ["model.safetensors"]
    for r in (0, 1):
        state = json.loads((tmp_path / f"state{r}.json").read_text())
        assert state == {"type": "DistributedType.MULTI_CPU", "n": 2}
