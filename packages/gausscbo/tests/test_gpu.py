"""The jitted core on a GPU (``pytest -m gpu``; needs jax with CUDA)."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from icml26.gausscbo import GaussCBO, KLDivergence, gaussian_flow, paper_target  # noqa: E402


def _gpu():
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("no JAX GPU device (install jax[cuda12])")


@pytest.mark.gpu
def test_cbo_and_bw_flow_on_gpu():
    device = _gpu()
    kl = KLDivergence(paper_target("A"), d=2, pad_to=4)
    starts = np.random.default_rng(0).uniform(-5, 5, (64, 2))
    with jax.default_device(device):
        res = GaussCBO(kl, 2).run(jax.random.key(0), starts, np.eye(2), 200)
        bw = gaussian_flow("bw", kl, starts, np.eye(2), dt=0.05, steps=200, record_every=200)
    # the notebook's CBO optimum on A, and BW in its two fixed points (0.408 / 0.664)
    assert np.median(res.final_energy) == pytest.approx(0.3036, abs=0.005)
    assert np.all(
        (np.abs(bw.final_energy - 0.408) < 0.01) | (np.abs(bw.final_energy - 0.664) < 0.01)
    )
