"""TeamTR's per-agent update against TRL's ``GRPOTrainer`` step on the same model and batch.

Same randomly initialised GPT-2 config (vocabulary of the protocol game), same batch
(16 prompts × G = 8 completions, two generated tokens per completion), one gradient step
per update on both sides, no KL term. TeamTR's update is one fresh rollout of a two-agent
team (one token each) plus ``update_agents`` of one agent; TRL's is one
``GRPOTrainer`` step (generation, log-probs, loss, step). Also: TeamTR against naive
sequential at matched rollouts (tiny agents, the smoke settings, CPU time).

    python benchmarks/teamtr/bench_vs_trl.py [--steps 5] [--d-model 64] [--layers 2]

Writes results/teamtr/bench/bench_vs_trl.{json,md}. Wall times on a shared CPU are
inflated by contention; ratios are measured side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch

from icml26.shared import quiet_dependencies
from icml26.teamtr import (
    ProtocolGame,
    RoundRobinRouter,
    Team,
    UpdateConfig,
    group_advantages,
    rollout,
    update_agents,
)
from icml26.teamtr.policies import HFPolicy

NAMES = ["<pad>", "<bos>", "<sep>", "<h>"] + [f"d{i}" for i in range(4)] + [
    f"s{i}" for i in range(4)
]  # fmt: skip


def _tokenizer():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit
    from transformers import PreTrainedTokenizerFast

    vocab = {n: i for i, n in enumerate(NAMES)}
    vocab.update({f"x{i}": i for i in range(len(NAMES), 20)})
    tok = Tokenizer(WordLevel(vocab, unk_token="<h>"))
    tok.pre_tokenizer = WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<pad>", bos_token="<bos>"
    )


def _model(d: int, layers: int, seed: int):
    torch.manual_seed(seed)
    return HFPolicy.from_config(vocab=20, d_model=d, layers=layers, heads=2, max_len=64)


def bench_trl(d, layers, steps, task):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    prompts, answers = task.sample(16, torch.Generator().manual_seed(0))
    text = [" ".join(NAMES[t] for t in [1, *p.tolist(), 2]) for p in prompts]
    ds = Dataset.from_dict({"prompt": text * steps, "answer": [NAMES[a] for a in answers] * steps})

    def reward(completions, answer, **_):
        return [float(c.split()[-1:] == [a]) if c.split() else 0.0
                for c, a in zip(completions, answer, strict=True)]  # fmt: skip

    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="teamtr-trl-"), per_device_train_batch_size=128,
        num_generations=8,
        max_completion_length=2, max_steps=steps, use_cpu=True, beta=0.0, report_to="none",
        logging_steps=10**6, save_strategy="no", disable_tqdm=True, learning_rate=1e-4,
        temperature=1.0, seed=0,
    )  # fmt: skip
    hf = _model(d, layers, 0).model
    tok = _tokenizer()
    hf.generation_config.pad_token_id = tok.pad_token_id
    hf.generation_config.eos_token_id = None
    trainer = GRPOTrainer(model=hf, reward_funcs=reward, args=args, train_dataset=ds,
                          processing_class=tok)  # fmt: skip
    t0, c0 = time.perf_counter(), time.process_time()
    trainer.train()
    return (time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps


def bench_ours(d, layers, steps, task):
    team = Team(["speaker", "listener"], [_model(d, layers, 0), _model(d, layers, 1)])
    router = RoundRobinRouter(team.names)
    cfg = UpdateConfig(lr=1e-4, epochs=1, minibatches=1, trust_region="none")
    opt = torch.optim.Adam(team.policies[1].parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(0)
    prompts, answers = task.sample(16, gen)
    walls, cpus, gen_s = [], [], []
    for _ in range(steps + 1):  # the first is warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        batch = rollout(team, task, prompts, answers, group_size=8, router=router, generator=gen)
        t1 = time.perf_counter()
        adv = group_advantages(batch.rewards, batch.group, 2.0)
        update_agents(team, (1,), batch, opt, cfg, advantages=adv, generator=gen)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        gen_s.append(t1 - t0)
    return sum(walls[1:]) / steps, sum(cpus[1:]) / steps, sum(gen_s[1:]) / steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--out", default="results/teamtr/bench")
    args = ap.parse_args()
    torch.set_num_threads(1)
    import transformers

    transformers.logging.set_verbosity_error()
    task = ProtocolGame(agents=2)
    with quiet_dependencies():
        ours_wall, ours_cpu, ours_gen = bench_ours(args.d_model, args.layers, args.steps, task)
        try:
            trl_wall, trl_cpu = bench_trl(args.d_model, args.layers, args.steps, task)
            trl_error = None
        except Exception as err:  # the peer is reported, not fatal
            trl_wall = trl_cpu = float("nan")
            trl_error = f"{type(err).__name__}: {err}"
    tokens = 128 * 2
    res = {
        "model": f"GPT-2 config d={args.d_model}, {args.layers} layers, vocab 20 (random)",
        "batch": "16 prompts x G=8, 2 generated tokens each, 1 gradient step",
        "teamtr_update_s": ours_wall, "teamtr_update_cpu_s": ours_cpu,
        "teamtr_rollout_tokens_per_s": tokens / ours_gen,
        "trl_step_s": trl_wall, "trl_step_cpu_s": trl_cpu, "trl_error": trl_error,
        "ratio_wall": ours_wall / trl_wall, "ratio_cpu": ours_cpu / trl_cpu,
    }  # fmt: skip
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "bench_vs_trl.json").write_text(json.dumps(res, indent=2))
    lines = ["| quantity | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in res.items()]
    (out / "bench_vs_trl.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
