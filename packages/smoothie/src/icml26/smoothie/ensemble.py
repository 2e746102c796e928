"""Several independent denoisers trained as one batched ensemble.

The smoke preset's denoiser is tiny (hidden 32, L = 12): much of one training step on one
CPU thread is the fixed cost of each kernel launch, so the three spaces' models cost
three times one model. Stacking M models with the same
:class:`~icml26.smoothie.model.DenoiserConfig` along a leading axis runs every layer as
one batched kernel (``bmm`` for the Linears; attention, RoPE, norms and activations on
the ``M·B`` rows): three members take about 1.7 times one model's step, not 3 times
(the matrix products are compute-bound and attention costs per sequence; README).

The members stay independent: each keeps its own data order and noise draws (its own
generators, drawn in the serial loop's order), its own loss, its own gradient-norm clip,
AdamW moments, warm-up, EMA and :class:`~icml26.shared.Plateau` rule. The parameters of
all members are one flat ``(M, P)`` leaf, so clipping, AdamW and the EMA are a handful of
row-wise kernels; AdamW is element-wise, so one optimiser over the rows is M optimisers.
A member whose rule fires is snapshotted (its EMA loaded into its model) and its row
removed; the others go on unaffected. The result equals M serial
:func:`~icml26.smoothie.model.train_diffusion` runs up to floating-point rounding (batched
and single matrix products may round differently; a test bounds the difference).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.shared import Plateau, progress
from icml26.smoothie.model import (
    Denoiser,
    DenoiserConfig,
    TrainConfig,
    TrainResult,
    _rope_tables,
    _world,
    diffusion_inputs,
    timestep_embedding,
)
from icml26.smoothie.space import DiffusionSpace, check_embeddings

__all__ = ["ensemble_forward", "train_diffusion_ensemble"]


# -- the batched network -------------------------------------------------------------------
def _linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x (M, ..., in)`` through member-wise ``weight (M, out, in)`` and ``bias (M, out)``."""
    m = x.shape[0]
    flat = x.reshape(m, -1, x.shape[-1])
    wt = weight.transpose(1, 2)
    out = torch.bmm(flat, wt) if bias is None else torch.baddbmm(bias.unsqueeze(1), flat, wt)
    return out.view(*x.shape[:-1], weight.shape[1])


def _norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """Member-wise RMSNorm: ``x (M, ..., d)``, ``weight (M, d)``."""
    w = weight.view(weight.shape[0], *([1] * (x.ndim - 2)), weight.shape[1])
    return w * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def _fused(p: Mapping[str, Tensor], prefix: str, parts: tuple[str, ...]) -> Tensor:
    """The weights ``prefix + part + ".weight"`` stacked on the output axis ``(M, k·out, in)``:
    a view when the parameters are adjacent in the flat layout (see :class:`_Flat`), else a
    concatenation."""
    key = prefix + "+".join(parts)
    if key in p:
        return p[key]
    return torch.cat([p[prefix + part + ".weight"] for part in parts], dim=1)


_ROTATION_CACHE: dict[tuple, Tensor] = {}


def _rotation(length: int, cfg: DenoiserConfig, k: int, device, dtype) -> Tensor:
    """RoPE as complex factors ``cos a + i sin a`` per pair, ``(L, k·d/2)``: the angles of
    :func:`~icml26.smoothie.model._rope_tables` for every head of ``k`` projections."""
    key = (length, cfg.hidden, cfg.heads, cfg.rope_theta, k, str(device), dtype)
    if key not in _ROTATION_CACHE:
        dh = cfg.hidden // cfg.heads
        cos, signed_sin = _rope_tables(length, dh, cfg.rope_theta, device, dtype)
        rot = torch.complex(cos[:, 0::2], signed_sin[:, 1::2])  # (L, Dh/2)
        _ROTATION_CACHE[key] = rot.repeat(1, k * cfg.heads)
    return _ROTATION_CACHE[key]


