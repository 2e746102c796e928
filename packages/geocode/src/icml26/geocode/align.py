"""Image → plotting IR → answer: the alignment model and its three arms (paper §4.1).

"Predict the plotting IR from the image first, then reason and answer." Every arm sees
the same inputs (the image and the question) and differs only in what it decodes
before the answer:

- ``code``: the IR tokens (:func:`icml26.geocode.ir.ir_tokens`), then the answer;
- ``caption``: a templated caption of the figure, then the answer;
- ``none``: the answer directly.

[substitute] The paper fine-tunes two 7B Qwen VLMs with LoRA (rank 128, 2 epochs)
and then GRPO. Here a small CNN encoder (4 conv layers) gives a 4 × 4 grid of image
tokens, and a 2-layer transformer decoder reads them with the question as a prefix
(full attention inside the prefix, causal after it) and decodes greedily with a key–
value cache. Training is SFT by cross-entropy, stopped by
:class:`icml26.shared.Plateau` on the training loss.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from icml26.geocode.ir import element_f1, ir_tokens, parse_ir, parse_tokens
from icml26.shared import Plateau

__all__ = [
    "ARMS",
    "AlignConfig",
    "AlignModel",
    "GRPOConfig",
    "Vocab",
    "evaluate",
    "grpo",
    "rewards",
    "target_tokens",
    "train",
]

ARMS = ("code", "caption", "none")
SPECIALS = ("<pad>", "<unk>", "<q>", "<ans>", "<eos>")


def answer_token(value: float) -> str:
    return f"a{round(float(value) * 2) / 2:g}"


def caption_tokens(caption: str) -> list[str]:
    words = re.findall(r"[A-Za-z]+|\d+|;", caption)
    return [f"v{w}" if w.isdigit() else w for w in words]


def target_tokens(problem, arm: str) -> list[str]:
    """What an arm decodes: its chain (IR, caption or nothing), then the answer."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; use one of {ARMS}")
    chain: list[str] = []
    if arm == "code":
        chain = [t for t in ir_tokens(parse_ir(problem.ir)) if t != ";"]
    elif arm == "caption":
        chain = caption_tokens(problem.caption)
    return [*chain, "<ans>", answer_token(problem.answer_value), "<eos>"]


def question_tokens(problem, givens: bool = False) -> list[str]:
    """The question's tokens: the target angle's points; with ``givens`` (a diagnostic,
    never a preset) also the two givens' vertices and values, as if read perfectly."""
    extra = [t for v, d in problem.givens for t in (v, f"v{int(d)}")] if givens else []
    return ["<q>", *problem.target, *extra]


@dataclass
class Vocab:
    tokens: list[str]
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.index = {t: i for i, t in enumerate(self.tokens)}

    @classmethod
    def build(cls, problems: Sequence, arms: Sequence[str] = ARMS) -> Vocab:
        from icml26.geocode.ir import GRID, OPS

        fixed = [*SPECIALS, *[chr(c) for c in range(65, 91)], *OPS]
        fixed += [f"x{i}" for i in range(GRID)] + [f"y{i}" for i in range(GRID)]
        fixed += [f"v{i}" for i in range(0, 181, 10)]
        fixed += [answer_token(v / 2) for v in range(0, 361, 5)]
        seen = {t for p in problems for arm in arms for t in target_tokens(p, arm)}
        return cls(list(dict.fromkeys([*fixed, *sorted(seen - set(fixed))])))

    def encode(self, toks: Sequence[str]) -> list[int]:
        unk = self.index["<unk>"]
        return [self.index.get(t, unk) for t in toks]

    def decode(self, ids: Sequence[int]) -> list[str]:
        return [self.tokens[i] for i in ids]

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass(frozen=True)
class AlignConfig:
    """Model and training knobs (JSON-able)."""

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    channels: tuple[int, ...] = (32, 48, 64)
    max_len: int = 224
    batch_size: int = 32
    lr: float = 2e-3
    weight_decay: float = 0.01
    # the convergence rule on the training loss (windows of minibatches)
    window: int = 25
    patience: int = 3
    min_delta: float = 0.02
    cap: int = 600
    blind: bool = False  # the image is blanked (the question-only baseline)
    # diagnostic only: the givens' values are also in the question (reading made perfect)
    givens_in_question: bool = False


