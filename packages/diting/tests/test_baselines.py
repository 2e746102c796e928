import numpy as np
import pytest

from icml26.diting.baselines import (
    DriftSlope,
    SeversonModel,
    dummy_predict,
    savgol_denoise,
    severson_features,
)
from icml26.diting.data import simulate_fleet
from icml26.diting.evaluation import accuracy_within, mape, rmse, score


def test_metrics_hand_values():
    y, p = np.array([100.0, 200.0, 400.0]), np.array([110.0, 150.0, 400.0])
    assert mape(y, p) == pytest.approx((0.1 + 0.25 + 0) / 3)
    assert accuracy_within(y, p) == pytest.approx(2 / 3)
    assert rmse(y, p) == pytest.approx(np.sqrt((100 + 2500) / 3))
    per_cell = score(y, p, np.array([0, 0, 1]), per_cell=True)
    assert per_cell["mape"] == pytest.approx(((0.1 + 0.25) / 2 + 0) / 2)
    with pytest.raises(ValueError, match="NaN"):
        mape(y, np.array([1.0, np.nan, 2.0]))


def test_severson_and_drift_slope_find_the_life_signal_at_high_snr():
    fleet = simulate_fleet(60, np.random.default_rng(0), snr=5.0, charge_discharge_length=20,
                           anomaly_share=0.0)  # fmt: skip
    lengths = np.full(60, 100)
    X = severson_features(fleet.curves, lengths, kind="full")
    assert X.shape == (60, 9) and np.isfinite(X).all()
    assert severson_features(fleet.curves, lengths, kind="variance").shape == (60, 1)
    groups = np.arange(60)
    tr, te = slice(0, 45), slice(45, 60)
    drift = DriftSlope().fit(fleet.curves[tr], lengths[tr], fleet.life[tr], groups[tr])
    dummy = dummy_predict(fleet.life[tr], 15)
    assert mape(fleet.life[te], drift.predict(fleet.curves[te], lengths[te])) < 0.5 * mape(
        fleet.life[te], dummy
    )
    sev = SeversonModel("variance").fit(fleet.curves[tr], lengths[tr], fleet.life[tr], groups[tr])
    assert mape(fleet.life[te], sev.predict(fleet.curves[te], lengths[te])) < mape(
        fleet.life[te], dummy
    )
    with pytest.raises(ValueError, match="kind"):
        SeversonModel("partial")


def test_savgol_reads_only_the_window_and_smooths():
    fleet = simulate_fleet(4, np.random.default_rng(0), snr=1.0, charge_discharge_length=20)
    lengths = np.array([30, 50, 100, 7])
    out = savgol_denoise(fleet.curves, lengths)
    assert np.all(out[0, 30:] == 0) and np.all(out[3, 7:] == 0)
    assert np.diff(out[2, :, 0], axis=0).std() < np.diff(fleet.curves[2, :, 0], axis=0).std()
