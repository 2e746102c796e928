"""Digits-8: eight tasks on one input space, a shared base MLP and experts fine-tuned from it.

The CPU suite of the reproduction (reconstructed; the paper's CLIP/GLUE checkpoints are
hub downloads). scikit-learn's bundled 8 × 8 digits give eight tasks on the same 64-d
input: ``digits-10``, ``rotated-90``, ``mirrored``, ``inverted``, ``noisy`` (σ = 0.3),
``parity``, ``ge-5`` and ``mod-3``. The base ``θ_0`` is an MLP backbone 64 → 256 → 256 →
256 → 64 (ReLU after each layer) pretrained on a mixture (original and noisy digits, its
own head, discarded). Each task gets a linear head fitted on the frozen base (the
analogue of CLIP's zero-shot heads) and kept frozen; each expert fine-tunes the whole
backbone (or LoRA factors) from ``θ_0`` through its head. Heads are never merged.

``unit_spread > 1`` reparameterises the base without changing its function: hidden unit
``i`` of each hidden layer is multiplied by ``c_i`` (log-uniform in
``[1/unit_spread, unit_spread]``) and its outgoing weights divided by ``c_i`` (ReLU is
positively homogeneous). Experts then make updates whose size and whose effect on the
output disagree — the regime the connectivity score is built for; ``unit_spread = 1`` is
the equal-scale control. Every training run stops by :class:`icml26.shared.Plateau` on its
training loss.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.samerging.lora import LoraAdapter
from icml26.samerging.saliency import ChainPath
from icml26.shared import Plateau, numpy_rng, torch_generator

__all__ = [
    "TASKS",
    "Head",
    "Task",
    "TrainConfig",
    "accuracy",
    "backbone_features",
    "backbone_path",
    "digits_tasks",
    "finetune_expert",
    "finetune_lora_expert",
    "fit_head",
    "init_backbone",
    "pretrain_base",
    "rescale_units",
]

TASKS = (
    "digits-10",
    "rotated-90",
    "mirrored",
    "inverted",
    "noisy",
    "parity",
    "ge-5",
    "mod-3",
)
SPLITS = ("pretrain", "train", "val", "test")


@dataclass(frozen=True)
class Task:
    """One task: inputs ``x[split]`` (float32, n × 64) and labels ``y[split]``."""

    name: str
    n_classes: int
    x: Mapping[str, Tensor]
    y: Mapping[str, Tensor]


@dataclass(frozen=True)
class TrainConfig:
    """Adam on minibatches, stopped by ``Plateau(window, patience, min_delta, cap)``."""

    lr: float = 1e-3
    batch_size: int = 64
    window: int = 8
    patience: int = 3
    min_delta: float = 0.01
    cap: int = 400


def _transform(name: str, images: np.ndarray, rng: np.random.Generator, noise: float):
    if name == "rotated-90":
        return np.rot90(images, k=1, axes=(1, 2))
    if name == "mirrored":
        return images[:, :, ::-1]
    if name == "inverted":
        return 1.0 - images
    if name == "noisy":
        return images + noise * rng.standard_normal(images.shape)
    return images


def _labels(name: str, digits: np.ndarray) -> tuple[np.ndarray, int]:
    if name == "parity":
        return digits % 2, 2
    if name == "ge-5":
        return (digits >= 5).astype(np.int64), 2
    if name == "mod-3":
        return digits % 3, 3
    return digits, 10


def digits_tasks(
    *, noise: float = 0.3, fractions=(0.35, 0.30, 0.15, 0.20), seed: int = 0
) -> list[Task]:
    """The eight Digits-8 tasks on one fixed split of ``load_digits`` (pretrain/train/val/test)."""
    from sklearn.datasets import load_digits

    if len(fractions) != 4 or not math.isclose(sum(fractions), 1.0) or min(fractions) <= 0:
        raise ValueError(f"fractions must be 4 positive numbers summing to 1, got {fractions}")
    data = load_digits()
    images = data.images.astype(np.float64) / 16.0
    digits = data.target.astype(np.int64)
    order = numpy_rng(seed, "digits-split").permutation(len(digits))
    bounds = np.cumsum([0, *fractions]) * len(digits)
    index = {s: order[int(bounds[i]) : int(bounds[i + 1])] for i, s in enumerate(SPLITS)}
    tasks = []
    for name in TASKS:
        rng = numpy_rng(seed, "digits-noise", name)
        x_all = _transform(name, images, rng, noise).reshape(len(digits), -1)
        y_all, c = _labels(name, digits)
        tasks.append(
            Task(
                name,
                c,
                {s: torch.tensor(x_all[i], dtype=torch.float32) for s, i in index.items()},
                {s: torch.tensor(y_all[i]) for s, i in index.items()},
            )
        )
    return tasks


# -- the backbone, as a state dict ------------------------------------------------------
def _layer_keys(state: Mapping[str, Tensor]) -> list[str]:
    return sorted(
        (k[: -len(".weight")] for k in state if k.endswith(".weight")),
        key=lambda s: int(s.rsplit(".", 1)[1]),
    )


def init_backbone(widths=(64, 256, 256, 256, 64), *, seed: int = 0) -> dict[str, Tensor]:
    """``layers.{i}.weight/bias`` of an MLP backbone (PyTorch's Linear initialisation)."""
    g = torch_generator(seed, "backbone-init")
    state = {}
    for i, (a, b) in enumerate(itertools.pairwise(widths)):
        bound = 1 / math.sqrt(a)
        state[f"layers.{i}.weight"] = (torch.rand(b, a, generator=g) * 2 - 1) * bound
        state[f"layers.{i}.bias"] = (torch.rand(b, generator=g) * 2 - 1) * bound
    return state


def backbone_path(state: Mapping[str, Tensor], *, rescale: bool = True) -> ChainPath:
    """The SynFlow path network of the backbone (a ReLU chain: exact)."""
    return ChainPath(tuple((f"{p}.weight", f"{p}.bias") for p in _layer_keys(state)), rescale)


def backbone_features(state: Mapping[str, Tensor], x: Tensor) -> Tensor:
    for p in _layer_keys(state):
        x = F.relu(F.linear(x, state[f"{p}.weight"], state[f"{p}.bias"]))
    return x


@dataclass(frozen=True)
class Head:
    weight: Tensor
    bias: Tensor

    def __call__(self, features: Tensor) -> Tensor:
        return F.linear(features, self.weight, self.bias)


def _train(params: list[Tensor], loss_fn, n: int, cfg: TrainConfig, generator) -> dict:
    """Adam on seeded minibatches until ``Plateau`` fires on the training loss.

    Data-parallel under a launcher (``torchrun``, ``accelerate launch``) with an
    initialised process group: every rank draws the same seeded permutation and takes its
    own strided shard of each minibatch; gradients and the loss are all-reduced
    (weighted by shard size, so the step equals the one-process step on the whole
    minibatch) and every rank feeds the same loss to its rule, so all stop together and
    hold identical parameters.
    """
    dist = torch.distributed
    grouped = dist.is_available() and dist.is_initialized()
    world, me = (dist.get_world_size(), dist.get_rank()) if grouped else (1, 0)
    opt = torch.optim.Adam(params, lr=cfg.lr)
    rule = Plateau(cfg.window, cfg.patience, cfg.min_delta, cfg.cap)
    while not rule.stopped:
        perm = torch.randperm(n, generator=generator)
        for start in range(0, n, cfg.batch_size):
            idx = perm[start : start + cfg.batch_size]
            opt.zero_grad()
            if world == 1:
                loss = loss_fn(idx)
                loss.backward()
                value = loss.item()
            else:
                value = _data_parallel_step(params, loss_fn, idx[me::world], len(idx))
            opt.step()
            if rule.update(value):
                break
    return rule.summary()


def _data_parallel_step(params: list[Tensor], loss_fn, shard: Tensor, total: int) -> float:
    """Backward on this rank's shard; all-reduce the size-weighted gradients and loss."""
    import torch.distributed as dist

    if len(shard):
        loss = loss_fn(shard) * (len(shard) / total)
        loss.backward()
        value = loss.detach().reshape(1).to(torch.float64)
    else:  # a short last minibatch can leave a rank without examples
        value = torch.zeros(1, dtype=torch.float64)
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    dist.all_reduce(value)
    offset = 0
    for p, g in zip(params, grads, strict=True):
        p.grad = flat[offset : offset + g.numel()].view_as(g).clone()
        offset += g.numel()
    return float(value)


def pretrain_base(
    tasks: list[Task],
    widths=(64, 256, 256, 256, 64),
    cfg: TrainConfig = TrainConfig(lr=1e-3, batch_size=128, window=10, cap=2000),
    *,
    seed: int = 0,
) -> tuple[dict[str, Tensor], dict]:
    """``θ_0``: the backbone trained on the pretraining split of ``digits-10`` and ``noisy``."""
    by_name = {t.name: t for t in tasks}
    x = torch.cat([by_name["digits-10"].x["pretrain"], by_name["noisy"].x["pretrain"]])
    y = torch.cat([by_name["digits-10"].y["pretrain"], by_name["noisy"].y["pretrain"]])
    state = {k: v.requires_grad_(True) for k, v in init_backbone(widths, seed=seed).items()}
    g = torch_generator(seed, "pretrain")
    head_w = (torch.randn(10, widths[-1], generator=g) / math.sqrt(widths[-1])).requires_grad_()
    head_b = torch.zeros(10, requires_grad=True)

    def loss_fn(idx):
        return F.cross_entropy(F.linear(backbone_features(state, x[idx]), head_w, head_b), y[idx])

    summary = _train([*state.values(), head_w, head_b], loss_fn, len(y), cfg, g)
    return {k: v.detach() for k, v in state.items()}, summary


def rescale_units(state: Mapping[str, Tensor], spread: float, *, seed: int = 0):
    """Function-preserving per-unit rescaling of the hidden layers (ReLU homogeneity)."""
    if spread < 1:
        raise ValueError(f"unit_spread must be >= 1, got {spread}")
    out = {k: v.clone() for k, v in state.items()}
    if spread == 1:
        return out
    layers = _layer_keys(state)
    rng = numpy_rng(seed, "unit-scales")
    for p, nxt in itertools.pairwise(layers):
        n = out[f"{p}.weight"].shape[0]
        c = torch.tensor(
            np.exp(rng.uniform(-np.log(spread), np.log(spread), n)), dtype=torch.float32
        )
        out[f"{p}.weight"] *= c[:, None]
        out[f"{p}.bias"] *= c
        out[f"{nxt}.weight"] /= c[None, :]
    return out


def fit_head(
    backbone: Mapping[str, Tensor],
    task: Task,
    cfg: TrainConfig = TrainConfig(lr=1e-2, batch_size=256, window=5, min_delta=1e-3, cap=1500),
    *,
    seed: int = 0,
) -> tuple[Head, dict]:
    """A linear probe on the frozen backbone's features (the task's fixed head)."""
    with torch.no_grad():
        feats = backbone_features(backbone, task.x["train"])
    y = task.y["train"]
    g = torch_generator(seed, "head", task.name)
    w = torch.zeros(task.n_classes, feats.shape[1], requires_grad=True)
    b = torch.zeros(task.n_classes, requires_grad=True)
    summary = _train(
        [w, b], lambda idx: F.cross_entropy(F.linear(feats[idx], w, b), y[idx]), len(y), cfg, g
    )
    return Head(w.detach(), b.detach()), summary


def finetune_expert(
    base: Mapping[str, Tensor], head: Head, task: Task, cfg: TrainConfig, *, seed: int
) -> tuple[dict[str, Tensor], dict]:
    """Fine-tune every backbone tensor from ``θ_0`` through the frozen head."""
    state = {k: v.clone().requires_grad_(True) for k, v in base.items()}
    x, y = task.x["train"], task.y["train"]
    g = torch_generator(seed, "expert", task.name)
    summary = _train(
        list(state.values()),
        lambda idx: F.cross_entropy(head(backbone_features(state, x[idx])), y[idx]),
        len(y),
        cfg,
        g,
    )
    return {k: v.detach() for k, v in state.items()}, summary


def finetune_lora_expert(
    base: Mapping[str, Tensor],
    head: Head,
    task: Task,
    cfg: TrainConfig,
    *,
    rank: int = 8,
    alpha: float = 16.0,
    seed: int,
) -> tuple[LoraAdapter, dict]:
    """LoRA (``ΔW = (α/r) B A`` on every backbone weight; biases frozen) from ``θ_0``."""
    g = torch_generator(seed, "lora", task.name)
    targets = [f"{p}.weight" for p in _layer_keys(base)]
    a = {
        k: (
            torch.randn(rank, base[k].shape[1], generator=g) / math.sqrt(base[k].shape[1])
        ).requires_grad_(True)
        for k in targets
    }
    b = {k: torch.zeros(base[k].shape[0], rank, requires_grad=True) for k in targets}
    s = alpha / rank
    x, y = task.x["train"], task.y["train"]

    def loss_fn(idx):
        state = {k: (v + s * b[k] @ a[k]) if k in a else v for k, v in base.items()}
        return F.cross_entropy(head(backbone_features(state, x[idx])), y[idx])

    summary = _train([*a.values(), *b.values()], loss_fn, len(y), cfg, g)
    return LoraAdapter(
        {k: v.detach() for k, v in a.items()}, {k: v.detach() for k, v in b.items()}, s
    ), summary


@torch.no_grad()
def accuracy(backbone: Mapping[str, Tensor], head: Head, task: Task, split: str = "test") -> float:
    """Top-1 accuracy of ``head ∘ backbone`` on ``split``."""
    logits = head(backbone_features(backbone, task.x[split]))
    return float((logits.argmax(1) == task.y[split]).float().mean())
