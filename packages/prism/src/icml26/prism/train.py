"""Training PRISM and PRISM-less (official ``train_esm.py`` / ``train_pure_esm.py``).

AdamW (β = 0.9/0.999, ε = 1e-8, weight decay 0.01; :class:`~icml26.prism.adamw.AdamW`,
the same update as ``torch.optim.AdamW``), linear warm-up then cosine decay to zero,
gradient clipping at norm 1, gradient accumulation; the gate temperature is
held at 1 for ``temperature_warmup`` steps, then set to the model's configured value
(0.5). The loop runs under Hugging Face ``accelerate``: launched with
``accelerate launch`` it is data-parallel over GPUs or nodes, and ``mixed_precision``
"bf16" matches the paper's setting (fp16 is not offered: it needs a loss scaler).

The paper trains in two stages (:meth:`TrainConfig.pretrain`, then
:meth:`TrainConfig.finetune`); :func:`train` runs one stage and can be called twice.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.utils.data import DataLoader

from icml26.prism.adamw import AdamW
from icml26.prism.data import Repertoire
from icml26.prism.germline import SPECIAL_REGION
from icml26.prism.losses import LossWeights, mlm_loss, prism_loss
from icml26.prism.masking import MaskedBatch, MaskingConfig, mask_tokens
from icml26.prism.model import PrismLessModel, PrismModel
from icml26.prism.vocab import CLS, EOS, PAD, residue_ids
from icml26.shared.distributed import world_size
from icml26.shared.progress import progress

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """One training stage."""

    steps: int = 1000
    batch_size: int = 64
    lr: float = 4e-4
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    weight_decay: float = 0.01
    warmup_steps: int = 100
    temperature_warmup: int | None = None  # None: same as warmup_steps
    grad_clip: float = 1.0
    grad_accumulation: int = 1
    masking: MaskingConfig = field(default_factory=MaskingConfig)
    weights: LossWeights = field(default_factory=LossWeights)
    prismless_focal_gamma: float | None = None  # None: plain cross-entropy (official baseline)
    mixed_precision: str = "no"  # "no" | "bf16"
    use_regions: bool = False  # feed region ids to the model (needs ModelConfig.n_regions)
    use_genes: bool = False  # feed V/J gene ids (needs ModelConfig.n_v_genes/n_j_genes)
    # samples per optimiser update over all processes (the official 8,192 = 256 × 8
    # accumulation × 4 GPUs); when set, the accumulation is derived from the launch's
    # world size and ``grad_accumulation`` is ignored
    global_batch: int | None = None

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1 or self.grad_accumulation < 1:
            raise ValueError("steps, batch_size and grad_accumulation must be positive")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")
        if not 0 <= self.warmup_steps <= self.steps:
            raise ValueError(f"warmup_steps must lie in [0, steps], got {self.warmup_steps}")
        if self.global_batch is not None and (
            self.global_batch < 1 or self.global_batch % self.batch_size
        ):
            raise ValueError(
                f"global_batch must be a positive multiple of batch_size {self.batch_size}, "
                f"got {self.global_batch}"
            )
        if self.mixed_precision not in ("no", "bf16"):
            raise ValueError(
                f"mixed_precision must be 'no' or 'bf16', got {self.mixed_precision!r}"
            )

    def replace(self, **changes) -> TrainConfig:
        return dataclasses.replace(self, **changes)

    def accumulation(self, world_size: int = 1) -> int:
        """Batches accumulated per update on each of ``world_size`` processes."""
        if self.global_batch is None:
            return self.grad_accumulation
        per_update = self.batch_size * world_size
        if self.global_batch % per_update:
            raise ValueError(
                f"global_batch {self.global_batch} is not a multiple of batch_size "
                f"{self.batch_size} × {world_size} processes"
            )
        return self.global_batch // per_update

    @classmethod
    def pretrain(cls, **overrides) -> TrainConfig:
        """Stage 1 (``configs/v34_pretrain.yaml``): lr 4e-4, warm-up 1000 of 10k steps,
        balanced weights, CDR = FR masking 0.35."""
        base = {
            "steps": 10_000,
            "batch_size": 256,
            "lr": 4e-4,
            "warmup_steps": 1000,
            "grad_accumulation": 8,
            "masking": MaskingConfig(0.15, 0.35, 0.35),
            "weights": LossWeights(final=1.5, aa=1.0, origin=1.0, ngl_alpha=1.0, aa_ngl_weight=1.0),
        }
        return cls(**{**base, **overrides})

    @classmethod
    def finetune(cls, **overrides) -> TrainConfig:
        """Stage 2 (``configs/v34_1b_finetune.yaml``): lr 1e-4, warm-up 500 of 15k steps,
        NGL ×3, AA-loss NGL weight 0.5, w_mut 1.5, w_final 2, CDR 0.5 / FR 0.3, CDR loss ×2."""
        base = {
            "steps": 15_000,
            "batch_size": 256,
            "lr": 1e-4,
            "warmup_steps": 500,
            "grad_accumulation": 8,
            "masking": MaskingConfig(0.15, 0.5, 0.3),
            "weights": LossWeights(
                final=2.0, aa=1.0, origin=1.5, ngl_alpha=3.0, aa_ngl_weight=0.5, cdr_multiplier=2.0
            ),
        }
        return cls(**{**base, **overrides})


@dataclass
class EncodedRepertoire:
    """Token-level tensors of a repertoire (unpaired heavy chains)."""

    input_ids: torch.Tensor  # (N, T) uppercase
    residue: torch.Tensor  # (N, T) bool
    regions: torch.Tensor  # (N, T), SPECIAL_REGION off residues
    ngl: torch.Tensor  # (N, T) bool
    v_gene: torch.Tensor | None = None
    j_gene: torch.Tensor | None = None

    def __len__(self) -> int:
        return self.input_ids.shape[0]


def encode_repertoire(rep: Repertoire) -> EncodedRepertoire:
    """``<cls> SEQ <eos>`` rows, right-padded, with token-level regions and NGL labels."""
    if len(rep) == 0:
        raise ValueError("the repertoire is empty")
    width = max(len(s) for s in rep.sequences) + 2
    n = len(rep)
    ids = np.full((n, width), PAD, dtype=np.int64)
    regions = np.full((n, width), SPECIAL_REGION, dtype=np.int64)
    ngl = np.zeros((n, width), dtype=bool)
    for i, s in enumerate(rep.sequences):
        m = len(s)
        ids[i, 0], ids[i, m + 1] = CLS, EOS
        ids[i, 1 : m + 1] = residue_ids(s, chain=f"sequence {i}")
        regions[i, 1 : m + 1] = rep.regions[i]
        ngl[i, 1 : m + 1] = rep.ngl[i]
    ids_t = torch.from_numpy(ids)
    residue = (ids_t != PAD) & (ids_t != CLS) & (ids_t != EOS)

    def opt(a):
        return None if a is None else torch.as_tensor(np.asarray(a), dtype=torch.long)

    return EncodedRepertoire(
        ids_t,
        residue,
        torch.from_numpy(regions),
        torch.from_numpy(ngl),
        opt(rep.v_gene),
        opt(rep.j_gene),
    )


def lr_lambda(warmup: int, total: int):
    """Linear warm-up to 1, then cosine decay to 0 (``get_cosine_schedule_with_warmup``)."""

    def f(step: int) -> float:
        if step < warmup:
            return float(step + 1) / float(max(1, warmup))
        progress_ = (step - warmup) / max(1, total - warmup)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * min(progress_, 1.0))))

    return f


@dataclass
class TrainResult:
    """Per-update losses of this process, its token count and time, the processes
    that took part and the repertoire indices this process trained on."""

    losses: list[float]
    tokens: int
    seconds: float
    world_size: int = 1
    samples: list[int] = field(default_factory=list)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / max(self.seconds, 1e-9)


def train(
    model: PrismModel | PrismLessModel,
    data: Repertoire | EncodedRepertoire,
    config: TrainConfig,
    *,
    seed: int = 0,
    device: str | torch.device | None = None,
    accelerator=None,
) -> TrainResult:
    """Train ``model`` for one stage on ``data``; returns the per-step losses.

    ``device=None`` uses CUDA when present. A given ``accelerator``
    (``accelerate.Accelerator``) takes precedence, e.g. under ``accelerate launch``.
    """
    from accelerate import Accelerator

    if not isinstance(model, PrismModel | PrismLessModel):
        raise TypeError(f"model must be a PrismModel or PrismLessModel, got {type(model).__name__}")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
    enc = data if isinstance(data, EncodedRepertoire) else encode_repertoire(data)
    if accelerator is None:
        want_cpu = device is not None and torch.device(device).type == "cpu"
        accelerator = Accelerator(
            cpu=want_cpu or not torch.cuda.is_available(),
            mixed_precision=config.mixed_precision,
            gradient_accumulation_steps=config.accumulation(world_size()),
        )
    world = accelerator.num_processes
    accum = config.accumulation(world)
    if accelerator.gradient_accumulation_steps != accum:
        raise ValueError(
            f"the accelerator accumulates {accelerator.gradient_accumulation_steps} batches, "
            f"the config asks for {accum} on {world} processes"
        )
    is_prism = isinstance(model, PrismModel)
    amp = config.mixed_precision != "no"
    gen = torch.Generator().manual_seed(int(seed) * 1000 + accelerator.process_index)

    seen: list[int] = []

    def collate(idx: list[int]) -> tuple[MaskedBatch, torch.Tensor | None, torch.Tensor | None]:
        seen.extend(int(i) for i in idx)
        ix = torch.as_tensor(idx)
        mb = mask_tokens(
            enc.input_ids[ix], enc.residue[ix], enc.regions[ix], enc.ngl[ix], config.masking, gen
        )
        v = enc.v_gene[ix] if enc.v_gene is not None else None
        j = enc.j_gene[ix] if enc.j_gene is not None else None
        return mb, v, j

    per_update = config.batch_size * accum * world
    # every process takes ``steps × accum`` batches: the prepared loader hands each rank
    # its own share (a different shard) of this one seeded order
    n_batches = config.steps * accum * world
    order = torch.Generator().manual_seed(int(seed))
    epochs = math.ceil(n_batches * config.batch_size / len(enc)) + 1
    index = torch.cat([torch.randperm(len(enc), generator=order) for _ in range(epochs)])
    index = index[: n_batches * config.batch_size].tolist()
    loader = DataLoader(index, batch_size=config.batch_size, shuffle=False, collate_fn=collate)
    raw = model  # kept before wrapping (``unwrap_model`` would import torch._dynamo)
    # One CPU process in fp32: ``prepare`` and ``clip_grad_norm_`` of accelerate would only
    # move the model and clip, but they first import torch.distributed.tensor (seconds of
    # CPU per process); do both directly instead.
    plain = accelerator.num_processes == 1 and accelerator.device.type == "cpu" and not amp
    clip = torch.nn.utils.clip_grad_norm_ if plain else accelerator.clip_grad_norm_
    if plain:
        model = model.to(accelerator.device)
        loader = accelerator.prepare(loader)
    else:
        model, loader = accelerator.prepare(model, loader)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = AdamW(
        params, lr=config.lr, betas=config.betas, eps=config.eps, weight_decay=config.weight_decay
    )
    schedule = lr_lambda(config.warmup_steps, config.steps)
    t_warm = config.warmup_steps if config.temperature_warmup is None else config.temperature_warmup
    target_t = float(raw.config.gating_temperature) if is_prism else 1.0
    model.train()
    losses, tokens, t0 = [], 0, time.perf_counter()
    step = 0
    bar = progress(total=config.steps, desc=f"train {raw.config.kind}", leave=False)
    for mb, v, j in loader:
        if is_prism:
            raw.temperature.fill_(1.0 if step < t_warm else target_t)
        with accelerator.accumulate(model):
            out = model(
                mb.input_ids,
                mb.attention_mask,
                v_gene_ids=v if config.use_genes else None,
                j_gene_ids=j if config.use_genes else None,
                region_ids=mb.regions if config.use_regions else None,
            )
            if is_prism:
                parts = prism_loss(
                    out, mb.labels_aa, mb.labels_origin, mb.ngl, mb.regions, config.weights
                )
            else:
                parts = mlm_loss(out, mb.labels_aa, focal_gamma=config.prismless_focal_gamma)
            accelerator.backward(parts["total"])
            # the optimiser is not wrapped by accelerate: step only at the end of an
            # accumulation window (accelerate scales the loss by 1/grad_accumulation)
            if accelerator.sync_gradients:
                if config.grad_clip:
                    clip(params, config.grad_clip)
                optimizer.lr = config.lr * schedule(step)
                optimizer.step()
                optimizer.zero_grad()
        tokens += int(mb.attention_mask.sum())
        if accelerator.sync_gradients:
            losses.append(float(parts["total"].detach()))
            step += 1
            bar.update(1)
    bar.close()
    if is_prism:
        raw.temperature.fill_(target_t if step >= t_warm else 1.0)
    model.eval()
    seconds = time.perf_counter() - t0
    log.info(
        "%s: %d steps, %d samples/step, final loss %.3f",
        raw.config.kind,
        step,
        per_update,
        losses[-1] if losses else float("nan"),
    )
    return TrainResult(losses, tokens, seconds, world, seen)
