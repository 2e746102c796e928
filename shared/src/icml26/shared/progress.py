"""Progress bars that stay out of the way.

A bar is shown only on an interactive terminal, and never when ``ICML26_QUIET=1``:
logs, CI output and captured test output stay clean.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


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
