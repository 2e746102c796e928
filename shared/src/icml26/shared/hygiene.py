"""Output hygiene: what a user sees during ``icml26`` commands is ours.

Third-party libraries log at INFO or DEBUG (bm25s, lightning, scvi, jax's platform
probe) and raise deprecation warnings from their own imports (torch_geometric,
lightning). :func:`quiet_dependencies` sets every non-``icml26`` logger to WARNING
and filters the warnings that come from inside dependencies, for the duration of a
reproduction or a benchmark; ``icml26.*`` loggers are left alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from collections.abc import Iterator

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
    """Set every known third-party logger, and every existing non-icml26 one, to ``level``."""
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(level)
    for name in list(logging.root.manager.loggerDict):
        if not name.startswith("icml26"):
            logging.getLogger(name).setLevel(max(level, logging.getLogger(name).level))
    # lightning prints its tips through rank_zero_info and an env switch
    os.environ.setdefault("LITLOGGER_DISABLE", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


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
