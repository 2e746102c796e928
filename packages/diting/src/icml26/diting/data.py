"""BatteryLife tensors: the featuriser, loaders for the formats users hold, and a simulator.

The BatteryLife protocol (Tan et al., KDD 2025, ``data_provider/data_loader.py``) turns each
cell into ``cycle_curve_data`` of shape ``[T, C, S]``: for each of the first
``early_cycle_threshold`` (T) cycles, the charge and the discharge segment are each resampled
*by record index* to ``S / 2`` points and concatenated; the channels are voltage divided by that
cycle's own maximum voltage, current divided by the nominal capacity (a C-rate) and capacity
divided by the nominal capacity. Missing cycles are zeros; cells without an end-of-life (EOL)
label or with EOL ≤ T are dropped. A sample is one window length ``i`` (the first ``i`` cycles
kept by ``curve_attn_mask``); its label is the cell's EOL.

BatteryLife ships its processed cells as pickles. Nothing here unpickles: the loaders read the
same per-cycle fields from ``.npz`` or Parquet, and the MIT/Severson ``.mat`` (HDF5) batches
directly; a ``.pkl`` is refused with the one-off conversion (README, "Data").

The simulator (reconstructed, ours) emits the same tensors for a fleet whose life signal is a
slow, monotone curve-shape drift far below the per-cycle noise, plus cell-to-cell spread,
anomalous early cycles and a biased-noise control.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

__all__ = [
    "CELL_FIELDS",
    "CellRecord",
    "Fleet",
    "LabelScaler",
    "cells_to_fleet",
    "featurise_cell",
    "load_cell",
    "load_cell_npz",
    "load_cell_parquet",
    "load_life_labels",
    "load_mit_batch",
    "simulate_fleet",
    "split_cells",
    "window_mask",
]

#: the per-record fields of a BatteryLife / BatteryML processed cycle
CELL_FIELDS = (
    "current_in_A",
    "voltage_in_V",
    "charge_capacity_in_Ah",
    "discharge_capacity_in_Ah",
    "time_in_s",
)

#: BatteryLife datasets whose cycles start with the discharge segment
DISCHARGE_FIRST = ("RWTH", "OX", "ZN-coin", "CALB_0", "CALB_35", "CALB_45")

PICKLE_MESSAGE = (
    "{path}: pickles are refused (unpickling runs arbitrary code). Convert the BatteryLife "
    "cells you trust once, outside this library, to .npz with the per-record fields "
    "cycle_number, current_in_A, voltage_in_V, charge_capacity_in_Ah, "
    "discharge_capacity_in_Ah, time_in_s and the scalar nominal_capacity_in_Ah (README, Data)."
)


# -- cells ------------------------------------------------------------------------------
@dataclass
class CellRecord:
    """One cell as recorded: its cycles (dicts of the :data:`CELL_FIELDS` arrays)."""

    cell_id: str
    nominal_capacity_in_Ah: float
    cycles: list[dict[str, np.ndarray]]
    eol: float | None = None

    def __post_init__(self) -> None:
        cap = float(self.nominal_capacity_in_Ah)
        if not np.isfinite(cap) or cap <= 0:
            raise ValueError(
                f"cell {self.cell_id!r}: nominal_capacity_in_Ah must be > 0, got {cap}"
            )
        self.nominal_capacity_in_Ah = cap


def _resample_by_index(values: np.ndarray, n: int) -> np.ndarray:
    """BatteryLife's resampling: linear interpolation over the record index to ``n`` points."""
    if len(values) == 1:
        return np.full(n, float(values[0]))
    return np.interp(np.linspace(0, len(values) - 1, n), np.arange(len(values)), values)


