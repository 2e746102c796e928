"""Budget study: held-out accuracy of the code and none arms against the step cap and
the training-set size (one development seed, the smoke data).

    uv run python benchmarks/geocode/budget_study.py [--caps 40 80 150] [--sizes 300 600]

Prints a markdown table; the smoke preset's cap was chosen from it (README, Budget study).
"""

from __future__ import annotations

import argparse
from dataclasses import replace

from icml26.geocode.align import AlignConfig, Vocab, evaluate, train
from icml26.geocode.reproduce import PRESETS, _data
from icml26.shared import quiet_dependencies, torch_threads


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--caps", type=int, nargs="+", default=[40, 80, 150])
    ap.add_argument("--sizes", type=int, nargs="+", default=[300, 600])
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    config = PRESETS["smoke"]
    with quiet_dependencies(), torch_threads(1):
        train_set, test_set, textbook, _, _ = _data(config)
        vocab = Vocab.build([*train_set, *textbook])
        print("| train size | step cap | arm | steps taken | stop | accuracy (%) |")
        print("|---|---|---|---|---|---|")
        for size in args.sizes:
            for cap in args.caps:
                for arm in ("code", "none"):
                    cfg: AlignConfig = replace(config.align, cap=cap)
                    res = train(train_set[:size], arm, cfg, seed=args.seed, vocab=vocab)
                    acc = 100 * evaluate(res, test_set)["accuracy"]
                    s = res.stopping
                    print(f"| {size} | {cap} | {arm} | {s['steps']} | {s['reason']} | {acc:.1f} |",
                          flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
