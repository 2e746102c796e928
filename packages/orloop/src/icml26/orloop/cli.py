"""``icml26 orloop ...``: generate ORDebug-style datasets and inspect models.

icml26 orloop generate --n 5000 --out data/ordebug [--seed 0] [--milp-fraction 0.3]
icml26 orloop iis MODEL.mps [--method auto|highs|deletion_filter]
icml26 orloop validate DATASET_DIR
icml26 orloop eval --data DIR --agent NAME [--limit N] [--max-steps 10] [--hide-iis]
                   [--iis highs|stored] [--policy policy.json] [--base-url URL --model M]

``eval`` reads either layout (this package's ``index.jsonl`` or the authors' released
``dataset.json`` with ``models/*.mps``) and prints RR@k, DA, OP, FP and steps of one
agent: random, heuristic, greedy-drop, regenerate, minimal-repair, copy-iis,
phase1-blame, policy (untrained, or ``--policy`` a saved one) or llm.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from icml26.orloop.data import read_dataset, write_instance
from icml26.orloop.iis import compute_iis
from icml26.orloop.model import Model
from icml26.orloop.saboteur import ALL_TYPES, LP_TYPES, MILP_TYPES, generate, validate
from icml26.shared import progress


def _types(text: str) -> tuple[str, ...]:
    out = tuple(t.strip().upper() for t in text.split(",") if t.strip())
    bad = [t for t in out if t not in ALL_TYPES]
    if bad or not out:
        raise argparse.ArgumentTypeError(f"error types are A–I or H2, got {text!r}")
    return out


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


AGENT_NAMES = (
    "random",
    "heuristic",
    "greedy-drop",
    "regenerate",
    "minimal-repair",
    "copy-iis",
    "phase1-blame",
    "policy",
    "llm",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icml26 orloop", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    gen = sub.add_parser("generate", help="write validated instances as MPS files + index.jsonl")
    gen.add_argument("--n", type=int, required=True, help="number of instances")
    gen.add_argument("--out", required=True, help="output directory")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--milp-fraction", type=_fraction, default=0.3)
    gen.add_argument("--lp-types", type=_types, default=LP_TYPES)
    gen.add_argument("--milp-types", type=_types, default=MILP_TYPES)
    iis = sub.add_parser("iis", help="print the IIS of an infeasible .mps/.lp model")
    iis.add_argument("model")
    iis.add_argument("--method", default="auto", choices=("auto", "highs", "deletion_filter"))
    val = sub.add_parser("validate", help="re-check every instance of a dataset directory")
    val.add_argument("dataset")
    ev = sub.add_parser("eval", help="play one agent on a dataset and print RR@k, DA, OP, FP")
    ev.add_argument("--data", required=True, help="dataset directory (index.jsonl or dataset.json)")
    ev.add_argument("--agent", required=True, choices=AGENT_NAMES)
    ev.add_argument("--limit", type=int, default=None, help="read only the first N records")
    ev.add_argument("--max-steps", type=int, default=10)
    ev.add_argument("--seed", type=int, default=0)
    ev.add_argument("--hide-iis", action="store_true", help="reveal_iis=False (DA_blind)")
    ev.add_argument("--iis", default="highs", choices=("highs", "stored"))
    ev.add_argument("--policy", default=None, help="a policy JSON saved by LearnedPolicy.save")
    ev.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint for llm")
    ev.add_argument("--model", default=None, help="served model name for llm")
    ev.add_argument("--json", action="store_true", help="print the summary as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as stop:
        return int(stop.code or 0)
    try:
        if args.command == "generate":
            return _generate(args)
        if args.command == "eval":
            return _eval(args)
        if args.command == "iis":
            found = compute_iis(Model.read(args.model), method=args.method)
            print(json.dumps(found.to_dict(), indent=2))
            return 0 if found.valid else 1
        return _validate(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"icml26 orloop: {err}", file=sys.stderr)
        return 2


def _generate(args: argparse.Namespace) -> int:
    if args.n < 1:
        raise ValueError(f"--n must be positive, got {args.n}")
    if "B" in args.lp_types:
        raise ValueError("error type B needs the MILP family; leave it out of --lp-types")
    out = Path(args.out)
    t0 = time.perf_counter()
    counts: Counter[str] = Counter()
    instances = generate(
        args.n,
        seed=args.seed,
        lp_types=args.lp_types,
        milp_types=args.milp_types,
        milp_fraction=args.milp_fraction,
    )
    first = next(instances)  # bad arguments fail here, before anything is written
    out.mkdir(parents=True, exist_ok=True)
    partial = out / "index.jsonl.partial"
    with partial.open("w") as f:
        for inst in progress(
            itertools.chain([first], instances), total=args.n, desc="instances", unit="inst"
        ):
            f.write(json.dumps(write_instance(inst, out)) + "\n")
            counts[f"{inst.family}/{inst.error_type}/{inst.difficulty}"] += 1
    partial.replace(out / "index.jsonl")  # no index is left behind by a failed run
    seconds = time.perf_counter() - t0
    print(f"wrote {args.n} validated instances to {out}/ in {seconds:.1f} s")
    for key in sorted(counts):
        print(f"  {key}: {counts[key]}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    instances = read_dataset(args.dataset)
    bad = [i.problem_id for i in progress(instances, desc="validate") if not validate(i).ok]
    print(f"{len(instances) - len(bad)}/{len(instances)} instances pass the three-way validation")
    for pid in bad[:20]:
        print(f"  failed: {pid}")
    return 1 if bad else 0


def make_agent(name: str, args: argparse.Namespace) -> Any:
    """The agent ``eval`` plays, by its CLI name."""
    from icml26.orloop import baselines as b
    from icml26.orloop.policy import LearnedPolicy

    if name == "policy":
        if args.policy:
            return LearnedPolicy.load(args.policy)
        agent = LearnedPolicy(seed=args.seed)
        agent.name = "untrained policy"
        return agent
    if name == "llm":
        from icml26.orloop.llm_client import ChatClient, LLMAgent

        if not (args.base_url and args.model):
            raise ValueError("--agent llm needs --base-url and --model")
        return LLMAgent(ChatClient(args.base_url, args.model))
    return {
        "random": lambda: b.RandomAgent(args.seed),
        "heuristic": b.HeuristicAgent,
        "greedy-drop": b.GreedyDropAgent,
        "regenerate": b.RegenerateAgent,
        "minimal-repair": b.MinimalRepairAgent,
        "copy-iis": b.CopyIISAgent,
        "phase1-blame": b.PhaseOneBlameAgent,
    }[name]()


def _eval(args: argparse.Namespace) -> int:
    from icml26.orloop.agents import evaluate
    from icml26.orloop.metrics import summarize

    if args.max_steps < 1:
        raise ValueError(f"--max-steps must be positive, got {args.max_steps}")
    instances = read_dataset(args.data, iis=args.iis, limit=args.limit)
    if not instances:
        raise ValueError(f"{args.data} holds no instances")
    agent = make_agent(args.agent, args)
    results = evaluate(
        agent,
        instances,
        max_steps=args.max_steps,
        reveal_iis=not args.hide_iis,
        show_progress=True,
    )
    s = summarize(results)
    keys = ("n", "RR", "RR@1", "RR@5", "RR@10", "DA", "DP", "DA_blind", "OP", "FP", "steps")
    summary = {k: s[k] for k in keys}
    by_type: dict[str, list[Any]] = {}
    for r in results:
        by_type.setdefault(r.error_type, []).append(r)
    per_type = {t: summarize(rs) for t, rs in sorted(by_type.items())}
    if args.json:
        print(json.dumps({"agent": agent.name, "all": summary, "by_type": per_type}, indent=2))
        return 0
    print(f"{agent.name} on {len(instances)} instances from {args.data}")
    print(
        "  " + "  ".join(f"{k} {v:.3f}" if k != "n" else f"n {int(v)}" for k, v in summary.items())
    )
    for t, st in per_type.items():
        print(
            f"  type {t}: n {int(st['n'])}  RR@5 {st['RR@5']:.3f}  OP {st['OP']:.3f}  "
            f"FP {st['FP']:.3f}  DA {st['DA']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
