"""Progress that stays out of the way.

Bars (:func:`progress`) are shown only on an interactive terminal, and never when
``ICML26_QUIET=1``: logs, CI output and captured test output stay clean.

Stages (:func:`stage`) are one-line messages a reproduction sends at the start of
each long step ("training the teacher", "scanning 9 landscapes"). They go to the
``icml26.progress`` logger; the ``icml26`` command shows them on stderr (unless
``-q``), so a piped run is never silent for minutes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterable
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

PROGRESS_LOGGER = "icml26.progress"


def is_quiet() -> bool:
    """True when bars should be hidden: ``ICML26_QUIET=1`` or stderr is not a terminal."""
    if os.environ.get("ICML26_QUIET", "").strip() not in ("", "0"):
        return True
    try:
        return not sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return True


def progress(iterable: Iterable[T] | None = None, **kwargs: Any) -> tqdm:
    """``tqdm(iterable, **kwargs)``, disabled when :func:`is_quiet`."""
    kwargs.setdefault("disable", is_quiet())
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, **kwargs)


def stage(message: str, *args: Any) -> None:
    """Announce a step of a reproduction (``stage("training %d students", n)``)."""
    logging.getLogger(PROGRESS_LOGGER).info(message, *args)


def format_seconds(seconds: float) -> str:
    """``75 -> '1 min 15 s'``, ``8 -> '8 s'``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class SeedReporter:
    """What ``icml26 reproduce`` prints on stderr while seeds run.

    A plain line per seed start and end, with an ETA taken from the seeds done so far
    (before the first one ends, from the preset's measured time when the paper states
    it); stage lines of the reproduction in between.
    """

    def __init__(self, stream: Any = None, expected_seconds: float | None = None):
        self.stream = stream if stream is not None else sys.stderr
        self.expected = expected_seconds

    def __call__(
        self, event: str, paper: str, preset: str, index: int, total: int, elapsed: float
    ) -> None:
        if event == "seed-start":
            if index == 0:
                eta = self.expected * total if self.expected else None
            else:
                eta = elapsed / index * (total - index)
            tail = f", about {format_seconds(eta)} left" if eta else ""
            self.write(f"{paper}/{preset}: seed {index + 1}/{total}{tail}")
        elif event == "seed-end":
            took = format_seconds(elapsed)
            self.write(f"{paper}/{preset}: seed {index + 1}/{total} done ({took} elapsed)")

    def write(self, line: str) -> None:
        # a closed stderr must not stop the run
        with contextlib.suppress(BrokenPipeError, ValueError):
            tqdm.write(f"icml26: {line}", file=self.stream)


class StageHandler(logging.Handler):
    """Writes ``icml26.progress`` stage lines like :class:`SeedReporter` lines."""

    def __init__(self, stream: Any = None):
        super().__init__(logging.INFO)
        self.stream = stream if stream is not None else sys.stderr

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(BrokenPipeError, ValueError):
            tqdm.write(f"icml26:   {record.getMessage()}", file=self.stream)
