"""icml26.diting — DITING: a weak degradation listener for battery lifetime early prediction
(ICML 2026; full title and arXiv id not found), reconstructed from the authors' pseudocode.

Battery cells as BatteryLife tensors ``[B, T, C, S]`` plus a window mask → cycle life:
embed each cycle (:class:`CycleEmbedding`), subtract a Sinkhorn-OT Wasserstein-medoid health
prototype of the first K cycles (:class:`HealthPrototype`), drive the residual through three
coupled damped oscillators with anti-phase side drives (:class:`TriCoupledOscillators`) and
regress life from the discrepancy energy (:class:`Diting`). Baselines follow the BatteryLife
protocol (Dummy, MLP, CPMLP, CPTransformer) plus Severson's elastic nets; :mod:`.data` holds
the BatteryLife featuriser, loaders (``.npz``, Parquet, MIT ``.mat``) and a simulator.
"""

from icml26.diting.baselines import (
    CPMLP,
    MLP,
    CPTransformer,
    DriftSlope,
    SeversonModel,
    dummy_predict,
    savgol_denoise,
    severson_features,
)
from icml26.diting.data import (
    CellRecord,
    Fleet,
    LabelScaler,
    cells_to_fleet,
    featurise_cell,
    featurise_cycle,
    load_cell,
    load_cell_npz,
    load_cell_parquet,
    load_life_labels,
    load_mit_batch,
    simulate_fleet,
    split_cells,
    window_mask,
)
from icml26.diting.embedding import CycleEmbedding
from icml26.diting.evaluation import accuracy_within, mape, rmse, score
from icml26.diting.manifestation import TriCoupledOscillators, odd_response
from icml26.diting.model import Diting, DitingConfig, check_inputs, load_model, save_model
from icml26.diting.prototype import HealthPrototype, ground_cost, sinkhorn_log, spectral_measures
from icml26.diting.training import TrainConfig, TrainResult, dense_weights, predict, train_regressor

__all__ = [
    "CPMLP",
    "MLP",
    "CPTransformer",
    "CellRecord",
    "CycleEmbedding",
    "Diting",
    "DitingConfig",
    "DriftSlope",
    "Fleet",
    "HealthPrototype",
    "LabelScaler",
    "SeversonModel",
    "TrainConfig",
    "TrainResult",
    "TriCoupledOscillators",
    "accuracy_within",
    "cells_to_fleet",
    "check_inputs",
    "dense_weights",
    "dummy_predict",
    "featurise_cell",
    "featurise_cycle",
    "ground_cost",
    "load_cell",
    "load_cell_npz",
    "load_cell_parquet",
    "load_life_labels",
    "load_mit_batch",
    "load_model",
    "mape",
    "odd_response",
    "predict",
    "rmse",
    "save_model",
    "savgol_denoise",
    "score",
    "severson_features",
    "simulate_fleet",
    "sinkhorn_log",
    "spectral_measures",
    "split_cells",
    "train_regressor",
    "window_mask",
]

__version__ = "0.1.0"
