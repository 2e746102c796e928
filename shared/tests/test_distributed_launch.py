"""Two CPU processes under torchrun (gloo): one writer, and no hang when a rank fails.

Marked ``distributed`` (and ``slow``): ``nox -s distributed`` runs them in the full
workspace environment, where torch is installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.distributed, pytest.mark.slow]
torch = pytest.importorskip("torch")


def torchrun(args, *, cwd, env=None, timeout=300):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
           "--standalone", *args]  # fmt: skip
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=full_env,
                          timeout=timeout)  # fmt: skip


def test_reproduce_under_torchrun_writes_one_report(fake_install):
    env = {"PYTHONPATH": os.pathsep.join([str(fake_install), *sys.path])}
    done = torchrun(["-m", "icml26.shared.cli", "reproduce", "fake", "--seeds", "2"],
                    cwd=fake_install.parent, env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    out = fake_install.parent / "results" / "fake" / "smoke"
    assert (out / "report.json").is_file() and (out / "scores.png").is_file()
    assert done.stdout.count("# fake — preset `smoke`") == 1  # rank 0 alone prints
    assert done.stderr.count("fake/smoke: seed 1/2 done") == 1
    assert not list(out.parent.glob(".*incomplete"))


def test_failing_rank_ends_the_run_with_an_error(tmp_path):
    script = tmp_path / "fails.py"
    script.write_text(
        textwrap.dedent("""
        from icml26.shared.distributed import barrier, init_process_group, rank
        init_process_group(timeout_s=60)
        if rank() == 1:
            raise RuntimeError("rank 1 failed on purpose")
        barrier()
    """)
    )
    done = torchrun([str(script)], cwd=tmp_path, timeout=240)
    assert done.returncode != 0
    assert "rank 1 failed on purpose" in done.stderr
