"""Edits of a model, as data: the saboteur's ground-truth fixes and the agents' repairs.

An :class:`Edit` is one change (drop a row, set row or column bounds, set a
coefficient, set integrality) that serialises to a JSON dict, so that a dataset
record can carry the exact fix that turns a sabotaged model back into the intended
one, and validation can replay it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from icml26.orloop.model import Model

OPS = ("drop_row", "set_row_bounds", "set_col_bounds", "set_coefficient", "set_integrality")


@dataclass(frozen=True)
class Edit:
    """``op`` on ``row`` and/or ``col``; ``lower``/``upper`` for bounds, ``value`` otherwise."""

    op: str
    row: str | None = None
    col: str | None = None
    lower: float | None = None
    upper: float | None = None
    value: float | None = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"unknown edit {self.op!r}; expected one of {OPS}")
        needs_row = self.op in ("drop_row", "set_row_bounds", "set_coefficient")
        needs_col = self.op in ("set_col_bounds", "set_coefficient", "set_integrality")
        if needs_row and not self.row:
            raise ValueError(f"edit {self.op} needs a row")
        if needs_col and not self.col:
            raise ValueError(f"edit {self.op} needs a column")
        if self.op in ("set_row_bounds", "set_col_bounds") and (
            self.lower is None or self.upper is None
        ):
            raise ValueError(f"edit {self.op} needs lower and upper")
        if self.op in ("set_coefficient", "set_integrality") and self.value is None:
            raise ValueError(f"edit {self.op} needs a value")

    def apply(self, model: Model) -> Model:
        """Apply in place to ``model`` (and return it)."""
        if self.op == "drop_row":
            return model.drop_rows([self.row])  # type: ignore[list-item]
        if self.op == "set_row_bounds":
            return model.set_row_bounds(self.row, self.lower, self.upper)  # type: ignore[arg-type]
        if self.op == "set_col_bounds":
            return model.set_col_bounds(self.col, self.lower, self.upper)  # type: ignore[arg-type]
        if self.op == "set_coefficient":
            return model.set_coefficient(self.row, self.col, self.value)  # type: ignore[arg-type]
        return model.set_integrality(self.col, bool(self.value))  # type: ignore[arg-type]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        for key in ("row", "col"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        for key in ("lower", "upper", "value"):
            v = getattr(self, key)
            if v is not None:
                out[key] = _num_out(v)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Edit:
        if not isinstance(data, Mapping) or "op" not in data:
            raise ValueError(f"an edit is a dict with an 'op', got {data!r}")
        unknown = set(data) - {"op", "row", "col", "lower", "upper", "value"}
        if unknown:
            raise ValueError(f"unknown edit fields {sorted(unknown)}")
        return cls(
            op=str(data["op"]),
            row=data.get("row"),
            col=data.get("col"),
            lower=_num_in(data.get("lower")),
            upper=_num_in(data.get("upper")),
            value=_num_in(data.get("value")),
        )


def apply_edits(model: Model, edits: Iterable[Edit]) -> Model:
    """A copy of ``model`` with ``edits`` applied in order."""
    out = model.copy()
    for e in edits:
        e.apply(out)
    return out


def _num_out(v: float) -> float | str:
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return float(v)


def _num_in(v: Any) -> float | None:
    if v is None:
        return None
    if isinstance(v, str):
        if v in ("inf", "+inf", "Infinity"):
            return math.inf
        if v in ("-inf", "-Infinity"):
            return -math.inf
    try:
        out = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"expected a number, got {v!r}") from None
    if math.isnan(out):
        raise ValueError("NaN is not a valid edit value")
    return out
