"""Checkpoints as safetensors plus a JSON of the network's shape (nothing unpickles)."""

from __future__ import annotations

import json
from pathlib import Path

from icml26.cure.cure import NetConfig
from icml26.cure.prototypes import GCDNet
from icml26.shared import is_main_process

__all__ = ["load_checkpoint", "save_checkpoint"]


def save_checkpoint(
    model: GCDNet, net: NetConfig, in_dim: int, directory: str | Path
) -> Path | None:
    """Write ``model.safetensors`` and ``config.json``; only the main process writes."""
    from safetensors.torch import save_file

    if not is_main_process():
        return None
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, out / "model.safetensors")
    meta = {"in_dim": in_dim, "n_prototypes": model.n_prototypes, **net.__dict__}
    (out / "config.json").write_text(json.dumps(meta, indent=1))
    return out


def load_checkpoint(directory: str | Path) -> GCDNet:
    from safetensors.torch import load_file

    d = Path(directory)
    meta = json.loads((d / "config.json").read_text())
    net = NetConfig(**{k: meta[k] for k in ("hidden", "dim", "proj_hidden", "proj_dim")})
    model = net.build(int(meta["in_dim"]), int(meta["n_prototypes"]))
    model.load_state_dict(load_file(d / "model.safetensors"))
    return model
