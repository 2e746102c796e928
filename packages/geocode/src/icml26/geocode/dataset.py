"""Dataset synthesis with its rejection funnel, export, and loaders.

:func:`synthesize` draws symbolic programs one index at a time (index ``i`` uses the
random stream ``(seed, i)``), so a run is deterministic per seed whatever the number of
worker processes. Each program passes the seed filter (:func:`select_seed`), is
instantiated, compiled to IR and verified stage by stage; the :class:`Funnel` counts
rejections per stage with their reasons. With ``faults`` set, a known share of
candidates gets one injected fault of each type, and fault recall per stage is counted.

Formats:

- :func:`export` writes ``problems.jsonl`` (one record a line), ``images/<id>.png`` and
  ``ir/<id>.txt``, plus ``funnel.json`` and ``complexity.json``;
  :func:`load_jsonl` reads it back (images re-rendered from the IR or read from PNG).
- :func:`load_geometry3k` reads the Geometry3K layout: one folder per problem holding
  ``data.json`` (``problem_text``, ``choices``, ``answer`` as a letter ...) and
  ``img_diagram.png``.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from icml26.geocode.instantiate import instantiate
from icml26.geocode.ir import parse_ir, png_to_array
from icml26.geocode.seeds import TIERS, sample_program, select_seed
from icml26.geocode.verify import FAULTS, STAGES, inject, make_candidate, verify
from icml26.shared import main_process_first, numpy_rng

__all__ = [
    "Funnel",
    "Problem",
    "Synthesis",
    "complexity",
    "export",
    "load_geometry3k",
    "load_jsonl",
    "synthesize",
]


@dataclass
class Problem:
    """One verified problem (JSON-able except ``image``)."""

    id: str
    tier: str
    template: str
    composition: str
    roles: tuple[str, str, str]
    target: tuple[str, str, str]
    givens: tuple[tuple[str, int], ...]
    program: str
    question: str
    caption: str
    steps: tuple[str, ...]
    answer: str
    answer_value: float
    ir: str
    image: np.ndarray = field(repr=False)
    png: bytes = field(repr=False, default=b"")

    def record(self) -> dict:
        d = asdict(self)
        d.pop("image"), d.pop("png")
        return d


@dataclass
class Funnel:
    """Counts of the pipeline: programs → seeds → each stage → retained."""

    programs: int = 0
    seeds: int = 0
    rejected: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STAGES, 0))
    seed_rejected: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, dict[str, int]] = field(default_factory=dict)
    retained: int = 0
    # fault type -> [injected, caught by its own stage, caught by another stage, missed]
    faults: dict[str, list[int]] = field(default_factory=dict)

    def add(self, other: Funnel) -> None:
        self.programs += other.programs
        self.seeds += other.seeds
        self.retained += other.retained
        for k, v in other.rejected.items():
            self.rejected[k] = self.rejected.get(k, 0) + v
        for k, v in other.seed_rejected.items():
            self.seed_rejected[k] = self.seed_rejected.get(k, 0) + v
        for st, rs in other.reasons.items():
            mine = self.reasons.setdefault(st, {})
            for r, n in rs.items():
                mine[r] = mine.get(r, 0) + n
        for f, counts in other.faults.items():
            mine_f = self.faults.setdefault(f, [0, 0, 0, 0])
            for i, n in enumerate(counts):
                mine_f[i] += n

    def recall(self, fault: str) -> float:
        inj, own, _, _ = self.faults.get(fault, [0, 0, 0, 0])
        return own / inj if inj else float("nan")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Synthesis:
    problems: list[Problem]
    funnel: Funnel
    seconds: float = 0.0


def _short(reason: str) -> str:
    """A reason without its numbers, for counting."""
    return "".join(ch for ch in reason if not ch.isdigit()).strip()[:70]


def _one(args: tuple) -> tuple[Problem | None, Funnel]:
    with np.errstate(all="ignore"):  # degenerate numbers are rejected with a reason
        return _one_problem(*args)


def _one_problem(
    index: int, seed: int, tier: str, split: str, holdout: int, size_px: int, fault_rate: float
) -> tuple[Problem | None, Funnel]:
    funnel = Funnel()
    rng = numpy_rng(seed, "program", tier, index)
    funnel.programs = 1
    s = sample_program(rng, tier)
    why = select_seed(s, split=split, holdout=holdout)
    if why is not None:
        key = why.split(":")[0]
        funnel.seed_rejected[key] = 1
        return None, funnel
    funnel.seeds = 1
    try:
        inst = instantiate(s, rng)
        cand = make_candidate(inst, size_px=size_px)
    except Exception as err:  # a sympy or numerical failure is a rejection
        funnel.rejected["semantic"] += 1
        funnel.reasons["semantic"] = {f"instantiation failed: {type(err).__name__}": 1}
        return None, funnel
    verdict = verify(cand)
    if fault_rate > 0 and verdict.passed:
        # faults go into candidates that verify clean, so each is its stage's to catch
        frng = numpy_rng(seed, "fault", tier, index)
        if frng.random() < fault_rate * len(FAULTS):
            fault = str(frng.choice(sorted(FAULTS)))
            verdict = verify(inject(cand, fault, frng))
            counts = funnel.faults.setdefault(fault, [0, 0, 0, 0])
            counts[0] += 1
            if verdict.stage == FAULTS[fault]:
                counts[1] += 1
            elif verdict.stage is not None:
                counts[2] += 1
            else:
                counts[3] += 1
    if not verdict.passed:
        funnel.rejected[verdict.stage] += 1
        funnel.reasons[verdict.stage] = {_short(verdict.reason): 1}
        return None, funnel
    funnel.retained = 1
    assert verdict.png is not None
    prob = Problem(
        id=f"{tier}-{seed}-{index:07d}",
        tier=tier,
        template=s.template,
        composition=s.composition,
        roles=s.roles,
        target=s.target,
        givens=s.givens,
        program=s.program.text,
        question=inst.question,
        caption=inst.caption,
        steps=inst.steps,
        answer=str(inst.answer),
        answer_value=inst.answer_value,
        ir=cand.ir_text,
        image=png_to_array(verdict.png),
        png=verdict.png,
    )
    return prob, funnel


def _indices(start: int, stop: int, seed, tier, split, holdout, size_px, fault_rate) -> Iterator:
    for i in range(start, stop):
        yield (i, seed, tier, split, holdout, size_px, fault_rate)


def synthesize(
    n: int,
    *,
    tier: str = "geocode",
    seed: int = 0,
    split: str = "any",
    holdout: int = 5,
    size_px: int = 64,
    faults: float = 0.0,
    workers: int = 1,
    max_programs: int | None = None,
) -> Synthesis:
    """Generate ``n`` verified problems (fewer only if ``max_programs`` runs out).

    ``faults`` is the injection rate *per fault type* (0.05: 5% of candidates get each of
    the four faults); faulty candidates that pass would be kept, so the claim checks
    that none does. ``workers`` > 1 uses a process pool; results do not depend on it.
    """
    import time

    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; use one of {sorted(TIERS)}")
    if not 0 <= faults <= 1 / len(FAULTS):
        raise ValueError(f"faults is a rate per fault type in [0, 0.25], got {faults}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    start = time.perf_counter()
    cap = max_programs or 200 * n + 1000
    funnel, problems = Funnel(), []
    chunk = max(64, 2 * n)
    pool = mp.get_context("spawn").Pool(workers) if workers > 1 else None
    try:
        pos = 0
        while len(problems) < n and pos < cap:
            stop = min(cap, pos + chunk)
            it = _indices(pos, stop, seed, tier, split, holdout, size_px, faults)
            results = pool.imap(_one, it, chunksize=16) if pool else map(_one, it)
            for prob, f in results:  # in index order: the same problems for any pool size
                if len(problems) >= n:
                    break
                funnel.add(f)
                if prob is not None:
                    problems.append(prob)
            pos = stop
    finally:
        if pool is not None:
            pool.terminate()
    return Synthesis(problems, funnel, time.perf_counter() - start)


def complexity(problems: Sequence[Problem]) -> dict[str, float]:
    """Mean structural statistics: points, segments, circles, relations, depth, IR lines."""
    from icml26.geocode.dsl import parse_program

    if not problems:
        raise ValueError("complexity of an empty problem list")
    rows = []
    for p in problems:
        prog = parse_program(p.program)
        ir = parse_ir(p.ir)
        rows.append(
            {
                "points": len(prog.points),
                "segments": len(ir.of("SEG")),
                "circles": len(ir.of("CIRCLE")),
                "relations": sum(1 for s in prog.steps if s.out is not None),
                "marks": sum(len(ir.of(k)) for k in ("RIGHT", "TICKS", "ARCS", "PAR")),
                "depth": prog.depth,
                "ir_lines": len(ir.ops),
            }
        )
    return {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}


# -- export and loading ------------------------------------------------------------------
def export(synthesis: Synthesis, out: str | Path) -> Path:
    """Write JSONL + PNG + IR text, the funnel and the complexity statistics."""
    out = Path(out)
    (out / "images").mkdir(parents=True, exist_ok=True)
    (out / "ir").mkdir(parents=True, exist_ok=True)
    with open(out / "problems.jsonl", "w", encoding="utf-8") as fh:
        for p in synthesis.problems:
            fh.write(json.dumps(p.record(), ensure_ascii=False) + "\n")
            (out / "images" / f"{p.id}.png").write_bytes(p.png)
            (out / "ir" / f"{p.id}.txt").write_text(p.ir, encoding="utf-8")
    (out / "funnel.json").write_text(json.dumps(synthesis.funnel.to_dict(), indent=2))
    if synthesis.problems:
        stats = complexity(synthesis.problems)
        (out / "complexity.json").write_text(json.dumps(stats, indent=2))
    return out


def load_jsonl(folder: str | Path) -> list[Problem]:
    """Problems written by :func:`export` (images read from their PNG files)."""
    folder = Path(folder)
    path = folder / "problems.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{folder} has no problems.jsonl (expected the export layout)")
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{lineno}: not JSON ({err.msg})") from None
        png = (folder / "images" / f"{rec['id']}.png").read_bytes()
        rec["roles"], rec["target"] = tuple(rec["roles"]), tuple(rec["target"])
        rec["givens"] = tuple((v, int(d)) for v, d in rec["givens"])
        rec["steps"] = tuple(rec["steps"])
        out.append(Problem(**rec, image=png_to_array(png), png=png))
    return out


@dataclass
class BenchmarkProblem:
    """A problem of a user-supplied benchmark (Geometry3K layout)."""

    id: str
    question: str
    choices: tuple[str, ...]
    answer: str  # the letter of the right choice
    image: np.ndarray = field(repr=False)
    extra: dict = field(default_factory=dict, repr=False)


def load_geometry3k(folder: str | Path, *, size_px: int = 64) -> list[BenchmarkProblem]:
    """Read a Geometry3K split: ``<folder>/<id>/data.json`` and ``img_diagram.png``.

    Images are converted to grey, inverted (ink high) and resized to ``size_px``.
    """
    from PIL import Image

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no such Geometry3K folder: {folder}")
    dirs = sorted((d for d in folder.iterdir() if d.is_dir()), key=lambda d: (len(d.name), d.name))
    if not dirs:
        raise ValueError(f"{folder} holds no problem folders (expected <id>/data.json)")
    out = []
    for d in dirs:
        meta = d / "data.json"
        if not meta.is_file():
            raise FileNotFoundError(f"Geometry3K problem folder {d} has no data.json")
        try:
            rec = json.loads(meta.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{meta}: not JSON ({err.msg})") from None
        for key in ("problem_text", "choices", "answer"):
            if key not in rec:
                raise ValueError(f"{meta} lacks the field {key!r}")
        img_path = d / "img_diagram.png"
        if not img_path.is_file():
            raise FileNotFoundError(f"Geometry3K problem folder {d} has no img_diagram.png")
        img = Image.open(img_path).convert("L").resize((size_px, size_px), Image.BILINEAR)
        out.append(
            BenchmarkProblem(
                id=str(rec.get("id", d.name)),
                question=str(rec["problem_text"]),
                choices=tuple(str(c) for c in rec["choices"]),
                answer=str(rec["answer"]),
                image=255 - np.asarray(img, dtype=np.uint8),
                extra={k: v for k, v in rec.items() if k not in ("problem_text", "choices")},
            )
        )
    return out


_ = Counter


# bumped whenever the same seed would give other problems or other bytes (0.2.0: the
# renderer draws without an Axes; the Coder tries more spots for the givens' text)
GENERATOR_VERSION = 2


def cached_synthesis(
    n: int,
    *,
    tier: str,
    seed: int,
    split: str,
    size_px: int,
    cache_dir: str | Path,
    holdout: int = 5,
    workers: int = 1,
) -> tuple[list[Problem], Funnel]:
    """:func:`synthesize` once per setting, kept in the export layout under ``cache_dir``."""
    name = f"{tier}-{split}-n{n}-s{seed}-h{holdout}-px{size_px}-g{GENERATOR_VERSION}"
    folder = Path(cache_dir) / name
    # under a launcher rank 0 synthesises and writes the cache, the others then read it
    with main_process_first():
        if (folder / "problems.jsonl").is_file() and (folder / "funnel.json").is_file():
            f = json.loads((folder / "funnel.json").read_text())
            return load_jsonl(folder), Funnel(**f)
        syn = synthesize(
            n, tier=tier, seed=seed, split=split, holdout=holdout, size_px=size_px, workers=workers
        )
        tmp = folder.with_name(folder.name + ".tmp")
        export(syn, tmp)
        tmp.rename(folder)
        return syn.problems, syn.funnel


def problem_instance(problem: Problem):
    """The seed and instance a stored problem came from, rebuilt from its record and IR
    (so that it can be verified again from what was stored)."""
    import sympy as sp

    from icml26.geocode.dsl import parse_program
    from icml26.geocode.instantiate import Instance
    from icml26.geocode.seeds import Seed

    seed = Seed(
        program=parse_program(problem.program),
        template=problem.template,
        roles=tuple(problem.roles),
        givens=tuple((v, int(d)) for v, d in problem.givens),
        target=tuple(problem.target),
        tier=problem.tier,
        composition=problem.composition,
    )
    coords = dict(parse_ir(problem.ir).points)
    return Instance(
        seed=seed,
        coords=coords,
        question=problem.question,
        answer=sp.nsimplify(problem.answer),
        steps=tuple(problem.steps),
        caption=problem.caption,
    )


def reverify(problem: Problem, *, size_px: int | None = None):
    """Run every stage again on a stored problem; returns the :class:`Verdict`."""
    from icml26.geocode.verify import Candidate

    px = size_px or int(problem.image.shape[0])
    return verify(Candidate(problem_instance(problem), problem.ir, px))
