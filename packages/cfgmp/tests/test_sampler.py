"""Samplers: exactness on a single Gaussian, NFE accounting, equivalences, bad input."""

import itertools

import numpy as np
import pytest
import torch

from icml26.cfgmp import (
    GaussianMixtureFlow,
    ManifoldProjection,
    apg,
    cfg,
    cfg_mp,
    cfg_mp_plus,
    cfg_zero_star,
    guidance_interval,
    ring_mixture,
    sample,
)
from icml26.cfgmp.guidance import Guider
from icml26.cfgmp.nfe import Evaluator

MU, S = np.array([1.5, -0.5]), 0.4


def _gaussian():
    return GaussianMixtureFlow([MU], [S])


def _euler_affine_map(n: int) -> tuple[float, np.ndarray]:
    """Euler on v = μ + a(t)(x − tμ), a = (ts² − (1 − t))/(t²s² + (1 − t)²): x_N = A·x_0 + B."""
    a_total, b = 1.0, np.zeros(2)
    h = 1.0 / n
    for i in range(n):
        t = i * h
        a = (t * S**2 - (1 - t)) / (t**2 * S**2 + (1 - t) ** 2)
        a_total, b = (1 + h * a) * a_total, (1 + h * a) * b + h * (1 - a * t) * MU
    return a_total, b


def _affine_of(model, guider, n, solver="euler"):
    """Read (A, B) of the sampler's map x0 -> x1 off the basis points."""
    basis = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    out = sample(model, basis, torch.zeros(3, dtype=torch.long), guider, steps=n, solver=solver).x
    return (out[1] - out[0]).numpy(), out[0].numpy()


@pytest.mark.parametrize(
    "guider",
    [cfg(5.0), cfg_zero_star(5.0, zero_init_steps=0), apg(5.0), guidance_interval(5.0, 0.2, 0.7)],
)
def test_guidance_is_exact_euler_when_predictions_agree(guider):
    """One class: v_c = v_u, every rule reduces to the flow, and Euler's affine map is exact."""
    a, b = _euler_affine_map(10)
    col, off = _affine_of(_gaussian(), guider, 10)
    # (CFG-Zero*'s 1e-8 guard in s* = ⟨v_c, v_u⟩/(‖v_u‖² + 1e-8) leaves a 1e-8 trace)
    np.testing.assert_allclose(col, [a, 0.0], atol=1e-7)
    np.testing.assert_allclose(off, b, atol=1e-7)


def test_solvers_converge_to_the_exact_gaussian_map():
    """The exact flow map is x1 = μ + s·x0; Euler errs O(1/N), Heun O(1/N²)."""
    errs = {}
    for solver, n in [("euler", 50), ("euler", 400), ("heun", 25), ("heun", 50)]:
        col, off = _affine_of(_gaussian(), cfg(3.0), n, solver)
        errs[(solver, n)] = max(abs(col[0] - S), np.abs(off - MU).max())
    assert errs[("euler", 400)] < errs[("euler", 50)] / 6  # first order
    assert errs[("euler", 400)] < 5e-3
    assert errs[("heun", 50)] < errs[("heun", 25)] / 3  # second order
    assert errs[("heun", 50)] < errs[("euler", 400)] / 3
    # CFG-MP perturbs each corrected step by O(h²): it converges too
    col, off = _affine_of(_gaussian(), cfg_mp(3.0), 400)
    assert max(abs(col[0] - S), np.abs(off - MU).max()) < 2e-2


class CountingModel:
    """A velocity model without a batched pair method, counting its calls."""

    def __init__(self, flow):
        self.flow, self.calls = flow, 0

    def __call__(self, x, t, cond):
        self.calls += 1
        return self.flow.velocity(x, t, cond)


@pytest.mark.parametrize(
    ("guider", "solver", "expected"),
    [
        (cfg(4.0), "euler", 2 * 10),
        (cfg(4.0), "heun", 2 * (2 * 10 - 1)),
        (cfg_mp(4.0, 2), "euler", 2 * 10 + 2 * 2 * 6),  # t = 0, .1, ..., .5 are < 0.6
        (cfg_mp_plus(4.0, 3, interval=0.35), "euler", 2 * 10 + 2 * 3 * 4),
        (cfg_zero_star(4.0), "euler", 2 * 9),
        (guidance_interval(4.0, 0.2, 0.5), "euler", 2 * 3 + 1 * 7),
    ],
)
def test_nfe_counts_are_exact(guider, solver, expected, close):
    flow = ring_mixture(4)
    model = CountingModel(flow)
    x = torch.randn(8, 2, dtype=torch.float64)
    res = sample(model, x, torch.arange(8) % 4, guider, steps=10, solver=solver)
    assert res.nfe == expected == model.calls
    # the batched pair path counts the same NFEs in fewer calls
    res2 = sample(flow, x, torch.arange(8) % 4, guider, steps=10, solver=solver)
    assert res2.nfe == expected and res2.model_calls < res2.nfe
    close(res.x, res2.x)