def featurise_cycle(
    cycle: Mapping[str, np.ndarray],
    nominal_capacity_in_Ah: float,
    *,
    charge_discharge_length: int = 300,
    discharge_first: bool = False,
    where: str = "cycle",
) -> np.ndarray:
    """One cycle's ``[3, S]`` curves (V / max V, I / nominal, Q / nominal), BatteryLife style.

    The charge segment runs up to the last record with C-rate ≥ 0.01, the discharge segment
    from there to the last record with C-rate ≤ −0.01 (the other order when
    ``discharge_first``). A cycle without one of the two segments raises ``ValueError``.
    """
    if charge_discharge_length < 2 or charge_discharge_length % 2:
        raise ValueError(
            f"charge_discharge_length must be an even number >= 2, got {charge_discharge_length}"
        )
    arrays = {}
    for name in (
        "current_in_A",
        "voltage_in_V",
        "charge_capacity_in_Ah",
        "discharge_capacity_in_Ah",
    ):
        if name not in cycle:
            raise ValueError(f"{where}: missing field {name!r}; has {sorted(cycle)}")
        arr = np.asarray(cycle[name], dtype=float).ravel()
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{where}: field {name!r} holds NaN or inf values")
        arrays[name] = arr
    lengths = {len(a) for a in arrays.values()}
    if len(lengths) != 1:
        raise ValueError(f"{where}: the record fields differ in length: {lengths}")
    c_rate = arrays["current_in_A"] / nominal_capacity_in_Ah
    charging = np.flatnonzero(c_rate >= 0.01)
    discharging = np.flatnonzero(c_rate <= -0.01)
    if not len(charging) or not len(discharging):
        missing = "charge" if not len(charging) else "discharge"
        raise ValueError(f"{where}: no {missing} segment (|C-rate| >= 0.01 never reached)")
    charge_end, discharge_end = int(charging[-1]), int(discharging[-1])
    if discharge_first:
        dis = slice(0, discharge_end + 1)
        chg = slice(discharge_end + 1, charge_end + 1)
    else:
        chg = slice(0, charge_end + 1)
        dis = slice(charge_end + 1, discharge_end + 1)
    if chg.stop - chg.start < 1 or dis.stop - dis.start < 1:
        raise ValueError(
            f"{where}: the {'charge' if chg.stop - chg.start < 1 else 'discharge'} segment is "
            "empty in the expected order (is this a discharge-first dataset?)"
        )
    half = charge_discharge_length // 2
    v = np.concatenate(
        [
            _resample_by_index(arrays["voltage_in_V"][chg], half),
            _resample_by_index(arrays["voltage_in_V"][dis], half),
        ]
    )
    i = np.concatenate(
        [_resample_by_index(c_rate[chg], half), _resample_by_index(c_rate[dis], half)]
    )
    q = np.concatenate(
        [
            _resample_by_index(arrays["charge_capacity_in_Ah"][chg], half),
            _resample_by_index(arrays["discharge_capacity_in_Ah"][dis], half),
        ]
    )
    vmax = np.max(v)
    if vmax <= 0:
        raise ValueError(f"{where}: the maximum voltage is {vmax} (expected > 0)")
    return np.stack([v / vmax, i, q / nominal_capacity_in_Ah])


def featurise_cell(
    cell: CellRecord,
    *,
    early_cycle_threshold: int = 100,
    charge_discharge_length: int = 300,
    discharge_first: bool | None = None,
) -> np.ndarray:
    """``cycle_curve_data [T, 3, S]`` of one cell; cycles the cell lacks stay zeros.

    ``discharge_first=None`` infers it from the cell id's BatteryLife dataset prefix.
    """
    if discharge_first is None:
        discharge_first = any(cell.cell_id.startswith(p) for p in DISCHARGE_FIRST)
    out = np.zeros((early_cycle_threshold, 3, charge_discharge_length), dtype=np.float32)
    for k, cycle in enumerate(cell.cycles[:early_cycle_threshold]):
        out[k] = featurise_cycle(
            cycle,
            cell.nominal_capacity_in_Ah,
            charge_discharge_length=charge_discharge_length,
            discharge_first=discharge_first,
            where=f"cell {cell.cell_id!r}, cycle {k}",
        )
    return out


