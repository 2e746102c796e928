"""CUDA: a training step and scoring at small size (``nox -s gpu-prism``)."""

import numpy as np
import pytest
import torch

from icml26.prism import (
    ModelConfig,
    TrainConfig,
    build_model,
    pseudo_log_likelihood,
    score_variants,
    simulate_repertoire,
    train,
)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


@pytest.mark.parametrize("kind", ["prism", "prismless"])
@pytest.mark.parametrize("precision", ["no", "bf16"])
def test_training_step_on_cuda(cuda, kind, precision):
    _, rep = simulate_repertoire(np.random.default_rng(0), 20, 4)
    torch.manual_seed(0)
    model = build_model(ModelConfig.tiny(kind=kind))
    before = [p.detach().clone() for p in model.parameters()]
    cfg = TrainConfig(steps=3, batch_size=8, warmup_steps=1, mixed_precision=precision)
    res = train(model, rep, cfg, device=cuda)
    assert model.device.type == "cuda"
    assert len(res.losses) == 3 and all(np.isfinite(res.losses))
    after = list(model.parameters())
    moved = [not torch.equal(b, p.detach().cpu()) for b, p in zip(before, after, strict=True)]
    assert any(moved)


def test_scoring_on_cuda_matches_cpu(cuda):
    sim, rep = simulate_repertoire(np.random.default_rng(1), 10, 2)
    torch.manual_seed(0)
    model = build_model(ModelConfig.tiny()).eval()
    seqs = rep.cased()[:3]
    cpu = pseudo_log_likelihood(model, seqs).perplexity("exact")
    scan = sim.mutational_scans(np.random.default_rng(2), 1)[0]
    variants = scan.sequences()[:40]
    s_cpu = score_variants(model, scan.wild_type, variants)
    model.to(cuda)
    gpu = pseudo_log_likelihood(model, seqs).perplexity("exact")
    s_gpu = score_variants(model, scan.wild_type, variants)
    np.testing.assert_allclose(gpu, cpu, rtol=1e-3)
    np.testing.assert_allclose(s_gpu, s_cpu, rtol=1e-3, atol=1e-3)
