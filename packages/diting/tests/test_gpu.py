"""On CUDA: a DITING training step and scoring at paper size (S = 300, D = 900)."""

import numpy as np
import pytest
import torch

from icml26.diting import (
    Diting,
    DitingConfig,
    TrainConfig,
    predict,
    simulate_fleet,
    train_regressor,
)

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


def test_train_and_predict_on_cuda_at_paper_size(cuda):
    fleet = simulate_fleet(16, np.random.default_rng(0), snr=2.0, charge_discharge_length=300)
    torch.manual_seed(0)
    model = Diting(DitingConfig(charge_discharge_length=300, spectral_bins=None))
    res = train_regressor(
        model, fleet, TrainConfig(max_epochs=2, batch_size=16), seed=0, device=cuda
    )
    assert next(model.parameters()).is_cuda and len(res.losses) == 2
    pred = predict(model, fleet.curves, np.full(16, 100), res.scaler, device=cuda)
    model_cpu = model.to("cpu")
    ref = predict(model_cpu, fleet.curves, np.full(16, 100), res.scaler, device="cpu")
    assert np.all(np.isfinite(pred))
    np.testing.assert_allclose(pred, ref, rtol=1e-3, atol=1e-2)
