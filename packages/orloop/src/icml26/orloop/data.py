"""Datasets on disk: MPS model files plus a JSONL index, in the official record format.

A dataset directory holds ``index.jsonl`` (one record per instance, the official
fields — ``problem_id``, ``model_file``, ``problem_nl``, ``error_type``,
``ground_truth_fix``, ``target_name``, ``iis_constraints``, ``iis_bounds``,
``iis_size``, ``original_objective``, ``n_variables``, ``n_constraints`` — plus the
fix as replayable edits) and ``models/<problem_id>.mps``. :func:`read_dataset`
rebuilds :class:`~icml26.orloop.saboteur.Instance` objects from it; models of other
sources are read with :meth:`~icml26.orloop.model.Model.read` (MPS or LP).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from icml26.orloop.edits import Edit
from icml26.orloop.iis import IIS
from icml26.orloop.model import Model
from icml26.orloop.saboteur import Instance

INDEX = "index.jsonl"
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


def read_dataset(path: str | Path) -> list[Instance]:
    """Instances from a directory written by :func:`write_dataset` or ``icml26 orloop generate``."""
    path = Path(path)
    root = path if path.is_dir() else path.parent
    out = []
    for rec in read_records(path):
        model = Model.read(root / rec["model_file"])
        iis = IIS(
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
                iis=iis,
                original_objective=float(rec["original_objective"]),
                original_constraints=list(rec["original_constraints"]),
                problem_nl=rec.get("problem_nl", ""),
                meta=rec.get("meta", {}),
                seed=rec.get("seed"),
            )
        )
    return out
