"""Datasets on disk: MPS model files plus an index, in the official record format.

Two layouts are read by :func:`read_dataset`:

- **this package's** ``index.jsonl`` (one record per line, the official fields —
  ``problem_id``, ``model_file``, ``problem_nl``, ``error_type``,
  ``ground_truth_fix``, ``target_name``, ``iis_constraints``, ``iis_bounds``,
  ``iis_size``, ``original_objective``, ``n_variables``, ``n_constraints`` — plus the
  fix as replayable edits and the intended rows) and ``models/<problem_id>.mps``;
- **the authors' released ORDebug** ``dataset.json`` (a JSON object whose
  ``problems`` list holds records with the official fields as shipped:
  ``problem_type`` ``"lp"``/``"mip"``, ``iis_bounds`` as a list of variable names,
  ``target_type``, ``initial_status``, ``original_status``, ``difficulty`` ...) with
  ``models/*.mps`` next to it. Those records carry no replayable fix and no list of
  the intended rows, and their IIS is Gurobi's: the IIS is recomputed with HiGHS on
  load (``iis="highs"``, the default) and the stored one is kept in
  ``meta["reference_iis"]``; feasibility preservation counts every row of the shipped
  model as intended.

Models of other sources are read with :meth:`~icml26.orloop.model.Model.read`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from icml26.orloop.edits import Edit
from icml26.orloop.iis import IIS, compute_iis
from icml26.orloop.model import Model
from icml26.orloop.saboteur import Instance

INDEX = "index.jsonl"
OFFICIAL_INDEX = "dataset.json"
OFFICIAL_REQUIRED = ("problem_id", "model_file", "error_type")
REQUIRED = (
    "problem_id",
    "model_file",
    "error_type",
    "fix",
    "iis_constraints",
    "iis_bounds",
    "original_objective",
    "original_constraints",
)


def load_model(path: str | Path) -> Model:
    """Read an ``.mps`` or ``.lp`` model (see :meth:`Model.read`)."""
    return Model.read(path)


def write_instance(instance: Instance, out: str | Path) -> dict[str, Any]:
    """Write the instance's MPS file under ``out/models/`` and return its record."""
    out = Path(out)
    rel = f"models/{instance.problem_id}.mps"
    instance.model.write(out / rel)
    return instance.to_record(model_file=rel)


def write_dataset(instances: Iterable[Instance], out: str | Path) -> Path:
    """Write every instance and the ``index.jsonl``; returns the index path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    index = out / INDEX
    with index.open("w") as f:
        for inst in instances:
            f.write(json.dumps(write_instance(inst, out)) + "\n")
    return index


def official_record(instance: Instance, model_file: str) -> dict[str, Any]:
    """The instance as a record of the authors' ``dataset.json`` (their field names)."""
    family = "mip" if instance.family == "milp" else "lp"
    return {
        "problem_id": instance.problem_id,
        "model_file": model_file,
        "problem_nl": instance.problem_nl,
        "error_type": instance.error_type,
        "error_description": "",
        "ground_truth_fix": instance.ground_truth_fix,
        "target_name": instance.target_name,
        "target_type": "variable"
        if instance.model.has_col(instance.target_name)
        and not instance.model.has_row(instance.target_name)
        else "constraint",
        "initial_status": "INFEASIBLE",
        "original_status": "OPTIMAL",
        "original_objective": instance.original_objective,
        "n_variables": instance.model.n_cols,
        "n_constraints": instance.model.n_rows,
        "iis_constraints": list(instance.iis.rows),
        "iis_bounds": list(instance.iis.columns),
        "iis_size": instance.iis.size,
        "difficulty": instance.difficulty,
        "problem_type": family,
        "use_robust": True,
    }


