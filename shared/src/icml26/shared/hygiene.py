"""Output hygiene: what a user sees during ``icml26`` commands is ours.

Third-party libraries log at INFO or DEBUG (bm25s, lightning, scvi, jax's platform
probe) and raise deprecation warnings from their own imports (torch_geometric,
lightning). :func:`quiet_dependencies` raises every non-``icml26`` logger to WARNING
and filters the warnings that come from inside dependencies, for the duration of a
reproduction or a benchmark; ``icml26.*`` loggers are left alone.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import sys
import warnings
from collections.abc import Iterator
from types import ModuleType

# Loggers known to speak at import or fit time; set before they are created, so a
# library that configures its own handler later still inherits WARNING.
NOISY_LOGGERS = (
    "bm25s",
    "lightning",
    "lightning.pytorch",
    "lightning.fabric",
    "lightning_fabric",
    "pytorch_lightning",
    "scvi",
    "jax",
    "jax._src.xla_bridge",
    "absl",
    "matplotlib",
    "PIL",
    "numba",
    "h5py",
    "anndata",
    "scanpy",
    "torch_geometric",
    "urllib3",
    "filelock",
    "fsspec",
    "httpx",
    "sentence_transformers",
    "transformers",
    "huggingface_hub",
    "accelerate",
    "datasets",
    "highspy",
)

# Warning categories filtered when they are raised from a dependency's own module.
DEPENDENCY_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def silence_loggers(level: int = logging.WARNING) -> None:
    """Raise every known third-party logger, and every non-icml26 one below it, to ``level``.

    Levels are only raised: a library switched to ERROR (``transformers``'
    ``set_verbosity_error``) stays there. A logger that already inherits ``level`` or
    more from its parents stays unset, so it keeps following its library's own
    verbosity switch; pinning it would override that switch, and transformers even runs
    a tensor-parallel check that warns "layers were not sharded" on every model load
    once ``transformers.modeling_utils`` has an explicit level of WARNING or more.
    """
    for name in NOISY_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(max(level, logger.level))
    # parents first, so that a child which inherits a raised level is left unset
    names = sorted(logging.root.manager.loggerDict, key=lambda n: n.count("."))
    for name in names:
        if name.startswith("icml26"):
            continue
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() < level:
            logger.setLevel(level)
    # lightning prints its tips through rank_zero_info and an env switch
    os.environ.setdefault("LITLOGGER_DISABLE", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    _filter_structlog(level)


def _filter_structlog(level: int) -> None:
    """structlog bypasses ``logging`` (d3rlpy logs every epoch through it at INFO).

    Only when a dependency has already imported it: importing structlog here would
    cost every command an import for the few that use it.
    """
    structlog = sys.modules.get("structlog")
    if structlog is not None:
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level))


def import_quietly(name: str, level: int = logging.WARNING) -> ModuleType:
    """Import ``name`` with what it prints at import time kept off the user's terminal.

    Some dependencies print notices to stdout or stderr on import (gym's "unmaintained"
    banner, pulled in by d3rlpy) or configure their own logging there; the import runs
    with both streams captured, then :func:`silence_loggers` runs again so that a
    configuration made during the import is brought back to ``level``. Import errors
    propagate unchanged, with the captured text appended to the message.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a module name, got {name!r}")
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured), contextlib.redirect_stderr(captured):
            module = importlib.import_module(name)
    except ImportError as err:
        text = captured.getvalue().strip()
        if not text:
            raise
        raise type(err)(f"{err}\n{text}", name=err.name, path=err.path) from err
    silence_loggers(level)
    return module


@contextlib.contextmanager
def quiet_dependencies(level: int = logging.WARNING) -> Iterator[None]:
    """Third-party loggers at ``level`` and their deprecation warnings filtered, inside."""
    silence_loggers(level)
    with warnings.catch_warnings():
        for category in DEPENDENCY_WARNINGS:
            # module regex: anything that is not our own code
            warnings.filterwarnings("ignore", category=category, module=r"^(?!icml26)")
        warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*deprecated.*")
        warnings.filterwarnings("ignore", message=r".*litlogger.*")
        yield
        silence_loggers(level)
