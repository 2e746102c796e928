"""``icml26 prism …``: simulate a repertoire, train, score and generate from the shell.

    icml26 prism simulate rep.tsv --lineages 300 --per-lineage 10 --seed 0
    icml26 prism train rep.tsv ckpt/ --kind prism --size tiny --steps 200
    icml26 prism pll ckpt/ EVQLVESGGGLVQPGG...
    icml26 prism generate ckpt/ EVQLVESGGGLVQPGG... --mode ngl --samples 5

``train`` is data-parallel under a launcher (``torchrun --nproc_per_node N -m
icml26.prism.cli train …`` or ``accelerate launch --multi_gpu -m icml26.prism.cli train
…``): every rank trains on its own shard, only rank 0 writes the checkpoint and prints,
the others wait at a barrier.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="icml26 prism", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("simulate", help="write a simulated repertoire as AIRR TSV")
    s.add_argument("out")
    s.add_argument("--lineages", type=int, default=300)
    s.add_argument("--per-lineage", type=int, default=10)
    s.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("train", help="train PRISM or PRISM-less on an AIRR TSV")
    t.add_argument("airr")
    t.add_argument("out")
    t.add_argument("--kind", choices=("prism", "prismless"), default="prism")
    t.add_argument("--size", choices=("tiny", "35m"), default="tiny")
    t.add_argument("--steps", type=int, default=200)
    t.add_argument("--batch-size", type=int, default=32)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default=None)
    q = sub.add_parser("pll", help="pseudo-perplexity of sequences in the four modes")
    q.add_argument("checkpoint")
    q.add_argument("sequences", nargs="+")
    g = sub.add_parser("generate", help="controllable generation from one sequence")
    g.add_argument("checkpoint")
    g.add_argument("sequence")
    g.add_argument("--mode", choices=("gl", "ngl", "full", "region_specific"), default="full")
    g.add_argument("--samples", type=int, default=10)
    g.add_argument("--mutations", type=int, default=3)
    g.add_argument("--seed", type=int, default=0)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return _run(args)
    except (ValueError, TypeError, FileNotFoundError) as err:
        print(f"icml26 prism: {err}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from icml26.shared import barrier, is_main_process

    if args.cmd == "simulate":
        from icml26.prism.data import simulate_repertoire, write_airr

        _, rep = simulate_repertoire(
            np.random.default_rng(args.seed), args.lineages, args.per_lineage
        )
        if is_main_process():
            write_airr(args.out, rep)
            print(f"{len(rep)} sequences, {rep.ngl_fraction:.1%} NGL residues -> {args.out}")
        return 0
    if args.cmd == "train":
        import torch

        from icml26.prism.checkpoint import save_checkpoint
        from icml26.prism.data import Repertoire, read_airr
        from icml26.prism.germline import assign_germline
        from icml26.prism.model import ModelConfig, build_model
        from icml26.prism.train import TrainConfig, train

        recs = read_airr(args.airr)
        regions = [
            r["regions"] if r["regions"] is not None else assign_germline(r["sequence"]).regions
            for r in recs
        ]
        rep = Repertoire([r["sequence"] for r in recs], [r["ngl"] for r in recs], regions)
        size = ModelConfig.tiny if args.size == "tiny" else ModelConfig.esm2_35m
        torch.manual_seed(args.seed)
        model = build_model(size(kind=args.kind))
        cfg = TrainConfig.finetune(
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            warmup_steps=max(1, args.steps // 10),
            grad_accumulation=1,
        )
        res = train(model, rep, cfg, seed=args.seed, device=args.device)
        barrier()  # every rank has finished its last update
        if is_main_process():
            save_checkpoint(model, args.out)
            procs = f" on {res.world_size} processes" if res.world_size > 1 else ""
            print(
                f"trained {args.steps} steps{procs}, final loss {res.losses[-1]:.3f} "
                f"(rank 0) -> {args.out}"
            )
        barrier()  # nobody leaves before the checkpoint is written
        return 0
    from icml26.prism.checkpoint import load_checkpoint

    model = load_checkpoint(args.checkpoint)
    if args.cmd == "pll":
        from icml26.prism.score import MODES, pseudo_log_likelihood

        res = pseudo_log_likelihood(model, args.sequences)
        if not is_main_process():
            return 0
        print("sequence\t" + "\t".join(f"ppl_{m}" for m in MODES))
        for i, s in enumerate(args.sequences):
            vals = "\t".join(f"{res.perplexity(m)[i]:.3f}" for m in MODES)
            print(f"{s[:20]}…\t{vals}")
        return 0
    from icml26.prism.generate import generate

    variants = generate(
        model,
        args.sequence,
        n_samples=args.samples,
        n_mutations=args.mutations,
        mode=args.mode,
        rng=np.random.default_rng(args.seed),
    )
    if is_main_process():
        for v in variants:
            print(f"{v.sequence}\t{v.mutations or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
