"""The probe fixture: a char-level transformer whose denoising behaviour is known.

A 2-layer causal transformer (d = 64) learns to read the last of six digits
(``"381526=" → "6"``: a previous-token rule that inserted noise breaks; "max" and a
key → value lookup are other tasks),
once on clean prompts and once with variation selectors
inserted after every prompt character (UCC-Inj, k ~ U{0 … k_max}). Only the second
model must learn to ignore the noise, so the implicit-denoising probes
(:mod:`icml26.charperturb.probes`) must show less attention on noise and a higher
clean/noisy CKA for it. This validates the probe code on a known answer; it is not
evidence for the paper's claim about large LLMs. Training stops by
:class:`icml26.shared.Plateau` on the training loss (plus a 0.01-nat floor, see
:class:`FixtureConfig`).
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from icml26.charperturb.charsets import get_charset
from icml26.charperturb.invisible import inject_invisible
from icml26.charperturb.probes import attention_noise_mass, linear_cka, visible_attention_kl
from icml26.shared import Plateau

__all__ = ["FixtureConfig", "LookupTransformer", "encode_lookup", "probe_fixture", "train_fixture"]


@dataclass(frozen=True)
class FixtureConfig:
    """The fixture's task, model and training rule."""

    # "last": the last of n_digits digits (a previous-token rule that noise breaks);
    # "max": the largest digit; "lookup": key -> value
    task: str = "last"
    n_digits: int = 6
    n_keys: int = 6  # lookup keys are the first n_keys lowercase letters
    n_pairs: int = 3
    noise_set: str = "vs"
    noise_set_size: int = 16
    noise_k_max: int = 3  # noisy training: k ~ U{0 … k_max} per prompt, after every character
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 2
    batch: int = 32
    lr: float = 3e-3
    window: int = 25
    patience: int = 3
    min_delta: float = 0.05
    cap: int = 1000
    # the rule watches loss + floor: a relative plateau never fires on a loss that keeps
    # halving towards 0; below 0.01 nats the answer's probability already exceeds 0.99
    loss_floor: float = 0.01


class _Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (b, h, n, dh)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads)
        causal = torch.ones(n, n, dtype=torch.bool, device=x.device).triu(1)
        attn = scores.masked_fill(causal, float("-inf")).softmax(-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.ln2(x)), attn


class LookupTransformer(nn.Module):
    """Token + learned position embeddings, pre-LN blocks, a readout at the last token."""

    def __init__(self, vocab: int, config: FixtureConfig, max_len: int = 256):
        super().__init__()
        self.tok = nn.Embedding(vocab, config.d_model)
        self.pos = nn.Embedding(max_len, config.d_model)
        self.blocks = nn.ModuleList(
            _Block(config.d_model, config.n_heads) for _ in range(config.n_layers)
        )
        self.ln = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, vocab)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, list, list]:
        """Logits at the last position, per-layer attention (b, h, n, n) and hidden states."""
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(pos)
        attns, hiddens = [], []
        for blk in self.blocks:
            x, a = blk(x)
            attns.append(a)
            hiddens.append(x)
        return self.head(self.ln(x[:, -1])), attns, hiddens


def _vocab(config: FixtureConfig) -> dict[str, int]:
    chars = list(string.ascii_lowercase[: config.n_keys]) + list(string.digits) + ["?", "="]
    chars += list(get_charset(config.noise_set).subset(config.noise_set_size))
    return {c: i for i, c in enumerate(chars)}


def _prompt(config: FixtureConfig, rng: np.random.Generator) -> tuple[str, str]:
    if config.task in ("max", "last"):
        digits = rng.integers(0, 10, config.n_digits)
        answer = digits.max() if config.task == "max" else digits[-1]
        return "".join(map(str, digits)), str(answer)
    keys = rng.choice(config.n_keys, size=config.n_pairs, replace=False)
    vals = rng.integers(0, 10, config.n_pairs)
    q = int(rng.integers(config.n_pairs))
    body = "".join(f"{string.ascii_lowercase[k]}{v}" for k, v in zip(keys, vals, strict=True))
    return f"{body}?{string.ascii_lowercase[keys[q]]}", str(vals[q])


def encode_lookup(
    config: FixtureConfig, rng: np.random.Generator, n: int, k: int | tuple[int, int] | None
) -> tuple[list[str], list[str], list[np.ndarray | None], list[str]]:
    """``n`` prompts: clean texts, noisy texts (``k`` fixed, a (k_min, k_max) range, or
    None = clean), noise positions, answers. The readout marker ``=`` is never noised."""
    cleans, noisys, noise_pos, answers = [], [], [], []
    for _ in range(n):
        p, a = _prompt(config, rng)
        if k is None:
            noisy, pos = p, None
        else:
            kw = {"k": k} if isinstance(k, int) else {"k_min": k[0], "k_max": k[1]}
            pert = inject_invisible(
                p, config.noise_set, set_size=config.noise_set_size, rng=rng, **kw
            )
            noisy, pos = pert.text, pert.positions
        cleans.append(p + "=")
        noisys.append(noisy + "=")
        noise_pos.append(pos)
        answers.append(a)
    return cleans, noisys, noise_pos, answers


