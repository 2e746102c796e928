"""Checkpoints: weights in safetensors plus a JSON config (nothing is unpickled).

A checkpoint is a directory with ``model.safetensors`` (every persistent tensor,
the gate temperature included) and ``config.json`` (the :class:`ModelConfig` and a
format tag). :func:`load_checkpoint` rebuilds the model from the JSON and loads the
tensors strictly, so a round trip reproduces scores exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from icml26.prism.model import ModelConfig, PrismLessModel, PrismModel, build_model

FORMAT = "icml26-prism/1"
WEIGHTS, CONFIG = "model.safetensors", "config.json"


def save_checkpoint(model: PrismModel | PrismLessModel, directory: str | Path) -> Path:
    """Write ``model`` to ``directory`` (created if needed); returns the directory."""
    from safetensors.torch import save_file

    if not isinstance(model, PrismModel | PrismLessModel):
        raise TypeError(f"expected a PrismModel or PrismLessModel, got {type(model).__name__}")
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    save_file(state, str(directory / WEIGHTS), metadata={"format": FORMAT})
    meta = {"format": FORMAT, "model": model.config.to_dict()}
    (directory / CONFIG).write_text(json.dumps(meta, indent=2))
    return directory


def load_checkpoint(
    directory: str | Path, *, device: str | torch.device | None = None
) -> PrismModel | PrismLessModel:
    """Rebuild a model saved by :func:`save_checkpoint` (in eval mode, on ``device``)."""
    from safetensors.torch import load_file

    directory = Path(directory)
    cfg_path, w_path = directory / CONFIG, directory / WEIGHTS
    if not cfg_path.is_file() or not w_path.is_file():
        raise FileNotFoundError(f"{directory} lacks {CONFIG} or {WEIGHTS}")
    try:
        meta = json.loads(cfg_path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{cfg_path} is not valid JSON: {err}") from err
    if meta.get("format") != FORMAT:
        raise ValueError(f"{cfg_path}: unknown checkpoint format {meta.get('format')!r}")
    model = build_model(ModelConfig.from_dict(meta["model"]))
    model.load_state_dict(load_file(str(w_path)), strict=True)
    if device is not None:
        model = model.to(device)
    return model.eval()
