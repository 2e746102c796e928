"""A training step and a sampling step on CUDA at small and at paper size (skipped without CUDA)."""

import numpy as np
import pytest
import torch

from icml26.smoothie import (
    ArctanSchedule,
    Denoiser,
    DenoiserConfig,
    SmoothieSpace,
    SynonymTask,
    TrainConfig,
    fit_sigmas,
    sample,
    synonym_task,
    train_diffusion,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]


@pytest.mark.parametrize(
    ("hidden", "layers", "heads", "length", "vocab"),
    [(32, 4, 2, 12, 60), (768, 12, 12, 64, 2000)],  # smoke size, paper size
)
def test_train_and_sample_on_cuda(hidden, layers, heads, length, vocab):
    task = SynonymTask(
        concepts=vocab,
        synonyms=4,
        dim=256 if hidden == 768 else 32,
        max_len=length,
        min_len=4,
        n_train=512,
        n_test=8,
    )
    data = synonym_task(task, np.random.default_rng(0))
    emb = data.embeddings.cuda()
    smin, smax = fit_sigmas(data.embeddings)
    space = SmoothieSpace(ArctanSchedule(sigma_min=smin, sigma_max=smax))
    cfg = DenoiserConfig(
        embed_dim=emb.shape[1],
        hidden=hidden,
        heads=heads,
        layers=layers,
        encoder_layers=2,
        max_len=length,
        max_src_len=length,
    )
    model = Denoiser(cfg).cuda()
    res = train_diffusion(
        space,
        model,
        emb,
        data.train_trg,
        data.train_src,
        data.mask(data.train_src),
        TrainConfig(batch_size=64, cap=2, warmup=1),
        seed=0,
        device="cuda",
    )
    assert res.stopping["steps"] == 2 and np.isfinite(res.losses).all()
    out = sample(
        space,
        model,
        emb,
        length=length,
        src=data.test_src.cuda(),
        src_mask=data.mask(data.test_src).cuda(),
        steps=4,
        generator=torch.Generator(device="cuda").manual_seed(0),
    )
    assert out.shape == (8, length) and out.device.type == "cuda"
