"""Training one method on one leave-one-domain-out split, as the official scripts do.

Per epoch: one pass of the balanced domain sampler over the source-train part, then
accuracy on the held-out source validation part and on the target domain. Reported:
the last epoch (primary), the epoch chosen by source-validation accuracy (ties to the
later epoch, as the official ``BestAcc`` bookkeeping), and the official *oracle* (best
target accuracy over epochs, ``BestTestAcc``) beside them — the oracle reads the target
labels and is never a primary number.

Training stops by :class:`icml26.shared.Plateau` on the epoch-mean training loss, with
the epoch budget as its cap: one rule for every split, never a count per target.

Under ``torchrun`` / ``accelerate launch`` (an initialised process group) every rank
draws the same balanced batch order, trains on its own shard (``batch[rank::world]``),
and gradients are averaged across ranks, so the parameters stay identical; MER's batch
statistics are then per rank-shard.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F

from icml26.merdg.data import LODOSplit, MultimodalData
from icml26.merdg.dg import DG_METHODS, mixstyle, rsc_mask
from icml26.merdg.mbcd import (
    MBCDConfig,
    distillation_loss,
    ema_update,
    gradient_consistency_loss,
    modality_dropout_mask,
    modality_dropout_probs,
)
from icml26.merdg.mer import MERConfig, mer_penalty
from icml26.merdg.models import (
    ModelConfig,
    MultimodalNet,
    distance_loss,
    supcon_loss,
    translation_loss,
)
from icml26.merdg.sampler import BalancedDomainSampler
from icml26.shared import Plateau

__all__ = [
    "LARS",
    "METHODS",
    "Method",
    "TrainConfig",
    "TrainResult",
    "evaluate",
    "train_method",
]


@dataclass(frozen=True)
class Method:
    """A training recipe: architecture, whether MER is on, and an optional MER override."""

    name: str
    arch: str  # "fusion", "simmmdg", "unimodal" or "mbcd"
    mer: bool = False
    mer_config: MERConfig | None = None  # None: TrainConfig.mer
    dg: str | None = None  # a unimodal DG baseline inside fusion: "mixstyle" or "rsc"

    def __post_init__(self) -> None:
        if self.dg is not None and (self.dg not in DG_METHODS or self.arch != "fusion"):
            raise ValueError(f"dg must be one of {DG_METHODS} on the fusion architecture")


METHODS: dict[str, Method] = {
    "fusion": Method("fusion", "fusion"),
    "fusion+mer": Method("fusion+mer", "fusion", mer=True),
    "simmmdg": Method("simmmdg", "simmmdg"),
    "simmmdg+mer": Method("simmmdg+mer", "simmmdg", mer=True),
    "unimodal": Method("unimodal", "unimodal"),
    # ablations of the paper preset: one term of L_MER at a time
    "fusion+var": Method("fusion+var", "fusion", mer=True, mer_config=MERConfig(alpha_spec=0.0)),
    "fusion+logdet": Method(
        "fusion+logdet", "fusion", mer=True, mer_config=MERConfig(alpha_marg=0.0)
    ),
    # unimodal DG baselines of SimMMDG's tables (icml26.merdg.dg)
    "fusion+mixstyle": Method("fusion+mixstyle", "fusion", dg="mixstyle"),
    "fusion+rsc": Method("fusion+rsc", "fusion", dg="rsc"),
    # a newer MMDG peer, reconstructed from its abstract (icml26.merdg.mbcd)
    "mbcd": Method("mbcd", "mbcd"),
}


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation and loss weights (defaults: the smoke preset)."""

    epochs: int = 40  # the cap of the plateau rule
    batch_size: int = 66
    lr: float = 1e-3
    optimizer: str = "adam"  # "adam" (official --optimizer adam: wd 1e-4) or "lars"
    weight_decay: float = 1e-4
    momentum: float = 0.9  # LARS
    trust: float = 1e-3  # LARS η
    plateau_patience: int = 5
    plateau_min_delta: float = 0.01
    mer: MERConfig = field(default_factory=MERConfig)
    alpha_ce: float = 1.0
    alpha_contrast: float = 3.0
    temperature: float = 0.1
    alpha_distance: float = 0.7  # SimMMDG --explore_loss_coeff
    alpha_trans: float = 0.1
    distance_normalized: bool = True  # False: the official unbounded −MSE (diverges here)
    mbcd: MBCDConfig = field(default_factory=MBCDConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    drop_last: bool = True

    def __post_init__(self) -> None:
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.optimizer not in ("adam", "lars", "sgd"):
            raise ValueError(f"optimizer must be 'adam', 'lars' or 'sgd', got {self.optimizer!r}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")


@dataclass
class TrainResult:
    method: str
    model: MultimodalNet
    train_loss: list[float]
    val_acc: list[float]
    test_acc: list[float]
    stopping: dict
    samples_seen: list[int] = field(default_factory=list)  # this rank's first epoch

    @property
    def epochs(self) -> int:
        return len(self.train_loss)

    @property
    def last_test_acc(self) -> float:
        return self.test_acc[-1]

    @property
    def last_val_acc(self) -> float:
        return self.val_acc[-1]

    @property
    def selected_epoch(self) -> int:
        """Best source-validation epoch (ties go to the later epoch)."""
        if not all(math.isfinite(v) for v in self.val_acc):
            return len(self.val_acc) - 1  # no source validation part: the last epoch
        best = max(self.val_acc)
        return max(i for i, v in enumerate(self.val_acc) if v == best)

    @property
    def selected_test_acc(self) -> float:
        return self.test_acc[self.selected_epoch]

    @property
    def oracle_test_acc(self) -> float:
        return max(self.test_acc)


class LARS(torch.optim.Optimizer):
    """Layer-wise adaptive rate scaling (You et al. 2017) with momentum.

    For weights (ndim > 1): ``g ← g + wd p``, ``g ← η ‖p‖ / ‖g‖ · g``; biases and norm
    parameters get neither weight decay nor adaptation (``exclude_bias_n_norm``).
    """

    def __init__(
        self,
        params,
        lr: float,
        weight_decay: float = 1e-6,
        momentum: float = 0.9,
        eta: float = 1e-3,
    ):
        super().__init__(
            params, {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "eta": eta}
        )

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if p.ndim > 1:
                    g = g.add(p, alpha=group["weight_decay"])
                    pn, gn = torch.linalg.vector_norm(p), torch.linalg.vector_norm(g)
                    q = torch.where(
                        (pn > 0) & (gn > 0), group["eta"] * pn / gn, torch.ones_like(pn)
                    )
                    g = g * q
                buf = self.state[p].get("mu")
                if buf is None:
                    buf = self.state[p]["mu"] = torch.zeros_like(p)
                buf.mul_(group["momentum"]).add_(g)
                p.add_(buf, alpha=-group["lr"])


def _optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, momentum=cfg.momentum
        )
    return LARS(
        model.parameters(),
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        momentum=cfg.momentum,
        eta=cfg.trust,
    )


