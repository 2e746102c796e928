"""Checkpoints in the formats users bring, safetensors only (nothing unpickles).

* :func:`load_state_dict` — a ``.safetensors`` file, or a Hugging Face ``save_pretrained``
  folder (``model.safetensors`` or shards listed in ``model.safetensors.index.json``);
* :func:`load_peft_adapter` / :func:`save_peft_adapter` — a PEFT LoRA adapter folder
  (``adapter_config.json`` + ``adapter_model.safetensors``, keys
  ``base_model.model.<module>.lora_A.weight`` / ``lora_B.weight``), as
  :class:`~icml26.samerging.LoraAdapter` keyed by ``"<module>.weight"``.

A pickled checkpoint (``.bin``, ``.pt``, ``.pth``, ``.ckpt``, ``.pkl``) raises
``ValueError``: convert it with safetensors where you trust it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from safetensors.torch import load_file, save_file
from torch import Tensor

from icml26.samerging.lora import LoraAdapter

__all__ = ["load_peft_adapter", "load_state_dict", "save_peft_adapter", "save_state_dict"]

PICKLED = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
PEFT_PREFIX = "base_model.model."


def _refuse_pickle(path: Path) -> None:
    if path.suffix in PICKLED:
        raise ValueError(
            f"{path.name} is a pickled checkpoint; icml26-samerging reads safetensors only "
            "(pickle can run code). Convert it with safetensors.torch.save_file where you "
            "trust its source."
        )


def load_state_dict(path: str | Path) -> dict[str, Tensor]:
    """A state dict from a ``.safetensors`` file or a ``save_pretrained`` folder."""
    path = Path(path)
    if path.is_file():
        _refuse_pickle(path)
        if path.suffix != ".safetensors":
            raise ValueError(f"expected a .safetensors file, got {path.name}")
        return load_file(path)
    if not path.is_dir():
        raise FileNotFoundError(f"no checkpoint at {path}")
    single = path / "model.safetensors"
    if single.is_file():
        return load_file(single)
    index = path / "model.safetensors.index.json"
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        out: dict[str, Tensor] = {}
        for shard in shards:
            out.update(load_file(path / shard))
        return out
    pickled = [p.name for p in path.iterdir() if p.suffix in PICKLED]
    if pickled:
        _refuse_pickle(path / pickled[0])
    raise FileNotFoundError(f"{path} holds neither model.safetensors nor a safetensors index")


def save_state_dict(state: dict[str, Tensor], folder: str | Path) -> Path:
    """Write ``model.safetensors`` into ``folder`` (the ``save_pretrained`` layout)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "model.safetensors"
    save_file({k: v.contiguous() for k, v in state.items()}, target)
    return target


def load_peft_adapter(folder: str | Path) -> LoraAdapter:
    """A PEFT LoRA adapter folder as a :class:`LoraAdapter` (scaling ``α/r``, or ``α/√r``
    with ``use_rslora``)."""
    folder = Path(folder)
    config_path = folder / "adapter_config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{folder} has no adapter_config.json")
    weights = folder / "adapter_model.safetensors"
    if not weights.is_file():
        pickled = folder / "adapter_model.bin"
        if pickled.is_file():
            _refuse_pickle(pickled)
        raise FileNotFoundError(f"{folder} has no adapter_model.safetensors")
    config = json.loads(config_path.read_text())
    if config.get("peft_type", "LORA") != "LORA":
        raise ValueError(f"only LoRA adapters are supported, got peft_type {config['peft_type']!r}")
    r, alpha = int(config["r"]), float(config.get("lora_alpha", config["r"]))
    scaling = alpha / (math.sqrt(r) if config.get("use_rslora") else r)
    a, b = {}, {}
    for key, value in load_file(weights).items():
        name = key.removeprefix(PEFT_PREFIX)
        for part, store in ((".lora_A.weight", a), (".lora_B.weight", b)):
            if name.endswith(part):
                store[name[: -len(part)] + ".weight"] = value
                break
        else:
            raise ValueError(f"unexpected tensor {key!r} in a LoRA adapter")
    # per-module rank / alpha patterns: fold each module's own scaling into its B
    ranks, alphas = config.get("rank_pattern") or {}, config.get("alpha_pattern") or {}
    for k in b:
        module = k.removesuffix(".weight")
        r_k, a_k = int(ranks.get(module, r)), float(alphas.get(module, alpha))
        s_k = a_k / (math.sqrt(r_k) if config.get("use_rslora") else r_k)
        if s_k != scaling:
            b[k] = b[k] * (s_k / scaling)
    return LoraAdapter(a, b, scaling)


def save_peft_adapter(
    adapter: LoraAdapter, folder: str | Path, *, alpha: float | None = None, base_model: str = ""
) -> Path:
    """Write ``adapter`` (ranks masked out removed) as a PEFT LoRA folder."""
    ad = adapter.pruned()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    ranks = {k: ad.A[k].shape[0] for k in ad.targets}
    r = max(ranks.values())
    modules = sorted({k.removesuffix(".weight") for k in ad.targets})
    config = {
        "peft_type": "LORA",
        "r": r,
        "lora_alpha": alpha if alpha is not None else adapter.scaling * r,
        "target_modules": modules,
        "rank_pattern": {k.removesuffix(".weight"): v for k, v in ranks.items() if v != r},
        # per-module α so that α_k / r_k stays the adapter's one scaling
        "alpha_pattern": {
            k.removesuffix(".weight"): adapter.scaling * v for k, v in ranks.items() if v != r
        },
        "base_model_name_or_path": base_model,
        "bias": "none",
        "task_type": None,
    }
    (folder / "adapter_config.json").write_text(json.dumps(config, indent=2))
    tensors = {}
    for k in ad.targets:
        m = PEFT_PREFIX + k.removesuffix(".weight")
        tensors[m + ".lora_A.weight"] = ad.A[k].contiguous()
        tensors[m + ".lora_B.weight"] = ad.B[k].contiguous()
    save_file(tensors, folder / "adapter_model.safetensors")
    return folder
