"""``icml26 diting ...``: simulate a fleet, train DITING on it, predict from a checkpoint.

``icml26 diting train OUT [--cells N] [--snr X] [--max-epochs N] [--device cpu]`` trains on a
simulated fleet and writes ``OUT/model.safetensors`` + ``OUT/config.json`` (rank 0 only under
``torchrun``; gradients are averaged over the ranks).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="icml26 diting", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    tr = sub.add_parser("train", help="train DITING on a simulated fleet")
    tr.add_argument("out")
    tr.add_argument("--cells", type=int, default=40)
    tr.add_argument("--snr", type=float, default=2.0)
    tr.add_argument("--length", type=int, default=60, help="charge_discharge_length S")
    tr.add_argument("--max-epochs", type=int, default=20)
    tr.add_argument("--batch-size", type=int, default=32)
    tr.add_argument("--seed", type=int, default=0)
    tr.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    import torch

    from icml26.diting.data import simulate_fleet
    from icml26.diting.model import Diting, DitingConfig, save_model
    from icml26.diting.training import TrainConfig, train_regressor
    from icml26.shared import barrier, is_main_process, torch_threads, world_size
    from icml26.shared.distributed import init_process_group

    distributed = init_process_group("gloo" if args.device == "cpu" else None)
    with torch_threads(1):
        fleet = simulate_fleet(
            args.cells, np.random.default_rng(args.seed), snr=args.snr,
            charge_discharge_length=args.length,
        )  # fmt: skip
        torch.manual_seed(args.seed)
        model = Diting(DitingConfig(charge_discharge_length=args.length))
        config = TrainConfig(max_epochs=args.max_epochs, batch_size=args.batch_size)
        result = train_regressor(model, fleet, config, seed=args.seed, device=args.device)
    if is_main_process():
        save_model(
            model, args.out,
            extra={"stopping": result.stopping, "train": dataclasses.asdict(config),
                   "scaler": dataclasses.asdict(result.scaler)},
        )  # fmt: skip
        print(
            f"trained DITING for {result.stopping['steps']} epochs ({result.stopping['reason']}) "
            f"on {world_size()} process{'es' if world_size() > 1 else ''}; wrote {args.out}"
        )
    if distributed:
        barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