def _batch(vocab: dict[str, int], texts: list[str]) -> torch.Tensor:
    """Token IDs of equal-length texts (callers group by length)."""
    return torch.tensor([[vocab[c] for c in t] for t in texts], dtype=torch.long)


def _grouped_loss(model, vocab, texts, answers) -> torch.Tensor:
    by_len: dict[int, list[int]] = {}
    for i, t in enumerate(texts):
        by_len.setdefault(len(t), []).append(i)
    total = torch.zeros(())
    for idx in by_len.values():
        logits, _, _ = model(_batch(vocab, [texts[i] for i in idx]))
        target = torch.tensor([vocab[answers[i]] for i in idx])
        total = total + nn.functional.cross_entropy(logits, target, reduction="sum")
    return total / len(texts)


@dataclass
class TrainedFixture:
    model: LookupTransformer
    vocab: dict[str, int]
    config: FixtureConfig
    noisy_training: bool
    stopping: dict
    losses: list[float]


def train_fixture(
    config: FixtureConfig, *, noisy: bool, seed: int, cap: int | None = None
) -> TrainedFixture:
    """Train on clean (``noisy=False``) or VS-noised prompts until the loss plateaus."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    vocab = _vocab(config)
    model = LookupTransformer(len(vocab), config)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr)
    rule = Plateau(config.window, config.patience, config.min_delta, cap or config.cap)
    losses = []
    while not rule.stopped:
        # one fixed k per prompt (k ~ U{0 … k_max}): at most k_max + 1 lengths per batch
        ks = rng.integers(0, config.noise_k_max + 1, config.batch) if noisy else [None]
        texts, answers = [], []
        for k in sorted(set(ks.tolist()) if noisy else ks, key=lambda x: x or 0):
            m = int(np.sum(ks == k)) if noisy else config.batch
            _, t, _, a = encode_lookup(config, rng, m, None if k == 0 else k)
            texts += t
            answers += a
        loss = _grouped_loss(model, vocab, texts, answers)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        rule.update(losses[-1] + config.loss_floor)
    model.eval()
    return TrainedFixture(model, vocab, config, noisy, rule.summary(), losses)


@torch.no_grad()
def probe_fixture(trained: TrainedFixture, *, k: int, n: int, seed: int) -> dict[str, float]:
    """Accuracy clean/noisy and the three probes at fixed ``k`` on ``n`` fresh prompts."""
    cfg, vocab, model = trained.config, trained.vocab, trained.model
    rng = np.random.default_rng(seed)
    cleans, noisys, positions, answers = encode_lookup(cfg, rng, n, k)
    correct_c = correct_n = 0
    mass, kl, readout = [], [], []
    hid_c: list[list[np.ndarray]] = [[] for _ in range(cfg.n_layers)]
    hid_n: list[list[np.ndarray]] = [[] for _ in range(cfg.n_layers)]
    for c, z, pos, a in zip(cleans, noisys, positions, answers, strict=True):
        lc, ac, hc = model(_batch(vocab, [c]))
        ln, an, hn = model(_batch(vocab, [z]))
        correct_c += int(lc.argmax(-1).item() == vocab[a])
        correct_n += int(ln.argmax(-1).item() == vocab[a])
        noise = np.zeros(len(z), dtype=bool)
        noise[pos] = True
        visible = np.flatnonzero(~noise)
        mass.append([attention_noise_mass(an[i][0].numpy(), noise).mean() for i in range(len(an))])
        # the readout row ("=", last position) is where the answer is computed
        readout.append([an[i][0, :, -1][:, noise].sum(-1).mean().item() for i in range(len(an))])
        kl.append(
            [visible_attention_kl(ac[i][0].numpy(), an[i][0].numpy(), visible).mean()
             for i in range(len(an))]
        )  # fmt: skip
        for i in range(cfg.n_layers):
            hid_c[i].append(hc[i][0].numpy())
            hid_n[i].append(hn[i][0][visible].numpy())
    cka = [
        linear_cka(np.concatenate(hid_c[i]), np.concatenate(hid_n[i])) for i in range(cfg.n_layers)
    ]
    return {
        "acc_clean": correct_c / n,
        "acc_noisy": correct_n / n,
        "noise_attention_mass": float(np.mean(readout)),
        "noise_attention_mass_all_rows": float(np.mean(mass)),
        "visible_attention_kl": float(np.mean(kl)),
        "cka_mean": float(np.mean(cka)),
        "cka_last": float(cka[-1]),
        "noise_share": float(
            np.mean([len(p) / len(z) for p, z in zip(positions, noisys, strict=True)])
        ),
    }