class _Block(nn.Module):
    def __init__(self, d: int, h: int):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, mask=None, cache=None):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            if cache:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[:] = [k, v]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class AlignModel(nn.Module):
    """CNN image tokens + question prefix → autoregressive decoder."""

    def __init__(self, vocab_size: int, config: AlignConfig, image_px: int = 64):
        super().__init__()
        c, d = config.channels, config.d_model
        layers, cin = [], 1
        for cout in (*c, d):
            layers += [nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.GELU()]
            cin = cout
        self.cnn = nn.Sequential(*layers)
        side = math.ceil(image_px / 16)
        self.n_img = side * side
        self.img_pos = nn.Parameter(torch.zeros(1, self.n_img, d))
        self.tok = nn.Embedding(vocab_size, d)
        self.pos = nn.Embedding(config.max_len + 8, d)
        self.blocks = nn.ModuleList(_Block(d, config.n_heads) for _ in range(config.n_layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab_size)
        self.config = config
        nn.init.normal_(self.img_pos, std=0.02)

    def image_tokens(self, images: torch.Tensor) -> torch.Tensor:
        if self.config.blind:
            images = torch.zeros_like(images)
        f = self.cnn(images)  # (B, d, s, s)
        return f.flatten(2).transpose(1, 2) + self.img_pos

    def _embed(self, ids: torch.Tensor, start: int) -> torch.Tensor:
        pos = torch.arange(start, start + ids.shape[1], device=ids.device)
        return self.tok(ids) + self.pos(pos)[None]

    def forward(self, images, prefix_ids, target_ids):
        """Logits for every target position (teacher forcing)."""
        img = self.image_tokens(images)
        x = torch.cat(
            [img, self._embed(prefix_ids, 0), self._embed(target_ids, prefix_ids.shape[1])], 1
        )
        n_pre = img.shape[1] + prefix_ids.shape[1]
        t = x.shape[1]
        i = torch.arange(t, device=x.device)
        mask = (i[None, :] <= i[:, None]) | (i[None, :] < n_pre)
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.ln(x[:, n_pre - 1 : -1]))

    @torch.no_grad()
    def generate(
        self,
        images,
        prefix_ids,
        max_new: int,
        eos: int,
        *,
        temperature: float = 0.0,
        generator: torch.Generator | None = None,
    ) -> list[list[int]]:
        """Greedy decoding (``temperature`` 0) or sampling, with a key–value cache."""

        def pick(logits: torch.Tensor) -> torch.Tensor:
            if temperature <= 0:
                return logits.argmax(-1)
            probs = torch.softmax(logits / temperature, -1)
            return torch.multinomial(probs.cpu(), 1, generator=generator)[:, 0].to(logits.device)

        img = self.image_tokens(images)
        x = torch.cat([img, self._embed(prefix_ids, 0)], 1)
        caches: list[list] = [[] for _ in self.blocks]
        for blk, cache in zip(self.blocks, caches, strict=True):
            x = blk(x, None, cache)
        nxt = pick(self.head(self.ln(x[:, -1])))
        out = [nxt]
        done = nxt == eos
        pos = prefix_ids.shape[1]
        for _ in range(max_new - 1):
            if bool(done.all()):
                break
            h = self._embed(nxt[:, None], pos)
            pos += 1
            for blk, cache in zip(self.blocks, caches, strict=True):
                h = blk(h, None, cache)
            nxt = pick(self.head(self.ln(h[:, -1])))
            out.append(nxt)
            done = done | (nxt == eos)
        seqs = torch.stack(out, 1).tolist()
        return [s[: s.index(eos) + 1] if eos in s else s for s in seqs]


