"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) fit one ScLDM: real data
parallelism through accelerate, one writer."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

# Runs ScLDM.fit on every rank with a spy on the rows each rank's autoencoder batches read;
# records per rank what it saw and its parameters after training, then saves the model.
HARNESS = textwrap.dedent(
    """
    import json, os, sys
    import torch
    torch.set_num_threads(1)
    from icml26.scldm import AutoencoderConfig, DiTConfig, ScLDM, TrainingConfig
    from icml26.scldm import data as D
    from icml26.scldm.simulate import simulate_counts
    from icml26.shared import is_main_process

    records, ckpt = sys.argv[1], sys.argv[2]
    rank = int(os.environ["RANK"])
    rows, get = [], D.RowBatches.__getitem__

    def spy(self, idx):
        rows.extend(int(i) for i in idx)
        return get(self, idx)

    D.RowBatches.__getitem__ = spy
    adata = simulate_counts(160, 24, n_cell_types=2, n_programs=2, program_size=(4, 8),
                            n_perturbations=1, seed=1)
    model = ScLDM(
        AutoencoderConfig(n_embed=16, n_latent_tokens=2, latent_dim=4, n_layer=1, n_head=2,
                          n_head_cross=2),
        DiTConfig(n_embed=16, n_layer=1, n_head=2),
        TrainingConfig(autoencoder_batch_size=16, autoencoder_max_steps=8,
                       autoencoder_window=4, diffusion_steps=6, diffusion_batch_size=16),
        device="cpu",
    ).fit(adata, condition_keys=("cell_type",), seed=0)
    params = [p.detach().double().flatten() for m in (model.autoencoder, model.dit)
              for p in m.parameters()]
    model.save(ckpt)
    gen = model.generate(5, {"cell_type": "type_0"}, solver="euler", steps=2, seed=rank)
    if is_main_process():
        print(f"fitted on {torch.distributed.get_world_size()} processes", flush=True)
    with open(os.path.join(records, f"rank{rank}.json"), "w") as fh:
        json.dump({
            "world": torch.distributed.get_world_size(),
            "rows": rows,
            "ae_losses": model.history["autoencoder"],
            "stop": model.autoencoder_stop,
            "params": torch.cat(params).tolist(),
            "generated": list(gen.shape),
        }, fh)
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_cpu_processes_fit_one_model_and_write_once(tmp_path):
    import numpy as np

    from icml26.scldm import ScLDM

    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    records = tmp_path / "records"
    records.mkdir()
    ckpt = tmp_path / "ckpt"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
        str(harness), str(records), str(ckpt),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    r0, r1 = (json.loads((records / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    # 8 autoencoder steps of 16 rows per rank, disjoint shards of one seeded order
    assert len(r0["rows"]) == len(r1["rows"]) == 8 * 16
    assert not set(r0["rows"][:16]) & set(r1["rows"][:16])
    assert r0["ae_losses"] != r1["ae_losses"]  # each rank's loss is its own shard's
    # the convergence rule sees the all-process means: both ranks decide alike
    assert r0["stop"] == r1["stop"] and r0["stop"]["reason"] == "cap"
    np.testing.assert_allclose(r0["params"], r1["params"], rtol=0, atol=1e-6)
    assert r0["generated"] == r1["generated"] == [5, 24]
    # one writer: one checkpoint, one result line
    assert sorted(p.name for p in ckpt.iterdir()) == ["config.json", "model.safetensors"]
    assert proc.stdout.count("fitted on 2 processes") == 1, proc.stdout
    model = ScLDM.load(ckpt, device="cpu")
    saved = np.concatenate(
        [
            p.detach().double().flatten().numpy()
            for m in (model.autoencoder, model.dit)
            for p in m.parameters()
        ]
    )
    np.testing.assert_allclose(saved, r0["params"], rtol=0, atol=1e-6)


# One rank's flow-matching loss raises in the middle of the DiT stage, while the other
# rank waits for it in the gradient all-reduce: the launcher must end the whole run with
# the error, not hang.
FAILING_ENTRY = """
import torch
torch.set_num_threads(1)
from icml26.scldm import AutoencoderConfig, DiTConfig, ScLDM, TrainingConfig
from icml26.scldm.simulate import simulate_counts

adata = simulate_counts(160, 24, n_cell_types=2, n_programs=2, program_size=(4, 8),
                        n_perturbations=1, seed=1)
ScLDM(
    AutoencoderConfig(n_embed=16, n_latent_tokens=2, latent_dim=4, n_layer=1, n_head=2,
                      n_head_cross=2),
    DiTConfig(n_embed=16, n_layer=1, n_head=2),
    TrainingConfig(autoencoder_batch_size=16, autoencoder_max_steps=4,
                   diffusion_steps=200, diffusion_batch_size=16),
    device="cpu",
).fit(adata, condition_keys=("cell_type",), seed=0)
print("fit finished", flush=True)
"""


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_torchrun_run_with_its_error(tmp_path):
    from icml26.shared.testing import FAILURE_MESSAGE, failing_rank_script, torchrun

    script = failing_rank_script(
        tmp_path / "fails.py", "icml26.scldm.model:flow_matching_loss", FAILING_ENTRY
    )
    done = torchrun([script], cwd=tmp_path, timeout_s=600)  # a hang raises TimeoutExpired
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.stderr, done.tail()
    assert "fit finished" not in done.stdout  # neither rank got past the failure
