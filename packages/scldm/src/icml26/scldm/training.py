"""Training loops under Hugging Face ``accelerate`` (official: PyTorch Lightning).

``accelerate launch script.py`` runs one process per GPU: each process takes its own
shard of every global batch, gradients are all-reduced by the prepared (DDP) model.
In a plain ``python`` process the loop runs on the one device asked for.

The optimiser settings are the released ones: AdamW, gradient-norm clip 10, and the
warmup–stable–decay schedule :func:`wsd_schedule` (``_utils.wsd_schedule``).
"""

from __future__ import annotations

import copy
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from icml26.shared import Plateau, progress

log = logging.getLogger(__name__)


def wsd_schedule(
    total_steps: int,
    *,
    warmup_fraction: float = 0.1,
    decay_fraction: float = 0.1,
    decay: str = "sqrt",
    final_lr_factor: float = 0.1,
    init_div_factor: float = 100.0,
) -> Callable[[int], float]:
    """Warmup–stable–decay learning-rate factor (official ``wsd_schedule``).

    Linear warmup from 1/``init_div_factor`` over ``warmup_fraction`` of the steps, hold
    at 1, then decay to ``final_lr_factor`` over the last ``decay_fraction`` ("sqrt":
    ``1 - sqrt(progress)``; "cosine": from the end of warmup, as the released code).
    """
    if decay not in ("sqrt", "cosine"):
        raise ValueError(f"decay must be 'sqrt' or 'cosine', got {decay!r}")
    warmup = int(warmup_fraction * total_steps)
    n_anneal = int(decay_fraction * total_steps)
    n_hold = total_steps - n_anneal

    def factor(step: int) -> float:
        if step < warmup:
            return step / warmup + (1 - step / warmup) / init_div_factor
        if step < n_hold:
            return 1.0
        if step < total_steps:
            if decay == "cosine":
                p = (step - warmup) / max(total_steps - warmup, 1)
                return final_lr_factor + (1 - final_lr_factor) * 0.5 * (1 + math.cos(math.pi * p))
            p = (step - n_hold) / max(n_anneal, 1)
            return final_lr_factor + (1 - final_lr_factor) * (1 - math.sqrt(p))
        return final_lr_factor

    return factor


class EMA:
    """Exponential moving average of a model's parameters (``ema_pytorch.EMA``
    semantics: a copy of the weights until ``update_after_step``, then
    ``ema = β·ema + (1-β)·θ`` every ``update_every`` steps)."""

    def __init__(
        self,
        model: nn.Module,
        *,
        beta: float = 0.9999,
        update_every: int = 10,
        update_after_step: int = 10_000,
    ):
        self.beta, self.update_every, self.update_after_step = beta, update_every, update_after_step
        self.model = copy.deepcopy(model).eval().requires_grad_(False)

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        src = dict(model.named_parameters())
        if step <= self.update_after_step:
            for name, p in self.model.named_parameters():
                p.copy_(src[name])
            return
        if step % self.update_every:
            return
        for name, p in self.model.named_parameters():
            p.lerp_(src[name], 1 - self.beta)


@dataclass(frozen=True)
class OptimConfig:
    """AdamW + WSD schedule + gradient clipping for one training stage."""

    lr: float
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.0
    grad_clip: float = 10.0
    warmup_fraction: float = 0.1
    decay_fraction: float = 0.1
    decay: str = "sqrt"
    final_lr_factor: float = 0.1


