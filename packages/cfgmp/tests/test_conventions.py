"""Time-convention and prediction-type converters round-trip."""

import numpy as np
import torch

from icml26.cfgmp import (
    FlowFromNoise,
    FlowFromSigma,
    FlowFromVPEpsilon,
    NoiseFromFlow,
    SigmaFromFlow,
    VPEpsilonFromFlow,
    ring_mixture,
)
from icml26.cfgmp.conventions import (
    alpha_bar_from_flow_time,
    data_from_velocity,
    ddpm_alphas_cumprod,
    flow_time_from_alpha_bar,
    velocity_from_data,
)

FLOW = ring_mixture(4, radius=2.0, std=0.3)
X = torch.randn(16, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
LAB = torch.arange(16) % 4


def test_sigma_convention_round_trip(close):
    t = torch.rand(16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    sd3 = SigmaFromFlow(FLOW)
    # dx/dσ = −dx/dt at σ = 1 − t
    close(sd3(X, 1 - t, LAB), -FLOW(X, t, LAB))
    close(FlowFromSigma(sd3)(X, t, LAB), FLOW(X, t, LAB))


def test_noise_and_data_predictions_round_trip(close):
    t = torch.linspace(0.05, 0.95, 16, dtype=torch.float64)
    eps_model = NoiseFromFlow(FLOW)
    close(FlowFromNoise(eps_model)(X, t, LAB), FLOW(X, t, LAB))
    v = FLOW(X, t, LAB)
    close(velocity_from_data(data_from_velocity(v, X, t), X, t), v)
    # the data prediction of the exact field is the posterior mean E[x1 | x_t]
    close(data_from_velocity(v, X, t), FLOW.denoised(X, t, LAB))


def test_d2f_time_map_and_vp_epsilon_round_trip(close):
    ab = ddpm_alphas_cumprod()
    t = flow_time_from_alpha_bar(ab)
    np.testing.assert_allclose(alpha_bar_from_flow_time(t), ab, rtol=1e-12)
    assert np.all(np.diff(t) < 0) and 0 < t[-1] < 0.01 and t[0] > 0.99
    # a flow model -> ε-prediction VP model -> flow model is the identity (inside the schedule)
    eps_model = VPEpsilonFromFlow(FLOW)
    back = FlowFromVPEpsilon(eps_model)
    tt = torch.linspace(0.02, 0.98, 16, dtype=torch.float64)
    close(back(X, tt, LAB), FLOW(X, tt, LAB), atol=1e-8, rtol=1e-8)
    # training timesteps map back onto themselves
    idx = torch.tensor([999.0, 500.0, 10.0], dtype=torch.float64)
    close(back.timestep(torch.as_tensor(t[[999, 500, 10]])), idx)


def test_d2f_matches_the_official_formulas(close):
    """x_flow = scale·x_vp, t = α·scale, v = (x̂1 − scale·x_vp)/(1 − t) for one ε."""
    ab = ddpm_alphas_cumprod()
    i = 700
    a, b = np.sqrt(ab[i]), np.sqrt(1 - ab[i])
    scale = 1 / (a + b)
    eps = torch.randn(4, 2, dtype=torch.float64)
    x_vp = torch.randn(4, 2, dtype=torch.float64)
    model = FlowFromVPEpsilon(lambda x, ts, c: eps)
    t = torch.full((4,), a * scale, dtype=torch.float64)
    x0 = (x_vp - b * eps) / a
    expected = (x0 - scale * x_vp) / (1 - a * scale)
    close(model(scale * x_vp, t, None), expected)
