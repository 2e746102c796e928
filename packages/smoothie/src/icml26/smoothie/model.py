"""The denoiser: Llama-style blocks with U-Net long skips, time conditioning and
cross-attention to a source encoder (official ``model/score_estimator.py``,
``ScoreEstimatorEMB``), and its training loop (official ``diffusion_holder.calc_loss``).

The network sees ``(B, L, d)`` inputs (``softmax(X_t) @ E`` or ``X_t``) and predicts the
clean embeddings ``ê`` (x0-prediction). ``layers // 2`` input blocks store their inputs;
each of the ``layers // 2`` output blocks adds one back (last in, first out). The time
``t`` goes through a sinusoidal embedding and an MLP; each block adds its own Linear of it.

With ``head=V`` the same network ends in a token classifier: the masked-diffusion and
autoregressive baselines (``causal=True``) use it that way.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from icml26.shared import Plateau, progress
from icml26.smoothie.space import DiffusionSpace, SmoothieSpace, check_embeddings

__all__ = [
    "Denoiser",
    "DenoiserConfig",
    "TrainConfig",
    "TrainResult",
    "diffusion_inputs",
    "diffusion_loss",
    "load_checkpoint",
    "save_checkpoint",
    "train_diffusion",
    "train_loop",
]


@dataclass(frozen=True)
class DenoiserConfig:
    """Network sizes. ``paper``: hidden 768, 12 layers, 12 heads, a 6-layer source encoder."""

    embed_dim: int = 64
    hidden: int = 64
    layers: int = 4
    heads: int = 4
    encoder_layers: int = 2
    max_len: int = 12
    max_src_len: int = 12
    rope_theta: float = 1e6
    mlp_ratio: float = 8 / 3
    self_conditioning: bool = False
    conditional: bool = True

    def __post_init__(self) -> None:
        for name in ("embed_dim", "hidden", "layers", "heads", "max_len", "max_src_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.layers % 2:
            raise ValueError(f"layers must be even (input + output halves), got {self.layers}")
        if self.hidden % (2 * self.heads):
            raise ValueError(f"hidden {self.hidden} must be divisible by 2·heads ({self.heads})")


def timestep_embedding(t: Tensor, dim: int, max_period: float = 10000.0) -> Tensor:
    """Sinusoidal embedding of ``t ∈ [0, 1]`` as the official code (no 1000× rescaling)."""
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    return F.pad(emb, (0, dim % 2))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: Tensor) -> Tensor:
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


_ROPE_CACHE: dict[tuple, tuple[Tensor, Tensor]] = {}


def _rope_tables(length: int, dh: int, theta: float, device, dtype) -> tuple[Tensor, Tensor]:
    """cos/sin tables of the rotary embedding at full width ``(L, Dh)``, built once per shape
    (small models are bound by the number of kernel launches, not by flops).

    Pair ``(x_{2i}, x_{2i+1})`` rotates by angle ``a_i``; the sine table carries the signs
    (``−sin`` at even, ``+sin`` at odd entries) so that :func:`_rope` is two multiplies and
    an add on the pair-swapped input.
    """
    key = (length, dh, theta, str(device), dtype)
    if key not in _ROPE_CACHE:
        inv = theta ** (-torch.arange(0, dh, 2, device=device, dtype=torch.float32) / dh)
        ang = torch.arange(length, device=device, dtype=torch.float32)[:, None] * inv[None]
        cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)
        signed = torch.stack((-sin, sin), dim=-1).flatten(-2)
        _ROPE_CACHE[key] = (cos.repeat_interleave(2, dim=-1), signed)
    return _ROPE_CACHE[key]


def _rope(x: Tensor, theta: float) -> Tensor:
    """Rotary position embedding on ``(..., L, Dh)``, interleaved pairs:
    ``(x₁ cos − x₂ sin, x₁ sin + x₂ cos)`` for each pair ``(x₁, x₂)``, written as
    ``x · cos + swap(x) · (∓sin)`` (the same floating-point operations as the pairwise
    form, so bit-identical to it, in fewer kernels)."""
    cos, signed_sin = _rope_tables(x.shape[-2], x.shape[-1], theta, x.device, x.dtype)
    swapped = x.unflatten(-1, (-1, 2)).flip(-1).flatten(-2)
    return x * cos + swapped * signed_sin


class Attention(nn.Module):
    def __init__(self, dim: int, heads: int, theta: float, rotary: bool):
        super().__init__()
        self.heads, self.theta, self.rotary = heads, theta, rotary
        self.q, self.k, self.v = (nn.Linear(dim, dim, bias=False) for _ in range(3))
        self.o = nn.Linear(dim, dim, bias=False)

    def _split(self, x: Tensor) -> Tensor:
        b, n, _ = x.shape
        return x.view(b, n, self.heads, -1).transpose(1, 2)

    def forward(
        self, x: Tensor, ctx: Tensor | None = None, mask: Tensor | None = None, causal: bool = False
    ) -> Tensor:
        ctx = x if ctx is None else ctx
        q, k, v = self._split(self.q(x)), self._split(self.k(ctx)), self._split(self.v(ctx))
        if self.rotary:
            q, k = _rope(q, self.theta), _rope(k, self.theta)
        attn_mask = None if mask is None else mask[:, None, None, :].bool()
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=causal)
        return self.o(out.transpose(1, 2).reshape(x.shape))


class LlamaBlock(nn.Module):
    """Pre-norm self-attention (RoPE), optional cross-attention, SwiGLU MLP."""

    def __init__(self, cfg: DenoiserConfig, cross: bool):
        super().__init__()
        d = cfg.hidden
        self.norm1 = RMSNorm(d)
        self.attn = Attention(d, cfg.heads, cfg.rope_theta, rotary=True)
        self.cross = Attention(d, cfg.heads, cfg.rope_theta, rotary=True) if cross else None
        self.norm_c = RMSNorm(d) if cross else None
        self.norm2 = RMSNorm(d)
        inner = int(cfg.mlp_ratio * d)
        self.gate, self.up = nn.Linear(d, inner, bias=False), nn.Linear(d, inner, bias=False)
        self.down = nn.Linear(inner, d, bias=False)

    def forward(
        self,
        x: Tensor,
        ctx: Tensor | None = None,
        ctx_mask: Tensor | None = None,
        causal: bool = False,
    ) -> Tensor:
        x = x + self.attn(self.norm1(x), causal=causal)
        if self.cross is not None and ctx is not None:
            x = x + self.cross(self.norm_c(x), ctx, mask=ctx_mask)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Denoiser(nn.Module):
    """``ê = f(input, t, source)``: the official score estimator at configurable size.

    Args:
        config: sizes.
        head: a vocabulary size to end in token logits (baselines), or None (x0-embeddings).
        causal: causal self-attention (the autoregressive baseline).
        timed: add the time conditioning (False for the autoregressive baseline).
    """

    def __init__(
        self,
        config: DenoiserConfig,
        *,
        head: int | None = None,
        causal: bool = False,
        timed: bool = True,
    ):
        super().__init__()
        self.config, self.causal, self.timed, self.head = config, causal, timed, head
        d = config.hidden
        self.inp = nn.Identity() if config.embed_dim == d else nn.Linear(config.embed_dim, d)
        self.pos = nn.Parameter(torch.zeros(1, config.max_len, d))
        self.time_mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))
        self.time_layers = nn.ModuleList(nn.Linear(d, d) for _ in range(config.layers))
        cross = config.conditional
        self.blocks = nn.ModuleList(LlamaBlock(config, cross) for _ in range(config.layers))
        if config.self_conditioning:
            self.self_cond_layers = nn.ModuleList(
                nn.Linear(config.embed_dim, d) for _ in range(config.layers)
            )
        if cross:
            self.src_in = nn.Identity() if config.embed_dim == d else nn.Linear(config.embed_dim, d)
            self.src_pos = nn.Parameter(torch.zeros(1, config.max_src_len, d))
            self.encoder = nn.ModuleList(
                LlamaBlock(config, cross=False) for _ in range(config.encoder_layers)
            )
            self.src_norm = RMSNorm(d)
        self.out_norm = RMSNorm(d)
        out = config.embed_dim if head is None else head
        self.out = nn.Linear(d, out)

    def encode_source(self, src: Tensor, src_mask: Tensor | None) -> Tensor:
        """The 'transformer' condition encoder over source embeddings ``(B, Ls, d)``."""
        h = self.src_in(src) + self.src_pos[:, : src.shape[1]]
        for block in self.encoder:
            h = block(h)
        return self.src_norm(h)

    def forward(
        self,
        x: Tensor,
        t: Tensor | None = None,
        src: Tensor | None = None,
        src_mask: Tensor | None = None,
        self_cond: Tensor | None = None,
        ctx: Tensor | None = None,
    ) -> Tensor:
        if x.shape[1] > self.config.max_len:
            raise ValueError(
                f"sequence of length {x.shape[1]} exceeds max_len {self.config.max_len}"
            )
        h = self.inp(x) + self.pos[:, : x.shape[1]]
        emb_t = None
        if self.timed:
            if t is None:
                raise ValueError("this denoiser is time-conditioned: pass t")
            emb_t = self.time_mlp(timestep_embedding(t, self.config.hidden))[:, None, :]
        if self.config.conditional and ctx is None:
            if src is None:
                raise ValueError("a conditional denoiser needs the source embeddings `src`")
            ctx = self.encode_source(src, src_mask)
        half = self.config.layers // 2
        skips: list[Tensor] = []
        for i, block in enumerate(self.blocks):
            if i < half:
                skips.append(h)
            else:
                h = h + skips.pop()
            if emb_t is not None:
                h = h + self.time_layers[i](emb_t)
            if self.config.self_conditioning and self_cond is not None:
                h = h + self.self_cond_layers[i](self_cond)
            h = block(h, ctx, src_mask, causal=self.causal)
        return self.out(self.out_norm(h))


# -- training ------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainConfig:
    """Official optimiser (AdamW 2e-4, wd 0.01, betas (0.9, 0.98), eps 1e-6, warm-up, clip 1,
    EMA 0.9999) and the house convergence rule (a plateau of the training loss)."""

    lr: float = 2e-4
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-6
    warmup: int = 5000
    clip: float = 1.0
    batch_size: int = 256
    ema: float = 0.9999
    window: int = 100
    patience: int = 3
    min_delta: float = 0.01
    cap: int = 1_000_000
    t_eps: float = 1e-5

    def __post_init__(self) -> None:
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")
        if self.batch_size < 1 or self.cap < 1:
            raise ValueError("batch_size and cap must be positive")
        if not 0 <= self.ema < 1:
            raise ValueError(f"ema must lie in [0, 1), got {self.ema}")


@dataclass
class TrainResult:
    losses: list[float] = field(default_factory=list)
    stopping: dict = field(default_factory=dict)
    seconds: float = 0.0
    #: CPU seconds of this process (a batched ensemble: this member's share)
    cpu_seconds: float = 0.0
    ema: dict[str, Tensor] | None = None
    samples: list[int] = field(default_factory=list)
    #: the trained table (``train_embeddings=True`` only)
    embeddings: Tensor | None = None
    #: per-step decoder NLL and t = T loss (``train_embeddings=True`` only)
    extra_losses: dict[str, list[float]] = field(default_factory=dict)


def diffusion_inputs(
    space: DiffusionSpace,
    embeddings: Tensor,
    tokens: Tensor,
    generator: torch.Generator | None = None,
    t_eps: float = 1e-5,
    *,
    detach_target: bool = False,
) -> tuple[Tensor, Tensor, Tensor]:
    """One training batch's ``(network input, t, target)``: ``t ~ U(t_eps, 1)`` and the
    forward noise are drawn from ``generator`` in this order (``t`` first)."""
    target = embeddings[tokens]
    b = tokens.shape[0]
    if detach_target:
        target = target.detach()
        with torch.no_grad():
            x0 = space.clean(tokens, embeddings.detach())
    else:
        x0 = space.clean(tokens, embeddings)
    t = torch.rand(b, generator=generator, device=tokens.device) * (1 - t_eps) + t_eps
    x_t = space.noise(x0, t, generator)
    return space.model_input(x_t, embeddings), t, target


def diffusion_loss(
    space: DiffusionSpace,
    model: Denoiser,
    embeddings: Tensor,
    tokens: Tensor,
    src: Tensor | None,
    src_mask: Tensor | None,
    generator: torch.Generator | None = None,
    t_eps: float = 1e-5,
    *,
    detach_target: bool = False,
) -> Tensor:
    """x0-MSE over all positions, padding included (official ``calc_loss``, ``mask=None``).

    ``detach_target`` (trained embeddings): the target ``E[tokens]`` and the clean latent
    carry no gradient, as officially; ``E`` then learns through the input map only.

    ``t ~ U(t_eps, 1)``; with self-conditioning on, half of the batches first run a no-grad
    pass whose prediction is fed back (official ``use_self_cond``, p = 0.5).
    """
    inp, t, target = diffusion_inputs(
        space, embeddings, tokens, generator, t_eps, detach_target=detach_target
    )
    ctx = model.encode_source(src, src_mask) if model.config.conditional else None
    self_cond = torch.zeros_like(target) if model.config.self_conditioning else None
    if model.config.self_conditioning:
        coin = torch.rand((), generator=generator, device=tokens.device)
        if coin > 0.5:
            with torch.no_grad():
                self_cond = model(
                    inp,
                    t,
                    src_mask=src_mask,
                    ctx=ctx.detach() if ctx is not None else None,
                    self_cond=self_cond,
                ).detach()
    pred = model(inp, t, src_mask=src_mask, self_cond=self_cond, ctx=ctx)
    return F.mse_loss(pred, target)


#: official ``--train_embeddings``: the decoder NLL is taken at ``t ~ U(t_eps, 1) * 0.05``
EMBEDDING_NLL_T_SCALE = 0.05


def embedding_losses(
    space: DiffusionSpace,
    embeddings: Tensor,
    tokens: Tensor,
    generator: torch.Generator | None = None,
    t_eps: float = 1e-5,
) -> tuple[Tensor, Tensor]:
    """The official two extra losses of ``--train_embeddings`` (Smoothie space only).

    Returns ``(decoder_nll, t_T_loss)``, both differentiable in ``embeddings``:

    - decoder NLL at small t: ``x_t`` noised from the clean latent at
      ``t ~ U(t_eps, 1) * 0.05``, logits ``(softmax(x_t) @ E) @ E^T``, cross-entropy
      against the target ids at every position (padding included);
    - the t = T loss: the input ``softmax(mu_T * x_0) @ E`` at the noise-free mean of
      ``x_T`` is pulled to its batch-and-position mean (detached), so ``x_T`` carries
      no information about the tokens.

    The clean latent is computed without gradient (as officially), so ``E`` learns
    through the input map and these two terms.
    """
    if not isinstance(space, SmoothieSpace):
        raise ValueError(f"trained embeddings need the Smoothie space, got {space.name!r}")
    b = tokens.shape[0]
    with torch.no_grad():
        x0 = space.clean(tokens, embeddings.detach())
    ones = torch.ones(b, device=tokens.device)
    mu_t, _ = space.params(ones)
    inp_t = space.model_input(mu_t.view(-1, *([1] * (x0.ndim - 1))) * x0, embeddings)
    t_T_loss = ((inp_t - inp_t.detach().mean(dim=(0, 1), keepdim=True)) ** 2).mean()
    u = torch.rand(b, generator=generator, device=tokens.device) * (1 - t_eps) + t_eps
    x_small = space.noise(x0, u * EMBEDDING_NLL_T_SCALE, generator)
    logits = space.model_input(x_small, embeddings) @ embeddings.T
    decoder_nll = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens.reshape(-1))
    return decoder_nll, t_T_loss


class _WithEmbeddings(nn.Module):
    """The denoiser and a trainable embedding table, optimised together."""

    def __init__(self, denoiser: Denoiser, embeddings: Tensor):
        super().__init__()
        self.denoiser = denoiser
        self.embeddings = nn.Parameter(embeddings.detach().clone())

    def forward(self, *args, **kwargs):  # pragma: no cover - not called
        return self.denoiser(*args, **kwargs)


def join_launched_group() -> bool:
    """Join the process group a launcher started (``WORLD_SIZE`` > 1), once.

    ``torchrun`` and ``accelerate launch`` set ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``
    but leave the group to the script. With ``accelerate`` installed its ``PartialState``
    joins it (gloo on the CPU, nccl with CUDA), so the run is an ordinary accelerate
    run; without it, plain ``torch.distributed`` does. Returns True when a group is
    initialised (now or before); without a launcher it does nothing.
    """
    import torch.distributed as dist

    if not dist.is_available():
        return False
    if dist.is_initialized():
        return True
    if int(os.environ.get("WORLD_SIZE", "1") or 1) <= 1:
        return False
    try:
        from accelerate import PartialState
    except ImportError:  # pragma: no cover - accelerate is a dependency
        from icml26.shared.distributed import init_process_group

        return init_process_group()
    PartialState(cpu=not torch.cuda.is_available())
    return dist.is_initialized()


def _world() -> tuple[int, int]:
    import torch.distributed as dist

    join_launched_group()
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def train_loop(
    model: nn.Module,
    loss_fn: Callable[[Tensor], Tensor],
    n_examples: int,
    config: TrainConfig,
    *,
    seed: int,
    device: str | torch.device = "cpu",
    desc: str = "train",
    callback: Callable[[int, nn.Module], None] | None = None,
) -> TrainResult:
    """Minibatch AdamW until ``Plateau`` on the training loss; ``loss_fn(indices)``.

    Under ``torchrun`` / ``accelerate launch`` (the launcher's group is joined by
    ``join_launched_group`` if the script has not done so) every rank draws its own
    shard of one seeded permutation and gradients are averaged by all-reduce, so the
    replicas stay identical.
    """
    import torch.distributed as dist

    rank, world = _world()
    if world > 1:  # identical start
        for p in model.parameters():
            dist.broadcast(p.data, 0)
    # multi-tensor kernels: the tiny CPU models are bound by per-tensor dispatch overhead
    opt = torch.optim.AdamW(
        model.parameters(),
        lr=config.lr,
        betas=config.betas,
        eps=config.eps,
        weight_decay=config.weight_decay,
        foreach=True,
    )
    warm = max(config.warmup, 1)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm))
    ema = {k: v.detach().clone() for k, v in model.state_dict().items()}
    live = model.state_dict()
    ema_float = [ema[k] for k, v in live.items() if v.is_floating_point()]
    live_float = [v for v in live.values() if v.is_floating_point()]
    ema_other = [(ema[k], v) for k, v in live.items() if not v.is_floating_point()]
    rule = Plateau(config.window, config.patience, config.min_delta, config.cap)
    gen = torch.Generator().manual_seed(seed)
    res = TrainResult()
    start, cpu_start = time.perf_counter(), time.process_time()
    per_rank = max(config.batch_size // world, 1)
    order = torch.randperm(n_examples, generator=gen)
    pos = 0
    bar = progress(total=config.cap, desc=desc, leave=False)
    model.train()
    while not rule.stopped:
        if pos + config.batch_size > n_examples:
            order, pos = torch.randperm(n_examples, generator=gen), 0
        batch = order[pos : pos + config.batch_size][rank * per_rank : (rank + 1) * per_rank]
        pos += config.batch_size
        if len(res.samples) < 4 * per_rank:
            res.samples.extend(batch.tolist())
        loss = loss_fn(batch.to(device))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        value = loss.detach()
        if world > 1:
            for p in model.parameters():
                if p.grad is not None:
                    dist.all_reduce(p.grad)
                    p.grad /= world
            dist.all_reduce(value)
            value /= world
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip, foreach=True)
        opt.step()
        sched.step()
        with torch.no_grad():  # ema ← ema·decay + θ·(1 − decay)
            torch._foreach_lerp_(ema_float, live_float, 1 - config.ema)
            for e, v in ema_other:
                e.copy_(v)
        res.losses.append(float(value))
        rule.update(float(value))
        bar.update(1)
        if callback is not None:
            callback(rule.steps, model)
    bar.close()
    model.eval()
    res.stopping = rule.summary()
    res.seconds = time.perf_counter() - start
    res.cpu_seconds = time.process_time() - cpu_start
    res.ema = ema
    return res


def train_diffusion(
    space: DiffusionSpace,
    model: Denoiser,
    embeddings: Tensor,
    trg: Tensor,
    src: Tensor | None,
    src_mask: Tensor | None,
    config: TrainConfig,
    *,
    seed: int,
    device: str | torch.device = "cpu",
    use_ema: bool = True,
    callback: Callable[[int, nn.Module], None] | None = None,
    train_embeddings: bool = False,
) -> TrainResult:
    """Train ``model`` in ``space`` on token ids ``trg (N, L)`` given source ids ``src``.

    The source enters as its (frozen, normalised) embeddings. With ``use_ema`` the EMA
    weights are loaded at the end (the official code samples from the EMA model).

    ``train_embeddings`` (official ``--train_embeddings``, off by default; Smoothie space
    only) trains the table jointly with the denoiser, by the same AdamW: the loss is the
    x0-MSE (its target and clean latent without gradient) plus :func:`embedding_losses`.
    The source keeps the frozen input table (the official source encoder is a separate,
    untrained module). The EMA covers the denoiser only; the live table is returned in
    ``TrainResult.embeddings`` and is what sampling must use. ``embeddings`` is not
    modified.
    """
    check_embeddings(embeddings)
    if train_embeddings and not isinstance(space, SmoothieSpace):
        raise ValueError(f"train_embeddings needs the Smoothie space, got {space.name!r}")
    v = embeddings.shape[0]
    if trg.ndim != 2 or (trg.min() < 0) or (trg.max() >= v):
        raise ValueError(f"trg must be (N, L) token ids in [0, {v}), got shape {tuple(trg.shape)}")
    # each rank its own noise stream (its own shard of the data comes from train_loop)
    gen = torch.Generator(device=device).manual_seed(seed + 1 + 7919 * _world()[0])
    emb, trg = embeddings.to(device), trg.to(device)
    src = None if src is None else src.to(device)
    src_mask = None if src_mask is None else src_mask.to(device)

    def loss_fn(idx: Tensor) -> Tensor:
        s = None if src is None else emb[src[idx]]
        m = None if src_mask is None else src_mask[idx]
        return diffusion_loss(space, model, emb, trg[idx], s, m, gen, config.t_eps)

    if not train_embeddings:
        res = train_loop(
            model,
            loss_fn,
            trg.shape[0],
            config,
            seed=seed,
            device=device,
            desc=f"train {space.name}",
            callback=callback,
        )
        if use_ema and res.ema is not None:
            model.load_state_dict(res.ema)
        return res

    holder = _WithEmbeddings(model, emb)
    parts: dict[str, list[float]] = {"decoder_nll": [], "t_T_loss": []}

    def joint_loss(idx: Tensor) -> Tensor:
        e = holder.embeddings
        tokens = trg[idx]
        s = None if src is None else emb[src[idx]]  # the frozen source encoder
        m = None if src_mask is None else src_mask[idx]
        loss = diffusion_loss(space, model, e, tokens, s, m, gen, detach_target=True)
        nll, t_t = embedding_losses(space, e, tokens, gen, config.t_eps)
        parts["decoder_nll"].append(float(nll.detach()))
        parts["t_T_loss"].append(float(t_t.detach()))
        return loss + nll + t_t

    inner = None if callback is None else (lambda step, _m: callback(step, model))
    res = train_loop(
        holder,
        joint_loss,
        trg.shape[0],
        config,
        seed=seed,
        device=device,
        desc=f"train {space.name} + embeddings",
        callback=inner,
    )
    res.embeddings = holder.embeddings.detach().clone()
    res.extra_losses = parts
    if use_ema and res.ema is not None:
        prefix = "denoiser."
        model.load_state_dict(
            {k[len(prefix) :]: v for k, v in res.ema.items() if k.startswith(prefix)}
        )
    return res


# -- checkpoints ---------------------------------------------------------------------------
def save_checkpoint(model: Denoiser, path: str | Path) -> Path:
    """Weights as safetensors plus the config as JSON metadata (nothing is pickled)."""
    import json

    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    meta = {
        "config": json.dumps(asdict(model.config)),
        "causal": str(model.causal),
        "timed": str(model.timed),
        "head": str(model.head),
    }
    save_file(tensors, str(path), metadata=meta)
    return path


def load_checkpoint(path: str | Path, device: str | torch.device = "cpu") -> Denoiser:
    """Rebuild a :class:`Denoiser` from :func:`save_checkpoint`'s file."""
    import json

    from safetensors import safe_open
    from safetensors.torch import load_file

    with safe_open(str(path), framework="pt") as fh:
        meta = fh.metadata()
    if not meta or "config" not in meta:
        raise ValueError(f"{path} is not a smoothie checkpoint (no config metadata)")
    cfg = DenoiserConfig(**json.loads(meta["config"]))
    head = None if meta["head"] == "None" else int(meta["head"])
    model = Denoiser(cfg, head=head, causal=meta["causal"] == "True", timed=meta["timed"] == "True")
    model.load_state_dict(load_file(str(path), device=str(device)))
    return model.to(device).eval()
