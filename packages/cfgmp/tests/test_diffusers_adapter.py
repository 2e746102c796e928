"""The diffusers adapter on tiny, randomly initialised DiT and SD3 transformers.

Importing diffusers takes many seconds on a cold interpreter, so the tests that build
transformers are ``slow`` (CPU) or ``gpu``; the time grids are checked in the fast tier.
"""

import numpy as np
import pytest
import torch

from icml26.cfgmp import cfg
from icml26.cfgmp.conventions import ddpm_alphas_cumprod, flow_time_from_alpha_bar
from icml26.cfgmp.diffusers_adapter import (
    DiTVelocity,
    dit_guider,
    dit_times,
    sample_dit,
    sample_sd3,
    sd3_guider,
    sd3_times,
)

CUDA = torch.cuda.is_available()


def _tiny_dit(device="cpu"):
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    return (
        diffusers.DiTTransformer2DModel(
            sample_size=8,
            num_layers=1,
            patch_size=4,
            attention_head_dim=8,
            num_attention_heads=2,
            in_channels=4,
            out_channels=8,
            norm_num_groups=1,
        )
        .to(device)
        .eval()
    )


def _tiny_sd3(device="cpu"):
    diffusers = pytest.importorskip("diffusers")
    torch.manual_seed(0)
    return (
        diffusers.SD3Transformer2DModel(
            sample_size=8,
            patch_size=1,
            in_channels=4,
            num_layers=1,
            attention_head_dim=8,
            num_attention_heads=2,
            caption_projection_dim=16,
            joint_attention_dim=16,
            pooled_projection_dim=8,
            out_channels=4,
            pos_embed_max_size=8,
        )
        .to(device)
        .eval()
    )


def test_official_time_grids():
    # DiT: training timesteps nearest to linspace(0, 1, N) in flow time, then 1
    times = dit_times(10)
    flow = flow_time_from_alpha_bar(ddpm_alphas_cumprod())
    assert times[0] == flow[-1] and times[-1] == 1.0 and len(times) == 11
    assert (
        np.all(np.isin(times[:-1], flow))
        and np.abs(times[:-1] - np.arange(0, 10) / 10).max() < 7e-3
    )
    # SD3: 2N shifted σ's; odd points are the half steps
    t, mid = sd3_times(10, shift=3.0)
    s = np.linspace(1.0, 1e-4, 20)
    sig = np.append(3 * s / (1 + 2 * s), 0.0)
    np.testing.assert_allclose(t, 1 - sig[0::2])
    np.testing.assert_allclose(mid, 1 - sig[1::2])
    assert np.all((t[:-1] < mid) & (mid < t[1:]))


def _run_dit(device):
    dit = _tiny_dit(device)
    res = sample_dit(
        dit,
        torch.tensor([1, 7]),
        guider=dit_guider(1.75),
        steps=10,
        generator=torch.Generator().manual_seed(0),
        diagnostics=True,
    )
    assert res.x.shape == (2, 4, 8, 8) and torch.isfinite(res.x).all()
    # 10 CFG steps + K = 2 iterations on the 7 grid points with t < 0.6 (0.599 included)
    assert res.nfe == 2 * 10 + 2 * 2 * 7
    base = sample_dit(
        dit,
        torch.tensor([1, 7]),
        guider=cfg(1.75),
        steps=10,
        generator=torch.Generator().manual_seed(0),
    )
    assert base.nfe == 20 and not torch.allclose(base.x, res.x)
    # the null class is the unconditional prediction
    model = DiTVelocity(dit)
    x, t = torch.randn(2, 4, 8, 8, device=device), torch.full((2,), 0.3, device=device)
    v_c, v_u = model.velocity_pair(x, t, torch.tensor([1, 7], device=device))
    torch.testing.assert_close(v_u, model(x, t, None), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(
        v_c, model(x, t, torch.tensor([1, 7], device=device)), atol=1e-5, rtol=1e-4
    )


def _run_sd3(device):
    sd3 = _tiny_sd3(device)
    g = torch.Generator().manual_seed(0)
    e, p = torch.randn(2, 5, 16, generator=g), torch.randn(2, 8, generator=g)
    latents = torch.randn(2, 4, 8, 8, generator=g)
    e, p, latents = e.to(device), p.to(device), latents.to(device)
    res = sample_sd3(
        sd3,
        e,
        p,
        torch.zeros_like(e),
        torch.zeros_like(p),
        latents=latents,
        guider=sd3_guider(4.5),
        steps=10,
        diagnostics=True,
    )
    assert res.x.shape == latents.shape and torch.isfinite(res.x).all()
    ops = [tr.operator if tr else None for tr in res.projections]
    # operator H while σ ≥ 0.95, G while σ > 0.6, nothing after
    assert ops == ["H", "H", "G", "G", "G", "G", "G", None, None, None]
    assert res.nfe <= 2 * 10 + 2 * 3 * 7


@pytest.mark.slow
def test_dit_and_sd3_on_cpu():
    _run_dit("cpu")
    _run_sd3("cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_dit_and_sd3_on_gpu():
    _run_dit("cuda")
    _run_sd3("cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not CUDA, reason="needs a CUDA device")
def test_sd3_in_bfloat16_keeps_anderson_in_float32():
    sd3 = _tiny_sd3("cuda").to(torch.bfloat16)
    g = torch.Generator().manual_seed(0)
    e, p = torch.randn(2, 5, 16, generator=g).cuda(), torch.randn(2, 8, generator=g).cuda()
    latents = torch.randn(2, 4, 8, 8, generator=g).cuda().to(torch.bfloat16)
    res = sample_sd3(sd3, e, p, torch.zeros_like(e), torch.zeros_like(p), latents=latents, steps=4)
    assert res.x.dtype == torch.bfloat16 and torch.isfinite(res.x.float()).all()