def _images(problems: Sequence) -> torch.Tensor:
    arr = np.stack([p.image for p in problems]).astype(np.float32) / 255.0
    return torch.from_numpy(arr)[:, None]


def _pad(seqs: list[list[int]], pad: int = 0) -> torch.Tensor:
    n = max(len(s) for s in seqs)
    return torch.tensor([s + [pad] * (n - len(s)) for s in seqs], dtype=torch.long)


@dataclass
class TrainResult:
    model: AlignModel
    vocab: Vocab
    arm: str
    losses: list[float]
    stopping: dict
    seconds: float
    samples: list[int] = field(default_factory=list)  # the training indices this rank drew
    world_size: int = 1


def train(
    problems: Sequence,
    arm: str,
    config: AlignConfig,
    *,
    seed: int,
    vocab: Vocab | None = None,
    device: str | torch.device = "cpu",
    on_step=None,
) -> TrainResult:
    """SFT of one arm until the training loss plateaus (or the cap).

    ``on_step(step, result)``, when given, is called after every optimiser step with a
    :class:`TrainResult` of the current model in eval mode (the budget study scores
    intermediate budgets with it); training resumes afterwards.
    """
    import time

    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; use one of {ARMS}")
    if len(problems) < config.batch_size:
        raise ValueError(
            f"need at least batch_size={config.batch_size} problems, got {len(problems)}"
        )
    start = time.perf_counter()
    vocab = vocab or Vocab.build(problems)
    accelerator = make_accelerator(device)
    world = accelerator.num_processes
    dev = accelerator.device
    torch.manual_seed(seed)  # the same initial parameters on every rank
    # one seeded stream of minibatches for all ranks; the prepared loader hands rank r
    # the batches r, r + world, ... (on one process: the stream itself, as in 0.3.0)
    gen = torch.Generator().manual_seed(seed * 1009)
    n_batches = config.cap * world
    batches = [
        torch.randint(len(problems), (config.batch_size,), generator=gen).tolist()
        for _ in range(n_batches)
    ]
    loader = DataLoader(range(len(problems)), batch_sampler=batches, collate_fn=torch.tensor)
    images = _images(problems)
    prefix = [vocab.encode(question_tokens(p, config.givens_in_question)) for p in problems]
    targets = [vocab.encode(target_tokens(p, arm))[: config.max_len] for p in problems]
    raw = AlignModel(len(vocab), config, image_px=images.shape[-1])
    opt = torch.optim.AdamW(raw.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    # one CPU process: wrapping the model would only move it (and import
    # torch.distributed's tensor machinery, seconds per process); move it directly
    plain = world == 1 and dev.type == "cpu"
    if plain:
        model = raw.to(dev)
        opt, loader = accelerator.prepare(opt, loader)
        clip = torch.nn.utils.clip_grad_norm_
    else:
        model, opt, loader = accelerator.prepare(raw.to(dev), opt, loader)
        clip = accelerator.clip_grad_norm_
    rule = Plateau(config.window, config.patience, config.min_delta, config.cap)
    losses = []
    seen: list[int] = []
    model.train()
    for batch in loader:
        if rule.stopped:
            break
        idx = batch.tolist()
        seen += idx
        tgt = _pad([targets[i] for i in idx]).to(dev)
        logits = model(images[idx].to(dev), _pad([prefix[i] for i in idx]).to(dev), tgt)
        loss = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=0
        )
        opt.zero_grad(set_to_none=True)
        accelerator.backward(loss)  # data parallelism: the prepared model averages gradients
        clip(model.parameters(), 1.0)
        opt.step()
        value = loss.detach()
        losses.append(float(value))
        if world > 1:  # the monitored loss: the mean over ranks, the same on every rank
            value = accelerator.reduce(value, reduction="mean")
        rule.update(float(value))  # every rank stops at the same step
        if on_step is not None:
            raw.eval()
            on_step(rule.steps, TrainResult(raw, vocab, arm, losses, rule.summary(), 0.0))
            raw.train()
    raw.eval()
    accelerator.wait_for_everyone()
    res = TrainResult(raw, vocab, arm, losses, rule.summary(), time.perf_counter() - start)
    res.samples, res.world_size = seen, world
    return res


