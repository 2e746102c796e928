import pytest
import torch

from icml26.dpfeature import make_multipatch
from icml26.dpfeature.baselines import class_mean, class_mean_error, private_class_mean


def test_class_mean_averages_the_noise_away():
    g = torch.Generator().manual_seed(0)
    tr, te = (make_multipatch(n, 2000, 8.0, generator=g) for n in (40, 2000))
    v = class_mean(tr.x, tr.y)
    # v = μ + (1/n) Σ y_i ξ_i: its μ-component is exactly ‖μ‖²
    assert float(v @ tr.mu) == pytest.approx(64.0, rel=1e-4)
    assert float(class_mean_error(v, te.x, te.y)) < 0.02


def test_private_class_mean_is_noisier_for_smaller_epsilon():
    g = torch.Generator().manual_seed(1)
    tr, te = (make_multipatch(n, 2000, 8.0, generator=g) for n in (40, 2000))
    errs = {}
    for eps in (0.1, 100.0):
        v = private_class_mean(tr.x, tr.y, eps, 1e-5, generator=torch.Generator().manual_seed(2))
        errs[eps] = float(class_mean_error(v, te.x, te.y))
    assert errs[100.0] < 0.05 < 0.3 < errs[0.1]
    with pytest.raises(ValueError, match="epsilon must be positive"):
        private_class_mean(tr.x, tr.y, -1.0, 1e-5)
