import jax
import numpy as np
import pytest

from icml26.mspca.noise import MISFIT_WARNING, estimate_noise_variance
from icml26.mspca.spectrum import mp_median, mp_table


def test_mp_median_known_values_and_against_simulation():
    # c = 1 and 1/2, against scipy quadrature of the density: 0.652776, 0.830466
    assert mp_median(1.0) == pytest.approx(0.652776, abs=1e-4)
    assert mp_median(0.5) == pytest.approx(0.830466, abs=1e-4)
    _, cdf = mp_table(0.5)
    assert cdf[0] == 0.0 and cdf[-1] == pytest.approx(1.0)
    z = np.random.default_rng(0).normal(size=(500, 1000))
    lam = np.linalg.eigvalsh(z @ z.T / 1000)
    assert np.median(lam) == pytest.approx(mp_median(0.5), rel=0.01)
    # c > 1: the nonzero eigenvalues are c times the law of ratio 1/c
    assert mp_median(2.0) == pytest.approx(2.0 * mp_median(0.5))
    with pytest.raises(ValueError, match="positive"):
        mp_table(0.0)


@pytest.mark.parametrize(("d", "n"), [(300, 400), (500, 200)])
def test_noise_variance_is_recovered_and_the_fit_is_good(d, n):
    z = 2.5 * np.asarray(jax.random.normal(jax.random.key(d), (d, n)))
    sigma2, misfit = estimate_noise_variance(z)
    assert float(sigma2) == pytest.approx(6.25, rel=0.03)
    assert float(misfit) < MISFIT_WARNING / 2


def test_misfit_flags_non_marchenko_pastur_bulks():
    rng = np.random.default_rng(1)
    heavy = rng.standard_t(1.5, size=(300, 400))  # infinite variance
    assert float(estimate_noise_variance(heavy)[1]) > MISFIT_WARNING
