"""The BatteryLife featuriser on hand-made fixtures in the official field names."""

import json

import numpy as np
import pytest

from icml26.diting.data import (
    CellRecord,
    cells_to_fleet,
    featurise_cell,
    load_cell,
    load_cell_npz,
    load_cell_parquet,
    load_life_labels,
    load_mit_batch,
    simulate_fleet,
    split_cells,
    window_mask,
)

# one cycle: 3 charge records (+1 A), then 3 discharge records (-2 A), nominal 2 Ah
CYCLE = {
    "current_in_A": np.array([1.0, 1.0, 1.0, -2.0, -2.0, -2.0]),
    "voltage_in_V": np.array([3.0, 3.5, 4.0, 3.8, 3.4, 3.0]),
    "charge_capacity_in_Ah": np.array([0.0, 0.5, 1.0, 1.0, 1.0, 1.0]),
    "discharge_capacity_in_Ah": np.array([0.0, 0.0, 0.0, 0.2, 0.8, 1.6]),
    "time_in_s": np.arange(6.0),
}


def _write_npz(path, cycles, nominal=2.0, **extra):
    rec = {k: np.concatenate([c[k] for c in cycles]) for k in CYCLE}
    rec["cycle_number"] = np.concatenate(
        [np.full(len(c["time_in_s"]), i + 1) for i, c in enumerate(cycles)]
    )
    np.savez(path, nominal_capacity_in_Ah=nominal, **rec, **extra)


def test_featuriser_matches_hand_computed_values(tmp_path):
    _write_npz(tmp_path / "cell.npz", [CYCLE, CYCLE], eol=np.float64(250.0))
    cell = load_cell_npz(tmp_path / "cell.npz")
    assert cell.eol == 250.0 and len(cell.cycles) == 2
    x = featurise_cell(cell, early_cycle_threshold=4, charge_discharge_length=6)
    assert x.shape == (4, 3, 6)
    # charge: records 0..2 resampled by index to 3 points; discharge: records 3..5
    np.testing.assert_allclose(x[0, 0], np.array([3.0, 3.5, 4.0, 3.8, 3.4, 3.0]) / 4.0)
    np.testing.assert_allclose(x[0, 1], [0.5, 0.5, 0.5, -1.0, -1.0, -1.0])
    np.testing.assert_allclose(x[0, 2], [0.0, 0.25, 0.5, 0.1, 0.4, 0.8])
    assert np.all(x[2:] == 0)  # cycles the cell lacks
    y = featurise_cell(cell, early_cycle_threshold=1, charge_discharge_length=4)
    # 2 points per segment: the end points of each segment
    np.testing.assert_allclose(y[0, 0], np.array([3.0, 4.0, 3.8, 3.0]) / 4.0)


def test_discharge_first_cells_are_split_the_other_way():
    order = [3, 4, 5, 0, 1, 2]
    flipped = {k: v[order] for k, v in CYCLE.items()}
    cell = CellRecord("CALB_0_cell1", 2.0, [flipped], 300.0)  # a BatteryLife discharge-first prefix
    x = featurise_cell(cell, early_cycle_threshold=1, charge_discharge_length=6)
    np.testing.assert_allclose(x[0, 1], [0.5, 0.5, 0.5, -1.0, -1.0, -1.0])
    with pytest.raises(ValueError, match="segment"):
        featurise_cell(CellRecord("MATR_1", 2.0, [flipped], 300.0), early_cycle_threshold=1,
                       charge_discharge_length=6)  # fmt: skip


def test_bad_cells_get_clear_errors(tmp_path):
    no_discharge = {**CYCLE, "current_in_A": np.abs(CYCLE["current_in_A"])}
    with pytest.raises(ValueError, match="no discharge segment"):
        featurise_cell(CellRecord("x", 2.0, [no_discharge]), early_cycle_threshold=1)
    nan = {**CYCLE, "voltage_in_V": np.r_[np.nan, CYCLE["voltage_in_V"][1:]]}
    with pytest.raises(ValueError, match="NaN"):
        featurise_cell(CellRecord("x", 2.0, [nan]), early_cycle_threshold=1)
    with pytest.raises(ValueError, match="nominal_capacity_in_Ah must be > 0"):
        CellRecord("x", 0.0, [CYCLE])
    (tmp_path / "cell.pkl").write_bytes(b"not opened")
    with pytest.raises(ValueError, match=r"pickles are refused.*npz"):
        load_cell(tmp_path / "cell.pkl")
    with pytest.raises(ValueError, match="window lengths"):
        window_mask(np.array([0, 3]), 5)


