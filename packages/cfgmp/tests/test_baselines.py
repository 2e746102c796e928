"""Baseline guidance rules: formulas, and agreement with diffusers' guiders."""

import pytest
import torch

from icml26.cfgmp import APG, CFG, CFGZeroStar, GuidanceInterval

G = torch.Generator().manual_seed(0)
VC = torch.randn(6, 3, 4, dtype=torch.float64, generator=G)
VU = torch.randn(6, 3, 4, dtype=torch.float64, generator=G)
X = torch.randn(6, 3, 4, dtype=torch.float64, generator=G)


def test_cfg_formula(close):
    v, _ = CFG(3.0).combine(VC, VU, X, 0.3, None)
    close(v, VU + 3.0 * (VC - VU))
    v1, _ = CFG(1.0).combine(VC, VU, X, 0.3, None)
    close(v1, VC)


def test_cfg_zero_star(close):
    rule = CFGZeroStar(4.0)
    assert rule.mode(0, 0.0) == "zero" and rule.mode(1, 0.1) == "both"
    v, _ = rule.combine(VC, VU, X, 0.3, None)
    s = (VC * VU).sum((1, 2), keepdim=True) / ((VU * VU).sum((1, 2), keepdim=True) + 1e-8)
    close(v, s * VU + 4.0 * (VC - s * VU))


@pytest.mark.slow  # importing diffusers takes many seconds on a cold interpreter
def test_cfg_zero_star_scale_matches_diffusers(close):
    pytest.importorskip("diffusers")
    from diffusers.guiders.classifier_free_zero_star_guidance import cfg_zero_star_scale

    s = (VC * VU).sum((1, 2), keepdim=True) / ((VU * VU).sum((1, 2), keepdim=True) + 1e-8)
    # diffusers computes s* in float32 (ours in float64 for float64 input)
    s_ref = cfg_zero_star_scale(VC.flatten(1), VU.flatten(1)).reshape(6, 1, 1)
    close(s, s_ref, atol=1e-6, rtol=1e-6)
    v, _ = CFGZeroStar(4.0).combine(VC, VU, X, 0.3, None)
    close(v, s_ref * VU + 4.0 * (VC - s_ref * VU), atol=1e-5, rtol=1e-5)


def test_apg_reduces_to_cfg_without_its_parts(close):
    plain = APG(5.0, eta=1.0, norm_threshold=0.0, momentum=0.0)
    v, _ = plain.combine(VC, VU, X, 0.4, None)
    close(v, VU + 5.0 * (VC - VU))


@pytest.mark.slow  # importing diffusers takes many seconds on a cold interpreter
def test_apg_matches_diffusers_normalized_guidance_on_data_predictions(close):
    pytest.importorskip("diffusers")
    from diffusers.guiders.adaptive_projected_guidance import MomentumBuffer, normalized_guidance

    t, w = 0.3, 4.0
    rule = APG(w, eta=0.0, norm_threshold=2.0, momentum=-0.5)
    buf = MomentumBuffer(-0.5)
    state = None
    for _ in range(3):  # the momentum buffer carries over steps
        v, state = rule.combine(VC, VU, X, t, state)
        d_c, d_u = X + (1 - t) * VC, X + (1 - t) * VU
        # the paper's D_c + (w − 1)·update is diffusers' original formulation with scale w − 1
        d = normalized_guidance(
            d_c, d_u, w - 1, buf, eta=0.0, norm_threshold=2.0, use_original_formulation=True
        )
        close(v, (d - X) / (1 - t))


def test_guidance_interval_and_bad_settings():
    rule = GuidanceInterval(3.0, 0.2, 0.6)
    assert [rule.mode(i, t) for i, t in enumerate([0.1, 0.2, 0.59, 0.6])] == [
        "cond",
        "both",
        "both",
        "cond",
    ]
    with pytest.raises(ValueError):
        GuidanceInterval(3.0, 0.7, 0.2)
    with pytest.raises(ValueError):
        APG(2.0, norm_threshold=-1.0)
    with pytest.raises(ValueError):
        CFGZeroStar(2.0, zero_init_steps=-1)


def test_apg_update_is_orthogonal_to_the_conditional_data_prediction():
    t, w = 0.25, 6.0
    v, _ = APG(w, eta=0.0, norm_threshold=0.0, momentum=0.0).combine(VC, VU, X, t, None)
    d_c = X + (1 - t) * VC
    update = (X + (1 - t) * v - d_c) / (w - 1)  # D = D_c + (w − 1)·update
    cos = (update * d_c).sum((1, 2)) / (update.flatten(1).norm(dim=1) * d_c.flatten(1).norm(dim=1))
    assert cos.abs().max() < 1e-10
    # the norm cap bounds the update
    v, _ = APG(w, eta=1.0, norm_threshold=0.1, momentum=0.0).combine(VC, VU, X, t, None)
    update = (X + (1 - t) * v - d_c) / (w - 1)
    assert update.flatten(1).norm(dim=1).max() <= 0.1 + 1e-12
