"""``icml26 merdg …``: simulate CoOcc-MMDG and train one method on a leave-one-domain-out split.

    icml26 merdg simulate data.npz --target 3 --seed 0
    icml26 merdg train data.npz out/ --target 3 --method fusion+mer --epochs 40

``train`` reads a features file (``.npz``/``.pt``: ``labels``, ``domains`` and one array
per modality) and writes ``model.safetensors`` and ``result.json``. Under a launcher
(``torchrun --nproc_per_node N -m icml26.merdg.cli train …`` or ``accelerate launch -m
icml26.merdg.cli train …``) it is data-parallel: each rank trains on its shard of every
balanced batch, only rank 0 writes and prints.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="icml26 merdg", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("simulate", help="write a CoOcc-MMDG sample as .npz")
    s.add_argument("out")
    s.add_argument("--target", type=int, default=None, help="the domain without co-occurrence")
    s.add_argument("--per-domain", type=int, default=600)
    s.add_argument("--rho", type=float, default=0.95)
    s.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("train", help="train one method, leave one domain out")
    t.add_argument("features")
    t.add_argument("out")
    t.add_argument("--target", type=int, required=True)
    t.add_argument("--method", default="fusion+mer")
    t.add_argument("--epochs", type=int, default=40)
    t.add_argument("--batch-size", type=int, default=66)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default=None)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return _run(args)
    except (ValueError, TypeError, FileNotFoundError) as err:
        print(f"icml26 merdg: {err}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from icml26.merdg.data import CoOccConfig, simulate_cooccurrence

    if args.cmd == "simulate":
        cfg = CoOccConfig(per_domain=args.per_domain, rho=args.rho)
        data = simulate_cooccurrence(cfg, target=args.target, rng=np.random.default_rng(args.seed))
        arrays = dict(zip(data.modalities, data.features, strict=True))
        np.savez(args.out, labels=data.labels, domains=data.domains, **arrays)
        print(f"wrote {len(data)} samples of {data.n_modalities} modalities to {args.out}")
        return 0
    return _train(args)


def _train(args: argparse.Namespace) -> int:
    import torch
    from safetensors.torch import save_file

    from icml26.merdg.data import load_features, lodo_split
    from icml26.merdg.train import TrainConfig, train_method
    from icml26.shared import barrier, is_main_process, quiet_dependencies, world_size
    from icml26.shared.distributed import init_process_group

    init_process_group()
    data = load_features(args.features)
    split = lodo_split(data, args.target, rng=np.random.default_rng(args.seed))
    cfg = TrainConfig(epochs=args.epochs, batch_size=args.batch_size, lr=args.lr)
    with quiet_dependencies():
        res = train_method(args.method, split, cfg, seed=args.seed, device=args.device or "cpu")
    if is_main_process():
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in res.model.state_dict().items()}
        save_file(state, str(out / "model.safetensors"))
        summary = {
            "method": res.method,
            "target": args.target,
            "epochs": res.epochs,
            "stopping": res.stopping,
            "target_acc": res.last_test_acc,
            "selected_acc": res.selected_test_acc,
            "oracle_acc": res.oracle_test_acc,
            "val_acc": res.last_val_acc,
            "world_size": world_size(),
        }
        (out / "result.json").write_text(json.dumps(summary, indent=2) + "\n")
        print(
            f"trained {res.method} for {res.epochs} epochs on {world_size()} processes: "
            f"target {100 * res.last_test_acc:.1f}%, source-val {100 * res.last_val_acc:.1f}%"
        )
    barrier()
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
