"""icml26.shared — the core every icml26 paper package builds on.

- the paper registry (:class:`Paper`, :func:`discover`) and the ``icml26`` command;
- reports (:class:`Report`, :class:`Row`, :class:`Stat`, :class:`Check`) and the
  runner :func:`reproduce`;
- explicit seeding, torch thread limits, a convergence rule (:class:`Plateau`),
  shared metrics and datasets, progress bars and figures (mean ± sd error bars, captions);
- output hygiene (:func:`quiet_dependencies`) and one writer under a launcher
  (:func:`is_main_process`, :func:`barrier`).
"""

from icml26.shared.distributed import barrier, is_main_process, main_process_first, rank, world_size
from icml26.shared.figures import (
    FigurePath,
    errorbar_bars,
    errorbar_lines,
    new_figure,
    save_figure,
    spread,
)
from icml26.shared.hygiene import import_quietly, quiet_dependencies
from icml26.shared.progress import is_quiet, progress
from icml26.shared.readme import quickstart_code
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
from icml26.shared.stopping import Plateau
from icml26.shared.threads import torch_threads

__all__ = [
    "SCHEMA_VERSION",
    "BrokenPaper",
    "Check",
    "Environment",
    "FigurePath",
    "Headline",
    "Paper",
    "Plateau",
    "Registry",
    "Report",
    "Row",
    "Stat",
    "Summary",
    "UnknownPaper",
    "UnknownPreset",
    "barrier",
    "derive_seed",
    "discover",
    "errorbar_bars",
    "errorbar_lines",
    "import_quietly",
    "is_main_process",
    "is_quiet",
    "jax_key",
    "main_process_first",
    "new_figure",
    "numpy_rng",
    "progress",
    "quickstart_code",
    "quiet_dependencies",
    "rank",
    "reproduce",
    "results_dir",
    "save_figure",
    "seed_everything",
    "spread",
    "summarize",
    "torch_generator",
    "torch_threads",
    "world_size",
]

__version__ = "0.2.5"
