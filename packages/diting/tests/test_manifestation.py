import pytest
import torch

from icml26.diting.manifestation import TriCoupledOscillators, odd_response


def test_softplus_and_relu_make_the_odd_response_linear_tanh_does_not():
    x = torch.linspace(-3, 3, 61)
    torch.testing.assert_close(odd_response(x, "softplus"), x, atol=1e-6, rtol=0)
    torch.testing.assert_close(odd_response(x, "relu"), x)
    torch.testing.assert_close(odd_response(x, "tanh"), 2 * torch.tanh(x))
    assert float((odd_response(x, "tanh") - x).abs().max()) > 1.0
    with pytest.raises(ValueError, match="unknown φ"):
        odd_response(x, "cubic")


def _residual(B=4, T=50, D=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, T, D, generator=g)


def test_with_a_linear_response_the_drive_leaves_E_unchanged():
    R, mask = _residual(), torch.ones(4, 50)
    e0 = TriCoupledOscillators(amplitude=0.0, phi="linear")(R, mask)
    e1 = TriCoupledOscillators(amplitude=3.0, phi="linear")(R, mask)
    torch.testing.assert_close(e0, e1, atol=1e-8, rtol=1e-5)
    # the saturating tanh lets the drive act on E
    t0 = TriCoupledOscillators(amplitude=0.0, phi="tanh", dt=0.2)(R, mask)
    t1 = TriCoupledOscillators(amplitude=3.0, phi="tanh", dt=0.2)(R, mask)
    assert float((t0 - t1).abs().max()) > 1e-3 * float(t0.abs().max())


def test_E_damps_zero_mean_noise_and_grows_with_drift():
    T, D = 100, 16
    t = torch.arange(1, T + 1, dtype=torch.float32)[None, :, None] / T
    noise = torch.randn(8, T, D, generator=torch.Generator().manual_seed(0))
    drift = t.expand(8, T, D) * 3**0.5  # the same RMS per cycle (1) as the noise
    osc = TriCoupledOscillators()
    mask = torch.ones(8, T)
    e_noise, e_drift = osc(noise, mask)[:, -1], osc(drift, mask)[:, -1]
    assert float(e_noise.mean()) < 0.25 * float(e_drift.mean())  # measured 0.13
    e_more = osc(2 * drift, mask)[:, -1]
    assert bool((e_more > e_drift).all())


def test_kappa_zero_leaves_no_discrepancy_and_one_branch_sees_the_drive():
    R, mask = _residual(), torch.ones(4, 50)
    assert float(TriCoupledOscillators(kappa=0.0)(R, mask).abs().max()) < 1e-10
    single = TriCoupledOscillators(kappa=0.0, readout="single")(R, mask)
    assert float(single.abs().max()) > 0  # x_L alone carries the drive


def test_E_is_zero_past_the_window_and_options_are_checked():
    R, mask = _residual(), torch.ones(4, 50)
    mask[:, 20:] = 0
    for normalise in ("none", "dim", "log1p", "log"):
        E = TriCoupledOscillators(normalise=normalise)(R, mask)
        assert torch.all(E[:, 20:] == 0) and torch.isfinite(E).all()
    with pytest.raises(ValueError, match="readout"):
        TriCoupledOscillators(readout="both")
    with pytest.raises(ValueError, match="κ and c"):
        TriCoupledOscillators(kappa=-1.0)