def test_fleet_drops_cells_without_label_or_with_short_life(tmp_path):
    cells = [CellRecord(f"c{i}", 2.0, [CYCLE] * 3) for i in range(3)]
    labels_file = tmp_path / "labels.json"
    labels_file.write_text(json.dumps({"c0.pkl": 500, "c1.pkl": 4}))
    labels = load_life_labels(labels_file)
    fleet = cells_to_fleet(cells, labels=labels, early_cycle_threshold=5, charge_discharge_length=6)
    assert fleet.cell_ids == ["c0"] and fleet.n_cycles.tolist() == [3]
    assert set(fleet.dropped) == {"c1", "c2"} and "EOL" in fleet.dropped["c1"]


def test_parquet_and_mit_mat_fixtures_read_the_same_cycles(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    frame = pd.DataFrame({**{k: np.r_[v, v] for k, v in CYCLE.items()},
                          "cycle_number": np.repeat([1, 2], 6), "nominal_capacity_in_Ah": 2.0,
                          "cell_id": "p1"})  # fmt: skip
    frame.to_parquet(tmp_path / "p1.parquet")
    cell = load_cell_parquet(tmp_path / "p1.parquet")
    ref = featurise_cell(CellRecord("p1", 2.0, [CYCLE, CYCLE]), early_cycle_threshold=2,
                         charge_discharge_length=6)  # fmt: skip
    np.testing.assert_allclose(
        featurise_cell(cell, early_cycle_threshold=2, charge_discharge_length=6), ref
    )
    # a MATLAB v7.3 batch: batch/cycles -> per-cell groups of per-cycle references
    import h5py

    with h5py.File(tmp_path / "batch.mat", "w") as f:
        refs = f.create_group("#refs#")
        ref_dtype = h5py.special_dtype(ref=h5py.Reference)
        batch = f.create_group("batch")
        cycles = batch.create_dataset("cycles", (1, 1), dtype=ref_dtype)
        life = batch.create_dataset("cycle_life", (1, 1), dtype=ref_dtype)
        group = refs.create_group("cell0")
        fields = (("I", "current_in_A", 1.0), ("V", "voltage_in_V", 1.0),
                  ("Qc", "charge_capacity_in_Ah", 1.0), ("Qd", "discharge_capacity_in_Ah", 1.0),
                  ("t", "time_in_s", 1 / 60))  # fmt: skip
        for key, name, scale in fields:
            ds = group.create_dataset(key, (2, 1), dtype=ref_dtype)
            for k in range(2):
                arr = refs.create_dataset(f"{key}{k}", data=(CYCLE[name] * scale)[None, :])
                ds[k, 0] = arr.ref
        cycles[0, 0] = group.ref
        life[0, 0] = refs.create_dataset("life0", data=np.array([[812.0]])).ref
    (mit,) = load_mit_batch(tmp_path / "batch.mat", nominal_capacity_in_Ah=2.0)
    assert mit.eol == 812.0 and len(mit.cycles) == 2
    np.testing.assert_allclose(mit.cycles[0]["time_in_s"], CYCLE["time_in_s"])
    np.testing.assert_allclose(
        featurise_cell(mit, early_cycle_threshold=2, charge_discharge_length=6), ref
    )


def test_simulator_shapes_anomalies_and_weak_signal():
    fleet = simulate_fleet(60, np.random.default_rng(0), snr=1.0, charge_discharge_length=20)
    assert fleet.curves.shape == (60, 100, 3, 20) and fleet.curves.dtype == np.float32
    assert 0.1 < fleet.anomalous.mean() < 0.5 and np.all(fleet.life > 100)
    # V is divided by each cycle's own maximum voltage
    assert abs(np.median(fleet.curves[:, 8:, 0].max(-1)) - 1.0) < 0.01  # up to the noise
    # the per-cycle change is far below the noise: consecutive cycles differ mostly by noise
    x = fleet.curves[:, 20:, [0, 2]]
    step = np.abs(np.diff(x, axis=1).mean(axis=(0, 1))).mean()
    assert step < 0.05 * np.diff(x, axis=1).std()
    with pytest.raises(ValueError, match="noise"):
        simulate_fleet(5, np.random.default_rng(0), noise="pink")
    train, val, test = split_cells(10, np.random.default_rng(0))
    assert len(set(train) | set(val) | set(test)) == 10 and len(train) == 6
