"""mergekit on ``save_pretrained`` folders, including BERT / MiniLM ``BertModel`` folders.

mergekit 0.1.5 cannot plan a merge of ``BertModel`` folders: its ``MergePlanner.plan_tensor``
(``mergekit/plan.py``) checks an *optional* weight with ``[w_in.name] + (w_in.aliases or
[])``, but ``WeightInfo.aliases`` is a tuple (``Optional[Tuple[str, ...]]``,
``mergekit/architecture/base.py``), so the list + tuple raises ``TypeError: can only
concatenate list (not "tuple") to list``. Among the 0.1.5 architecture definitions only
``bert.json`` (``BertModel``) has an optional weight with aliases —
``embeddings.position_ids``, alias ``bert.embeddings.position_ids`` — so every
``BertModel`` merge fails there, whatever the method.

:func:`mergekit_merge` runs mergekit's own ``run_merge`` (its planner, its merge methods,
its writer) with mergekit's own ``BertModel`` architecture in which that one optional
weight has no aliases. That is exact for ``save_pretrained`` folders: ``position_ids`` is
a non-persistent buffer, so neither it nor its alias is in the files, and the optional
weight is skipped as before. Every other tensor, alias and method is mergekit's. Other
architectures go through mergekit unchanged.

:func:`fusion_bench_tsvm` and :func:`fusion_bench_wudi` call fusion-bench's own TSV-M
(``compute_and_sum_svd_mem_reduction``) and WUDI (``wudi_merging``) on state dicts sharing a
base, on the CPU, their output silenced.

Needs the ``peers`` extra (``pip install "icml26-samerging[peers]"``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import Tensor

__all__ = ["bert_architecture", "fusion_bench_tsvm", "fusion_bench_wudi", "mergekit_merge"]

_BERT = "BertModel"


def bert_architecture():
    """mergekit's ``BertModel`` architecture, its optional weights without aliases."""
    from mergekit.architecture.json_definitions import NAME_TO_ARCH

    (arch,) = NAME_TO_ARCH[_BERT]
    module = arch.modules["default"]
    spec = module.architecture.definition

    def fix(weights):
        return [w.model_copy(update={"aliases": None}) if w.optional else w for w in weights]

    layers = spec.layer_templates
    spec = spec.model_copy(
        update={
            "pre_weights": fix(spec.pre_weights),
            "post_weights": fix(spec.post_weights),
            "layer_templates": layers.model_copy(update={"weights": fix(layers.weights)}),
        }
    )
    architecture = module.architecture.model_copy(update={"definition": spec})
    return arch.model_copy(
        update={"modules": {"default": module.model_copy(update={"architecture": architecture})}}
    )


def _architectures(folder: Path) -> list[str]:
    from icml26.samerging.io import PICKLED

    config = folder / "config.json"
    if not config.is_file():
        raise ValueError(f"{folder} is not a save_pretrained folder (no config.json)")
    pickled = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLED)
    if pickled:  # mergekit would unpickle them; we read safetensors only
        raise ValueError(
            f"{folder} holds pickled checkpoint files ({', '.join(pickled)}); "
            "convert them to safetensors first"
        )
    return list(json.loads(config.read_text()).get("architectures") or [])


def mergekit_merge(
    base: str | Path,
    experts: Sequence[str | Path],
    out: str | Path,
    *,
    method: str = "ties",
    weight: float = 1.0,
    density: float = 0.2,
    dtype: str = "float32",
) -> Path:
    """Merge ``save_pretrained`` folders with mergekit (``method``: ``"ties"``,
    ``"task_arithmetic"``, ``"dare_ties"``, ...; every expert gets ``weight`` and, where the
    method takes one, ``density``). Writes the merged folder to ``out`` and returns it.
    """
    from unittest import mock

    import mergekit.merge
    from mergekit.config import MergeConfiguration
    from mergekit.options import MergeOptions

    if not experts:
        raise ValueError("need at least one expert folder")
    folders = [Path(base), *map(Path, experts)]
    archs = {tuple(_architectures(f)) for f in folders}
    if len(archs) != 1:
        raise ValueError(f"the folders have different architectures: {sorted(archs)}")
    params = {"weight": weight}
    if method in ("ties", "dare_ties", "dare_linear", "breadcrumbs", "breadcrumbs_ties"):
        params["density"] = density
    config = MergeConfiguration.model_validate(
        {
            "merge_method": method,
            "base_model": str(folders[0]),
            "models": [{"model": str(f), "parameters": params} for f in folders[1:]],
            "dtype": dtype,
        }
    )
    options = MergeOptions(copy_tokenizer=False, lazy_unpickle=False, quiet=True)
    out = Path(out)
    if archs == {(_BERT,)}:
        fixed = bert_architecture()
        with mock.patch.object(mergekit.merge, "get_architecture_info", lambda *a, **k: fixed):
            mergekit.merge.run_merge(config, str(out), options=options)
    else:
        mergekit.merge.run_merge(config, str(out), options=options)
    return out


def _task_vectors(base, experts) -> tuple[dict, list[dict]]:
    from icml26.samerging.merge import as_state_dict, check_experts, merge_keys

    base_sd = as_state_dict(base, "base")
    sds = [as_state_dict(e, f"expert {n}") for n, e in enumerate(experts)]
    keys = merge_keys(base_sd)
    check_experts(base_sd, sds, keys)
    return base_sd, [{k: sd[k] - base_sd[k] for k in keys} for sd in sds]


def _silenced(fn, *args, grad: bool = False, **kwargs):
    """``fn`` with its prints and progress bars swallowed."""
    import contextlib
    import io

    from icml26.shared import quiet_dependencies

    sink = io.StringIO()
    with (
        quiet_dependencies(),
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
        torch.set_grad_enabled(grad),
    ):
        return fn(*args, **kwargs)


def fusion_bench_tsvm(base, experts, *, scale: float = 1.0) -> dict[str, Tensor]:
    """fusion-bench's TSV-M (Gargiulo et al. 2025): ``θ_0 + λ · TSVM(τ_1..τ_N)``."""
    from fusion_bench.method.task_singular_vector.utils.TSVM_utils import (
        compute_and_sum_svd_mem_reduction,
    )

    base_sd, taus = _task_vectors(base, experts)
    merged = _silenced(compute_and_sum_svd_mem_reduction, taus, accelerator="cpu")
    out = dict(base_sd)
    for k, v in merged.items():
        out[k] = base_sd[k] + scale * v.to(base_sd[k].dtype)
    return out


def fusion_bench_wudi(base, experts, *, iterations: int = 300) -> dict[str, Tensor]:
    """fusion-bench's WUDI (Cheng et al. 2025; Adam, lr 1e-5, ``iterations`` per 2-D tensor)."""
    from fusion_bench.method.wudi.wudi import wudi_merging

    base_sd, taus = _task_vectors(base, experts)
    merged = _silenced(wudi_merging, taus, grad=True, accelerator="cpu", iter_num=iterations)
    out = dict(base_sd)
    for k, v in merged.items():
        out[k] = base_sd[k] + v.detach().to(base_sd[k].dtype)
    return out
