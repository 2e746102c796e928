"""The torchrun test helpers check their own arguments (no torch needed)."""

import pytest

from icml26.shared.testing import failing_rank_script, torchrun


def test_torchrun_and_failing_rank_script_reject_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="nproc"):
        torchrun(["x.py"], nproc=0)
    with pytest.raises(ValueError, match="timeout_s"):
        torchrun(["x.py"], timeout_s=0)
    with pytest.raises(ValueError, match="module:attribute"):
        failing_rank_script(tmp_path / "x.py", "no_colon", "pass")


def test_failing_rank_script_writes_the_patch_before_the_entry(tmp_path):
    path = failing_rank_script(tmp_path / "x.py", "pkg.mod:step", "print('run')", failing_rank=1)
    text = path.read_text()
    assert text.index("setattr") < text.index("print('run')")
    assert "== 1" in text and "'pkg.mod'" in text and "'step'" in text
    compile(text, str(path), "exec")
