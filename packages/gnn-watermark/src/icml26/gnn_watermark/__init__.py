"""icml26.gnn_watermark — "Watermarking Graph Neural Networks via Explanations for
Ownership Protection" (Downer, Shi, Liu, Wang, Wang; ICML 2026; arXiv 2501.05614).

A GNN node classifier is watermarked by training the signs of closed-form,
GraphLIME-style ridge explanations on T secret training subgraphs to follow a secret
±1 pattern; ownership is verified black-box, from output probabilities only, by
counting features whose explanation signs agree on all T subgraphs and testing that
count against null distributions.

    from icml26.gnn_watermark import sbm_bow, generate_key, train_watermarked, verify_ownership
    data = sbm_bow(seed=0)
    key = generate_key(data, num_subgraphs=5, subgraph_size=20, watermark_size=30)
    model = train_watermarked(data, key).model
    print(verify_ownership(model, data, key).z_subgraph)
"""

from icml26.gnn_watermark import _pyg  # noqa: F401  (first: a quiet torch_geometric import)
from icml26.gnn_watermark.attacks import (
    FULL_GRAPH_FINETUNE,
    OFFICIAL_FINETUNE,
    OFFICIAL_FINETUNE_LR,
    OFFICIAL_LR_SCALE,
    FineTuneAttack,
    attacker_nodes,
    distill,
    fine_tune,
    prunable_weights,
    prune,
    sparsity,
)
from icml26.gnn_watermark.augment import Augmentation, augment_training_graph
from icml26.gnn_watermark.baselines import (
    TriggerGraph,
    TriggerVerification,
    random_trigger_graph,
    train_backdoor_watermarked,
    trigger_verification,
)
from icml26.gnn_watermark.data import (
    GRAPH_SIZES,
    check_graph,
    check_node_ids,
    load_edge_list,
    load_graph,
    prepare_data,
    pyg_generator,
    save_graph,
    sbm_bow,
    sized_sbm_bow,
)
from icml26.gnn_watermark.explain import (
    center_and_normalize,
    feature_kernels,
    informative_features,
    output_kernel,
    ridge_explanation,
)
from icml26.gnn_watermark.key import KeyMismatchError, WatermarkKey, generate_key
from icml26.gnn_watermark.model import (
    ModelConfig,
    NodeClassifier,
    build_model,
    check_model_fits,
    load_model,
    save_model,
)
from icml26.gnn_watermark.pcgrad import pcgrad_backward
from icml26.gnn_watermark.subgraph import (
    SubgraphBatch,
    explain_subgraphs,
    explain_subgraphs_eval,
    induced_subgraphs,
)
from icml26.gnn_watermark.verify import (
    DenseFeaturesWarning,
    NullDistribution,
    Verification,
    analytic_null,
    clean_model_null,
    count_matches,
    leave_one_out_p,
    match_count,
    random_subgraph_null,
    recommended_watermark_size,
    verify_ownership,
)
from icml26.gnn_watermark.watermark import (
    DATASET_SETTINGS,
    TrainConfig,
    TrainedModel,
    accuracy,
    fit,
    train_clean,
    train_watermarked,
    watermark_alignment,
    watermark_loss,
)

__all__ = [
    "DATASET_SETTINGS",
    "FULL_GRAPH_FINETUNE",
    "GRAPH_SIZES",
    "OFFICIAL_FINETUNE",
    "OFFICIAL_FINETUNE_LR",
    "OFFICIAL_LR_SCALE",
    "Augmentation",
    "DenseFeaturesWarning",
    "FineTuneAttack",
    "KeyMismatchError",
    "ModelConfig",
    "NodeClassifier",
    "NullDistribution",
    "SubgraphBatch",
    "TrainConfig",
    "TrainedModel",
    "TriggerGraph",
    "TriggerVerification",
    "Verification",
    "WatermarkKey",
    "accuracy",
    "analytic_null",
    "attacker_nodes",
    "augment_training_graph",
    "build_model",
    "center_and_normalize",
    "check_graph",
    "check_model_fits",
    "check_node_ids",
    "clean_model_null",
    "count_matches",
    "distill",
    "explain_subgraphs",
    "explain_subgraphs_eval",
    "feature_kernels",
    "fine_tune",
    "fit",
    "generate_key",
    "induced_subgraphs",
    "informative_features",
    "leave_one_out_p",
    "load_edge_list",
    "load_graph",
    "load_model",
    "match_count",
    "output_kernel",
    "pcgrad_backward",
    "prepare_data",
    "prunable_weights",
    "prune",
    "pyg_generator",
    "random_subgraph_null",
    "random_trigger_graph",
    "recommended_watermark_size",
    "ridge_explanation",
    "save_graph",
    "save_model",
    "sbm_bow",
    "sized_sbm_bow",
    "sparsity",
    "train_backdoor_watermarked",
    "train_clean",
    "train_watermarked",
    "trigger_verification",
    "verify_ownership",
    "watermark_alignment",
    "watermark_loss",
]

__version__ = "0.2.0"