def _tensors(data: MultimodalData, device: torch.device) -> tuple[list[torch.Tensor], torch.Tensor]:
    xs = [torch.as_tensor(x, device=device) for x in data.features]
    return xs, torch.as_tensor(data.labels, device=device)


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Batch-mean cross-entropy; stacked (K × N × C) logits give one value per model."""
    if logits.ndim == 2:
        return F.cross_entropy(logits, y)
    flat = F.cross_entropy(logits.flatten(0, -2), y.flatten(), reduction="none")
    return flat.view(y.shape).mean(-1)


def apply_each(modules, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """``[m(x) for m, x in zip(modules, inputs)]``; stacked module lists run every slot in
    one batched call (``icml26.merdg.batched``)."""
    if hasattr(modules, "apply_each"):
        return modules.apply_each(inputs)
    return [m(x) for m, x in zip(modules, inputs, strict=True)]


def _embed_mixstyle(model: MultimodalNet, xs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Encoder embeddings with MixStyle after each encoder's first hidden layer."""
    model._check(xs)
    out = []
    for enc, x in zip(model.encoders, xs, strict=True):
        h = enc[1](enc[0](x))
        h = mixstyle(h)
        for layer in list(enc)[2:]:
            h = layer(h)
        out.append(h)
    return out


def objective(
    model,
    xs: Sequence[torch.Tensor],
    y: torch.Tensor,
    cfg: TrainConfig,
    mer_fn=None,
    dg: str | None = None,
):
    """The official composition of the loss of ``model.arch``; ``mer_fn(features)`` is the
    MER penalty of a list of per-modality features (None: no MER); ``dg`` a unimodal DG
    baseline of :mod:`icml26.merdg.dg` inside the fusion model (training only).

    ``model`` is a :class:`MultimodalNet` (2-D batches, a scalar loss) or a stack of K
    independent copies (``icml26.merdg.batched``: K × N × d batches, one loss per copy).
    """
    emb = _embed_mixstyle(model, xs) if dg == "mixstyle" and model.training else model.embed(xs)
    if model.arch == "unimodal":
        return sum(cross_entropy(h, y) for h in apply_each(model.heads, emb))
    if dg == "rsc" and model.training:
        fused = torch.cat(list(emb), dim=-1)
        logits = model.fusion(fused * rsc_mask(model.fusion, fused, y))
    else:
        logits = model.logits_from(emb)
    loss = cfg.alpha_ce * cross_entropy(logits, y)
    if model.arch == "fusion":
        if mer_fn is not None:  # MER on the un-normalised projections z_m = proj_m(e_m)
            z = apply_each(model.proj, emb)
            loss = loss + mer_fn(z)
        return loss
    half = model.config.embed_dim // 2
    shared = apply_each(model.proj_shared, [e[..., :half] for e in emb])
    loss = loss + cfg.alpha_trans * translation_loss(model, emb)
    loss = loss + cfg.alpha_contrast * supcon_loss(torch.stack(shared, dim=-2), y, cfg.temperature)
    loss = loss + cfg.alpha_distance * distance_loss(emb, normalized=cfg.distance_normalized)
    if mer_fn is not None:  # MER on the L2-normalised shared AND specific projections
        specific = apply_each(model.proj_specific, [e[..., half:] for e in emb])
        loss = loss + mer_fn(shared + specific)
    return loss


