"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) run PAWS's projection data
parallel: different minibatches per rank, identical parameters, one checkpoint."""

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
    from icml26.paws import (AdvantageConfig, PAWSConfig, PointMass, PolicyConfig,
                             behaviour_episodes, fit_advantage, fit_paws, make_preferences,
                             save_policy)
    from icml26.shared.distributed import init_process_group, is_main_process, barrier

    torch.set_num_threads(1)
    record_dir, ckpt = sys.argv[1], sys.argv[2]
    assert init_process_group("gloo")
    env = PointMass()
    episodes = behaviour_episodes(env, 20, np.random.default_rng(0))
    pairs = make_preferences(episodes, 30, 20, np.random.default_rng(1))
    adv = fit_advantage(pairs, AdvantageConfig(cap=20, val_patience=2), seed=0, device="cpu")
    cfg = PAWSConfig(policy=PolicyConfig(cap=30, batch_size=32, plateau_window=10))
    res = fit_paws(pairs, cfg, advantage=adv, seed=0, device="cpu")
    saved = save_policy(res.policy, ckpt)
    barrier()
    flat = torch.cat([p.detach().flatten() for p in res.policy.parameters()])
    rank = torch.distributed.get_rank()
    with open(os.path.join(record_dir, f"rank{rank}.json"), "w") as fh:
        json.dump({"world": torch.distributed.get_world_size(), "saved": saved is not None,
                   "first_batch": res.policy_fit.first_batch, "steps": res.policy_fit.plateau,
                   "params": flat.double().tolist()}, fh)
    if is_main_process():
        print("trained on", torch.distributed.get_world_size(), "processes")
    torch.distributed.destroy_process_group()
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_cpu_processes_train_one_policy_and_write_once(tmp_path):
    import numpy as np

    from icml26.paws import load_policy

    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    records = tmp_path / "records"
    records.mkdir()
    ckpt = tmp_path / "ckpt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", str(harness), str(records), str(ckpt)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((records / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    assert len(r0["first_batch"]) == len(r1["first_batch"]) == 32
    assert r0["first_batch"] != r1["first_batch"]  # each rank its own minibatches
    assert r0["steps"] == r1["steps"]  # one plateau decision on the averaged loss
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert (r0["saved"], r1["saved"]) == (True, False)
    assert sorted(p.name for p in ckpt.iterdir()) == ["config.json", "model.safetensors"]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("trained")]
    assert lines == ["trained on 2 processes"], proc.stdout
    saved = np.concatenate([p.detach().double().flatten().numpy()
                            for p in load_policy(ckpt).parameters()])  # fmt: skip
    np.testing.assert_allclose(saved, r0["params"], rtol=0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_run_with_its_error(tmp_path):
    """Rank 1 raises at its first backward pass while rank 0 waits for it in a
    collective: the launcher must end the run with the error, no checkpoint, no hang."""
    from icml26.shared.testing import FAILURE_MESSAGE, failing_rank_script, torchrun

    records = tmp_path / "records"
    records.mkdir()
    script = failing_rank_script(tmp_path / "fail.py", "torch.autograd:backward", HARNESS)
    done = torchrun([script, str(records), str(tmp_path / "ckpt")], timeout_s=300)
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.output, done.tail()
    assert not list(tmp_path.rglob("*.safetensors"))


@pytest.mark.slow
@pytest.mark.distributed
def test_accelerate_launch_two_cpu_processes_train_one_policy(tmp_path):
    """The same projection under ``accelerate launch --multi_gpu --num_processes 2`` on a
    machine without CUDA: accelerate starts two processes (MULTI_CPU, gloo), the harness
    joins its group through the package's hook, and the two ranks train one policy."""
    pytest.importorskip("accelerate")
    import numpy as np

    harness = tmp_path / "harness.py"
    # accelerate sets the group up (PartialState(cpu=True), as an accelerate script on a
    # CPU machine does), the package's hook joins it, and accelerate's state must say it
    # saw a two-process CPU run
    script = HARNESS.replace(
        'assert init_process_group("gloo")\n',
        "from accelerate import PartialState\n"
        "state = PartialState(cpu=True)\n"
        'assert init_process_group("gloo")\n',
    ).replace(
        "torch.distributed.destroy_process_group()\n",
        "with open(os.path.join(record_dir, f'state{rank}.json'), 'w') as fh:\n"
        "    json.dump({'type': str(state.distributed_type), 'n': state.num_processes}, fh)\n",
    )
    assert script.count("PartialState") == 2 and "state{rank}" in script
    harness.write_text(script)
    records = tmp_path / "records"
    records.mkdir()
    ckpt = tmp_path / "ckpt"
    done = accelerate_launch([harness, records, ckpt], timeout_s=600)
    assert done.returncode == 0, done.tail()
    r0, r1 = (json.loads((records / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    assert r0["first_batch"] != r1["first_batch"]  # each rank its own minibatches
    assert r0["steps"] == r1["steps"]
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert (r0["saved"], r1["saved"]) == (True, False)
    for r in (0, 1):
        state = json.loads((records / f"state{r}.json").read_text())
        assert state == {"type": "DistributedType.MULTI_CPU", "n": 2}
