"""Batched trials over all local devices; the implementation lives in
:mod:`icml26.shared.sharding` (shared with gausscbo) and is re-exported here."""

from icml26.shared import sharding as _shared
from icml26.shared.sharding import *  # noqa: F403

__all__ = list(_shared.__all__)
