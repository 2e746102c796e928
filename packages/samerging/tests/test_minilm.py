"""The MiniLM suite: template tasks, the path network on the real all-MiniLM-L6-v2 blocks,
and (slow) full + PEFT LoRA experts merged by every method, peft's add_weighted_adapter
included, with clean output."""

import functools
import math
import subprocess
import sys
import textwrap

import pytest
import torch

from icml26.samerging import BertPath, path_mass, path_score, sa_merge
from icml26.samerging.minilm import TEXT_TASKS, available, model_dir, text_tasks
from icml26.samerging.saliency import connectivity_gradient

needs_minilm = pytest.mark.skipif(not available(), reason="needs the 'minilm' extra")


def test_text_tasks_are_deterministic_balanced_and_refuse_unknown_names():
    a = text_tasks(TEXT_TASKS, sizes=(200, 10, 10), seed=3)
    b = text_tasks(TEXT_TASKS, sizes=(200, 10, 10), seed=3)
    assert [t.text for t in a] == [t.text for t in b]
    for t in a:
        frac = torch.bincount(t.y["train"], minlength=t.n_classes).float() / 200
        assert float(frac.min()) > 0.5 / t.n_classes, t.name  # no class is starved
    assert (
        a[0].text["train"]
        != text_tasks(TEXT_TASKS[:1], sizes=(200, 10, 10), seed=4)[0].text["train"]
    )
    with pytest.raises(ValueError, match="unknown text task 'poetry'"):
        text_tasks(["poetry"])
    with pytest.raises(ValueError, match="sizes"):
        text_tasks(TEXT_TASKS[:1], sizes=(10, 0, 10))


@functools.cache
def _encoder():
    from safetensors.torch import load_file

    return load_file(model_dir() / "model.safetensors")


def _real_blocks(layers=6):
    state = _encoder()
    path = BertPath(num_layers=layers)
    return {k: state[k] for k in path.keys}, path


@needs_minilm
def test_path_network_on_real_minilm_blocks_is_finite_and_rescale_invariant():
    base, path = _real_blocks()
    assert len(base) == 96 and base["encoder.layer.5.output.dense.weight"].shape == (384, 1536)
    assert math.isfinite(path_score(path, base))
    g = torch.Generator().manual_seed(0)
    tau = {k: 1e-3 * torch.randn(v.shape, generator=g) for k, v in base.items()}
    grad = connectivity_gradient(path, base, tau)
    assert all(torch.isfinite(v).all() for v in grad.values())
    assert all(float(v.abs().max()) > 0 for v in grad.values())
    # without rescaling R overflows float64 in no layer of six either, and the per-tensor
    # order of the scores is the same (a shared positive constant)
    raw = path_mass(BertPath(num_layers=2, rescale=False), base)
    scaled = path_mass(BertPath(num_layers=2), base)
    for k in raw:
        ratio = raw[k] / scaled[k].clamp_min(1e-300)
        nz = scaled[k] > 0
        if nz.any():
            assert float(ratio[nz].std() / ratio[nz].mean()) < 1e-6, k


@needs_minilm
@pytest.mark.slow
def test_sa_merge_of_real_minilm_blocks_one_expert_is_base_plus_its_masked_vector():
    base, path = _real_blocks(layers=1)
    g = torch.Generator().manual_seed(1)
    expert = {k: v + 1e-3 * torch.randn(v.shape, generator=g) for k, v in base.items()}
    res = sa_merge(base, [expert], path=path, iterations=2, prune=0.5)
    for k in base:
        want = base[k] + res.masks[0][k] * (expert[k] - base[k])
        torch.testing.assert_close(res.state_dict[k], want)
    assert abs(res.density - 0.25) < 0.01


TINY = """
from dataclasses import replace
from icml26.samerging.reproduce import PRESETS, MiniLMConfig, run_minilm
from icml26.samerging.suites import TrainConfig
from icml26.shared import quiet_dependencies, torch_threads
tc = TrainConfig(lr=1e-4, batch_size=16, window=2, cap=3)
mc = MiniLMConfig(tasks=("compare", "sentiment"), sizes=(32, 16, 16),
                  head=TrainConfig(lr=1e-2, batch_size=32, window=2, cap=5), expert=tc,
                  lora=replace(tc, lr=1e-3), lambdas=(0.5, 1.0), lora_rank=4, lora_alpha=8.0)
with torch_threads(1), quiet_dependencies():
    rows, records = run_minilm(mc, replace(PRESETS["smoke"], iterations=2), 0)
for r in rows:
    print("ROW", r.group, "|", r.method, "|",
          " ".join(f"{k}={v.mean:.6g}" for k, v in r.metrics.items()))
print("STOPS", len(records), sorted({s["reason"] for s in records}))
"""


@needs_minilm
@pytest.mark.slow
def test_minilm_suite_full_and_peft_lora_experts_merge_with_clean_output():
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(TINY)], capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    # no transformers / peft warnings or progress bars in the output
    for word in ("warn", "deprecat", "Loading weights", "peft", "transformers"):
        assert word.lower() not in out.lower().replace("peft add_weighted_adapter", ""), word
    rows = {}
    for line in proc.stdout.splitlines():
        if line.startswith("ROW "):
            group, method, metrics = line[4:].split(" | ")
            rows[group, method] = dict(m.split("=") for m in metrics.split())
    for method in ("Individual experts", "Base + task heads", "TIES", "SA-Merging",
                   "SA-Merging (literal sign)", "Magnitude × consensus (iterative)"):  # fmt: skip
        assert ("MiniLM full", method) in rows, method
    lora = {m: v for (g, m), v in rows.items() if g == "MiniLM LoRA"}
    assert float(lora["SA-Merging rank-wise"]["max_rank"]) <= 4
    assert float(lora["peft add_weighted_adapter (cat)"]["max_abs_diff_vs_ours"]) < 1e-5
    assert "peft add_weighted_adapter (ties)" in lora
    for v in rows.values():
        if "accuracy" in v:
            assert 0 <= float(v["accuracy"]) <= 100
    assert "STOPS 4" in proc.stdout  # two full and two LoRA experts, each with its rule


@needs_minilm
@pytest.mark.slow
def test_run_minilm_keeps_the_experts_it_trains(tmp_path):
    from icml26.samerging.io import load_state_dict
    from icml26.samerging.minilm import MiniLM
    from icml26.samerging.reproduce import PRESETS, MiniLMConfig, run_minilm
    from icml26.samerging.suites import TrainConfig
    from icml26.shared import quiet_dependencies, torch_threads

    tc = TrainConfig(lr=1e-4, batch_size=16, window=2, cap=3)
    head = TrainConfig(lr=1e-2, batch_size=32, window=2, cap=5)
    mc = MiniLMConfig(tasks=("compare", "sentiment"), sizes=(32, 16, 16), head=head, expert=tc)
    with torch_threads(1), quiet_dependencies():
        rows, records = run_minilm(mc, PRESETS["smoke"], 0, tmp_path, experts_only=True)
    assert rows == [] and len(records) == 2
    assert all(r["steps"] <= 3 for r in records)
    heads = load_state_dict(tmp_path / "heads.safetensors")
    assert sorted(heads) == sorted(f"{t}.{p}" for t in mc.tasks for p in ("weight", "bias"))
    base = MiniLM(text_tasks(mc.tasks, sizes=mc.sizes)).base
    for task in mc.tasks:
        ex = load_state_dict(tmp_path / "full" / task)
        assert sorted(ex) == sorted(base)
        assert any(not torch.equal(ex[k], base[k]) for k in base)  # trained, not the base