def _rotate(z: Tensor, rot: Tensor) -> Tensor:
    """``(x₁ cos − x₂ sin, x₁ sin + x₂ cos)`` on each pair of the last axis of ``z``, as one
    complex product (RoPE on contiguous ``(…, L, k·d)`` rows, every head at once)."""
    pairs = torch.view_as_complex(z.unflatten(-1, (-1, 2)))
    return torch.view_as_real(pairs * rot).flatten(-2)


def _attention(
    p: Mapping[str, Tensor],
    prefix: str,
    x: Tensor,
    ctx: Tensor | None,
    mask: Tensor | None,
    causal: bool,
    cfg: DenoiserConfig,
) -> Tensor:
    """Member-wise :class:`~icml26.smoothie.model.Attention` (RoPE on queries and keys)."""
    m, b, n, d = x.shape

    def split(z: Tensor) -> Tensor:  # (M, B, L, d) -> (M·B, H, L, Dh)
        return z.reshape(m * b, z.shape[2], cfg.heads, -1).transpose(1, 2)

    if ctx is None:  # self-attention: q, k and v in one product, RoPE on q and k at once
        qk, v = _linear(x, _fused(p, prefix, ("q", "k", "v"))).split((2 * d, d), dim=-1)
        q, k = _rotate(qk, _rotation(n, cfg, 2, x.device, x.dtype)).split((d, d), dim=-1)
    else:
        q = _rotate(_linear(x, p[prefix + "q.weight"]), _rotation(n, cfg, 1, x.device, x.dtype))
        k, v = _linear(ctx, _fused(p, prefix, ("k", "v"))).split((d, d), dim=-1)
        k = _rotate(k, _rotation(ctx.shape[2], cfg, 1, x.device, x.dtype))
    attn_mask = None if mask is None else mask.reshape(m * b, -1)[:, None, None, :].bool()
    out = F.scaled_dot_product_attention(
        split(q), split(k), split(v), attn_mask=attn_mask, is_causal=causal
    )
    return _linear(out.transpose(1, 2).reshape(m, b, n, d), p[prefix + "o.weight"])


def _block(
    p: Mapping[str, Tensor],
    prefix: str,
    x: Tensor,
    ctx: Tensor | None,
    ctx_mask: Tensor | None,
    causal: bool,
    cfg: DenoiserConfig,
) -> Tensor:
    """:class:`~icml26.smoothie.model.LlamaBlock`, member-wise."""
    x = x + _attention(p, prefix + "attn.", _norm(x, p[prefix + "norm1.weight"]), None, None,
                       causal, cfg)  # fmt: skip
    if ctx is not None and prefix + "cross.q.weight" in p:
        h = _norm(x, p[prefix + "norm_c.weight"])
        x = x + _attention(p, prefix + "cross.", h, ctx, ctx_mask, False, cfg)
    h = _norm(x, p[prefix + "norm2.weight"])
    gate, up = _linear(h, _fused(p, prefix, ("gate", "up"))).chunk(2, dim=-1)
    return x + _linear(F.silu(gate) * up, p[prefix + "down.weight"])


