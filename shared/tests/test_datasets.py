from __future__ import annotations

import numpy as np
import pytest

from icml26.shared import new_figure, numpy_rng, progress, save_figure
from icml26.shared.datasets import load_digits_split, sample_gaussian_mixture
from icml26.shared.progress import is_quiet


def test_digits_split_is_seeded_stratified_and_scaled():
    a, b = load_digits_split(seed=1), load_digits_split(seed=1)
    assert np.array_equal(a.x_train, b.x_train)
    assert not np.array_equal(a.y_test, load_digits_split(seed=2).y_test)
    assert a.x_train.shape[1] == 64 and a.x_train.dtype == np.float32
    assert a.x_train.min() >= 0.0 and a.x_train.max() <= 1.0
    assert len(a.y_train) + len(a.y_test) == 1797
    assert set(np.unique(a.y_test)) == set(range(10))
    with pytest.raises(ValueError, match="test_fraction"):
        load_digits_split(test_fraction=1.0)


def test_gaussian_mixture_moments():
    rng = numpy_rng(0)
    means = np.array([[0.0, 0.0], [10.0, 0.0]])
    covs = np.array([np.eye(2), np.diag([4.0, 0.25])])
    x, lab = sample_gaussian_mixture(rng, 20_000, means, covs, weights=[0.25, 0.75])
    assert abs(lab.mean() - 0.75) < 0.02
    assert np.allclose(x[lab == 1].mean(0), means[1], atol=0.05)
    assert np.allclose(np.cov(x[lab == 1].T), covs[1], atol=0.1)


@pytest.mark.parametrize(
    "kw",
    [
        {"means": np.zeros(3)},
        {"means": np.zeros((2, 2)), "weights": [0.5, 0.6]},
        {"means": np.zeros((2, 2)), "covariances": np.zeros((2, 2, 2))},
        {"means": np.zeros((2, 2)), "covariances": np.zeros((3, 2, 2))},
    ],
)
def test_gaussian_mixture_bad_input(kw):
    with pytest.raises(ValueError):
        sample_gaussian_mixture(numpy_rng(0), 10, **kw)


def test_progress_quiet_under_env(monkeypatch):
    monkeypatch.setenv("ICML26_QUIET", "1")
    assert is_quiet()
    assert list(progress(range(3))) == [0, 1, 2]
    assert progress(range(3)).disable


def test_save_figure_writes_png(tmp_path):
    fig, ax = new_figure()
    ax.plot([0, 1], [1, 0])
    path = save_figure(fig, tmp_path / "sub" / "line")
    assert path.suffix == ".png" and path.read_bytes()[:4] == b"\x89PNG"