def make_accelerator(device: str | torch.device = "cpu"):
    """An ``accelerate.Accelerator`` for ``device`` (the CPU forced when it is the CPU).

    Under ``accelerate launch`` or ``torchrun`` it joins the launched process group
    (gloo on CPUs); in one process it is a thin wrapper.
    """
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    kind = torch.device(device).type
    state = AcceleratorState._shared_state
    if state and getattr(state.get("device"), "type", None) not in (None, kind):
        # one process may switch between CPU and GPU models (tests, notebooks)
        AcceleratorState._reset_state(reset_partial_state=True)
    return Accelerator(cpu=kind == "cpu")


def evaluate(
    result: TrainResult, problems: Sequence, *, batch: int = 128, per_item: bool = False
) -> dict:
    """Greedy decoding on ``problems``: accuracy, parse rate, solve rates, element F1.

    ``per_item``: also return ``"correct_items"``, one bool per problem (for accuracies
    on subsets, e.g. the images whose givens the annotation probe reads).
    """
    model, vocab, arm = result.model, result.vocab, result.arm
    device = next(model.parameters()).device
    eos = vocab.index["<eos>"]
    dist = torch.distributed
    on = dist.is_available() and dist.is_initialized()
    world, me = (dist.get_world_size(), dist.get_rank()) if on else (1, 0)
    # under a launcher each rank decodes its own shard; the rows are gathered below
    mine = list(range(me, len(problems), world)) if world > 1 else list(range(len(problems)))
    rows = []
    for s in range(0, len(mine), batch):
        chunk = [problems[i] for i in mine[s : s + batch]]
        giv = model.config.givens_in_question
        pre = _pad([vocab.encode(question_tokens(p, giv)) for p in chunk]).to(device)
        gold_len = max(len(target_tokens(p, arm)) for p in chunk)
        seqs = model.generate(_images(chunk).to(device), pre, gold_len + 16, eos)
        for p, ids in zip(chunk, seqs, strict=True):
            toks = vocab.decode(ids)
            ans = toks[toks.index("<ans>") + 1] if "<ans>" in toks[:-1] else None
            correct = ans == answer_token(p.answer_value)
            row = {"correct": float(correct)}
            if arm == "code":
                chain = toks[: toks.index("<ans>")] if "<ans>" in toks else toks
                parsed = parse_tokens(_with_separators(chain))
                gold = parse_tokens(_with_separators(target_tokens(p, "code")[:-3]))
                row["parsed"] = float(parsed is not None)
                pred_el = parsed or []
                f1 = element_f1(pred_el, gold or [])
                row.update({f"f1_{k}": v for k, v in f1.items()})
                givens = {e for e in (gold or []) if e[0] == "ANGLE"}
                row["givens_right"] = float(givens <= set(pred_el))
                # parse-free: every given's ANGLE w v u value tokens occur in the chain
                grams = {tuple(chain[i : i + 5]) for i in range(len(chain) - 4)}
                row["givens_in_tokens"] = float(all(tuple(g) in grams for g in givens))
            rows.append(row)
    if world > 1:  # every rank gets all rows, in the problems' order
        from accelerate.utils import gather_object

        pairs = gather_object(list(zip(mine, rows, strict=True)))
        rows = [row for _, row in sorted(pairs, key=lambda pair: pair[0])]
    out = {"accuracy": float(np.mean([r["correct"] for r in rows]))}
    if arm == "code":
        keys = [k for k in rows[0] if k.startswith("f1_")]
        out.update({k: float(np.mean([r[k] for r in rows])) for k in keys})
        out["givens_token_rate"] = float(np.mean([r["givens_in_tokens"] for r in rows]))
        for flag, name in (("parsed", "parse"), ("givens_right", "annotation")):
            yes = [r["correct"] for r in rows if r[flag]]
            no = [r["correct"] for r in rows if not r[flag]]
            out[f"{name}_rate"] = float(np.mean([r[flag] for r in rows]))
            out[f"solve_{name}_ok"] = float(np.mean(yes)) if yes else float("nan")
            out[f"solve_{name}_bad"] = float(np.mean(no)) if no else float("nan")
    if per_item:
        out["correct_items"] = [bool(r["correct"]) for r in rows]
    return out


