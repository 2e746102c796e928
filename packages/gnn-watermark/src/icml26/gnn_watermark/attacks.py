"""Removal attacks on a watermarked model (official ``prune_and_fine_tune_utils.py``,
``knowledge_distillation.py``). Every attack returns a new model; the input is untouched.

- :func:`fine_tune`: Adam on the attacker's own labelled nodes (disjoint from the secret
  subgraphs), lr = lr_scale × the original lr (``--lr_scale 0.1``), 50 epochs. The
  official attack (:data:`OFFICIAL_FINETUNE`) uses 1.5 % of the nodes, drawn from the
  test split, and forwards on their induced subgraph only; :data:`FULL_GRAPH_FINETUNE`
  is a stronger variant (20 % of the nodes, full-graph forwards).
- :func:`prune`: magnitude pruning with ``torch.nn.utils.prune`` of every linear weight
  of the model (each convolution's ``lin`` / ``lin_l`` / ``lin_r`` / attention
  projections and the skip-connection layer): ``l1_unstructured`` (rates 0–1) or
  ``ln_structured`` with n = 1 over output rows (rates 0–0.5). Each weight is pruned
  once; the official loop visits ``conv`` and ``conv.lin`` both and so prunes some
  weights twice.
- :func:`distill`: knowledge distillation into a fresh student (2-layer GCN, hidden
  128): L = α·T²·KL(softmax(z_t/T) ‖ softmax(z_s/T)) + (1 − α)·NLL(student, labels),
  α = 0.8, T = 4, on the training nodes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils import prune as torch_prune
from torch_geometric.data import Data
from torch_geometric.nn.dense.linear import Linear as PygLinear
from torch_geometric.utils import subgraph

from icml26.gnn_watermark.data import check_graph, check_node_ids
from icml26.gnn_watermark.model import ModelConfig, NodeClassifier, build_model, check_model_fits
from icml26.gnn_watermark.watermark import _on
from icml26.shared import numpy_rng
from icml26.shared.progress import progress

#: the student of the official KD attack
STUDENT = ModelConfig(arch="GCN", hidden=128, num_layers=2, dropout=0.1)


@dataclass(frozen=True)
class FineTuneAttack:
    """Who fine-tunes on what: ``floor(fraction × N)`` labelled nodes of the ``pool`` split
    (without the key's nodes), for ``epochs`` Adam steps, on the subgraph induced by those
    nodes (``induced``) or with full-graph forwards.

    :data:`OFFICIAL_FINETUNE` is the attack of the official code
    (``prune_and_fine_tune_en_masse.py`` → ``run_fine_tune``: ``portion_dataset_to_use =
    0.015``, ``data.test_mask`` minus every subgraph node, the induced subgraph of the
    chosen nodes, 50 epochs, lr = ``lr_scale`` × the training lr with ``--lr_scale 0.1``).
    :data:`FULL_GRAPH_FINETUNE` is a stronger attacker of our own: 20 % of the nodes (the
    validation split) and full-graph forwards, so the chosen nodes see their neighbours.
    """

    name: str
    fraction: float = 0.015
    pool: str = "test"
    induced: bool = True
    epochs: int = 50

    def __post_init__(self) -> None:
        if not 0 < self.fraction <= 1:
            raise ValueError(f"fraction must lie in (0, 1], got {self.fraction}")
        if self.pool not in POOLS:
            raise ValueError(f"pool must be one of {POOLS}, got {self.pool!r}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")

    def nodes(self, data: Data, exclude: Tensor | None = None, *, seed: int = 0) -> Tensor:
        """The attacker's labelled nodes (see :func:`attacker_nodes`)."""
        return attacker_nodes(data, self.fraction, exclude=exclude, pool=self.pool, seed=seed)

    def run(
        self,
        model: NodeClassifier,
        data: Data,
        *,
        lr: float,
        exclude: Tensor | None = None,
        seed: int = 0,
    ) -> tuple[NodeClassifier, Tensor]:
        """Draw the attacker's nodes and fine-tune a copy of ``model``; returns it and the nodes."""
        nodes = self.nodes(data, exclude, seed=seed)
        tuned = fine_tune(
            model, data, nodes, lr=lr, epochs=self.epochs, induced=self.induced, seed=seed
        )
        return tuned, nodes


POOLS = ("train", "val", "test", "heldout")
#: the official fine-tuning attack (1.5 % of N from the test split, induced subgraph, 50 epochs)
OFFICIAL_FINETUNE = FineTuneAttack("official")
#: a stronger attacker: 20 % of N from the validation split with full-graph forwards
FULL_GRAPH_FINETUNE = FineTuneAttack("full-graph", fraction=0.2, pool="val", induced=False)
#: lr_scale of ``HOW_TO_RUN.md`` (``--lr_scale 0.1``): fine-tuning lr = 0.1 × training lr
OFFICIAL_LR_SCALE = 0.1
#: the resulting absolute fine-tuning lrs of the official per-dataset presets
OFFICIAL_FINETUNE_LR = {"photo": 2e-5, "computers": 8e-5, "cs": 1e-4, "pubmed": 5e-4}


def attacker_nodes(
    data: Data,
    fraction: float = 0.015,
    *,
    exclude: Tensor | None = None,
    pool: str = "test",
    seed: int = 0,
) -> Tensor:
    """``floor(fraction × N)`` labelled nodes for the attacker, drawn from ``data.<pool>_mask``
    (or ``pool="heldout"``: validation ∪ test) without the ``exclude`` nodes (the key).

    The defaults are the official attack's: 1.5 % of all nodes, from the test split."""
    check_graph(data)
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction}")
    if pool == "heldout":
        mask = data.val_mask | data.test_mask
    elif pool in ("train", "val", "test"):
        mask = getattr(data, f"{pool}_mask", None)
        if mask is None:
            raise ValueError(f"the graph has no {pool}_mask; run prepare_data first")
    else:
        raise ValueError(f"pool must be one of {POOLS}, got {pool!r}")
    mask = mask.clone().cpu()
    if exclude is not None:
        mask[check_node_ids(exclude, data.num_nodes, what="excluded nodes")] = False
    candidates = torch.nonzero(mask, as_tuple=True)[0].numpy()
    k = int(fraction * data.num_nodes)
    if k < 1 or k > len(candidates):
        raise ValueError(
            f"{fraction:.1%} of {data.num_nodes} nodes is {k}; pool '{pool}' has "
            f"{len(candidates)} eligible nodes"
        )
    chosen = numpy_rng(seed, "attacker-nodes").choice(candidates, size=k, replace=False)
    return torch.from_numpy(chosen).long()


