import math
import warnings

import pytest

from icml26.dpfeature import accounting as acc


@pytest.mark.parametrize(("epsilon", "steps"), [(1.0, 1000), (4.0, 1000), (2.0, 50)])
def test_calibration_inverts_the_exact_curve(epsilon, steps):
    z = acc.noise_multiplier(epsilon, 1e-5, steps)
    assert acc.gaussian_epsilon(z, steps, 1e-5) == pytest.approx(epsilon, rel=1e-8)
    assert acc.gaussian_delta(epsilon, z, steps) == pytest.approx(1e-5, rel=1e-6)
    # zCDP closed form ρ = T / (2 z²); RDP and the simple conversion are looser than exact
    rho = acc.zcdp_rho(z, steps)
    assert rho == pytest.approx(steps / (2 * z * z))
    assert epsilon < acc.rdp_epsilon(z, steps, 1e-5) < acc.zcdp_epsilon(rho, 1e-5)


def test_one_gaussian_step_matches_the_classical_bound_regime():
    # one step, z = 1: exact ε at δ = 1e-5 is about 4.4 (Balle & Wang 2018, Fig. 1 regime)
    eps = acc.gaussian_epsilon(1.0, 1, 1e-5)
    assert 4.0 < eps < 5.0
    assert acc.gaussian_epsilon(2 * math.sqrt(10), 10, 1e-5) == pytest.approx(
        acc.gaussian_epsilon(2.0, 1, 1e-5), rel=1e-9
    )  # T steps at z√T are one step at z


@pytest.mark.parametrize(
    ("name", "closed_form"),
    [
        ("dp_accounting PLD", "exact"),
        ("dp_accounting RDP", "rdp"),
        ("prv_accountant PRV", "exact"),
        # importing opacus takes ~20 s on a shared 2-core CPU
        pytest.param("opacus RDP", "rdp", marks=pytest.mark.slow),
    ],
)
def test_each_library_accountant_matches_the_closed_form(name, closed_form):
    module = {"dp": "dp_accounting", "prv": "prv_accountant", "opacus": "opacus"}
    pytest.importorskip(module[name.split("_")[0].split()[0]])
    z, steps = acc.noise_multiplier(4.0, 1e-5, 200), 200
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = acc.LIBRARIES[name](z, steps, 1e-5)
    ref = (
        acc.gaussian_epsilon(z, steps, 1e-5)
        if closed_form == "exact"
        else acc.rdp_epsilon(z, steps, 1e-5)
    )
    assert got == pytest.approx(ref, rel=0.01)


@pytest.mark.slow
def test_opacus_noise_multiplier_matches_ours():
    pytest.importorskip("opacus")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = acc.opacus_noise_multiplier(4.0, 1e-5, 200, "prv")
    assert theirs == pytest.approx(acc.noise_multiplier(4.0, 1e-5, 200), rel=0.01)


def test_bad_privacy_parameters_are_clear_errors():
    with pytest.raises(ValueError, match="epsilon must be positive"):
        acc.noise_multiplier(0.0, 1e-5, 10)
    with pytest.raises(ValueError, match="epsilon must be positive"):
        acc.noise_multiplier(-1.0, 1e-5, 10)
    for delta in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match=r"delta must lie in \(0, 1\)"):
            acc.noise_multiplier(1.0, delta, 10)
    with pytest.raises(ValueError, match="steps T must be at least 1"):
        acc.noise_multiplier(1.0, 1e-5, 0)
    with pytest.raises(TypeError, match="steps T must be an int"):
        acc.zcdp_rho(1.0, 2.5)