def write_official_dataset(
    instances: Iterable[Instance], out: str | Path, *, name: str = "ordebug"
) -> Path:
    """Write ``dataset.json`` and ``models/*.mps`` in the layout of the authors' release."""
    out = Path(out)
    problems = []
    for inst in instances:
        rel = f"models/{inst.problem_id}.mps"
        inst.model.write(out / rel)
        problems.append(official_record(inst, rel))
    out.mkdir(parents=True, exist_ok=True)
    path = out / OFFICIAL_INDEX
    doc = {"dataset_name": name, "num_problems": len(problems), "problems": problems}
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The records of an ``index.jsonl`` (or of the one inside a dataset directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / INDEX
    if not path.is_file():
        raise FileNotFoundError(f"no dataset index at {path}")
    with path.open() as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise ValueError(f"{path}:{lineno}: not a JSON record: {err.msg}") from None
            missing = [k for k in REQUIRED if k not in rec]
            if missing:
                raise ValueError(f"{path}:{lineno}: record lacks fields {missing}")
            yield rec


def read_official_records(path: str | Path) -> list[dict[str, Any]]:
    """The ``problems`` of an official ORDebug ``dataset.json`` (or of the one in a directory)."""
    path = Path(path)
    if path.is_dir():
        path = path / OFFICIAL_INDEX
    if not path.is_file():
        raise FileNotFoundError(f"no dataset.json at {path}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}:{err.lineno}: not a JSON document: {err.msg}") from None
    problems = data.get("problems") if isinstance(data, dict) else data
    if not isinstance(problems, list):
        raise ValueError(f"{path}: expected an object with a 'problems' list (or a list)")
    for k, rec in enumerate(problems):
        if not isinstance(rec, dict):
            raise ValueError(f"{path}: problem {k} is not a JSON object")
        missing = [f for f in OFFICIAL_REQUIRED if f not in rec]
        if missing:
            raise ValueError(f"{path}: problem {k} ({rec.get('problem_id')!r}) lacks {missing}")
    return problems


def _official_instance(rec: dict[str, Any], root: Path, iis: str) -> Instance:
    model = Model.read(root / rec["model_file"])
    kind = str(rec.get("problem_type", "")).lower()
    family = "milp" if kind in ("mip", "milp") else "lp" if kind == "lp" else None
    family = family or ("milp" if model.is_mip else "lp")
    stored_rows = tuple(str(r) for r in rec.get("iis_constraints") or ())
    stored_cols = tuple(
        str(b[0]) if isinstance(b, list | tuple) else str(b) for b in rec.get("iis_bounds") or ()
    )
    if iis == "highs":
        found = compute_iis(model)
    else:  # the stored Gurobi IIS; Gurobi names bounds without the side, so "boxed"
        found = IIS(stored_rows, tuple((c, "boxed") for c in stored_cols), "stored", True)
    z = rec.get("original_objective")
    return Instance(
        problem_id=str(rec["problem_id"]),
        family=family,
        error_type=str(rec["error_type"]),
        model=model,
        fix=[],
        ground_truth_fix=str(rec.get("ground_truth_fix", "")),
        target_name=str(rec.get("target_name", "")),
        iis=found,
        original_objective=None if z is None else float(z),
        original_constraints=list(model.row_names),
        problem_nl=str(rec.get("problem_nl", "")),
        meta={
            "source": "official",
            "reference_iis": {"constraints": list(stored_rows), "bounds": list(stored_cols)},
            **{
                k: rec[k]
                for k in ("target_type", "difficulty", "iis_size", "original_status")
                if k in rec
            },
        },
    )


def read_dataset(
    path: str | Path, *, iis: str = "highs", limit: int | None = None
) -> list[Instance]:
    """Instances from a dataset directory or index file, in either layout (see the module).

    ``iis`` chooses, for the authors' records, the IIS the episodes start from and
    DA is scored against: ``"highs"`` (recomputed, the default) or ``"stored"``
    (Gurobi's, as shipped). ``limit`` reads only the first records.
    """
    if iis not in ("highs", "stored"):
        raise ValueError(f"iis must be 'highs' or 'stored', got {iis!r}")
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    path = Path(path)
    root = path if path.is_dir() else path.parent
    official = (path / OFFICIAL_INDEX).is_file() and not (path / INDEX).is_file()
    if path.is_file():
        official = path.suffix == ".json"
    if official:
        recs = read_official_records(path)[:limit]
        return [_official_instance(r, root, iis) for r in recs]
    out = []
    for rec in read_records(path):
        if limit is not None and len(out) >= limit:
            break
        model = Model.read(root / rec["model_file"])
        found = IIS(
            tuple(rec["iis_constraints"]),
            tuple((c, s) for c, s in rec["iis_bounds"]),
            rec.get("iis_method", "highs"),
            True,
        )
        out.append(
            Instance(
                problem_id=rec["problem_id"],
                family=rec.get("family", "milp" if model.is_mip else "lp"),
                error_type=rec["error_type"],
                model=model,
                fix=[Edit.from_dict(e) for e in rec["fix"]],
                ground_truth_fix=rec.get("ground_truth_fix", ""),
                target_name=rec.get("target_name", ""),
                iis=found,
                original_objective=float(rec["original_objective"]),
                original_constraints=list(rec["original_constraints"]),
                problem_nl=rec.get("problem_nl", ""),
                meta=rec.get("meta", {}),
                seed=rec.get("seed"),
            )
        )
    return out