# -- fleets -----------------------------------------------------------------------------
@dataclass
class Fleet:
    """Cells as BatteryLife tensors: ``curves [N, T, C, S]``, ``life [N]`` (EOL cycles)."""

    curves: np.ndarray
    life: np.ndarray
    cell_ids: list[str]
    n_cycles: np.ndarray  # cycles each cell has within the first T
    anomalous: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    dropped: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.curves.ndim != 4:
            raise ValueError(f"curves must be [N, T, C, S], got shape {self.curves.shape}")
        n = self.curves.shape[0]
        if self.life.shape != (n,) or len(self.cell_ids) != n or self.n_cycles.shape != (n,):
            raise ValueError("curves, life, cell_ids and n_cycles must describe the same cells")
        if not np.all(np.isfinite(self.curves)):
            raise ValueError("curves hold NaN or inf values")
        if self.anomalous.size == 0:
            self.anomalous = np.zeros(n, dtype=bool)

    def __len__(self) -> int:
        return self.curves.shape[0]

    @property
    def T(self) -> int:
        return self.curves.shape[1]

    def subset(self, index: np.ndarray) -> Fleet:
        index = np.asarray(index)
        return Fleet(
            self.curves[index],
            self.life[index],
            [self.cell_ids[i] for i in index],
            self.n_cycles[index],
            self.anomalous[index],
        )


def cells_to_fleet(
    cells: Sequence[CellRecord],
    *,
    labels: Mapping[str, float] | None = None,
    early_cycle_threshold: int = 100,
    charge_discharge_length: int = 300,
) -> Fleet:
    """Featurise cells; drop (and record why) those without an EOL label or with EOL ≤ T."""
    curves, life, ids, n_cycles, dropped = [], [], [], [], {}
    for cell in cells:
        eol = labels.get(cell.cell_id) if labels is not None else cell.eol
        if eol is None or not np.isfinite(eol):
            dropped[cell.cell_id] = "no end-of-life label"
            continue
        if eol <= early_cycle_threshold:
            dropped[cell.cell_id] = f"EOL {eol:g} <= early_cycle_threshold {early_cycle_threshold}"
            continue
        curves.append(
            featurise_cell(
                cell,
                early_cycle_threshold=early_cycle_threshold,
                charge_discharge_length=charge_discharge_length,
            )
        )
        life.append(float(eol))
        ids.append(cell.cell_id)
        n_cycles.append(min(len(cell.cycles), early_cycle_threshold))
    if dropped:
        log.info("dropped %d cells: %s", len(dropped), dropped)
    if not curves:
        raise ValueError(f"no cell left after dropping: {dropped}")
    return Fleet(np.stack(curves), np.asarray(life), ids, np.asarray(n_cycles), dropped=dropped)


def split_cells(n: int, rng: np.random.Generator, fractions=(0.6, 0.2, 0.2)):
    """Train / validation / test indices by cell (never by sample)."""
    if n < 3:
        raise ValueError(f"need at least 3 cells to split, got {n}")
    order = rng.permutation(n)
    n_train = max(1, round(fractions[0] * n))
    n_val = max(1, round(fractions[1] * n))
    return order[:n_train], order[n_train : n_train + n_val], order[n_train + n_val :]


@dataclass(frozen=True)
class LabelScaler:
    """BatteryLife's StandardScaler on the EOL label, fitted on training cells only."""

    mean: float
    scale: float

    @classmethod
    def fit(cls, life: np.ndarray) -> LabelScaler:
        life = np.asarray(life, dtype=float)
        return cls(float(life.mean()), float(life.std()) or 1.0)

    def transform(self, life):
        return (np.asarray(life, dtype=float) - self.mean) / self.scale

    def inverse(self, z):
        return np.asarray(z, dtype=float) * self.scale + self.mean


def window_mask(lengths: np.ndarray, T: int) -> np.ndarray:
    """``curve_attn_mask [B, T]``: 1 on the first ``length`` cycles of each sample."""
    lengths = np.asarray(lengths)
    if np.any(lengths < 1) or np.any(lengths > T):
        raise ValueError(
            f"window lengths must lie in [1, {T}], got {lengths.min()}..{lengths.max()}"
        )
    return (np.arange(T)[None, :] < lengths[:, None]).astype(np.float32)


# -- loaders ----------------------------------------------------------------------------
def _refuse_pickle(path: Path) -> None:
    if path.suffix.lower() in (".pkl", ".pickle"):
        raise ValueError(PICKLE_MESSAGE.format(path=path.name))


