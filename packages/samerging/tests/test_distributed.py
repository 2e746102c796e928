"""Two CPU processes (``torchrun --nproc_per_node 2``, gloo) train Digits-8 experts through
the package CLI: real data parallelism, one writer."""

import json
import textwrap

import pytest

# Wraps the training loop and the writer to record, per rank, what the run did; the CLI
# itself runs unchanged.
HARNESS = textwrap.dedent(
    """
    import importlib, json, os, sys
    import torch
    from icml26.samerging import cli

    S = importlib.import_module("icml26.samerging.suites")
    IO = importlib.import_module("icml26.samerging.io")
    record_dir = sys.argv[1]
    rank = int(os.environ["RANK"])
    seen = {"saves": 0, "runs": []}
    train, save = S._train, IO.save_state_dict

    def spy_train(params, loss_fn, n, cfg, generator):
        samples = []

        def spy_loss(idx):
            samples.extend(int(i) for i in idx)
            return loss_fn(idx)

        summary = train(params, spy_loss, n, cfg, generator)
        flat = torch.cat([p.detach().flatten() for p in params]).double()
        seen["runs"].append({"samples": samples, "params": flat.tolist(), **summary})
        seen["world"] = torch.distributed.get_world_size()
        return summary

    def spy_save(state, folder):
        seen["saves"] += 1
        return save(state, folder)

    S._train, IO.save_state_dict = spy_train, spy_save
    code = cli.main(sys.argv[2:])
    with open(os.path.join(record_dir, f"rank{rank}.json"), "w") as fh:
        json.dump(seen, fh)
    sys.exit(code)
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_torchrun_two_cpu_processes_train_the_same_experts_and_write_once(tmp_path):
    import numpy as np

    from icml26.samerging.io import load_state_dict
    from icml26.shared.testing import torchrun

    harness = tmp_path / "harness.py"
    harness.write_text(HARNESS)
    records = tmp_path / "records"
    records.mkdir()
    out = tmp_path / "experts"
    args = ["train-experts", str(out), "--tasks", "parity", "mirrored", "--widths", "64", "16",
            "16", "--cap", "12", "--pretrain-cap", "10"]  # fmt: skip
    done = torchrun([harness, records, *args], nproc=2, timeout_s=600)
    assert done.returncode == 0, done.tail()
    r0, r1 = (json.loads((records / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world"] == r1["world"] == 2
    # base + (head, expert) per task: five trained models on each rank
    assert len(r0["runs"]) == len(r1["runs"]) == 5
    for a, b in zip(r0["runs"], r1["runs"], strict=True):
        # disjoint shards of one seeded order: each rank its own examples
        assert a["samples"] and a["samples"] != b["samples"]
        # data parallelism: identical parameters after training, same stop
        np.testing.assert_allclose(a["params"], b["params"], rtol=0, atol=1e-6)
        assert (a["steps"], a["reason"]) == (b["steps"], b["reason"])
    first = r0["runs"][0]["samples"][:64], r1["runs"][0]["samples"][:64]
    assert not set(first[0]) & set(first[1])  # the first minibatch split into two halves
    # one writer: base, two experts, two heads, once
    assert (r0["saves"], r1["saves"]) == (5, 0)
    assert sorted(p.name for p in out.iterdir()) == ["base", "mirrored", "parity", "training.json"]
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("trained")]
    assert len(lines) == 1 and "on 2 processes" in lines[0], done.stdout
    saved = load_state_dict(out / "parity")  # tasks run in Digits-8 order: parity last
    keys = [f"layers.{i}.{p}" for i in range(len(saved) // 2) for p in ("weight", "bias")]
    flat = np.concatenate([saved[k].double().flatten().numpy() for k in keys])
    np.testing.assert_allclose(flat, r0["runs"][-1]["params"], rtol=0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.distributed
def test_a_failing_rank_ends_the_run_with_its_error(tmp_path):
    """Rank 1 raises in its training loop while rank 0 waits in the all-reduce: the
    launcher ends the run with the error, nothing written, no hang."""
    from icml26.shared.testing import FAILURE_MESSAGE, launch_with_failing_rank

    out = tmp_path / "failed"
    args = ["train-experts", str(out), "--tasks", "parity", "--widths", "64", "16", "--cap", "6",
            "--pretrain-cap", "6"]  # fmt: skip
    done = launch_with_failing_rank("icml26.samerging.cli", args, workdir=tmp_path)
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.output, done.tail()
    assert not out.exists()
