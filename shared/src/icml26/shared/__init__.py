"""icml26.shared — the core every icml26 paper package builds on.

- the paper registry (:class:`Paper`, :func:`discover`) and the ``icml26`` command;
- reports (:class:`Report`, :class:`Row`, :class:`Stat`, :class:`Check`) and the
  runner :func:`reproduce`;
- explicit seeding, torch thread limits, shared metrics and datasets, progress bars
  and figures.
"""

from icml26.shared.figures import new_figure, save_figure
from icml26.shared.progress import is_quiet, progress
from icml26.shared.registry import (
    BrokenPaper,
    Headline,
    Paper,
    Registry,
    UnknownPaper,
    UnknownPreset,
    discover,
)
from icml26.shared.reproduction import Summary, reproduce, results_dir, summarize
from icml26.shared.results import SCHEMA_VERSION, Check, Environment, Report, Row, Stat
from icml26.shared.seeding import derive_seed, jax_key, numpy_rng, seed_everything, torch_generator
from icml26.shared.threads import torch_threads

__all__ = [
    "SCHEMA_VERSION",
    "BrokenPaper",
    "Check",
    "Environment",
    "Headline",
    "Paper",
    "Registry",
    "Report",
    "Row",
    "Stat",
    "Summary",
    "UnknownPaper",
    "UnknownPreset",
    "derive_seed",
    "discover",
    "is_quiet",
    "jax_key",
    "new_figure",
    "numpy_rng",
    "progress",
    "reproduce",
    "results_dir",
    "save_figure",
    "seed_everything",
    "summarize",
    "torch_generator",
    "torch_threads",
]

__version__ = "0.1.0"
