"""``icml26 geocode`` — generate verified problems, render an IR, read a Geometry3K folder.

    icml26 geocode generate --n N --out DIR [--tier geocode|textbook] [--seed 0]
        [--split any|train|test] [--size 128] [--faults 0.0] [--workers 1]
    icml26 geocode render IR.txt OUT.png [--size 128] [--code]
    icml26 geocode g3k FOLDER

``generate`` writes ``problems.jsonl``, ``images/``, ``ir/``, ``funnel.json`` and
``complexity.json`` and prints the funnel; ``render`` draws an IR file through the
package's interpreter (``--code`` prints the equivalent matplotlib code instead).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icml26 geocode", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="synthesise verified problems")
    g.add_argument("--n", type=int, required=True, help="number of verified problems")
    g.add_argument("--out", required=True)
    g.add_argument("--tier", choices=("geocode", "textbook"), default="geocode")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--split", choices=("any", "train", "test"), default="any")
    g.add_argument("--size", type=int, default=128, help="image side in pixels")
    g.add_argument("--faults", type=float, default=0.0, help="injection rate per fault type")
    g.add_argument("--workers", type=int, default=1)
    r = sub.add_parser("render", help="render an IR file")
    r.add_argument("ir")
    r.add_argument("out")
    r.add_argument("--size", type=int, default=128)
    r.add_argument("--code", action="store_true", help="print matplotlib code instead")
    t = sub.add_parser("train", help="train one arm on an exported folder (accelerate-aware)")
    t.add_argument("data")
    t.add_argument("checkpoint")
    t.add_argument("--arm", choices=("code", "caption", "none"), default="code")
    t.add_argument("--cap", type=int, default=150, help="step cap of the plateau rule")
    t.add_argument("--batch-size", type=int, default=32)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default="cpu")
    k = sub.add_parser("g3k", help="read a Geometry3K-layout folder and summarise it")
    k.add_argument("folder")
    return parser


def main(argv: list[str] | None = None) -> int:
    from icml26.shared import quiet_dependencies

    parser = _parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as stop:
        return int(stop.code or 0)
    try:
        with quiet_dependencies():
            return _dispatch(args)
    except (ValueError, FileNotFoundError, TypeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    from icml26.geocode.dataset import export, load_geometry3k, synthesize
    from icml26.geocode.ir import render_png, to_matplotlib_code

    if args.command == "generate":
        if args.n <= 0:
            raise ValueError(f"--n must be a positive integer, got {args.n}")
        syn = synthesize(
            args.n,
            tier=args.tier,
            seed=args.seed,
            split=args.split,
            size_px=args.size,
            faults=args.faults,
            workers=args.workers,
        )
        out = export(syn, args.out)
        f = syn.funnel
        print(f"{len(syn.problems)} verified problems in {out} ({syn.seconds:.1f} s)")
        print(f"programs {f.programs} -> seeds {f.seeds} -> retained {f.retained}")
        print("rejected per stage: " + ", ".join(f"{k} {v}" for k, v in f.rejected.items()))
        if f.faults:
            print(
                "faults [injected, caught by own stage, elsewhere, missed]: " + json.dumps(f.faults)
            )
        return 0
    if args.command == "render":
        text = Path(args.ir).read_text(encoding="utf-8")
        if args.code:
            print(to_matplotlib_code(text, size_px=args.size), end="")
            return 0
        Path(args.out).write_bytes(render_png(text, size_px=args.size))
        print(f"wrote {args.out}")
        return 0
    if args.command == "train":
        return _train(args)
    probs = load_geometry3k(args.folder)
    print(f"{len(probs)} problems; answers: " + ", ".join(p.answer for p in probs[:10]))
    return 0


def _train(args: argparse.Namespace) -> int:
    import os

    import torch

    from icml26.geocode.align import AlignConfig, save_checkpoint, train
    from icml26.geocode.dataset import load_jsonl
    from icml26.shared import is_main_process

    # under torchrun on CPUs: gloo; otherwise the Accelerator in ``train`` joins the group
    launched = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if launched and args.device == "cpu" and not torch.distributed.is_initialized():
        torch.distributed.init_process_group("gloo")
    try:
        problems = load_jsonl(args.data)
        cfg = AlignConfig(cap=args.cap, batch_size=args.batch_size, window=max(1, args.cap // 6))
        res = train(problems, args.arm, cfg, seed=args.seed, device=args.device)
        if is_main_process():
            save_checkpoint(res, args.checkpoint)
            print(f"trained the {args.arm} arm for {res.stopping['steps']} steps "
                  f"({res.stopping['reason']}) on {res.world_size} processes")  # fmt: skip
    finally:
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