def _with_separators(tokens: Sequence[str]) -> list[str]:
    """Re-insert the ';' separators the decoder does not emit (ops have fixed arity)."""
    from icml26.geocode.ir import OPS

    extra = {"POINT": 2, "ANGLE": 1}
    out: list[str] = []
    i = 0
    toks = list(tokens)
    while i < len(toks):
        op = toks[i]
        if op not in OPS:
            return [*out, op]  # not an op: the parse fails on it
        n = 1 + OPS[op][0] + extra.get(op, 0)
        out += [*toks[i : i + n], ";"]
        i += n
    return out


def save_checkpoint(result: TrainResult, directory) -> None:
    """``model.safetensors`` and ``config.json`` (vocabulary, arm, model config)."""
    import json
    from dataclasses import asdict
    from pathlib import Path

    from safetensors.torch import save_file

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in result.model.state_dict().items()}
    save_file(state, str(d / "model.safetensors"))
    meta = {"arm": result.arm, "vocab": result.vocab.tokens, "config": asdict(result.model.config)}
    (d / "config.json").write_text(json.dumps(meta))


def load_checkpoint(directory, image_px: int = 64) -> TrainResult:
    import json
    from pathlib import Path

    from safetensors.torch import load_file

    d = Path(directory)
    meta = json.loads((d / "config.json").read_text())
    cfg = meta["config"]
    cfg["channels"] = tuple(cfg["channels"])
    config = AlignConfig(**cfg)
    vocab = Vocab(meta["vocab"])
    model = AlignModel(len(vocab), config, image_px=image_px)
    model.load_state_dict(load_file(str(d / "model.safetensors")))
    model.eval()
    return TrainResult(model, vocab, meta["arm"], [], {}, 0.0)


# -- GRPO (paper §4.1: after SFT, 4 samples, format + answer rewards) ---------------------
@dataclass(frozen=True)
class GRPOConfig:
    """Group-relative policy optimisation after SFT (JSON-able).

    The faithful rewards are ``format`` (the completion ends in ``<ans> a<value> <eos>``
    and, for the code arm, its IR parses) and ``answer`` (the answer token is right).
    ``ir_weight`` > 0 adds an IR reward (the element F1 of the decoded IR against the
    gold IR): an option, not the paper's, and off by default.
    """

    samples: int = 4  # completions per problem (the group)
    batch_size: int = 8  # problems per step
    temperature: float = 1.0
    lr: float = 2e-4
    kl_weight: float = 0.02  # a per-token KL to the SFT model, as in GRPO
    ir_weight: float = 0.0
    # the convergence rule on the training objective (minus the mean reward)
    window: int = 10
    patience: int = 2
    min_delta: float = 0.01
    cap: int = 100


def rewards(tokens: Sequence[str], problem, arm: str, ir_weight: float = 0.0) -> dict:
    """The rewards of one decoded completion: ``format``, ``answer``, ``ir``, ``total``."""
    ok_tail = len(tokens) >= 3 and tokens[-1] == "<eos>" and tokens[-3] == "<ans>"
    ok_tail = ok_tail and tokens.count("<ans>") == 1 and tokens[-2].startswith("a")
    ir = 0.0
    if arm == "code":
        chain = list(tokens[: tokens.index("<ans>")]) if "<ans>" in tokens else list(tokens)
        parsed = parse_tokens(_with_separators(chain))
        ok_tail = ok_tail and parsed is not None
        if ir_weight > 0:
            gold = parse_tokens(_with_separators(target_tokens(problem, "code")[:-3])) or []
            f1 = element_f1(parsed or [], gold)
            ir = float(np.mean(list(f1.values()))) if f1 else 0.0
    fmt = float(ok_tail)
    ans = float(ok_tail and tokens[-2] == answer_token(problem.answer_value))
    return {"format": fmt, "answer": ans, "ir": ir, "total": fmt + ans + ir_weight * ir}


