"""On CUDA: a distillation fit (training steps) and cross-map scoring, at tiny size."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from icml26.topodistill import DistillConfig, TopoDistill, cross_map, rossler_lorenz

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


def test_fit_and_cross_map_on_cuda(cuda):
    data = rossler_lorenz(900, np.random.default_rng(0), coupling=2.0, burn_in=300).data
    train, test = data[:500], data[500:]
    cfg = DistillConfig(
        window=3,
        teacher_hidden=16,
        teacher_epochs=3,
        student_window=6,
        student_hidden=16,
        student_steps=20,
        batch_size=64,
        perplexity=5.0,
    )
    model = TopoDistill(cfg, seed=0, device=cuda).fit(train, lags=3, dims=3, variables=[3])
    assert next(model.students[3].parameters()).is_cuda
    assert model.stopping["student3"]["steps"] == 20
    z, times = model.embed(test[:, 3], 3)
    assert np.all(np.isfinite(z))
    skill = cross_map(
        z,
        test[times, 1],
        [50, len(z)],
        samples=4,
        exclusion_radius=3,
        times=times,
        rng=np.random.default_rng(0),
        device=cuda,
    )
    cpu = cross_map(
        z,
        test[times, 1],
        [50, len(z)],
        samples=4,
        exclusion_radius=3,
        times=times,
        rng=np.random.default_rng(0),
        device="cpu",
    )
    np.testing.assert_allclose(skill, cpu, atol=1e-6)  # the same exact neighbours on both