def make_accelerator(device: torch.device):
    """An ``accelerate.Accelerator`` for ``device`` (CPU forced when device is CPU)."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    want_cpu = device.type == "cpu"
    state = AcceleratorState._shared_state
    if state and getattr(state.get("device"), "type", None) not in (None, device.type):
        # One process may switch between CPU and GPU models (tests, notebooks).
        AcceleratorState._reset_state(reset_partial_state=True)
    return Accelerator(cpu=want_cpu)


def run_training(
    model: nn.Module,
    step_loss: Callable[[nn.Module, tuple[torch.Tensor, ...], torch.Generator], torch.Tensor],
    tensors: Sequence[torch.Tensor],
    *,
    steps: int,
    batch_size: int,
    optim: OptimConfig,
    device: torch.device,
    seed: int,
    ema: EMA | None = None,
    stop_rule: Plateau | None = None,
    desc: str = "training",
) -> list[float]:
    """Minimise ``step_loss(model, batch, generator)`` for ``steps`` optimiser steps.

    ``tensors`` are row-aligned data kept on the CPU; each step draws ``batch_size``
    rows per process without replacement (epochs are reshuffled). ``step_loss`` returns
    the loss, or ``(loss, monitored)`` where ``monitored`` is what ``stop_rule`` watches.

    With a ``stop_rule`` (:class:`icml26.shared.Plateau`, the house convergence rule),
    ``steps`` is the cap: the rule gets the monitored training loss of every step (the
    mean over processes, reduced once per window, so every process decides alike). Once
    it reports a plateau, the stable phase of the warmup–stable–decay schedule ends and
    its decay runs over ``min(decay_fraction, 0.1)`` of the steps taken so far, then
    training stops; a plateau found inside the warmup starts that decay when the warmup
    ends. A plateau inside a scheduled decay (the DiT's cosine decays from the end of the
    warmup) finishes that decay over the same number of steps, from the learning rate
    reached, when the schedule had further to go.
    ``stop_rule.summary()`` then tells the steps, the reason and the best window.
    Returns the loss of every step of this process.
    """
    if steps < 1:
        raise ValueError(f"steps must be positive, got {steps}")
    n = tensors[0].shape[0]
    if n < 1:
        raise ValueError("no training data")
    accelerator = make_accelerator(device)
    rank, world = accelerator.process_index, accelerator.num_processes
    optimizer = torch.optim.AdamW(
        [p for p in model.parameters() if p.requires_grad],
        lr=optim.lr,
        betas=tuple(optim.betas),
        weight_decay=optim.weight_decay,
    )
    factor = wsd_schedule(
        steps,
        warmup_fraction=optim.warmup_fraction,
        decay_fraction=optim.decay_fraction,
        decay=optim.decay,
        final_lr_factor=optim.final_lr_factor,
    )
    warmup_steps = int(optim.warmup_fraction * steps)
    # early decay, once the stop rule fires: [start step, number of decay steps]
    early: list[int] = []

    def lr_factor(step: int) -> float:
        if not early or step < early[0]:  # before the early decay: the usual schedule
            return factor(step)
        start, n_anneal = early
        p = min((step - start) / n_anneal, 1.0)
        # from the factor reached at the plateau (1 in the stable phase) down to the floor
        low, top = optim.final_lr_factor, max(factor(start), optim.final_lr_factor)
        if optim.decay == "cosine":
            return low + (top - low) * 0.5 * (1 + math.cos(math.pi * p))
        return low + (top - low) * (1 - math.sqrt(p))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    prepared, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    dev = accelerator.device
    order_gen = torch.Generator().manual_seed(seed)  # identical on every process
    noise_gen = torch.Generator(device=dev).manual_seed(seed * 1000 + rank + 1)
    batch = min(batch_size, max(n // world, 1))
    per_epoch = max(n // (batch * world), 1)
    losses: list[float] = []
    prepared.train()
    bar = progress(range(steps), desc=desc, leave=False)
    perm = None
    window: list[torch.Tensor] = []
    n_hold = steps - int(optim.decay_fraction * steps)
    stop_at = steps
    handled = False  # the rule's plateau has been acted on
    for step in bar:
        if step >= stop_at:
            break
        i = step % per_epoch
        if i == 0:
            perm = torch.randperm(n, generator=order_gen)
        start = (i * world + rank) * batch
        idx = perm[start : start + batch]
        data = tuple(t[idx].to(dev, non_blocking=True) for t in tensors)
        loss = step_loss(prepared, data, noise_gen)
        loss, monitored = loss if isinstance(loss, tuple) else (loss, loss)
        if not torch.isfinite(loss):
            raise FloatingPointError(f"{desc}: non-finite loss at step {step}")
        optimizer.zero_grad(set_to_none=True)
        accelerator.backward(loss)
        if optim.grad_clip:
            accelerator.clip_grad_norm_(prepared.parameters(), optim.grad_clip)
        optimizer.step()
        scheduler.step()
        if ema is not None:
            ema.update(accelerator.unwrap_model(prepared), step + 1)
        losses.append(float(loss.detach()))
        if stop_rule is not None and not stop_rule.stopped:
            window.append(monitored.detach())
            if len(window) == stop_rule.window or step + 1 == steps:
                # every process feeds the rule the same all-process means
                means = accelerator.reduce(torch.stack(window), reduction="mean")
                window = []
                for value in means.tolist():
                    stop_rule.update(value)
        if stop_rule is not None and stop_rule.reason == "plateau" and not handled:
            handled = True
            begin = max(step + 1, warmup_steps)
            n_anneal = max(int(min(optim.decay_fraction, 0.1) * begin), 1)
            # in the stable phase: decay now; inside a scheduled decay (the DiT's cosine runs
            # from the end of warmup): finish it faster when it has further to go than that
            if begin < n_hold or begin + n_anneal < steps:
                early[:] = [begin, n_anneal]
                stop_at = begin + n_anneal
                log.info("%s: plateau at step %d, decaying for %d", desc, step + 1, n_anneal)
        if step % 50 == 0:
            bar.set_postfix(loss=f"{losses[-1]:.4g}")
    log.info("%s: %d steps, final loss %.4g", desc, len(losses), losses[-1])
    prepared.eval()
    accelerator.wait_for_everyone()
    return losses
