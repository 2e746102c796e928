"""The paper registry: every installed paper publishes one :class:`Paper`.

A paper package declares, in its ``pyproject.toml``::

    [project.entry-points."icml26.papers"]
    mspca = "icml26.mspca.reproduce:PAPER"

and the ``icml26`` command finds it through :func:`discover`. A paper that fails to
import is reported by name with its error; it never hides the others.

A package may also add subcommands to ``icml26`` through the group
``icml26.commands`` (``orloop = "icml26.orloop.cli:main"``): ``icml26 orloop ...``
then calls ``main(argv)`` with the remaining arguments.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from icml26.shared.results import Check, Report

PAPERS_GROUP = "icml26.papers"
COMMANDS_GROUP = "icml26.commands"
REQUIRED_PRESETS = ("smoke", "paper")

RunFn = Callable[[Any, int, Path], Report]
JudgeFn = Callable[[Report, Any], list[Check]]
PlotFn = Callable[[Report, Path], list[Path]]


@dataclass(frozen=True)
class Headline:
    """The metric that sums a paper up in ``icml26 reproduce --all``.

    ``group`` picks one setting of the table (None averages over the settings
    where the method appears); ``ignore`` names rows that are not baselines
    (the paper's own variants, oracles, upper bounds, the method under attack), as
    exact names or shell-style patterns (``"fine-tune *"``).
    """

    metric: str
    higher_is_better: bool = True
    group: str | None = None
    ignore: tuple[str, ...] = ()

    def ignores(self, method: str) -> bool:
        """True when ``method`` is not a baseline for the headline comparison."""
        return any(method == pat or fnmatch.fnmatchcase(method, pat) for pat in self.ignore)


@dataclass(frozen=True)
class Paper:
    """What a paper package tells the ``icml26`` command about itself.

    ``run(config, seed, out)`` runs one seed of a preset and returns its
    :class:`Report`; ``judge(report, config)`` checks the claim on the report merged
    over seeds; ``plot(report, out)``, when given, writes figures and returns their
    paths. ``seconds_per_seed`` gives the measured time of one seed per preset (on 2
    CPU cores for ``smoke``): the command's help and ETA show it.
    """

    name: str
    title: str
    arxiv: str | None
    claim: str
    criterion: str
    presets: Mapping[str, Any]
    run: RunFn
    judge: JudgeFn
    method: str
    headline: Headline
    default_seeds: int = 3
    plot: PlotFn | None = None
    code: str | None = None
    authors: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    seconds_per_seed: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.name):
            raise ValueError(
                f"paper name must be a lowercase distribution suffix, got {self.name!r}"
            )
        missing = [p for p in REQUIRED_PRESETS if p not in self.presets]
        if missing:
            raise ValueError(f"paper {self.name!r} lacks presets {missing}")
        if self.default_seeds < 1:
            raise ValueError(f"default_seeds must be >= 1, got {self.default_seeds}")

    @property
    def distribution(self) -> str:
        return f"icml26-{self.name}"

    def preset(self, name: str) -> Any:
        """The config of a preset; an unknown name raises :class:`UnknownPreset`."""
        try:
            return self.presets[name]
        except KeyError:
            raise UnknownPreset(self.name, name, list(self.presets)) from None


class UnknownPaper(LookupError):
    def __init__(self, name: str, known: list[str]):
        self.name, self.known = name, known
        listed = ", ".join(known) if known else "none installed"
        super().__init__(f"unknown paper {name!r}; known papers: {listed}")


class UnknownPreset(LookupError):
    def __init__(self, paper: str, name: str, known: list[str]):
        self.paper, self.name, self.known = paper, name, known
        super().__init__(f"paper {paper!r} has no preset {name!r}; presets: {', '.join(known)}")


class BrokenPaper(RuntimeError):
    """A paper whose entry point is installed but fails to load."""


class Registry:
    """The installed papers, found by entry point and imported only when asked for.

    ``get(name)`` imports that paper alone, so reproducing one paper neither pays for
    nor depends on the imports of the others; ``papers`` and ``broken`` import all.
    """

    def __init__(self, entry_points: dict[str, metadata.EntryPoint]):
        self.entry_points = dict(sorted(entry_points.items()))
        self._papers: dict[str, Paper] = {}
        self._broken: dict[str, str] = {}

    @property
    def names(self) -> list[str]:
        return list(self.entry_points)

    def _load(self, name: str) -> None:
        if name in self._papers or name in self._broken:
            return
        ep = self.entry_points[name]
        try:
            obj = ep.load()
            if not isinstance(obj, Paper):
                raise TypeError(f"{ep.value} is a {type(obj).__name__}, not an icml26 Paper")
            if obj.name != ep.name:
                raise ValueError(f"entry point {ep.name!r} publishes a paper named {obj.name!r}")
        except Exception as err:  # any plugin failure is reported, never fatal
            self._broken[name] = f"{type(err).__name__}: {err}"
        else:
            self._papers[name] = obj

    def summaries(self) -> dict[str, str]:
        """Each paper's one-line description from its distribution's metadata (its
        ``Summary``; the distribution name when there is none), without importing it."""
        out = {}
        for name, ep in self.entry_points.items():
            meta = ep.dist.metadata if ep.dist is not None else {}
            out[name] = (meta.get("Summary") or meta.get("Name") or "").strip()
        return out

    @property
    def papers(self) -> dict[str, Paper]:
        """Every paper that loads, by name (imports all of them)."""
        for name in self.entry_points:
            self._load(name)
        return {n: self._papers[n] for n in self.entry_points if n in self._papers}

    @property
    def broken(self) -> dict[str, str]:
        """Every paper that fails to load, with its error (imports all of them)."""
        for name in self.entry_points:
            self._load(name)
        return {n: self._broken[n] for n in self.entry_points if n in self._broken}

    def get(self, name: str) -> Paper:
        if name not in self.entry_points:
            raise UnknownPaper(name, self.names)
        self._load(name)
        if name in self._broken:
            raise BrokenPaper(
                f"paper {name!r} is installed but fails to load: {self._broken[name]}"
            )
        return self._papers[name]


def discover() -> Registry:
    """The papers published under the ``icml26.papers`` entry-point group."""
    return Registry({ep.name: ep for ep in metadata.entry_points(group=PAPERS_GROUP)})


def commands() -> dict[str, metadata.EntryPoint]:
    """Subcommands that packages add to ``icml26`` (group ``icml26.commands``)."""
    return {ep.name: ep for ep in metadata.entry_points(group=COMMANDS_GROUP)}
