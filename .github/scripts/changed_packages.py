#!/usr/bin/env python3
"""Map changed files to the nox test sessions CI must run, as a JSON list.

    git diff --name-only BASE...HEAD | python .github/scripts/changed_packages.py

A change under packages/<dist>/ or benchmarks/<dist>/ selects that paper; a change
to shared/, uv.lock, noxfile.py, the root pyproject.toml or .github/ selects every
paper (and test-shared). Other files (docs) select nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVERYTHING = ("shared/", "uv.lock", "noxfile.py", "pyproject.toml", ".github/", ".ci/")


def sessions_for(changed: list[str], packages: list[str]) -> list[str]:
    if any(f == e or f.startswith(e) for f in changed for e in EVERYTHING):
        return ["test-shared", *(f"test-{p}" for p in packages)]
    picked = set()
    for f in changed:
        parts = f.split("/")
        if len(parts) > 2 and parts[0] in ("packages", "benchmarks") and parts[1] in packages:
            picked.add(parts[1])
    return [f"test-{p}" for p in sorted(picked)]


def main() -> int:
    packages = sorted(
        p.name for p in (ROOT / "packages").glob("*") if (p / "pyproject.toml").is_file()
    )
    changed = [line.strip() for line in sys.stdin if line.strip()]
    print(json.dumps(sessions_for(changed, packages)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