def test_diagnostics_never_change_samples_or_nfe():
    flow = ring_mixture(8)
    x = torch.randn(64, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    lab = torch.arange(64) % 8
    plain = sample(flow, x, lab, cfg_mp_plus(4.0), steps=10)
    diag = sample(flow, x, lab, cfg_mp_plus(4.0), steps=10, diagnostics=True)
    assert torch.equal(plain.x, diag.x) and plain.nfe == diag.nfe == 44
    assert diag.diagnostic_nfe == 6 * (2 + 2)  # gap before + residual after, per corrected step
    assert all(np.isfinite(diag.gap_before[:6])) and all(np.isnan(diag.gap_before[6:]))


def test_zero_iterations_equal_plain_cfg_bit_for_bit():
    flow = ring_mixture(8)
    x = torch.randn(32, 2, dtype=torch.float64)
    lab = torch.arange(32) % 8
    ref = sample(flow, x, lab, cfg(6.0), steps=10)
    for g in (cfg_mp(6.0, 0), cfg_mp_plus(6.0, 0), cfg_mp(6.0, 2, interval=0.0)):
        assert torch.equal(sample(flow, x, lab, g, steps=10).x, ref.x)


def test_anderson_window_zero_equals_picard():
    flow = ring_mixture(8)
    x = torch.randn(32, 2, dtype=torch.float64)
    lab = torch.arange(32) % 8
    picard = sample(flow, x, lab, cfg_mp(4.0, 3), steps=10)
    aa0 = sample(flow, x, lab, cfg_mp_plus(4.0, 3, window=0), steps=10)
    assert torch.equal(picard.x, aa0.x)
    aa1 = sample(flow, x, lab, cfg_mp_plus(4.0, 3, window=1), steps=10)
    assert not torch.equal(picard.x, aa1.x)


def test_projection_is_identity_for_equal_constant_fields(close):
    """v_c ≡ v_u ≡ c: G(z) = z − (h/2)c + (h/2)c = z."""
    c = torch.tensor([0.7, -1.2], dtype=torch.float64)

    def const(x, t, cond):
        return c.expand_as(x)

    z = torch.randn(5, 2, dtype=torch.float64)
    for op in ("G", "H"):
        proj = ManifoldProjection(iterations=3, anderson=True, operator=op)
        out, trace = proj.project(Evaluator(const, None), z, 0.2, 0.05)
        close(out, z)
        assert max(trace.residuals) < 1e-15


def test_anderson_beats_picard_on_a_linear_gap():
    """v_c − v_u linear in z: Picard contracts slowly, Anderson (m = 1) gets further at equal K."""
    a = torch.tensor([[-4.0, 1.0], [0.5, -2.0]], dtype=torch.float64)

    def model(x, t, cond):
        return x @ a.T + 1.0 if cond is not None else torch.zeros_like(x)

    z0 = torch.randn(16, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    res = {}
    for anderson in (False, True):
        proj = ManifoldProjection(iterations=4, anderson=anderson)
        _, trace = proj.project(Evaluator(model, torch.ones(16)), z0, 0.3, 0.1, diagnostics=True)
        res[anderson] = trace
    picard = res[False].residuals
    assert all(b < a for a, b in itertools.pairwise(picard))  # contraction
    assert res[True].final_residual < 0.5 * res[False].final_residual


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"interval": 1.5}, "guidance window"),
        ({"interval": -0.1}, "guidance window"),
        ({"iterations": -1}, "K"),
        ({"damping": 0.0}, "damping"),
        ({"window": -1}, "window"),
        ({"operator": "X"}, "operator"),
    ],
)
def test_projection_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ManifoldProjection(**kwargs)


def test_sampler_rejects_bad_input():
    flow = ring_mixture(4)
    x = torch.randn(8, 2, dtype=torch.float64)
    lab = torch.arange(8) % 4
    with pytest.raises(ValueError, match="batch size"):
        sample(flow, x, lab[:5], cfg(2.0))
    with pytest.raises(ValueError, match="increase"):
        sample(flow, x, lab, cfg(2.0), times=[0.0, 0.5, 0.4, 1.0])
    with pytest.raises(ValueError, match="steps"):
        sample(flow, x, lab, cfg(2.0), steps=0)
    with pytest.raises(ValueError, match="returned shape"):
        sample(lambda x, t, c: x[:, :1], x, lab, cfg(2.0))
    with pytest.raises(TypeError, match="Guider"):
        sample(flow, x, lab, 4.0)
    with pytest.raises(ValueError, match="finite"):
        cfg(float("nan"))
    with pytest.raises(TypeError, match="rule"):
        Guider(rule=object())
    with pytest.raises(ValueError, match="mid_times"):
        sample(flow, x, lab, cfg_mp(2.0), steps=2, mid_times=[0.7, 0.9])
