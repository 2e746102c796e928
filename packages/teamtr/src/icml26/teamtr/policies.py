"""Agent policies: tiny causal transformers for CPU, Hugging Face causal LMs for ``paper``.

A policy maps a batch of token ids ``[B, T]`` (its own view of the shared context) to
next-token logits ``[B, T, V]``. The team's agents are independent modules with their
own parameters and optimisers (the official code lacks per-agent optimisers; here each
agent has its own).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

__all__ = ["HFPolicy", "PolicySpec", "TinyCausalLM", "load_policy", "make_policy", "save_policy"]


@dataclass(frozen=True)
class PolicySpec:
    """Size of one tiny causal transformer (pre-norm, learned positions)."""

    d_model: int = 32
    layers: int = 2
    heads: int = 2
    vocab: int = 20
    max_len: int = 32

    def __post_init__(self) -> None:
        for name in ("d_model", "layers", "heads", "vocab", "max_len"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"PolicySpec.{name} must be a positive integer, got {value!r}")
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by heads {self.heads}")


class TinyCausalLM(nn.Module):
    """A small decoder-only transformer (``nn.TransformerEncoderLayer`` with a causal mask)."""

    def __init__(self, spec: PolicySpec):
        super().__init__()
        self.spec = spec
        self.embed = nn.Embedding(spec.vocab, spec.d_model)
        self.position = nn.Embedding(spec.max_len, spec.d_model)
        layer = nn.TransformerEncoderLayer(
            spec.d_model,
            spec.heads,
            dim_feedforward=2 * spec.d_model,
            dropout=0.0,
            batch_first=True,
            norm_first=True,
        )
        self.blocks = nn.TransformerEncoder(layer, spec.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(spec.d_model)
        self.head = nn.Linear(spec.d_model, spec.vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 2:
            raise ValueError(f"tokens must be [batch, time], got shape {tuple(tokens.shape)}")
        t = tokens.shape[1]
        if t > self.spec.max_len:
            raise ValueError(f"sequence of {t} tokens exceeds max_len {self.spec.max_len}")
        pos = torch.arange(t, device=tokens.device)
        h = self.embed(tokens) + self.position(pos)[None]
        mask = torch.triu(torch.full((t, t), float("-inf"), device=tokens.device), diagonal=1)
        h = self.blocks(h, mask=mask, is_causal=True)
        return self.head(self.norm(h))


def make_policy(spec: PolicySpec, generator: torch.Generator | None = None) -> TinyCausalLM:
    """A freshly initialised policy; ``generator`` makes the initial weights reproducible."""
    if generator is None:
        return TinyCausalLM(spec)
    state = torch.random.get_rng_state()
    torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=generator)))
    try:
        return TinyCausalLM(spec)
    finally:
        torch.random.set_rng_state(state)


def save_policy(policy: TinyCausalLM, directory: str | Path) -> Path:
    """``config.json`` + ``model.safetensors`` (nothing pickled)."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(asdict(policy.spec)))
    state = {k: v.detach().cpu().contiguous() for k, v in policy.state_dict().items()}
    save_file(state, str(directory / "model.safetensors"))
    return directory


def load_policy(directory: str | Path) -> TinyCausalLM:
    """Inverse of :func:`save_policy`."""
    from safetensors.torch import load_file

    directory = Path(directory)
    if not (directory / "model.safetensors").is_file():
        raise ValueError(f"{directory} holds no model.safetensors")
    spec = PolicySpec(**json.loads((directory / "config.json").read_text()))
    policy = TinyCausalLM(spec)
    policy.load_state_dict(load_file(str(directory / "model.safetensors")))
    return policy


class HFPolicy(nn.Module):
    """A Hugging Face ``AutoModelForCausalLM`` behind the policy interface (tokens -> logits).

    ``from_config`` builds a randomly initialised model (GPT-2 / Llama configs) over the
    task's vocabulary; ``from_pretrained`` loads local weights. ``lora`` wraps the model
    with ``peft`` LoRA adapters. Needs the ``hf`` extra.
    """

    def __init__(self, model: nn.Module, vocab: int):
        super().__init__()
        self.model = model
        self.spec = PolicySpec(vocab=vocab, d_model=1, layers=1, heads=1, max_len=1 << 16)

    @classmethod
    def from_config(
        cls,
        *,
        vocab: int,
        d_model: int = 768,
        layers: int = 12,
        heads: int = 12,
        max_len: int = 512,
        kind: str = "gpt2",
        lora: int | None = None,
    ) -> HFPolicy:
        from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

        if kind == "gpt2":
            cfg = GPT2Config(
                vocab_size=vocab, n_embd=d_model, n_layer=layers, n_head=heads, n_positions=max_len
            )
        elif kind == "llama":
            cfg = LlamaConfig(
                vocab_size=vocab,
                hidden_size=d_model,
                num_hidden_layers=layers,
                num_attention_heads=heads,
                intermediate_size=4 * d_model,
                max_position_embeddings=max_len,
            )
        else:
            raise ValueError(f"kind must be 'gpt2' or 'llama', got {kind!r}")
        model = AutoModelForCausalLM.from_config(cfg)
        if lora:
            from peft import LoraConfig, get_peft_model

            target = ["c_attn"] if kind == "gpt2" else ["q_proj", "v_proj"]
            model = get_peft_model(model, LoraConfig(r=lora, target_modules=target))
        return cls(model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 2:
            raise ValueError(f"tokens must be [batch, time], got shape {tuple(tokens.shape)}")
        return self.model(input_ids=tokens).logits
