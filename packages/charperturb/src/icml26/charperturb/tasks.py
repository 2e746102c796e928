"""Generated tasks and sentences, written as JSONL with per-item perturbation metadata.

The paper's data are not offline (its named coding set is the Luogu Official Contest);
these generators are **ours** [inferred]: templated fact cloze with four options,
synthetic arithmetic word problems, short coding-style prompts and a restoration task
(scored by edit distance), plus a small grammar of plain sentences for the
fragmentation study. Perturbations apply to the prompt only; answer options are
protected words and digits/operators are never touched by the word operators.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from icml26.charperturb.invisible import inject_invisible, inject_visible
from icml26.charperturb.perturbation import Perturbed, make_rng
from icml26.charperturb.shuffle import shuffle_words
from icml26.charperturb.typos import add_typos

__all__ = [
    "CLOZE_FACTS",
    "TASKS",
    "Item",
    "make_items",
    "perturb_item",
    "read_jsonl",
    "sentences",
    "write_jsonl",
]

#: (prompt, answer, distractors): short, well-known facts with one-word answers
CLOZE_FACTS: tuple[tuple[str, str, tuple[str, str, str]], ...] = (
    ("The capital of France is", "Paris", ("Berlin", "Rome", "Madrid")),
    ("The capital of Germany is", "Berlin", ("Paris", "Rome", "Madrid")),
    ("The capital of Italy is", "Rome", ("Paris", "Berlin", "Madrid")),
    ("The capital of Spain is", "Madrid", ("Paris", "Berlin", "Rome")),
    ("The capital of Japan is", "Tokyo", ("Beijing", "Seoul", "Bangkok")),
    ("The capital of China is", "Beijing", ("Tokyo", "Seoul", "Bangkok")),
    ("The capital of England is", "London", ("Paris", "Dublin", "Madrid")),
    ("The capital of Russia is", "Moscow", ("London", "Paris", "Rome")),
    ("The capital of Egypt is", "Cairo", ("Nairobi", "Lagos", "Rome")),
    ("The capital of Canada is", "Ottawa", ("Toronto", "Paris", "London")),
    ("The sky on a clear day is", "blue", ("green", "red", "yellow")),
    ("Grass is usually", "green", ("blue", "red", "purple")),
    ("Snow is", "white", ("black", "green", "red")),
    ("The opposite of hot is", "cold", ("big", "fast", "green")),
    ("The opposite of up is", "down", ("left", "red", "fast")),
    ("The opposite of day is", "night", ("water", "car", "green")),
    ("The opposite of black is", "white", ("fast", "tall", "dog")),
    ("A baby dog is called a", "puppy", ("kitten", "calf", "foal")),
    ("A baby cat is called a", "kitten", ("puppy", "calf", "foal")),
    ("The sun rises in the", "east", ("west", "north", "south")),
    ("Water freezes at zero degrees", "Celsius", ("Kelvin", "meters", "grams")),
    ("One week has seven", "days", ("cars", "trees", "cats")),
    ("A year has twelve", "months", ("legs", "cars", "trees")),
    ("Bees make", "honey", ("milk", "bread", "steel")),
    ("Cows give us", "milk", ("honey", "wool", "steel")),
    ("The largest ocean on Earth is the", "Pacific", ("Atlantic", "Indian", "Arctic")),
    ("The first month of the year is", "January", ("March", "June", "October")),
    ("The day after Monday is", "Tuesday", ("Friday", "Sunday", "Thursday")),
    ("The planet we live on is called", "Earth", ("Mars", "Venus", "Jupiter")),
    ("A triangle has three", "sides", ("wheels", "eyes", "legs")),
    ("Fish live in", "water", ("trees", "sand", "fire")),
    ("Birds can", "fly", ("swim", "read", "sing")),
    ("The color of a ripe banana is", "yellow", ("blue", "purple", "black")),
    ("The king of the jungle is the", "lion", ("mouse", "frog", "owl")),
    ("We see with our", "eyes", ("ears", "feet", "hands")),
    ("We hear with our", "ears", ("eyes", "feet", "knees")),
    ("Ice is frozen", "water", ("milk", "sand", "air")),
    ("The Statue of Liberty is in New", "York", ("Jersey", "Delhi", "Zealand")),
    ("Shakespeare wrote Romeo and", "Juliet", ("Jane", "Mary", "Anna")),
    ("The chemical symbol for water is", "H2O", ("CO2", "NaCl", "O3")),
)

_NAMES = ("Tom", "Anna", "Lisa", "Omar", "Mei", "Ravi", "Sara", "Ben")
_OBJECTS = ("apples", "books", "coins", "pens", "cards", "stones", "shells", "stamps")
_ADJ = ("small", "old", "bright", "quiet", "green", "heavy", "happy", "tired", "clever")
_NOUN = ("teacher", "dog", "river", "garden", "doctor", "window", "student", "train", "city")
_VERB = ("watched", "found", "painted", "visited", "followed", "cleaned", "opened", "carried")
_PLACE = ("near the station", "in the morning", "after the rain", "behind the house",
          "before dinner", "at the market", "during the summer", "under the bridge")  # fmt: skip
_FUNCS = (
    ("add", "a, b", "the sum of a and b", "return a + b"),
    ("square", "x", "x multiplied by itself", "return x * x"),
    ("is_even", "n", "True when n is even", "return n % 2 == 0"),
    ("first", "items", "the first element of items", "return items[0]"),
    ("maximum", "a, b", "the larger of a and b", "return max(a, b)"),
)
TASKS = ("cloze", "arithmetic", "coding", "restoration")


@dataclass
class Item:
    """One task item; ``perturbation`` is the operator metadata (empty when clean)."""

    id: str
    task: str
    prompt: str
    answer: str
    options: list[str] = field(default_factory=list)
    clean_prompt: str = ""
    perturbation: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; known: {', '.join(TASKS)}")
        if not isinstance(self.prompt, str) or not isinstance(self.answer, str):
            raise TypeError("prompt and answer must be strings")
        if self.options and self.answer not in self.options:
            raise ValueError(f"item {self.id}: answer {self.answer!r} is not among its options")
        if not self.clean_prompt:
            self.clean_prompt = self.prompt


def sentences(n: int, rng: np.random.Generator | int) -> list[str]:
    """``n`` distinct-ish plain English sentences from a small grammar (digits included)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    rng = make_rng(rng)

    def pick(xs):
        return xs[int(rng.integers(len(xs)))]

    out = []
    for _ in range(n):
        s = (
            f"The {pick(_ADJ)} {pick(_NOUN)} {pick(_VERB)} {int(rng.integers(2, 13))} "
            f"{pick(_OBJECTS)} {pick(_PLACE)}, and the {pick(_NOUN)} was {pick(_ADJ)}."
        )
        out.append(s)
    return out