def grpo(
    result: TrainResult,
    problems: Sequence,
    config: GRPOConfig | None = None,
    *,
    seed: int,
) -> TrainResult:
    """GRPO on an SFT model: per problem a group of ``samples`` completions, advantages
    normalised within the group, a per-token KL to the frozen SFT model; stops by
    :class:`~icml26.shared.Plateau` on minus the mean reward (or the cap).

    Returns a new :class:`TrainResult` (the SFT model is not modified) whose
    ``stopping`` also records the mean rewards of the first and last windows.
    """
    import copy
    import time

    config = config or GRPOConfig()
    if config.samples < 2:
        raise ValueError(f"GRPO needs at least 2 samples per group, got {config.samples}")
    if len(problems) < config.batch_size:
        raise ValueError(
            f"need at least batch_size={config.batch_size} problems, got {len(problems)}"
        )
    start = time.perf_counter()
    vocab, arm = result.vocab, result.arm
    policy = copy.deepcopy(result.model)
    ref = result.model
    ref.eval()
    device = next(policy.parameters()).device
    eos = vocab.index["<eos>"]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed * 7919 + 1)
    opt = torch.optim.AdamW(policy.parameters(), lr=config.lr)
    rule = Plateau(config.window, config.patience, config.min_delta, config.cap)
    means: list[float] = []
    g = config.samples
    while not rule.stopped:
        idx = torch.randint(len(problems), (config.batch_size,), generator=gen).tolist()
        chunk = [problems[i] for i in idx for _ in range(g)]
        images = _images(chunk).to(device)
        giv = policy.config.givens_in_question
        prefix = _pad([vocab.encode(question_tokens(p, giv)) for p in chunk]).to(device)
        max_new = max(len(target_tokens(p, arm)) for p in chunk) + 16
        policy.eval()
        seqs = policy.generate(
            images, prefix, max_new, eos, temperature=config.temperature, generator=gen
        )
        r = torch.tensor(
            [
                rewards(vocab.decode(sq), p, arm, config.ir_weight)["total"]
                for sq, p in zip(seqs, chunk, strict=True)
            ]
        ).view(-1, g)
        adv = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).view(-1)
        policy.train()
        tgt = _pad(seqs).to(device)
        mask = torch.zeros_like(tgt, dtype=torch.float32)
        for i, sq in enumerate(seqs):
            mask[i, : len(sq)] = 1.0
        logp = torch.log_softmax(policy(images, prefix, tgt), -1)
        tok = logp.gather(-1, tgt[..., None])[..., 0]
        with torch.no_grad():
            ref_tok = torch.log_softmax(ref(images, prefix, tgt), -1).gather(-1, tgt[..., None])
        diff = ref_tok[..., 0] - tok
        kl = torch.exp(diff) - diff - 1  # the k3 estimator GRPO uses
        per_tok = -(adv.to(device)[:, None] * tok) + config.kl_weight * kl
        loss = ((per_tok * mask).sum(1) / mask.sum(1).clamp(min=1)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
        opt.step()
        mean = float(r.mean())
        means.append(mean)
        rule.update(-mean)
    policy.eval()
    stop = rule.summary()
    w = max(1, min(config.window, len(means)))
    stop.update(reward_first=float(np.mean(means[:w])), reward_last=float(np.mean(means[-w:])))
    return TrainResult(policy, vocab, arm, [-m for m in means], stop, time.perf_counter() - start)