def ensemble_forward(
    params: Mapping[str, Tensor],
    config: DenoiserConfig,
    x: Tensor,
    t: Tensor | None,
    src: Tensor | None = None,
    src_mask: Tensor | None = None,
    *,
    causal: bool = False,
) -> Tensor:
    """:meth:`Denoiser.forward <icml26.smoothie.model.Denoiser.forward>` for M stacked members.

    Args:
        params: the members' ``named_parameters`` stacked on a new leading axis (M, ...).
        x: inputs ``(M, B, L, embed_dim)``; ``t``: times ``(M, B)`` (None: no time input).
        src, src_mask: source embeddings ``(M, B, Ls, embed_dim)`` and mask ``(M, B, Ls)``.
    """
    if x.ndim != 4:
        raise ValueError(f"x must be (M, B, L, d), got shape {tuple(x.shape)}")
    if x.shape[2] > config.max_len:
        raise ValueError(f"sequence of length {x.shape[2]} exceeds max_len {config.max_len}")
    if config.self_conditioning:
        raise ValueError("the batched ensemble does not implement self-conditioning")
    m, b = x.shape[:2]
    d = config.hidden
    h = x if "inp.weight" not in params else _linear(x, params["inp.weight"], params["inp.bias"])
    h = h + params["pos"][:, :, : x.shape[2]]
    emb_t = None
    if t is not None:
        te = timestep_embedding(t.reshape(-1), d).view(m, b, d)
        te = F.silu(_linear(te, params["time_mlp.0.weight"], params["time_mlp.0.bias"]))
        emb_t = _linear(te, params["time_mlp.2.weight"], params["time_mlp.2.bias"])[:, :, None]
    ctx = None
    if config.conditional:
        if src is None:
            raise ValueError("a conditional denoiser needs the source embeddings `src`")
        hs = src
        if "src_in.weight" in params:
            hs = _linear(src, params["src_in.weight"], params["src_in.bias"])
        hs = hs + params["src_pos"][:, :, : src.shape[2]]
        for j in range(config.encoder_layers):
            hs = _block(params, f"encoder.{j}.", hs, None, None, False, config)
        ctx = _norm(hs, params["src_norm.weight"])
    half = config.layers // 2
    skips: list[Tensor] = []
    for i in range(config.layers):
        if i < half:
            skips.append(h)
        else:
            h = h + skips.pop()
        if emb_t is not None:
            w, bias = params[f"time_layers.{i}.weight"], params[f"time_layers.{i}.bias"]
            h = h + _linear(emb_t, w, bias)
        h = _block(params, f"blocks.{i}.", h, ctx, src_mask, causal, config)
    return _linear(_norm(h, params["out_norm.weight"]), params["out.weight"], params["out.bias"])


# -- training ------------------------------------------------------------------------------
@dataclass
class _Member:
    """One member's own state: generators, data order, rule, result."""

    space: DiffusionSpace
    model: Denoiser
    order_gen: torch.Generator
    noise_gen: torch.Generator
    rule: Plateau
    order: Tensor
    pos: int = 0
    result: TrainResult = field(default_factory=TrainResult)
    cpu: float = 0.0
    wall: float = 0.0


class _Flat:
    """The members' parameters as one ``(M, P)`` tensor and the names/shapes to view it."""

    #: weights that :func:`ensemble_forward` multiplies as one product when adjacent
    FUSED = (("q", "k", "v"), ("k", "v"), ("gate", "up"))

    def __init__(self, model: Denoiser):
        self.names, self.shapes, self.sizes = [], [], []
        for name, p in model.named_parameters():
            self.names.append(name)
            self.shapes.append(tuple(p.shape))
            self.sizes.append(p.numel())
        # (key, start, rows, cols) of every FUSED group stored contiguously
        self.spans: list[tuple[str, int, int, int]] = []
        offsets = dict(zip(self.names, itertools.accumulate([0, *self.sizes]), strict=False))
        shapes = dict(zip(self.names, self.shapes, strict=True))
        for name, shape in shapes.items():
            for group in self.FUSED:
                if not name.endswith("." + group[0] + ".weight"):
                    continue
                prefix = name[: -len(group[0] + ".weight")]
                names = [prefix + g + ".weight" for g in group]
                key = prefix + "+".join(group)
                if any(n not in shapes or shapes[n] != shape for n in names):
                    continue
                size = shape[0] * shape[1]
                if [offsets[n] for n in names] == [
                    offsets[name] + i * size for i in range(len(group))
                ]:
                    self.spans.append((key, offsets[name], len(group) * shape[0], shape[1]))

    def flatten(self, model: Denoiser) -> Tensor:
        named = dict(model.named_parameters())
        return torch.cat([named[n].detach().reshape(-1) for n in self.names])

    def views(self, flat: Tensor) -> dict[str, Tensor]:
        """``{name: (M, *shape)}`` views of the rows of ``flat``, plus the adjacent weights
        of :attr:`FUSED` as one ``(M, k·out, in)`` view each (``prefix + "q+k+v"``)."""
        m = flat.shape[0]
        parts = torch.split(flat, self.sizes, dim=1)
        out = {
            n: part.view(m, *shape)
            for n, shape, part in zip(self.names, self.shapes, parts, strict=True)
        }
        for key, start, rows, cols in self.spans:
            out[key] = flat[:, start : start + rows * cols].view(m, rows, cols)
        return out

    def state_dict(self, row: Tensor) -> dict[str, Tensor]:
        parts = torch.split(row, self.sizes)
        return {
            n: part.reshape(shape).clone()
            for n, shape, part in zip(self.names, self.shapes, parts, strict=True)
        }


