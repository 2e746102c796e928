"""Reports: the comparison table of one reproduction, its claim check and its provenance.

A paper's ``run(config, seed, out)`` returns a :class:`Report` for one seed; the
runner merges the per-seed reports (:meth:`Report.merge`), asks the paper to judge
its claim on the merged table, and writes ``report.json`` and ``report.md``.

Each metric cell is a :class:`Stat`: the raw values it was computed from (one per
seed after merging, or one per trial if a paper records trials), shown as
mean ± sd. Keeping the values, not just the summary, is what lets a claim be
checked on paired seeds and lets a report be re-read and re-judged later.
"""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Stat:
    """The values behind one table cell, summarised as mean ± sd (ddof = 1)."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        values = tuple(float(v) for v in np.ravel(np.asarray(self.values, dtype=float)))
        if not values:
            raise ValueError("a Stat needs at least one value")
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"a Stat takes finite values only, got {values}")
        object.__setattr__(self, "values", values)

    @classmethod
    def of(cls, values: float | Iterable[float]) -> Stat:
        """A Stat from one number or a sequence of numbers."""
        return cls(tuple(np.ravel(np.asarray(values, dtype=float))))

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def mean(self) -> float:
        return float(np.mean(self.values))

    @property
    def sd(self) -> float:
        return float(np.std(self.values, ddof=1)) if self.n > 1 else 0.0

    def format(self, digits: int = 3) -> str:
        if self.n == 1:
            return f"{self.mean:.{digits}g}"
        return f"{self.mean:.{digits}g} ± {self.sd:.2g}"

    def __str__(self) -> str:
        return self.format()


@dataclass
class Row:
    """One method (within one setting, ``group``) and its metrics."""

    method: str
    metrics: dict[str, Stat]
    group: str = ""

    @classmethod
    def of(cls, method: str, group: str = "", **metrics: float | Iterable[float]) -> Row:
        """``Row.of("MS-PCA", group="π=5%", alignment=0.98, time_ms=[12.0, 13.1])``."""
        return cls(method=method, group=group, metrics={k: Stat.of(v) for k, v in metrics.items()})


@dataclass(frozen=True)
class Check:
    """One part of a claim, judged on the merged report."""

    name: str
    holds: bool
    detail: str = ""


@dataclass
class Environment:
    """Where and how a report was produced."""

    python: str
    platform: str
    packages: dict[str, str]
    device: str
    seeds: list[int]
    config: dict[str, Any]
    git_revision: str | None = None
    cpu_count: int | None = None
    git_dirty: bool | None = None
    finished_at: str | None = None

    @classmethod
    def capture(cls, *, distribution: str | None, seeds: Sequence[int], config: Any) -> Environment:
        return cls(
            python=sys.version.split()[0],
            platform=platform.platform(),
            packages=package_versions(distribution),
            device=describe_device(),
            seeds=[int(s) for s in seeds],
            config=config_to_dict(config),
            git_revision=git_revision(),
            cpu_count=os.cpu_count(),
            git_dirty=git_dirty(),
            finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )


@dataclass
class Report:
    """The comparison table of a reproduction, its claim and whether it held."""

    rows: list[Row]
    paper: str = ""
    preset: str = ""
    claim: str = ""
    criterion: str = ""
    checks: list[Check] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)
    captions: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    wall_time_s: float = 0.0
    environment: Environment | None = None

    # -- access -----------------------------------------------------------------
    @property
    def holds(self) -> bool | None:
        """True when every check holds, False when one fails, None when nothing was judged."""
        return all(c.holds for c in self.checks) if self.checks else None

    @property
    def methods(self) -> list[str]:
        return list(dict.fromkeys(r.method for r in self.rows))

    @property
    def groups(self) -> list[str]:
        return list(dict.fromkeys(r.group for r in self.rows))

    @property
    def metric_names(self) -> list[str]:
        return list(dict.fromkeys(m for r in self.rows for m in r.metrics))

    def row(self, method: str, group: str = "") -> Row:
        for r in self.rows:
            if r.method == method and r.group == group:
                return r
        raise KeyError(
            f"no row for method {method!r} in group {group!r}; "
            f"methods: {self.methods}, groups: {self.groups}"
        )

    def stat(self, method: str, metric: str, group: str = "") -> Stat:
        row = self.row(method, group)
        if metric not in row.metrics:
            raise KeyError(
                f"row {method!r}/{group!r} has no metric {metric!r}; has {list(row.metrics)}"
            )
        return row.metrics[metric]

    # -- combination ------------------------------------------------------------
    @classmethod
    def merge(cls, reports: Sequence[Report]) -> Report:
        """Pool per-seed reports: the values of each (group, method, metric) cell are
        concatenated in seed order, records and notes are concatenated."""
        if not reports:
            raise ValueError("merge needs at least one report")
        cells: dict[tuple[str, str], dict[str, list[float]]] = {}
        for rep in reports:
            for r in rep.rows:
                cell = cells.setdefault((r.group, r.method), {})
                for name, stat in r.metrics.items():
                    cell.setdefault(name, []).extend(stat.values)
        first = reports[0]
        return cls(
            rows=[
                Row(method=m, group=g, metrics={k: Stat(tuple(v)) for k, v in ms.items()})
                for (g, m), ms in cells.items()
            ],
            paper=first.paper,
            preset=first.preset,
            claim=first.claim,
            criterion=first.criterion,
            records=[rec for rep in reports for rec in rep.records],
            figures=list(dict.fromkeys(f for rep in reports for f in rep.figures)),
            captions={k: v for rep in reports for k, v in rep.captions.items()},
            notes=list(dict.fromkeys(n for rep in reports for n in rep.notes)),
            seeds=[s for rep in reports for s in rep.seeds],
            wall_time_s=sum(rep.wall_time_s for rep in reports),
        )

    # -- serialisation ----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "paper": self.paper,
            "preset": self.preset,
            "claim": self.claim,
            "criterion": self.criterion,
            "holds": self.holds,
            "checks": [asdict(c) for c in self.checks],
            "rows": [
                {
                    "group": r.group,
                    "method": r.method,
                    "metrics": {
                        k: {"mean": s.mean, "sd": s.sd, "n": s.n, "values": list(s.values)}
                        for k, s in r.metrics.items()
                    },
                }
                for r in self.rows
            ],
            "records": _json_safe(self.records),
            "figures": list(self.figures),
            "captions": dict(self.captions),
            "notes": list(self.notes),
            "seeds": list(self.seeds),
            "wall_time_s": self.wall_time_s,
            "environment": _json_safe(asdict(self.environment)) if self.environment else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ValueError(f"report schema version {version!r} is not {SCHEMA_VERSION}")
        env = data.get("environment")
        return cls(
            rows=[
                Row(
                    method=r["method"],
                    group=r.get("group", ""),
                    metrics={k: Stat(tuple(v["values"])) for k, v in r["metrics"].items()},
                )
                for r in data["rows"]
            ],
            paper=data.get("paper", ""),
            preset=data.get("preset", ""),
            claim=data.get("claim", ""),
            criterion=data.get("criterion", ""),
            checks=[Check(**c) for c in data.get("checks", [])],
            records=list(data.get("records", [])),
            figures=list(data.get("figures", [])),
            captions=dict(data.get("captions", {})),
            notes=list(data.get("notes", [])),
            seeds=list(data.get("seeds", [])),
            wall_time_s=float(data.get("wall_time_s", 0.0)),
            environment=Environment(**env) if env else None,
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)

    @classmethod
    def read(cls, path: str | Path) -> Report:
        """Read a ``report.json`` written by :meth:`write` (plain JSON, never pickle)."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not a JSON report: {err}") from err
        return cls.from_dict(data)

    def table_markdown(self, digits: int = 3) -> str:
        """The comparison table: one row per (group, method), one column per metric."""
        metrics = self.metric_names
        show_group = any(self.groups)
        head = (["setting"] if show_group else []) + ["method", *metrics]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for r in self.rows:
            cells = [r.metrics[m].format(digits) if m in r.metrics else "" for m in metrics]
            lines.append(
                "| " + " | ".join(([r.group] if show_group else []) + [r.method, *cells]) + " |"
            )
        return "\n".join(lines)

    def to_markdown(self) -> str:
        verdict = {True: "holds", False: "does NOT hold", None: "not judged"}[self.holds]
        parts = [
            f"# {self.paper} — preset `{self.preset}`",
            "",
            f"**Claim.** {self.claim}",
            "",
            f"**Criterion.** {self.criterion}",
            "",
            f"**Verdict: the claim {verdict}** (seeds {self.seeds}, {self.wall_time_s:.1f} s).",
            "",
            "Cells are mean ± sd over the values pooled across seeds.",
            "",
            self.table_markdown(),
            "",
        ]
        if self.checks:
            parts += ["## Checks", ""]
            parts += [
                f"- [{'x' if c.holds else ' '}] {c.name}" + (f" — {c.detail}" if c.detail else "")
                for c in self.checks
            ]
            parts.append("")
        if self.notes:
            parts += ["## Notes", "", *[f"- {n}" for n in self.notes], ""]
        if self.figures:
            parts += ["## Figures", ""]
            for f in self.figures:
                parts += [f"![{f}]({f})", ""]
                parts += [f"*{self.captions[f]}*", ""] if self.captions.get(f) else []
        if self.environment:
            env = self.environment
            parts += [
                "## Environment",
                "",
                f"- python {env.python} on {env.platform}, {env.cpu_count} CPUs",
                f"- device: {env.device}",
                f"- git revision: {env.git_revision or 'unknown'}"
                + (" (with uncommitted changes)" if env.git_dirty else ""),
                f"- finished at: {env.finished_at or 'unknown'}",
                "- packages: " + ", ".join(f"{k} {v}" for k, v in sorted(env.packages.items())),
                "- config: `" + json.dumps(_json_safe(env.config), ensure_ascii=False) + "`",
                "",
            ]
        return "\n".join(parts)

    def write(self, out: str | Path) -> list[Path]:
        """Write ``report.json`` and ``report.md`` into ``out`` (created if needed)."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / "report.json", out / "report.md"]
        paths[0].write_text(self.to_json() + "\n")
        paths[1].write_text(self.to_markdown())
        return paths


# -- provenance helpers ---------------------------------------------------------------


def config_to_dict(config: Any) -> dict[str, Any]:
    """A JSON-safe view of a preset config (a dataclass, a mapping, or anything else)."""
    if is_dataclass(config) and not isinstance(config, type):
        return _json_safe({f.name: getattr(config, f.name) for f in fields(config)})
    if isinstance(config, Mapping):
        return _json_safe(dict(config))
    return {"repr": repr(config)}


def package_versions(distribution: str | None) -> dict[str, str]:
    """Versions of a distribution, its direct requirements, and the core numeric stack."""
    names = ["icml26-shared", "numpy"]
    if distribution:
        names.insert(0, distribution)
        try:
            for req in metadata.requires(distribution) or []:
                if "extra ==" in req:
                    continue
                name = req.split(";")[0].strip()
                for sep in "<>=!~[ (":
                    name = name.split(sep)[0]
                names.append(name)
        except metadata.PackageNotFoundError:
            pass
    versions = {}
    for name in dict.fromkeys(names):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def describe_device() -> str:
    """The accelerator the frameworks already imported by the run would use."""
    parts = []
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            if torch.cuda.is_available():
                parts.append(f"torch: cuda ({torch.cuda.get_device_name(0)})")
            else:
                parts.append("torch: cpu")
        except Exception:  # a broken CUDA install must not break the report
            parts.append("torch: unknown")
    jax = sys.modules.get("jax")
    if jax is not None:
        try:
            parts.append(f"jax: {jax.default_backend()} ({jax.devices()[0].device_kind})")
        except Exception:
            parts.append("jax: unknown")
    return "; ".join(parts) or "cpu"


def _git(*args: str) -> str | None:
    """``git args`` run where icml26-shared's source lives (a checkout, when installed
    editable from one), else in the working directory; None when neither is a checkout."""
    for where in (Path(__file__).resolve().parent, Path.cwd()):
        try:
            out = subprocess.run(
                ["git", *args], capture_output=True, text=True, timeout=5, check=False, cwd=where
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0:
            return out.stdout
    return None


def git_revision() -> str | None:
    """The commit of the checkout icml26 runs from, when it runs from one."""
    rev = (_git("rev-parse", "HEAD") or "").strip()
    return rev or None


def git_dirty() -> bool | None:
    """Whether that checkout has uncommitted changes to tracked files (None: no checkout)."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return None if status is None else bool(status.strip())


def _json_safe(obj: Any) -> Any:
    """Convert numpy scalars/arrays, tuples, paths and dataclasses to plain JSON types."""
    if isinstance(obj, Mapping):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if is_dataclass(obj) and not isinstance(obj, type):
        return _json_safe(asdict(obj))
    if isinstance(obj, list | tuple | set | frozenset):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        return _json_safe(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, str | int | float | bool) or obj is None:
        return obj
    if isinstance(obj, Path):
        return str(obj)
    return repr(obj)
