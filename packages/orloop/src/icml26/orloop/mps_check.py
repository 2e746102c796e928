"""A line-by-line check of MPS files, so that a malformed file fails with its line number.

HiGHS reads MPS itself (``Highs.readModel``) but reports a bad file only as a failed
status. This checker walks the sections (``NAME``, ``OBJSENSE``, ``ROWS``,
``COLUMNS``, ``RHS``, ``RANGES``, ``BOUNDS``, ``ENDATA``) of a free- or fixed-format
file whose names contain no spaces, and raises :class:`MPSFormatError`
(a ``ValueError``) as ``path:line: what is wrong``.
"""

from __future__ import annotations

import math
from pathlib import Path

SECTIONS = {
    "NAME",
    "OBJSENSE",
    "OBJNAME",
    "ROWS",
    "COLUMNS",
    "RHS",
    "RANGES",
    "BOUNDS",
    "SOS",
    "QUADOBJ",
    "QSECTION",
    "QMATRIX",
    "QCMATRIX",
    "CSECTION",
    "INDICATORS",
    "ENDATA",
}
ROW_TYPES = {"N", "L", "G", "E"}
BOUND_TYPES_WITH_VALUE = {"UP", "LO", "FX", "LI", "UI", "SC"}
BOUND_TYPES_NO_VALUE = {"FR", "MI", "PL", "BV"}


class MPSFormatError(ValueError):
    """A malformed MPS file; the message names the file and the line."""


def _number(token: str) -> bool:
    try:
        value = float(token)
    except ValueError:
        return False
    return not math.isnan(value)


def check_mps_file(path: str | Path) -> None:
    """Raise :class:`MPSFormatError` at the first malformed line of an MPS file."""
    path = Path(path)
    raw = path.read_bytes()
    if b"\x00" in raw[:4096]:
        raise MPSFormatError(f"{path}:1: binary data where an MPS text file was expected")
    text = raw.decode("utf-8", errors="replace")
    section: str | None = None
    rows: set[str] = set()
    cols: set[str] = set()
    seen_data = False
    last = 0

    def fail(lineno: int, why: str, line: str) -> None:
        raise MPSFormatError(f"{path}:{lineno}: {why}: {line.strip()!r}")

    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("*"):
            continue
        last = lineno
        tokens = line.split()
        if not line[0].isspace():  # a section header starts in column 1
            head = tokens[0].upper()
            if head == "NAME":
                section = "NAME"
                continue
            if head == "OBJSENSE":
                section = "OBJSENSE"
                if len(tokens) > 1 and tokens[1].upper() not in (
                    "MAX",
                    "MIN",
                    "MAXIMIZE",
                    "MINIMIZE",
                ):
                    fail(lineno, "OBJSENSE must be MAX or MIN", line)
                continue
            if " ".join(tokens).upper() not in SECTIONS and head not in SECTIONS:
                fail(lineno, f"unknown section {tokens[0]!r}", line)
            section = head
            if section == "ENDATA":
                return
            continue
        seen_data = True
        if section is None:
            fail(lineno, "data line before any section header", line)
        if section == "OBJSENSE":
            if tokens[0].upper() not in ("MAX", "MIN", "MAXIMIZE", "MINIMIZE"):
                fail(lineno, "OBJSENSE must be MAX or MIN", line)
        elif section == "ROWS":
            if len(tokens) != 2 or tokens[0].upper() not in ROW_TYPES:
                fail(lineno, "a ROWS line is a type (N, L, G, E) and a row name", line)
            if tokens[1] in rows:
                fail(lineno, f"row {tokens[1]!r} declared twice", line)
            rows.add(tokens[1])
        elif section == "COLUMNS":
            if "'MARKER'" in (t.upper() for t in tokens):
                continue
            if len(tokens) not in (3, 5):
                fail(lineno, "a COLUMNS line is: column row value [row value]", line)
            for r, v in zip(tokens[1::2], tokens[2::2], strict=True):
                if r not in rows:
                    fail(lineno, f"row {r!r} is not declared in ROWS", line)
                if not _number(v):
                    fail(lineno, f"{v!r} is not a number", line)
            cols.add(tokens[0])
        elif section in ("RHS", "RANGES"):
            if len(tokens) not in (2, 3, 4, 5):
                fail(lineno, f"a {section} line is: [set] row value [row value]", line)
            pairs = tokens[1:] if len(tokens) % 2 == 1 else tokens
            for r, v in zip(pairs[0::2], pairs[1::2], strict=True):
                if r not in rows:
                    fail(lineno, f"row {r!r} is not declared in ROWS", line)
                if not _number(v):
                    fail(lineno, f"{v!r} is not a number", line)
        elif section == "BOUNDS":
            kind = tokens[0].upper()
            if kind in BOUND_TYPES_WITH_VALUE:
                if len(tokens) not in (3, 4) or not _number(tokens[-1]):
                    fail(lineno, f"bound {kind} needs: [set] column value", line)
            elif kind in BOUND_TYPES_NO_VALUE:
                if len(tokens) not in (2, 3, 4):
                    fail(lineno, f"bound {kind} needs: [set] column", line)
            else:
                fail(lineno, f"unknown bound type {tokens[0]!r}", line)
            has_value = kind in BOUND_TYPES_WITH_VALUE
            col = tokens[-2] if has_value else tokens[-1]
            if col not in cols:
                fail(lineno, f"column {col!r} is not declared in COLUMNS", line)
    if not seen_data:
        raise MPSFormatError(f"{path}:1: no ROWS or COLUMNS data found; is this an MPS file?")
    raise MPSFormatError(
        f"{path}:{last}: the file ends without ENDATA (truncated?) in section {section}"
    )