def _cycles_from_records(records: Mapping[str, np.ndarray], where: str) -> list[dict]:
    if "cycle_number" not in records:
        raise ValueError(f"{where}: missing the per-record field 'cycle_number'")
    number = np.asarray(records["cycle_number"])
    cycles = []
    for c in np.unique(number):  # sorted cycle numbers
        sel = number == c
        cycles.append({k: np.asarray(records[k])[sel] for k in CELL_FIELDS if k in records})
    return cycles


def load_cell_npz(path: str | Path) -> CellRecord:
    """A cell from ``.npz``: per-record ``cycle_number`` and :data:`CELL_FIELDS`, the scalar
    ``nominal_capacity_in_Ah``, optional ``cell_id`` and ``eol``. Read without pickle."""
    path = Path(path)
    _refuse_pickle(path)
    with np.load(path, allow_pickle=False) as f:
        data = {k: f[k] for k in f.files}
    if "nominal_capacity_in_Ah" not in data:
        raise ValueError(f"{path.name}: missing the scalar 'nominal_capacity_in_Ah'")
    cell_id = str(data["cell_id"]) if "cell_id" in data else path.stem
    eol = float(data["eol"]) if "eol" in data else None
    return CellRecord(
        cell_id,
        float(data["nominal_capacity_in_Ah"]),
        _cycles_from_records(data, path.name),
        eol,
    )


def load_cell_parquet(path: str | Path) -> CellRecord:
    """A cell from Parquet: one row per record, columns ``cycle_number``,
    :data:`CELL_FIELDS` and ``nominal_capacity_in_Ah`` (constant); optional ``cell_id``,
    ``eol``. Needs pandas with a Parquet engine (the ``parquet`` extra)."""
    path = Path(path)
    _refuse_pickle(path)
    import pandas as pd

    frame = pd.read_parquet(path)
    if "nominal_capacity_in_Ah" not in frame:
        raise ValueError(f"{path.name}: missing the column 'nominal_capacity_in_Ah'")
    records = {c: frame[c].to_numpy() for c in frame.columns}
    cell_id = str(frame["cell_id"].iloc[0]) if "cell_id" in frame else path.stem
    eol = float(frame["eol"].iloc[0]) if "eol" in frame else None
    return CellRecord(
        cell_id,
        float(frame["nominal_capacity_in_Ah"].iloc[0]),
        _cycles_from_records(records, path.name),
        eol,
    )


def load_cell(path: str | Path) -> CellRecord:
    """Dispatch on the suffix: ``.npz`` or ``.parquet``; a ``.pkl`` is refused."""
    path = Path(path)
    _refuse_pickle(path)
    if path.suffix == ".npz":
        return load_cell_npz(path)
    if path.suffix in (".parquet", ".pq"):
        return load_cell_parquet(path)
    raise ValueError(f"{path.name}: unsupported cell format; use .npz or .parquet")


def load_life_labels(path: str | Path) -> dict[str, float]:
    """BatteryLife's life-label JSON (``{"<cell>.pkl": eol, ...}``); the suffix is stripped."""
    raw = json.loads(Path(path).read_text())
    return {Path(k).stem if k.endswith(".pkl") else k: float(v) for k, v in raw.items()}


def load_mit_batch(path: str | Path, *, nominal_capacity_in_Ah: float = 1.1) -> list[CellRecord]:
    """Cells of a MIT/Severson batch ``.mat`` (MATLAB v7.3, HDF5) read with h5py.

    ``batch/cycles`` references each cell's ``I`` (A), ``V`` (V), ``Qc``, ``Qd`` (Ah) and
    ``t`` (min) per cycle; ``batch/cycle_life`` its EOL. Time is converted to seconds.
    """
    import h5py

    path = Path(path)
    _refuse_pickle(path)
    cells = []
    with h5py.File(path, "r") as f:
        if "batch" not in f:
            raise ValueError(f"{path.name}: no 'batch' group; not a MIT batch file")
        batch = f["batch"]
        n = batch["cycles"].shape[0]
        for c in range(n):
            group = f[batch["cycles"][c, 0]]
            life = float(np.ravel(f[batch["cycle_life"][c, 0]][()])[0])
            n_cycles = group["I"].shape[0]
            cycles = []
            for k in range(n_cycles):
                rec = {
                    name: np.ravel(f[group[key][k, 0]][()]).astype(float)
                    for key, name in (
                        ("I", "current_in_A"),
                        ("V", "voltage_in_V"),
                        ("Qc", "charge_capacity_in_Ah"),
                        ("Qd", "discharge_capacity_in_Ah"),
                        ("t", "time_in_s"),
                    )
                }
                rec["time_in_s"] = rec["time_in_s"] * 60.0
                cycles.append(rec)
            cells.append(
                CellRecord(
                    f"MIT_{path.stem}_{c}",
                    nominal_capacity_in_Ah,
                    cycles,
                    life if life > 0 else None,
                )
            )
    return cells


