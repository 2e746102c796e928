"""The quickstart of a package README, as its tests run it.

Every package tests that its README's quickstart runs as written
(``tests/test_readme.py``); :func:`quickstart_code` is the one reading of "the
quickstart": the first ``python`` code block under the ``## Quickstart`` heading.
"""

from __future__ import annotations

import re
from pathlib import Path

_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def quickstart_code(readme: str | Path, *, heading: str = "Quickstart") -> str:
    """The first ``python`` block after the ``## <heading>`` line of ``readme``."""
    text = Path(readme).read_text(encoding="utf-8")
    match = re.search(rf"^##\s+{re.escape(heading)}\b.*$", text, re.M)
    if match is None:
        raise ValueError(f"{readme} has no '## {heading}' section")
    block = _BLOCK.search(text, match.end())
    if block is None:
        raise ValueError(f"{readme} has no python block after '## {heading}'")
    return block.group(1)
