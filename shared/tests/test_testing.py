"""The test helpers check their own arguments; the quickstart runner runs a README block."""

import pytest

from icml26.shared.testing import accelerate_launch, failing_rank_script, run_quickstart, torchrun


def test_torchrun_and_failing_rank_script_reject_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="nproc"):
        torchrun(["x.py"], nproc=0)
    with pytest.raises(ValueError, match="timeout_s"):
        torchrun(["x.py"], timeout_s=0)
    with pytest.raises(ValueError, match="module:attribute"):
        failing_rank_script(tmp_path / "x.py", "no_colon", "pass")


def test_accelerate_launch_rejects_bad_arguments():
    with pytest.raises(ValueError, match="nproc"):
        accelerate_launch(["x.py"], nproc=0)
    with pytest.raises(ValueError, match="timeout_s"):
        accelerate_launch(["x.py"], timeout_s=-1)


def test_failing_rank_script_writes_the_patch_before_the_entry(tmp_path):
    path = failing_rank_script(tmp_path / "x.py", "pkg.mod:step", "print('run')", failing_rank=1)
    text = path.read_text()
    assert text.index("setattr") < text.index("print('run')")
    assert "== 1" in text and "'pkg.mod'" in text and "'step'" in text
    compile(text, str(path), "exec")


def _readme(tmp_path, code: str):
    path = tmp_path / "README.md"
    path.write_text(f"# x\n\n## Quickstart\n\n```python\n{code}```\n", encoding="utf-8")
    return path


def test_run_quickstart_runs_the_block_as_a_script_on_one_thread(tmp_path):
    code = (
        "import os\nprint(os.environ['OMP_NUM_THREADS'])\n"
        "print(__file__.endswith('quickstart.py'))\n"
    )
    done = run_quickstart(_readme(tmp_path, code), cwd=tmp_path)
    assert done.returncode == 0, done.tail()
    assert done.stdout.splitlines() == ["1", "True"]
    assert (tmp_path / "quickstart.py").read_text() == code


def test_run_quickstart_reports_a_failing_line(tmp_path):
    done = run_quickstart(_readme(tmp_path, "x = 1\nraise ValueError('bad input')\n"))
    assert done.returncode != 0
    assert 'quickstart.py", line 2' in done.stderr and "bad input" in done.stderr


def test_run_quickstart_needs_a_quickstart(tmp_path):
    path = tmp_path / "README.md"
    path.write_text("# x\n\nno code\n", encoding="utf-8")
    with pytest.raises(ValueError, match="Quickstart"):
        run_quickstart(path)
    with pytest.raises(ValueError, match="timeout_s"):
        run_quickstart(_readme(tmp_path, "pass\n"), timeout_s=0)
