"""Two CPU processes under torchrun (gloo): one writer, and no hang when a rank fails.

Marked ``distributed`` (and ``slow``): ``nox -s distributed`` runs them in the full
workspace environment, where torch is installed.
"""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from icml26.shared.testing import FAILURE_MESSAGE, failing_rank_script, torchrun

pytestmark = [pytest.mark.distributed, pytest.mark.slow]
torch = pytest.importorskip("torch")


def test_reproduce_under_torchrun_writes_one_report(fake_install):
    env = {"PYTHONPATH": os.pathsep.join([str(fake_install), *sys.path])}
    done = torchrun(["-m", "icml26.shared.cli", "reproduce", "fake", "--seeds", "2"],
                    cwd=fake_install.parent, env=env, timeout_s=300)  # fmt: skip
    assert done.returncode == 0, done.tail()
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
    done = torchrun([str(script)], cwd=tmp_path, timeout_s=240)
    assert done.returncode != 0
    assert "rank 1 failed on purpose" in done.stderr


def test_failing_rank_script_patches_one_rank_only(tmp_path):
    # rank 1's patched function raises; rank 0 then waits at the barrier until the
    # launcher stops it: the run must end with the error, well inside the limit
    (tmp_path / "work.py").write_text("def step():\n    return 1\n")
    script = failing_rank_script(
        tmp_path / "launch.py", "work:step",
        """
        import work
        from icml26.shared.distributed import barrier, init_process_group
        init_process_group(timeout_s=60)
        work.step()
        barrier()
        """,
    )  # fmt: skip
    done = torchrun([script], cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)}, timeout_s=240)
    assert done.returncode != 0, done.tail()
    assert FAILURE_MESSAGE in done.stderr
    assert done.seconds < 200