def _cloze(i: int, rng: np.random.Generator) -> Item:
    prompt, answer, others = CLOZE_FACTS[i % len(CLOZE_FACTS)]
    options = [answer, *others]
    rng.shuffle(options)
    return Item(f"cloze-{i}", "cloze", prompt, answer, options)


def _arithmetic(i: int, rng: np.random.Generator) -> Item:
    name, obj = _NAMES[int(rng.integers(len(_NAMES)))], _OBJECTS[int(rng.integers(len(_OBJECTS)))]
    a, b = int(rng.integers(2, 20)), int(rng.integers(2, 20))
    prompt = f"{name} has {a} {obj} and gets {b} more. How many {obj} does {name} have now?"
    answer = str(a + b)
    distract = sorted({str(a + b + d) for d in (-2, -1, 1, 2)} - {answer})[:3]
    options = [answer, *distract]
    rng.shuffle(options)
    return Item(f"arithmetic-{i}", "arithmetic", prompt, answer, options)


def _coding(i: int, rng: np.random.Generator) -> Item:
    name, args, what, body = _FUNCS[i % len(_FUNCS)]
    prompt = f"Write a Python function {name}({args}) that returns {what}."
    return Item(f"coding-{i}", "coding", prompt, f"def {name}({args}):\n    {body}")


def _restoration(i: int, rng: np.random.Generator) -> Item:
    s = sentences(1, rng)[0]
    return Item(f"restoration-{i}", "restoration", s, s)


_MAKERS = {"cloze": _cloze, "arithmetic": _arithmetic, "coding": _coding,
           "restoration": _restoration}  # fmt: skip


def make_items(task: str, n: int, rng: np.random.Generator | int) -> list[Item]:
    """``n`` generated items of one task (cloze cycles through :data:`CLOZE_FACTS`)."""
    if task not in _MAKERS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    rng = make_rng(rng)
    return [_MAKERS[task](i, rng) for i in range(n)]


def perturb_item(item: Item, operator: str, *, rng: np.random.Generator | int, **kw) -> Item:
    """A copy of ``item`` whose prompt went through one operator (options protected).

    ``operator``: ``ucc_inj`` (kwargs of :func:`inject_invisible`), ``visible_noise``,
    ``typos`` (``p``), ``shuffle`` (``q``).
    """
    rng = make_rng(rng)
    text = item.clean_prompt
    p: Perturbed
    if operator == "ucc_inj":
        p = inject_invisible(text, rng=rng, **kw)
    elif operator == "visible_noise":
        p = inject_visible(text, rng=rng, **kw)
    elif operator == "typos":
        p = add_typos(text, rng=rng, protect=item.options, **kw)
    elif operator == "shuffle":
        p = shuffle_words(text, rng=rng, protect=item.options, **kw)
    else:
        raise ValueError(
            f"unknown operator {operator!r}; known: ucc_inj, visible_noise, typos, shuffle"
        )
    meta = p.metadata()
    return Item(item.id, item.task, p.text, item.answer, list(item.options), text, meta)


def write_jsonl(items: Iterable[Item], path: str | Path) -> Path:
    """One JSON object per line (UTF-8; invisible characters kept as they are)."""
    path = Path(path)
    with path.open("w", encoding="utf-8") as f:
        for it in items:
            f.write(json.dumps(asdict(it), ensure_ascii=False) + "\n")
    return path


def read_jsonl(path: str | Path) -> Iterator[Item]:
    """Items back from :func:`write_jsonl`; a malformed line raises ValueError with its number."""
    with Path(path).open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield Item(**json.loads(line))
            except (json.JSONDecodeError, TypeError) as err:
                raise ValueError(f"{path}: line {n} is not an Item: {err}") from err
