"""Batched trials over all local devices; the implementation lives in
:mod:`icml26.shared.sharding` (shared with gausscbo) and is re-exported here."""

from icml26.shared.sharding import (
    AXIS,
    local_devices,
    map_trials,
    pad_trials,
    padded_count,
    replicate,
    shard_trials,
    trial_mesh,
)

__all__ = [
    "AXIS",
    "local_devices",
    "map_trials",
    "pad_trials",
    "padded_count",
    "replicate",
    "shard_trials",
    "trial_mesh",
]