# -- simulator (reconstructed) ----------------------------------------------------------
def _base_curves(half: int, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Per-cell static curve shapes (cell-to-cell spread) on the index grid u ∈ [0, 1]."""
    u = np.linspace(0.0, 1.0, half)[None, :]
    a1, a2, b1, b2 = (rng.normal(0.0, s, (n, 1)) for s in (0.04, 0.02, 0.04, 0.02))
    v_charge = 3.45 + 0.7 * u + (0.05 + a1) * np.sin(np.pi * u) + a2 * np.sin(2 * np.pi * u)
    v_dis = 4.1 - 0.5 * u - 0.6 * u**6 + b1 * np.sin(np.pi * u) + b2 * np.sin(2 * np.pi * u)
    rate_c = rng.uniform(0.8, 1.2, (n, 1))
    rate_d = rng.uniform(0.9, 1.1, (n, 1))
    i_charge = np.where(u < 0.8, rate_c, rate_c * np.exp(-(u - 0.8) / 0.07))
    q0 = rng.normal(1.0, 0.03, (n, 1))
    return {
        "u": u,
        "v_charge": v_charge,
        "v_dis": v_dis,
        "i_charge": i_charge,
        "i_dis": -rate_d * np.ones_like(u),
        "q0": q0,
    }


def _curves_at(base: dict, d: np.ndarray, eta: float) -> np.ndarray:
    """Noise-free ``[n, C, S]`` curves at consumed life fraction ``d [n, 1]``."""
    u = base["u"]
    shape = eta * d * np.sin(3 * np.pi * u)  # slow curve-shape drift (the life signal)
    v_c = base["v_charge"] + 0.05 * d + shape
    v_d = base["v_dis"] - 0.05 * d - shape
    q = base["q0"] * (1.0 - 0.2 * d**1.5)
    v = np.concatenate([v_c, v_d], axis=1)
    v = v / v.max(axis=1, keepdims=True)
    i = np.concatenate([base["i_charge"], base["i_dis"]], axis=1)
    cap = np.concatenate([q * u, q * u], axis=1) * np.ones_like(v)
    return np.stack([v, i, cap], axis=1)


def simulate_fleet(
    n_cells: int,
    rng: np.random.Generator,
    *,
    snr: float = 2.0,
    noise: str = "zero_mean",
    anomaly_share: float = 0.3,
    early_cycle_threshold: int = 100,
    charge_discharge_length: int = 60,
    life_range: tuple[float, float] = (250.0, 1500.0),
    prototype_cycles: int = 8,
    eta: float = 0.05,
    anomaly_scale: float = 3.0,
) -> Fleet:
    """A weak-signal fleet as BatteryLife tensors ``[N, T, 3, S]`` (reconstructed, ours).

    Life L is log-uniform in ``life_range``; at cycle t the consumed fraction is d = t / L and
    the curves drift slowly and monotonically (a shape term η·d·sin 3πu on the voltages, an
    ohmic shift, capacity fade 0.2·d^1.5). Static per-cell shape spread exceeds the drift.
    ``snr`` is the RMS of the drift accumulated over T cycles (median-life cell) over the
    per-point noise sd, so the per-cycle increment is about ``snr / T`` noise sds.

    ``noise="zero_mean"``: i.i.d. Gaussian noise across cycles. ``noise="biased"``: the
    same plus spikes (3 % of cycles, +3 sd on a stretch of points) and a slow drift unrelated
    to life (a random smooth pattern growing linearly over the cycles, as large as the life
    drift). In a share ``anomaly_share`` of cells, 1–2 of the first ``prototype_cycles`` are
    anomalous: the shape of a rest artefact (voltage offset on the first third, capacity
    × 0.9) or of a partial cycle (records cut at 60 %, stretched by the index resampling),
    scaled to ``anomaly_scale`` × the RMS of the accumulated life drift.
    """
    if n_cells < 1:
        raise ValueError(f"n_cells must be >= 1, got {n_cells}")
    if snr <= 0:
        raise ValueError(f"snr must be > 0, got {snr}")
    if noise not in ("zero_mean", "biased"):
        raise ValueError(f"noise must be 'zero_mean' or 'biased', got {noise!r}")
    if not 0 <= anomaly_share <= 1:
        raise ValueError(f"anomaly_share must lie in [0, 1], got {anomaly_share}")
    T, S = early_cycle_threshold, charge_discharge_length
    if S % 2 or S < 4:
        raise ValueError(f"charge_discharge_length must be even and >= 4, got {S}")
    half = S // 2
    life = np.exp(rng.uniform(np.log(life_range[0]), np.log(life_range[1]), n_cells))
    base = _base_curves(half, rng, n_cells)
    t = np.arange(1, T + 1, dtype=float)
    d = t[None, :] / life[:, None]  # [n, T]
    clean = np.stack([_curves_at(base, d[:, k : k + 1], eta) for k in range(T)], axis=1)
    # noise sd from the drift of a median-life cell over T cycles
    median = float(np.sqrt(life_range[0] * life_range[1]))
    probe = {k: v[:1] if k != "u" else v for k, v in base.items()}
    drift = _curves_at(probe, np.array([[T / median]]), eta) - _curves_at(
        probe, np.array([[1 / median]]), eta
    )
    sigma = float(np.sqrt(np.mean(drift[:, [0, 2]] ** 2))) / snr
    curves = clean + rng.normal(0.0, sigma, clean.shape)
    if noise == "biased":
        spikes = rng.random((n_cells, T)) < 0.03
        for c, k in zip(*np.nonzero(spikes), strict=True):
            start = rng.integers(0, S - S // 6)
            curves[c, k, [0, 2], start : start + S // 6] += 3 * sigma
        pattern = np.cumsum(rng.normal(0.0, 1.0, (n_cells, 3, S)), axis=-1)
        pattern -= pattern.mean(axis=-1, keepdims=True)
        pattern /= np.sqrt(np.mean(pattern**2, axis=(1, 2), keepdims=True))
        pattern[:, 1] = 0.0
        scale = sigma * snr * rng.normal(0.0, 1.0, (n_cells, 1, 1, 1))
        curves += scale * (t / T)[None, :, None, None] * pattern[:, None]
    anomalous = rng.random(n_cells) < anomaly_share
    K = min(prototype_cycles, T)
    drift_rms = sigma * snr
    for c in np.flatnonzero(anomalous):
        for k in rng.choice(K, size=int(rng.integers(1, 3)), replace=False):
            cyc = curves[c, k].copy()
            if rng.random() < 0.5:  # rest artefact: relaxed voltage early, capacity short
                target = cyc.copy()
                target[0, : S // 3] += 0.03
                target[2] *= 0.9
            else:  # partial cycle: 60 % of the records, resampled by index to S / 2 again
                grid = np.linspace(0, 0.6 * (half - 1), half)
                target = np.concatenate(
                    [
                        np.stack([np.interp(grid, np.arange(half), ch) for ch in cyc[:, seg]])
                        for seg in (slice(0, half), slice(half, S))
                    ],
                    axis=1,
                )
            delta = target - cyc
            delta[1] = 0.0
            rms = float(np.sqrt(np.mean(delta[[0, 2]] ** 2)))
            curves[c, k] = cyc + delta * (anomaly_scale * drift_rms / max(rms, 1e-12))
    return Fleet(
        curves.astype(np.float32),
        life,
        [f"sim_{k}" for k in range(n_cells)],
        np.full(n_cells, T),
        anomalous,
    )
