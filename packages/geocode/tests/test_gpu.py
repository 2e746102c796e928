"""On CUDA: a training step and greedy decoding of the alignment model."""

from __future__ import annotations

import pytest
import torch

from icml26.geocode.align import AlignConfig, evaluate, train

pytestmark = pytest.mark.gpu


def test_train_step_and_decode_on_cuda(problems):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    cfg = AlignConfig(batch_size=8, cap=3, window=1, patience=5)
    res = train(problems * 4, "code", cfg, seed=0, device="cuda")
    assert next(res.model.parameters()).is_cuda
    assert 0.0 <= evaluate(res, problems)["accuracy"] <= 1.0


def test_paper_size_sft_and_grpo_step_on_cuda():
    """One SFT step and one GRPO step of the paper preset's model on 224-px figures."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from dataclasses import replace

    from icml26.geocode.align import grpo
    from icml26.geocode.dataset import synthesize
    from icml26.geocode.reproduce import PRESETS

    paper = PRESETS["paper"]
    probs = synthesize(8, tier="geocode", seed=5, size_px=paper.size_px).problems
    cfg = replace(paper.align, batch_size=8, cap=1, window=1, patience=1)
    res = train(probs, "code", cfg, seed=0, device="cuda")
    assert res.stopping["steps"] == 1 and next(res.model.parameters()).is_cuda
    assert sum(p.numel() for p in res.model.parameters()) > 50_000_000
    g = replace(paper.grpo, batch_size=2, cap=1, window=1, patience=1)
    out = grpo(res, probs, g, seed=0)
    assert out.stopping["steps"] == 1
    assert 0.0 <= evaluate(out, probs[:4])["accuracy"] <= 1.0
