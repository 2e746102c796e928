"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) run ``icml26 reproduce carve``
on a tiny preset: real data parallelism under accelerate, one writer."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

# Swaps in a tiny smoke preset and records, per rank, what training did; the CLI and the
# learner run unchanged.
HARNESS = textwrap.dedent(
    """
    import json, os, sys
    from dataclasses import replace
    import torch
    from icml26.carve import CandidateSpec, HubConfig, TrainConfig
    from icml26.carve import carve as C
    from icml26.carve import reproduce as rp
    from icml26.shared import cli

    record_dir, out = sys.argv[1], sys.argv[2]
    hub = HubConfig(n_experiences=2, n_domains=6, models_per_experience=10,
                    train_per_model=8, test_per_model=2)
    train = TrainConfig(embedding_dim=16, adapter_hidden=8, epochs=2, max_epochs=3,
                        batch_size=16, lr_scale=30.0, candidates=CandidateSpec(8, 3, 2, 2),
                        mine_every=2)
    tiny = replace(rp.SMOKE, hub=hub, train=train, encoder="hashed", encoder_dim=64,
                   methods=(rp.ZERO_SHOT, rp.METHOD))
    object.__setattr__(rp.PAPER, "presets", {**rp.PAPER.presets, "smoke": tiny})
    rank = int(os.environ["RANK"])
    seen = {"gold": []}
    loss_terms, fit_stream = C.ContinualRouter._loss_terms, C.ContinualRouter.fit_stream

    def spy_loss(self, model, batch, *args, **kw):
        seen["gold"].append(batch["gold"].tolist())
        return loss_terms(self, model, batch, *args, **kw)

    def spy_fit(self, *args, **kw):
        acc = fit_stream(self, *args, **kw)
        flat = torch.cat([p.detach().flatten().cpu() for p in self.router.parameters()])
        seen.update(params=flat.double().tolist(), history=self.history,
                    dist_world=torch.distributed.get_world_size(), accuracy=acc.to_dict())
        return acc

    C.ContinualRouter._loss_terms, C.ContinualRouter.fit_stream = spy_loss, spy_fit
    code = cli.main(["reproduce", "carve", "--seeds", "1", "--out", out])
    with open(os.path.join(record_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(seen, fh)
    sys.exit(code)
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_cpu_processes_train_one_router_and_write_one_report(tmp_path):
    import numpy as np

    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    records, out = tmp_path / "records", tmp_path / "results"
    records.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
           "2", str(harness), str(records), str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((records / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["dist_world"] == r1["dist_world"] == 2
    assert (
        [h["world_size"] for h in r0["history"]]
        == [2, 2]
        == [h["world_size"] for h in r1["history"]]
    )
    # accelerate shards each epoch's batches: the ranks train on different examples
    assert len(r0["gold"]) == len(r1["gold"]) > 0
    assert r0["gold"] != r1["gold"]
    # data parallelism: identical routers, the same stopping decision, the same accuracy
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert [h["epochs"] for h in r0["history"]] == [h["epochs"] for h in r1["history"]]
    assert r0["accuracy"] == r1["accuracy"]
    # one writer: one report folder, one result table on stdout
    assert sorted(p.name for p in (out / "carve").iterdir()) == ["smoke"]
    written = sorted(p.name for p in (out / "carve" / "smoke").iterdir())
    assert "report.json" in written and "report.md" in written
    report = json.loads((out / "carve" / "smoke" / "report.json").read_text())
    assert report["seeds"] == [0]
    assert proc.stdout.count("written to ") == 1, proc.stdout
    assert proc.stdout.count("| final | CARvE 10% |") == 1, proc.stdout


# the same tiny preset, then the CLI: the entry of the failing-rank launcher
TINY_ENTRY = textwrap.dedent(
    """
    import sys
    from dataclasses import replace
    from icml26.carve import CandidateSpec, HubConfig, TrainConfig
    from icml26.carve import reproduce as rp
    from icml26.shared import cli

    hub = HubConfig(n_experiences=2, n_domains=6, models_per_experience=10,
                    train_per_model=8, test_per_model=2)
    train = TrainConfig(embedding_dim=16, adapter_hidden=8, epochs=2, max_epochs=3,
                        batch_size=16, lr_scale=30.0, candidates=CandidateSpec(8, 3, 2, 2),
                        mine_every=2)
    tiny = replace(rp.SMOKE, hub=hub, train=train, encoder="hashed", encoder_dim=64,
                   methods=(rp.METHOD,))
    object.__setattr__(rp.PAPER, "presets", {**rp.PAPER.presets, "smoke": tiny})
    sys.exit(cli.main(["reproduce", "carve", "--seeds", "1", "--out", sys.argv[1]]))
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_run_with_its_error(tmp_path):
    """Rank 1 raises at its first backward pass while rank 0 waits in the gradient
    all-reduce: the launcher ends the whole run with the error, writes no report and
    does not hang (a hang past the limit raises TimeoutExpired)."""
    from icml26.shared.testing import FAILURE_MESSAGE, failing_rank_script, torchrun

    script = failing_rank_script(tmp_path / "fail.py", "torch.autograd:backward", TINY_ENTRY)
    out = tmp_path / "results"
    done = torchrun([script, out], env={"MPLBACKEND": "Agg"}, timeout_s=400)
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.stderr + done.stdout, done.tail()
    assert not (out / "carve" / "smoke" / "report.json").exists()
    assert "written to " not in done.stdout
