"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) train one network on shards
of the data and write one checkpoint."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

HARNESS = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import torch
    from icml26.cure import SimGCD, hierarchical_mixture
    from icml26.cure.checkpoint import save_checkpoint
    from icml26.cure.cure import NetConfig
    from icml26.cure.training import TrainConfig, fit_epochs
    from icml26.shared.distributed import init_process_group

    torch.set_num_threads(1)
    init_process_group("gloo")
    out = sys.argv[1]
    rank = torch.distributed.get_rank()
    data = hierarchical_mixture(np.random.default_rng(0), n_super=2, n_sub=3, n_old_sub=2,
                                n_per_old=30, n_per_new=20)
    net = NetConfig(hidden=16, dim=8, proj_hidden=16, proj_dim=4)
    torch.manual_seed(rank)  # different initial weights: the loop must broadcast rank 0's
    model = net.build(data.x.shape[1], data.n_classes)
    sim = SimGCD()
    x, y = torch.as_tensor(data.x), torch.as_tensor(np.where(data.labelled, data.y, -1))
    lab = torch.as_tensor(data.labelled)
    gen = torch.Generator().manual_seed(0)
    seen, losses = [], []

    def step(idx, epoch):
        loss = sim.loss(model, x[idx], y[idx], lab[idx], 0.07, gen, "features")
        losses.append(float(loss))
        return loss

    cfg = TrainConfig(cap_epochs=3, batch_size=16, patience=10)
    rule = fit_epochs(model, np.arange(data.n), step, cfg, gen,
                      on_batch=lambda b: seen.extend(b.tolist()))
    path = save_checkpoint(model, net, data.x.shape[1], os.path.join(out, "ckpt"))
    flat = torch.cat([p.detach().flatten() for p in model.parameters()]).double().tolist()
    with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
        json.dump({"world": torch.distributed.get_world_size(), "seen": seen, "losses": losses,
                   "params": flat, "saved": path is not None, "steps": rule.steps}, fh)
    torch.distributed.destroy_process_group()
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_cpu_processes_train_one_model_and_write_once(tmp_path):
    import numpy as np

    from icml26.cure.checkpoint import load_checkpoint

    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", str(harness), str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    assert r0["steps"] == r1["steps"] == 3  # both stopped together
    per_epoch = len(r0["seen"]) // 3
    assert per_epoch > 0 and len(r1["seen"]) == len(r0["seen"])
    assert not set(r0["seen"][:per_epoch]) & set(r1["seen"][:per_epoch])  # disjoint shards
    assert r0["seen"] != r1["seen"]
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert r0["losses"] != r1["losses"]
    assert (r0["saved"], r1["saved"]) == (True, False)
    ckpt = tmp_path / "ckpt"
    assert sorted(p.name for p in ckpt.iterdir()) == ["config.json", "model.safetensors"]
    model = load_checkpoint(ckpt)
    flat = np.concatenate([p.detach().double().flatten().numpy() for p in model.parameters()])
    np.testing.assert_allclose(flat, r0["params"], rtol=0, atol=1e-6)


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
