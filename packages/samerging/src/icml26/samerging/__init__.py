"""icml26.samerging — SA-Merging, *Saliency-Aware Model Merging* (Park, Lee, Sohn; ICML 2026,
arXiv:2606.00511).

Data-free merging of experts that share a base model: task-vector entries (or whole LoRA
ranks) are pruned iteratively by a SynFlow connectivity saliency modulated by cross-expert
agreement, then summed onto the base.

- :func:`sa_merge` — SA-Merging of full fine-tunes (state dicts or modules);
- :func:`rank_saliency_merge` — rank-wise SA-Merging of LoRA adapters;
- :mod:`saliency` — the path networks (:class:`ChainPath`, :class:`BertPath`) and scores;
- :mod:`baselines` — weight averaging, task arithmetic, TIES, DARE, Consensus-TA, PCB, WUDI;
- :mod:`suites` — the Digits-8 CPU suite; :mod:`io` — safetensors / PEFT folders.
"""

from icml26.samerging.baselines import (
    consensus_ta,
    dare,
    pcb_merging,
    task_arithmetic,
    ties_merging,
    weight_average,
    wudi,
)
from icml26.samerging.lora import (
    LoraAdapter,
    LoraMergeResult,
    elementwise_lora_merge,
    lora_task_arithmetic,
    rank_saliency_merge,
)
from icml26.samerging.merge import MergeResult, sa_merge, task_vectors, topk_mask
from icml26.samerging.saliency import (
    BertPath,
    ChainPath,
    chain_path_from_module,
    chain_path_from_state_dict,
    connectivity_gradient,
    path_mass,
    path_score,
    structural_magnitude_spearman,
)

__all__ = [
    "BertPath",
    "ChainPath",
    "LoraAdapter",
    "LoraMergeResult",
    "MergeResult",
    "chain_path_from_module",
    "chain_path_from_state_dict",
    "connectivity_gradient",
    "consensus_ta",
    "dare",
    "elementwise_lora_merge",
    "lora_task_arithmetic",
    "path_mass",
    "path_score",
    "pcb_merging",
    "rank_saliency_merge",
    "sa_merge",
    "structural_magnitude_spearman",
    "task_arithmetic",
    "task_vectors",
    "ties_merging",
    "topk_mask",
    "weight_average",
    "wudi",
]

__version__ = "0.4.1"
