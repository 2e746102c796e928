"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) run the BC warm start data
parallel: world size 2, different shards, identical parameters, one checkpoint."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    import torch
    import torch.distributed as dist
    from icml26.shared import Plateau, is_main_process
    from icml26.teamtr import PolicySpec, ProtocolGame, Team, bc_warm_start
    from icml26.teamtr import make_policy, save_policy

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    out, rank = sys.argv[1], dist.get_rank()
    g = torch.Generator().manual_seed(0)
    spec = PolicySpec(d_model=16, layers=1, heads=2)
    team = Team(["a", "b"], [make_policy(spec, g) for _ in range(2)])
    task = ProtocolGame(agents=2)
    demos = task.demonstrations(128, torch.Generator().manual_seed(1), 0.1)
    res = bc_warm_start(team, demos, rule=Plateau(2, 2, 0.01, 6), batch_size=32,
                        generator=torch.Generator().manual_seed(2))
    saves = 0
    if is_main_process():
        save_policy(team.policies[0], os.path.join(out, "ckpt"))
        saves = 1
        print("trained on", dist.get_world_size(), "processes")
    flat = torch.cat([p.detach().flatten() for p in team.policies[0].parameters()])
    with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
        json.dump({"world": res.world_size, "rows": res.rows_seen, "saves": saves,
                   "params": flat.double().tolist(), "losses": res.losses}, fh)
    dist.destroy_process_group()
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_cpu_processes_warm_start_one_team(tmp_path):
    import numpy as np

    from icml26.teamtr import load_policy

    script = tmp_path / "bc.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(script), str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    first = 32 // 2  # the first minibatch of 32 rows, split between the ranks
    assert not set(r0["rows"][:first]) & set(r1["rows"][:first])
    assert r0["rows"][:16] != r1["rows"][:16]  # different shards of one seeded order
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert r0["losses"] == r1["losses"]  # the plateau rule sees the all-reduced loss
    assert (r0["saves"], r1["saves"]) == (1, 0)
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [
        "config.json", "model.safetensors",
    ]  # fmt: skip
    saved = load_policy(tmp_path / "ckpt")
    flat = np.concatenate([p.detach().double().flatten().numpy() for p in saved.parameters()])
    np.testing.assert_allclose(flat, r0["params"], rtol=0, atol=1e-6)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("trained")]
    assert lines == ["trained on 2 processes"]


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_run_with_its_error(tmp_path):
    """Rank 1 raises at its first backward pass while rank 0 waits for it in a
    collective: the launcher must end the run with the error, no checkpoint, no hang."""
    from icml26.shared.testing import FAILURE_MESSAGE, failing_rank_script, torchrun

    script = failing_rank_script(tmp_path / "fail.py", "torch.autograd:backward", SCRIPT)
    done = torchrun([script, str(tmp_path)], timeout_s=300)
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.output, done.tail()
    assert not list(tmp_path.rglob("*.safetensors"))