def fine_tune(
    model: NodeClassifier,
    data: Data,
    nodes: Tensor,
    *,
    lr: float,
    epochs: int = 50,
    induced: bool = True,
    seed: int = 0,
) -> NodeClassifier:
    """Fine-tune a copy of ``model`` with Adam on the labelled ``nodes`` (NLL, training mode).

    ``induced=True`` (official, ``preserve_edges_between_subsets=False``): every forward
    pass sees only the subgraph induced by ``nodes``. ``induced=False``: full-graph
    forwards, loss on ``nodes``.
    """
    _check_model(model)
    check_graph(data)
    check_model_fits(model, data)
    if lr <= 0 or epochs < 1:
        raise ValueError(f"need lr > 0 and epochs >= 1, got {lr}, {epochs}")
    nodes = check_node_ids(nodes, data.num_nodes, what="fine-tuning nodes")
    if nodes.numel() == 0:
        raise ValueError("fine-tuning needs at least one labelled node")
    attacked = copy.deepcopy(model)
    device = next(attacked.parameters()).device
    if induced:
        sub_ei, _ = subgraph(
            nodes, data.edge_index.cpu(), relabel_nodes=True, num_nodes=data.num_nodes
        )
        x, edge_index = data.x[nodes.to(data.x.device)].to(device), sub_ei.to(device)
        y, target = data.y[nodes.to(data.y.device)].to(device), None
    else:
        d = _on(data, device)
        x, edge_index, y, target = d.x, d.edge_index, d.y, nodes.to(device)
    opt = torch.optim.Adam(attacked.parameters(), lr=lr)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)  # dropout masks
        attacked.train()
        for _ in progress(range(epochs), desc="fine-tune", leave=False):
            opt.zero_grad(set_to_none=True)
            logp = attacked(x, edge_index)
            if target is None:
                F.nll_loss(logp, y).backward()
            else:
                F.nll_loss(logp[target], y[target]).backward()
            opt.step()
    attacked.eval()
    return attacked


