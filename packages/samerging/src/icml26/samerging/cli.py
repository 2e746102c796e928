"""``icml26 samerging …``: train Digits-8 experts and merge ``save_pretrained`` folders.

    icml26 samerging train-experts runs/digits --tasks digits-10 parity mirrored --seed 0
    icml26 samerging merge runs/digits/base runs/digits/digits-10 runs/digits/parity \\
        --out runs/merged --iterations 10 --prune 0.2

``train-experts`` is data-parallel under a launcher (``torchrun --nproc_per_node N -m
icml26.samerging.cli train-experts …`` or ``accelerate launch -m icml26.samerging.cli
train-experts …``): every rank trains on its own shard of each minibatch (gradients
all-reduced, so every rank holds the same parameters), each model stops by its
training-loss plateau, and only rank 0 writes the folders and prints; the others wait at
a barrier. ``merge`` runs SA-Merging on folders (safetensors only; ``--path bert`` for a
BERT / MiniLM encoder, the chain of 2-D weights otherwise).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="icml26 samerging", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train-experts", help="Digits-8 base and experts, one folder each")
    t.add_argument("out")
    t.add_argument("--tasks", nargs="+", default=None, help="Digits-8 task names (default: all)")
    t.add_argument("--widths", type=int, nargs="+", default=[64, 256, 256, 256, 64])
    t.add_argument("--cap", type=int, default=400, help="the experts' step cap")
    t.add_argument("--pretrain-cap", type=int, default=300)
    t.add_argument("--seed", type=int, default=0)
    m = sub.add_parser("merge", help="SA-Merging of save_pretrained folders sharing a base")
    m.add_argument("base")
    m.add_argument("experts", nargs="+")
    m.add_argument("--out", required=True)
    m.add_argument("--iterations", type=int, default=10)
    m.add_argument("--prune", type=float, default=0.2)
    m.add_argument("--scale", type=float, default=1.0)
    m.add_argument("--saliency", choices=("sign_aware", "literal"), default="sign_aware")
    m.add_argument("--path", choices=("chain", "bert"), default="chain")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return _train_experts(args) if args.cmd == "train-experts" else _merge(args)
    except (ValueError, TypeError, FileNotFoundError) as err:
        print(f"icml26 samerging: {err}", file=sys.stderr)
        return 2


def _train_experts(args) -> int:
    from icml26.samerging.io import save_state_dict
    from icml26.samerging.suites import (
        TASKS,
        TrainConfig,
        digits_tasks,
        finetune_expert,
        fit_head,
        pretrain_base,
    )
    from icml26.shared import (
        barrier,
        derive_seed,
        is_main_process,
        quiet_dependencies,
        torch_threads,
        world_size,
    )
    from icml26.shared.distributed import init_process_group

    names = list(args.tasks or TASKS)
    bad = [n for n in names if n not in TASKS]
    if bad:
        raise ValueError(f"unknown Digits-8 task {bad[0]!r}; choose from {TASKS}")
    if len(args.widths) < 2 or min(args.widths) < 1:
        raise ValueError(f"--widths needs at least two positive sizes, got {args.widths}")
    init_process_group()
    out = Path(args.out)
    with torch_threads(1), quiet_dependencies():
        tasks = [t for t in digits_tasks() if t.name in names]
        everything = digits_tasks()  # pretraining uses digits-10 and noisy
        base, base_stop = pretrain_base(
            everything, tuple(args.widths),
            TrainConfig(lr=1e-3, batch_size=128, window=10, cap=args.pretrain_cap),
            seed=args.seed,
        )  # fmt: skip
        experts, record = {}, {"base": base_stop, "world_size": world_size(), "experts": {}}
        for t in tasks:
            head, _ = fit_head(base, t, seed=args.seed)
            ex, stop = finetune_expert(
                base, head, t, TrainConfig(lr=1e-4, cap=args.cap),
                seed=derive_seed(args.seed, "ft"),
            )  # fmt: skip
            experts[t.name] = (ex, head)
            record["experts"][t.name] = stop
    if is_main_process():
        save_state_dict(base, out / "base")
        for name, (ex, head) in experts.items():
            save_state_dict(ex, out / name)
            save_state_dict({"weight": head.weight, "bias": head.bias}, out / name / "head")
        (out / "training.json").write_text(json.dumps(record, indent=1))
        print(f"trained {len(experts)} experts on {world_size()} processes; wrote {out}")
    barrier()
    return 0


def _merge(args) -> int:
    from icml26.samerging.io import load_state_dict, save_state_dict
    from icml26.samerging.merge import sa_merge
    from icml26.samerging.saliency import BertPath

    base = load_state_dict(args.base)
    experts = [load_state_dict(e) for e in args.experts]
    path, keys = None, None
    if args.path == "bert":
        config = Path(args.base) / "config.json"
        if not config.is_file():
            raise ValueError(f"--path bert needs {config} (num_hidden_layers)")
        layers = int(json.loads(config.read_text())["num_hidden_layers"])
        prefix = "bert." if any(k.startswith("bert.encoder.") for k in base) else ""
        path = BertPath(layers, prefix=prefix)
        keys = list(path.keys)
    res = sa_merge(
        base, experts, path=path, keys=keys, iterations=args.iterations, prune=args.prune,
        scale=args.scale, saliency=args.saliency,
    )  # fmt: skip
    save_state_dict(res.state_dict, args.out)
    config = Path(args.base) / "config.json"
    if config.is_file():
        (Path(args.out) / "config.json").write_text(config.read_text())
    print(f"merged {len(experts)} experts: density {res.density:.3f}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