def train_diffusion_ensemble(
    spaces: Sequence[DiffusionSpace],
    models: Sequence[Denoiser],
    embeddings: Tensor,
    trg: Tensor,
    src: Tensor | None,
    src_mask: Tensor | None,
    config: TrainConfig,
    *,
    seeds: Sequence[int],
    device: str | torch.device = "cpu",
    use_ema: bool = True,
    desc: str | None = None,
) -> list[TrainResult]:
    """:func:`~icml26.smoothie.model.train_diffusion` for M models at once (one per space).

    Member ``i`` trains ``models[i]`` in ``spaces[i]`` with seed ``seeds[i]`` exactly as
    ``train_diffusion(spaces[i], models[i], ..., seed=seeds[i])`` would (same data order,
    noise draws, clip, AdamW, warm-up, EMA and plateau rule), up to floating-point rounding;
    each stops by its own rule, when its EMA weights are loaded into its model (with
    ``use_ema``). The models must share one :class:`DenoiserConfig` (no self-conditioning)
    and the run must be a single process. ``TrainResult.seconds`` / ``cpu_seconds`` are the
    member's share of the ensemble's time (each step's time split evenly over the members
    still training).
    """
    check_embeddings(embeddings)
    m = len(models)
    if m < 1 or len(spaces) != m or len(seeds) != m:
        raise ValueError(
            f"give one space and one seed per model: {len(models)} models, {len(spaces)} "
            f"spaces, {len(seeds)} seeds"
        )
    cfg = models[0].config
    for model in models:
        if not isinstance(model, Denoiser) or model.head is not None or model.causal:
            raise TypeError("ensemble members must be x0-predicting Denoisers (no head, causal)")
        if model.config != cfg or not model.timed:
            raise ValueError("ensemble members must share one DenoiserConfig and be timed")
        if list(model.buffers()):
            raise ValueError("ensemble members must not hold buffers")
    if cfg.self_conditioning:
        raise ValueError("the batched ensemble does not implement self-conditioning")
    if _world()[1] > 1:
        raise ValueError("the batched ensemble runs in one process; use train_diffusion")
    v = embeddings.shape[0]
    if trg.ndim != 2 or (trg.min() < 0) or (trg.max() >= v):
        raise ValueError(f"trg must be (N, L) token ids in [0, {v}), got shape {tuple(trg.shape)}")
    emb, trg = embeddings.to(device), trg.to(device)
    src = None if src is None else src.to(device)
    src_mask = None if src_mask is None else src_mask.to(device)
    n, bs = trg.shape[0], config.batch_size

    layout = _Flat(models[0])
    flat = torch.stack([layout.flatten(model) for model in models]).to(device).requires_grad_()
    ema = flat.detach().clone()
    opt = torch.optim.AdamW(
        [flat], lr=config.lr, betas=config.betas, eps=config.eps,
        weight_decay=config.weight_decay, foreach=True,
    )  # fmt: skip
    warm = max(config.warmup, 1)
    members = []
    for space, model, seed in zip(spaces, models, seeds, strict=True):
        order_gen = torch.Generator().manual_seed(seed)  # train_loop's
        noise_gen = torch.Generator(device=device).manual_seed(seed + 1)  # train_diffusion's
        rule = Plateau(config.window, config.patience, config.min_delta, config.cap)
        order = torch.randperm(n, generator=order_gen)
        members.append(_Member(space, model, order_gen, noise_gen, rule, order))
        model.train()
    active = list(range(m))
    step = 0
    label = desc or "train " + " + ".join(space.name for space in spaces)
    bar = progress(total=config.cap, desc=label, leave=False)
    while active:
        w0, c0 = time.perf_counter(), time.process_time()
        inputs, times, targets, sources, masks = [], [], [], [], []
        for i in active:
            mem = members[i]
            if mem.pos + bs > n:
                mem.order, mem.pos = torch.randperm(n, generator=mem.order_gen), 0
            batch = mem.order[mem.pos : mem.pos + bs]
            mem.pos += bs
            if len(mem.result.samples) < 4 * bs:
                mem.result.samples.extend(batch.tolist())
            idx = batch.to(device)
            inp, t, target = diffusion_inputs(mem.space, emb, trg[idx], mem.noise_gen, config.t_eps)
            inputs.append(inp)
            times.append(t)
            targets.append(target)
            if src is not None:
                sources.append(emb[src[idx]])
            if src_mask is not None:
                masks.append(src_mask[idx])
        pred = ensemble_forward(
            layout.views(flat),
            cfg,
            torch.stack(inputs),
            torch.stack(times),
            torch.stack(sources) if sources else None,
            torch.stack(masks) if masks else None,
        )
        losses = (pred - torch.stack(targets)).pow(2).flatten(1).mean(1)  # per member MSE
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()  # members share no parameter: each gets its own gradient
        grad = flat.grad
        assert grad is not None
        with torch.no_grad():  # clip_grad_norm_ per member (row)
            norm = torch.linalg.vector_norm(grad, 2.0, dim=1, keepdim=True)
            grad.mul_((config.clip / (norm + 1e-6)).clamp(max=1.0))
        opt.param_groups[0]["lr"] = config.lr * min(1.0, (step + 1) / warm)  # LambdaLR's
        opt.step()
        step += 1
        with torch.no_grad():  # ema ← ema·decay + θ·(1 − decay)
            ema.lerp_(flat.detach(), 1 - config.ema)
        values = losses.detach().tolist()
        done = []
        for j, i in enumerate(active):
            mem = members[i]
            mem.result.losses.append(values[j])
            mem.rule.update(values[j])
            if mem.rule.stopped:
                done.append(j)
        bar.update(1)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        for i in active:
            members[i].wall += wall / len(active)
            members[i].cpu += cpu / len(active)
        if done:
            for j in done:
                mem = members[active[j]]
                mem.result.ema = layout.state_dict(ema[j])
                mem.model.load_state_dict(layout.state_dict(flat.detach()[j]))
                mem.model.eval()
                if use_ema:
                    mem.model.load_state_dict(mem.result.ema)
            keep = [j for j in range(len(active)) if j not in done]
            active = [active[j] for j in keep]
            if active:
                flat, ema, opt = _keep_rows(flat, ema, opt, keep)
    bar.close()
    results = []
    for mem in members:
        mem.result.stopping = {**mem.rule.summary(), "ensemble": m}
        mem.result.seconds = mem.wall
        mem.result.cpu_seconds = mem.cpu
        results.append(mem.result)
    return results


def _keep_rows(
    flat: Tensor, ema: Tensor, opt: torch.optim.AdamW, keep: list[int]
) -> tuple[Tensor, Tensor, torch.optim.AdamW]:
    """Drop the stopped members' rows from the parameters, EMA and AdamW state."""
    rows = torch.tensor(keep)
    new = flat.detach()[rows].clone().requires_grad_()
    state = opt.state[flat]
    group = opt.param_groups[0]
    new_opt = torch.optim.AdamW(
        [new], lr=group["lr"], betas=group["betas"], eps=group["eps"],
        weight_decay=group["weight_decay"], foreach=True,
    )  # fmt: skip
    new_opt.state[new] = {
        "step": state["step"].clone(),
        "exp_avg": state["exp_avg"][rows].clone(),
        "exp_avg_sq": state["exp_avg_sq"][rows].clone(),
    }
    return new, ema[rows].clone(), new_opt