def prunable_weights(model: nn.Module) -> list[tuple[nn.Module, str]]:
    """Every (module, "weight") of a linear map in ``model``, each once."""
    return [
        (m, "weight")
        for m in model.modules()
        if isinstance(m, nn.Linear | PygLinear)
        and getattr(m, "weight", None) is not None
        and m.weight.dim() == 2
    ]


def prune(model: NodeClassifier, rate: float, *, structured: bool = False) -> NodeClassifier:
    """A copy of ``model`` with a fraction ``rate`` of each linear weight removed by magnitude.

    Unstructured: the ``rate`` smallest |w| entries of each weight are zeroed
    (``l1_unstructured``). Structured: the ``rate`` output rows of smallest L1 norm are
    zeroed (``ln_structured``, n = 1, dim = 0). The pruning is made permanent.
    """
    _check_model(model)
    if not 0 <= rate <= 1:
        raise ValueError(f"pruning rate must lie in [0, 1], got {rate}")
    attacked = copy.deepcopy(model)
    if rate == 0:
        return attacked
    for module, name in prunable_weights(attacked):
        if structured:
            torch_prune.ln_structured(module, name, amount=rate, n=1, dim=0)
        else:
            torch_prune.l1_unstructured(module, name, amount=rate)
        torch_prune.remove(module, name)
    attacked.eval()
    return attacked


def sparsity(model: nn.Module) -> float:
    """Share of zero entries over the prunable weights."""
    ws = [getattr(m, n) for m, n in prunable_weights(model)]
    return float(sum(int((w == 0).sum()) for w in ws) / sum(w.numel() for w in ws))


def distill(
    teacher: NodeClassifier,
    data: Data,
    *,
    student_config: ModelConfig = STUDENT,
    alpha: float = 0.8,
    temperature: float = 4.0,
    epochs: int = 200,
    lr: float = 5e-3,
    seed: int = 0,
) -> NodeClassifier:
    """Distil ``teacher`` into a freshly initialised student on the training nodes."""
    _check_model(teacher)
    check_graph(data)
    check_model_fits(teacher, data)
    if not 0 <= alpha <= 1 or temperature <= 0:
        raise ValueError(f"need alpha in [0, 1] and temperature > 0, got {alpha}, {temperature}")
    device = next(teacher.parameters()).device
    data = _on(data, device)
    student = build_model(teacher.in_dim, teacher.out_dim, student_config, seed=seed, device=device)
    idx = torch.nonzero(data.train_mask, as_tuple=True)[0]
    teacher.eval()
    with torch.no_grad():
        # the teacher returns log-probabilities; softmax(log p / T) is the tempered target
        target = F.softmax(teacher(data.x, data.edge_index)[idx] / temperature, dim=-1)
    opt = torch.optim.Adam(student.parameters(), lr=lr)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        student.train()
        for _ in progress(range(epochs), desc="distill", leave=False):
            opt.zero_grad(set_to_none=True)
            logp = student(data.x, data.edge_index)[idx]
            soft = F.log_softmax(logp / temperature, dim=-1)
            kd = F.kl_div(soft, target, reduction="batchmean") * temperature**2
            loss = alpha * kd + (1 - alpha) * F.nll_loss(logp, data.y[idx])
            loss.backward()
            opt.step()
    student.eval()
    return student


def _check_model(model: object) -> None:
    if not isinstance(model, NodeClassifier):
        raise TypeError(f"expected a NodeClassifier, got {type(model).__name__}")