def mbcd_objective(
    model: MultimodalNet,
    teacher: MultimodalNet,
    xs: Sequence[torch.Tensor],
    y: torch.Tensor,
    cfg: TrainConfig,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """MBCD's student objective (:mod:`icml26.merdg.mbcd`, reconstructed): fused CE under
    adaptive modality dropout, the uni-modal CEs, gradient consistency and the
    distillation of the weight-averaged teacher's fused prediction into each branch."""
    c = cfg.mbcd
    emb = model.embed(xs)
    uni = [h(e) for h, e in zip(model.heads, emb, strict=True)]
    uni_losses = [F.cross_entropy(u, y) for u in uni]
    keep = modality_dropout_mask(
        modality_dropout_probs(uni, y, c.p_max), len(y), generator=generator
    )
    fused_in = torch.cat([e * keep[:, m : m + 1] for m, e in enumerate(emb)], dim=1)
    fused_loss = F.cross_entropy(model.fusion(fused_in), y)
    loss = cfg.alpha_ce * fused_loss + torch.stack(uni_losses).mean()
    if c.lambda_gc and torch.is_grad_enabled():
        loss = loss + c.lambda_gc * gradient_consistency_loss(emb, uni_losses, fused_loss)
    if c.lambda_kd:
        with torch.no_grad():
            teacher_logits = teacher(xs)
        loss = loss + c.lambda_kd * distillation_loss(teacher_logits, uni, c.temperature)
    return loss


def method_loss(
    model: MultimodalNet,
    method: Method,
    xs: Sequence[torch.Tensor],
    y: torch.Tensor,
    cfg: TrainConfig,
) -> torch.Tensor:
    """The training objective of ``method`` on one batch (the official composition)."""
    mer_cfg = method.mer_config or cfg.mer
    mer_fn = (lambda z: mer_penalty(z, mer_cfg)) if method.mer else None
    return objective(model, xs, y, cfg, mer_fn, method.dg)


@torch.no_grad()
def evaluate(
    model: MultimodalNet, data: MultimodalData, device: torch.device | str | None = None
) -> float:
    """Top-1 accuracy of ``model`` on ``data`` (eval mode)."""
    if len(data) == 0:
        return float("nan")
    device = torch.device(device) if device is not None else next(model.parameters()).device
    was = model.training
    model.eval()
    xs, y = _tensors(data, device)
    acc = float((model(xs).argmax(1) == y).float().mean())
    model.train(was)
    return acc


def _dist() -> tuple[int, int]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


def train_method(
    method: str | Method,
    split: LODOSplit,
    config: TrainConfig | None = None,
    *,
    seed: int = 0,
    device: str | torch.device | None = None,
    progress_callback=None,
) -> TrainResult:
    """Train ``method`` on ``split.train`` and track source-val / target accuracy per epoch."""
    cfg = config or TrainConfig()
    if isinstance(method, str):
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose from {sorted(METHODS)}")
        method = METHODS[method]
    if split.target in split.sources:
        raise ValueError(f"the target domain {split.target} is among the sources {split.sources}")
    train = split.train
    if (
        split.test.n_modalities != train.n_modalities
        or split.val.n_modalities != train.n_modalities
    ):
        raise ValueError("train, val and test must have the same modalities")
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    rank, world = _dist()
    if cfg.batch_size % world:
        raise ValueError(f"batch size {cfg.batch_size} is not divisible by {world} processes")
    sampler = BalancedDomainSampler(
        train.domains, cfg.batch_size, drop_last=cfg.drop_last, seed=seed
    )
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        model = MultimodalNet(train.dims, int(train.n_classes), method.arch, cfg.model).to(device)
        if world > 1:  # identical start on every rank
            for p in model.parameters():
                torch.distributed.broadcast(p.data, src=0)
        opt = _optimizer(model, cfg)
        teacher = None
        if method.arch == "mbcd":  # the weight-averaging teacher, evaluated and returned
            teacher = copy.deepcopy(model).eval().requires_grad_(False)
            drop_gen = torch.Generator().manual_seed(seed)
        xs, y = _tensors(train, device)
        rule = Plateau(
            window=1, patience=cfg.plateau_patience, min_delta=cfg.plateau_min_delta, cap=cfg.epochs
        )
        losses, val_acc, test_acc, seen = [], [], [], []
        while not rule.stopped:
            model.train()
            total, count = torch.zeros((), device=device), 0
            for batch in sampler:
                idx = torch.as_tensor(batch[rank::world], device=device)
                if not losses:  # the first epoch's indices of this rank
                    seen.extend(int(i) for i in idx.tolist())
                bx, by = [x[idx] for x in xs], y[idx]
                if teacher is None:
                    loss = method_loss(model, method, bx, by, cfg)
                else:
                    loss = mbcd_objective(model, teacher, bx, by, cfg, drop_gen)
                if not torch.isfinite(loss):
                    raise FloatingPointError(
                        f"{method.name}: the training loss became {float(loss)} at epoch "
                        f"{len(losses)}"
                    )
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if world > 1:
                    for p in model.parameters():
                        if p.grad is not None:
                            torch.distributed.all_reduce(p.grad)
                            p.grad.div_(world)
                opt.step()
                if teacher is not None:
                    ema_update(teacher, model, cfg.mbcd.ema_decay)
                total += loss.detach()
                count += 1
            if world > 1:
                torch.distributed.all_reduce(total)
                total /= world
            epoch_loss = float(total) / max(count, 1)
            if not math.isfinite(epoch_loss):
                raise FloatingPointError(f"{method.name}: non-finite epoch loss {epoch_loss}")
            losses.append(epoch_loss)
            scored = model if teacher is None else teacher
            val_acc.append(evaluate(scored, split.val, device))
            test_acc.append(evaluate(scored, split.test, device))
            rule.update(epoch_loss)
            if progress_callback is not None:
                progress_callback()
    return TrainResult(
        method=method.name,
        model=model if teacher is None else teacher,
        train_loss=losses,
        val_acc=val_acc,
        test_acc=test_acc,
        stopping=rule.summary(),
        samples_seen=seen,
    )


def with_epochs(config: TrainConfig, epochs: int) -> TrainConfig:
    """``config`` with another epoch cap (the budget study's knob)."""
    return replace(config, epochs=int(epochs))
