"""CARvE: Continual Anchored Router via contrastive Embeddings (paper §4).

For each experience E_t the learner

1. appends one xavier-initialised registry row per new model (``extend``);
2. trains on E_t's queries plus the replay buffer with the candidate-set contrastive
   loss (``candidates.py``) at τ = 0.08, with soft targets (ε = 0.02 spread over the
   10 taxonomy neighbours of the gold model present in the set) and hard negatives
   re-mined over the whole training set every ``mine_every`` steps;
3. for t >= 2, runs the two-phase schedule of ``mllm_onwards.yaml``: in phase 1 (the
   first 40 % of the steps) only the router trains (adapter learning rate 0, projection
   1e-4, embeddings 5e-5), replay examples' loss is multiplied by 5, soft targets are
   off, and the anchors L_emb (λ = 1e4) and L_proj (λ = 5e4) hold the old rows and the
   projection near their checkpoint (``anchoring.py``); phase 2 is the full loss;
4. adds ⌊10 % · n_t⌋ examples of E_t to the buffer with the domain-model coreset
   (``replay.py``).

Stopping (house rule, reconstructed; the official run uses 5 fixed epochs, phase 1 = the
first 40 % of the steps, linear decay). With ``max_epochs`` set, each phase trains
until its epoch training loss has not improved on its best by a relative ``tol`` for
``patience`` epochs (:class:`icml26.shared.Plateau`, one value per epoch, the loss
averaged over every process): phase 1 on its own objective (routing loss + anchors),
for at most ``phase1_fraction`` x ``max_epochs`` epochs; phase 2 on the routing loss,
with at least ``epochs`` and at most ``max_epochs`` epochs in all; a phase-2 epoch whose
loss is at or above log K (the uniform guess over the K candidates: the router has not
started to learn) is not judged (``history[i]["epochs_above_chance"]``).
``history[i]["stopping"]`` and ``["phase1_stopping"]`` are the rules' summaries;
``["train_errors"]`` the top-1 error on the fit's training set over every registered
model after each epoch. ``lr_schedule="linear"`` decays over the ``max_epochs`` horizon
(then the loss keeps falling until the cap); the presets with a rule use "constant"
(warm-up, then a constant rate).

The same learner, with parts switched off, gives the baselines that isolate the
continual-learning strategy (``baselines.py``): sequential fine-tuning, random replay,
EWC and joint training. Training runs under Hugging Face ``accelerate``: launched with
``accelerate launch`` it is data-parallel over the GPUs of the machine.

CPU deviation (documented in the README): the Gorilla SFT language-model loss of the
official default ``loss_mode: supervised+router`` is dropped, since the backbone here
is a frozen sentence encoder, not a generating LM.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from icml26.carve.anchoring import Anchor
from icml26.carve.batching import DomainBatchSampler
from icml26.carve.candidates import HARD, CandidateSampler, CandidateSpec, HardNegativeMiner
from icml26.carve.hub import Hub
from icml26.carve.metrics import AccuracyMatrix, routing_accuracy
from icml26.carve.replay import coreset_replay, random_replay
from icml26.carve.router import CarveRouter, check_features, default_device
from icml26.shared import Plateau, derive_seed, numpy_rng, torch_generator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Router and optimisation hyperparameters (defaults: official ``configurations_carve``).

    ``batch_size`` is the effective batch (16 x 8 gradient accumulation in the code).
    ``lr_schedule``: "linear" (warm-up, then linear decay to 0 at the last epoch,
    official) or "constant" (warm-up, then constant; for the convergence rule).
    ``lr_scale`` multiplies every learning rate, phase-1 ones included (the scaled-down
    presets take fewer steps than the official run).
    """

    embedding_dim: int = 256
    adapter_hidden: int = 256
    tau: float = 0.08
    epochs: int = 5
    batch_size: int = 128
    lr_adapter: float = 5e-4
    lr_projection: float = 3e-4
    lr_embedding: float = 5e-5
    lr_scale: float = 1.0
    weight_decay: float = 1e-3
    warmup_steps: int = 10
    max_grad_norm: float = 1.0
    candidates: CandidateSpec = field(default_factory=CandidateSpec)
    mine_every: int = 100
    hard_pool: int = 50
    max_epochs: int | None = None
    patience: int = 2
    tol: float = 0.01
    soft_targets: bool = True
    soft_target_eps: float = 0.02
    soft_target_neighbors: int = 10
    domains_per_batch: int = 2
    lr_schedule: str = "linear"

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be positive")
        if self.mine_every < 1 or self.hard_pool < 1:
            raise ValueError("mine_every and hard_pool must be positive")
        if self.max_epochs is not None and self.max_epochs < self.epochs:
            raise ValueError(
                f"max_epochs ({self.max_epochs}) must be at least epochs ({self.epochs})"
            )
        if self.patience < 1 or not self.tol >= 0:
            raise ValueError("patience must be positive and tol non-negative")
        if not 0 <= self.soft_target_eps < 1:
            raise ValueError(f"soft_target_eps must lie in [0, 1), got {self.soft_target_eps}")
        if self.lr_schedule not in ("linear", "constant"):
            raise ValueError(
                f"lr_schedule must be 'linear' or 'constant', got {self.lr_schedule!r}"
            )
        for name in ("lr_adapter", "lr_projection", "lr_embedding", "weight_decay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be non-negative")


@dataclass(frozen=True)
class Strategy:
    """The continual-learning recipe around the router.

    ``replay``: "coreset" (CARvE), "random" or None. ``two_phase`` enables the phase-1
    schedule with anchors for experiences >= 2. ``ewc_lambda`` > 0 adds online EWC, whose
    diagonal Fisher is the mean squared gradient over batches of ``ewc_fisher_batch``
    examples (official ``router_ewc_fisher_batch_size: 4``: the Fisher scales with
    1 / batch size when the per-example gradients disagree, so the training batch would
    weaken the penalty by up to 32x).
    """

    name: str = "CARvE"
    replay: str | None = "coreset"
    replay_ratio: float = 0.1
    min_per_domain: int = 5
    max_per_model: int = 3
    two_phase: bool = True
    phase1_fraction: float = 0.4
    phase1_lr_projection: float = 1e-4
    phase1_lr_embedding: float = 5e-5
    replay_loss_multiplier: float = 5.0
    anchor_embedding: float = 1e4
    anchor_projection: float = 5e4
    ewc_lambda: float = 0.0
    ewc_decay: float = 0.9
    ewc_fisher_batch: int = 4

    def __post_init__(self) -> None:
        if self.replay not in (None, "coreset", "random"):
            raise ValueError(f"replay must be 'coreset', 'random' or None, got {self.replay!r}")
        if not 0 <= self.replay_ratio <= 1:
            raise ValueError(f"replay_ratio must lie in [0, 1], got {self.replay_ratio}")
        if not 0 <= self.phase1_fraction < 1:
            raise ValueError(f"phase1_fraction must lie in [0, 1), got {self.phase1_fraction}")
        if min(self.anchor_embedding, self.anchor_projection, self.ewc_lambda) < 0:
            raise ValueError("regularisation weights must be non-negative")
        if self.ewc_fisher_batch < 1:
            raise ValueError(f"ewc_fisher_batch must be positive, got {self.ewc_fisher_batch}")


CARVE = Strategy()


class _Examples(torch.utils.data.Dataset):
    """Feature rows with labels; ``__getitems__`` returns a whole batch at once."""

    def __init__(self, x: np.ndarray, gold: np.ndarray, domain: np.ndarray, replay: np.ndarray):
        x = torch.as_tensor(x)
        self.x = x.float() if x.is_floating_point() else x  # token rows stay integer
        self.gold = torch.as_tensor(gold, dtype=torch.long)
        self.domain = torch.as_tensor(domain, dtype=torch.long)
        self.replay = torch.as_tensor(replay, dtype=torch.bool)

    def __len__(self) -> int:
        return len(self.gold)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return self.__getitems__([i])

    def __getitems__(self, idx: list[int]) -> dict[str, torch.Tensor]:
        t = torch.as_tensor(idx, dtype=torch.long)
        return {"x": self.x[t], "gold": self.gold[t], "domain": self.domain[t],
                "replay": self.replay[t]}  # fmt: skip


def _identity(batch: Any) -> Any:
    return batch


class OnlineEWC:
    """Online EWC on the router's parameters (official ``router_fisher.py``, mode
    "online"): F ← γ F + F_t, θ* ← θ_t, penalty λ Σ F (θ - θ*)². Rows added later have
    no Fisher mass."""

    def __init__(self, lam: float, decay: float) -> None:
        self.lam, self.decay = lam, decay
        self.fisher: dict[str, torch.Tensor] = {}
        self.star: dict[str, torch.Tensor] = {}

    def consolidate(self, router: CarveRouter, fisher: dict[str, torch.Tensor]) -> None:
        for k, p in router.named_parameters():
            if k not in fisher:
                continue
            f = fisher[k]
            if k in self.fisher:
                old = self.fisher[k]
                grown = torch.zeros_like(f)
                grown[: old.shape[0]] = old
                f = self.decay * grown + f
            self.fisher[k] = f.detach()
            self.star[k] = p.detach().clone()

    def penalty(self, router: CarveRouter) -> torch.Tensor:
        total = router.projection.weight.sum() * 0.0
        for k, p in router.named_parameters():
            if k not in self.fisher:
                continue
            f, star = self.fisher[k].to(p.device), self.star[k].to(p.device)
            n = star.shape[0]
            total = total + (f * (p[:n] - star).pow(2)).sum()
        return self.lam * total


def taxonomy_neighbors(
    model_domain: np.ndarray, model_family: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """Soft-target neighbours (official ``get_neighbors``, ``domain_then_family``): the
    first k other models of the same domain in registry order, then of the same family,
    then random models. Returns (n_models, k)."""
    n = len(model_domain)
    out = np.empty((n, k), dtype=np.int64)
    by_domain = {d: np.flatnonzero(model_domain == d) for d in np.unique(model_domain)}
    by_family = {f: np.flatnonzero(model_family == f) for f in np.unique(model_family)}
    for m in range(n):
        nb = [i for i in by_domain[model_domain[m]] if i != m][:k]
        if len(nb) < k:
            nb += [i for i in by_family[model_family[m]] if i != m and i not in nb][: k - len(nb)]
        if len(nb) < k:
            rest = np.setdiff1d(np.arange(n), [m, *nb])
            nb += rng.choice(rest, size=min(k - len(nb), len(rest)), replace=False).tolist()
        nb += [m] * (k - len(nb))  # only when the registry has fewer than k + 1 models
        out[m] = nb
    return out


class ContinualRouter:
    """A router learned over a stream of experiences with a :class:`Strategy`.

    ``features`` are the frozen-encoder vectors of the queries; the learner keeps the
    router, the replay buffer, the anchors' checkpoints and the EWC state.
    """

    def __init__(
        self,
        hub: Hub,
        input_dim: int,
        *,
        train: TrainConfig | None = None,
        strategy: Strategy = CARVE,
        seed: int = 0,
        device: str | torch.device | None = None,
        backbone: torch.nn.Module | None = None,
    ) -> None:
        self.hub = hub
        self.train_config = train or TrainConfig()
        self.strategy = strategy
        self.seed = seed
        self.device = default_device(device)
        c = self.train_config
        self.router = CarveRouter(
            input_dim, c.embedding_dim, tau=c.tau, adapter_hidden=c.adapter_hidden,
            generator=torch_generator(seed, "init"), backbone=backbone,
        )  # fmt: skip
        self.sampler = CandidateSampler(c.candidates, hub.model_domain, hub.domain_area)
        # streams do not depend on the strategy: every method sees the same batches,
        # candidate draws and initial weights, so differences are the strategy's alone
        self.rng = numpy_rng(seed, "learner")
        self.gen = torch_generator(seed, "candidates")
        self.buffer: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.ewc = (
            OnlineEWC(strategy.ewc_lambda, strategy.ewc_decay) if strategy.ewc_lambda else None
        )
        self.experiences_seen = 0
        self.train_seconds = 0.0
        self.train_examples = 0
        # per _fit call: epochs and steps run, training-loss curve, share of hard slots
        self.history: list[dict[str, Any]] = []
        self._slots = [0, 0]  # hard-negative slots, negative slots (current fit)

    # -- the stream -------------------------------------------------------------------
    def register_until(self, n_models: int) -> None:
        """Register hub models [num_models, n_models) (the ``extend`` registry mode)."""
        if n_models > self.router.num_models:
            ids = self.hub.model_ids[self.router.num_models : n_models]
            self.router.register(ids, generator=torch_generator(self.seed, "rows", n_models))

    def learn(self, t: int, x: np.ndarray) -> None:
        """Learn experience ``t`` of the hub from its training features ``x``."""
        exp = self.hub.experiences[t]
        if t != self.experiences_seen:
            raise ValueError(
                f"experiences must be learned in order: expected {self.experiences_seen}, got {t}"
            )
        if x.shape[0] != len(exp.train):
            raise ValueError(f"x has {x.shape[0]} rows for {len(exp.train)} training queries")
        self._check_rows(x, f"training features of experience {t}")
        n_models = self.hub.n_registered(t)
        self.register_until(n_models)
        parts = [(x, exp.train.model, exp.train.domain, np.zeros(len(x), dtype=bool))]
        for bx, bg, bd in self.buffer:
            parts.append((bx, bg, bd, np.ones(len(bx), dtype=bool)))
        xs, gold, dom, rep = (np.concatenate([p[i] for p in parts]) for i in range(4))
        anchor = None
        if self.strategy.two_phase and t > 0:
            anchor = Anchor(self.router, self.hub.n_registered(t - 1))
        self._fit(xs, gold, dom, rep, n_models, anchor=anchor, two_phase=anchor is not None)
        if self.ewc is not None:
            self.ewc.consolidate(
                self.router, self._fisher(x, exp.train.model, exp.train.domain, n_models)
            )
        self._update_buffer(x, exp.train.model, exp.train.domain)
        self.experiences_seen += 1

    def learn_jointly(self, xs: list[np.ndarray]) -> None:
        """The upper bound: every experience's training data at once, all models registered."""
        t_last = len(self.hub.experiences) - 1
        n_models = self.hub.n_registered(t_last)
        self.register_until(n_models)
        if len(xs) != len(self.hub.experiences):
            raise ValueError(
                f"got {len(xs)} feature arrays for {len(self.hub.experiences)} experiences"
            )
        for t, xt in enumerate(xs):
            n_train = len(self.hub.experiences[t].train)
            if xt.shape[0] != n_train:
                raise ValueError(f"experience {t}: {xt.shape[0]} rows for {n_train} queries")
            self._check_rows(xt, f"training features of experience {t}")
        x = np.concatenate(xs)
        gold = np.concatenate([e.train.model for e in self.hub.experiences])
        dom = np.concatenate([e.train.domain for e in self.hub.experiences])
        self._fit(
            x, gold, dom, np.zeros(len(x), dtype=bool), n_models, anchor=None, two_phase=False
        )
        self.experiences_seen = len(self.hub.experiences)

    def _check_rows(self, x: np.ndarray, what: str) -> None:
        try:
            check_features(x, self.router.input_dim, has_backbone=self.router.has_backbone)
        except (TypeError, ValueError) as err:
            raise type(err)(f"{what}: {err}") from None

    def _update_buffer(self, x: np.ndarray, gold: np.ndarray, dom: np.ndarray) -> None:
        s = self.strategy
        if s.replay is None or s.replay_ratio == 0:
            return
        if s.replay == "coreset":
            idx = coreset_replay(x, dom, gold, s.replay_ratio, self.rng,
                                 min_per_domain=s.min_per_domain,
                                 max_per_model=s.max_per_model)  # fmt: skip
        else:
            idx = random_replay(len(gold), s.replay_ratio, self.rng)
        self.buffer.append((x[idx], gold[idx], dom[idx]))

    @property
    def buffer_size(self) -> int:
        return sum(len(g) for _, g, _ in self.buffer)

    # -- evaluation -------------------------------------------------------------------
    def predict(self, x: np.ndarray, n_models: int | None = None) -> np.ndarray:
        return self.router.to(self.device).predict(x, n_models=n_models)

    def evaluate(self, t: int, xs_test: list[np.ndarray]) -> list[dict[str, float]]:
        """Accuracy on the test sets of experiences 0..t after learning up to t."""
        n_models = self.hub.n_registered(t)
        out = []
        for k in range(t + 1):
            split = self.hub.experiences[k].test
            pred = self.predict(xs_test[k], n_models)
            out.append(routing_accuracy(pred, split.model, split.domain,
                                        self.hub.model_family, self.hub.model_domain))  # fmt: skip
        return out

    def fit_stream(self, xs_train: list[np.ndarray], xs_test: list[np.ndarray]) -> AccuracyMatrix:
        """Learn every experience in order, testing on all seen ones after each."""
        acc = AccuracyMatrix(len(self.hub.experiences))
        for t in range(len(self.hub.experiences)):
            self.learn(t, xs_train[t])
            for k, a in enumerate(self.evaluate(t, xs_test)):
                acc.record(t, k, a)
        return acc

    # -- training ---------------------------------------------------------------------
    def _loss_terms(
        self, model: torch.nn.Module, batch: dict[str, torch.Tensor], n_models: int,
        miner: HardNegativeMiner, neighbors: torch.Tensor | None, replay_weight: float,
    ) -> torch.Tensor:  # fmt: skip
        c = self.train_config
        gold, dom = batch["gold"], batch["domain"]
        cands, kinds = self.sampler.sample(
            gold, dom, n_models, hard_cache=miner.cache, generator=self.gen, return_kinds=True
        )
        self._slots[0] += int((kinds == HARD).sum())
        self._slots[1] += kinds.numel() - kinds.shape[0]
        logits = model(batch["x"], cands)
        logp = F.log_softmax(logits, dim=-1)
        if neighbors is not None and c.soft_target_eps > 0:
            # official soft targets: 1 - ε on the positive, ε shared by the neighbours present
            nb = neighbors[gold]  # (B, k)
            present = (cands[:, 1:, None] == nb[:, None, :]).any(-1).float()
            share = present / present.sum(1, keepdim=True).clamp(min=1.0)
            target = torch.cat(
                [torch.full_like(logp[:, :1], 1.0 - c.soft_target_eps), c.soft_target_eps * share],
                dim=1,
            )
            per_example = -(target * logp).sum(dim=1)
        else:
            per_example = -logp[:, 0]
        if replay_weight != 1.0:
            w = torch.where(batch["replay"], replay_weight, 1.0)
            per_example = per_example * w
        return per_example.mean()

    def _fit(
        self, x: np.ndarray, gold: np.ndarray, dom: np.ndarray, replay: np.ndarray,
        n_models: int, *, anchor: Anchor | None, two_phase: bool,
    ) -> None:  # fmt: skip
        from accelerate import Accelerator

        c, s = self.train_config, self.strategy
        start = time.perf_counter()
        accelerator = Accelerator(cpu=self.device.type == "cpu")
        dev = accelerator.device
        router = self.router.to(dev)
        data = _Examples(x, gold, dom, replay)
        seed = derive_seed(self.seed, "batches", self.experiences_seen)
        batches = DomainBatchSampler(
            dom, c.batch_size, domains_per_batch=c.domains_per_batch, seed=seed
        )
        loader = torch.utils.data.DataLoader(data, batch_sampler=batches, collate_fn=_identity)
        groups = [
            {"params": [p for p in router.adapter.parameters() if p.requires_grad],
             "name": "adapter"},
            {"params": list(router.projection.parameters()), "name": "projection"},
            {"params": list(router.model_embeddings.parameters()), "name": "embedding"},
        ]  # fmt: skip
        groups = [g for g in groups if g["params"]]
        # fused: one kernel for all parameters (5x less CPU per step than the per-tensor
        # loop on the ~2,000-row registry of CMRBench; the same update)
        optimizer = torch.optim.AdamW(
            groups, lr=c.lr_projection, weight_decay=c.weight_decay, fused=True
        )
        # the optimizer stays unwrapped: no mixed precision or accumulation here, and
        # accelerate's wrapper looks a package up on the file system at every step
        model, loader = accelerator.prepare(router, loader)
        per_epoch = len(loader)
        cap = c.max_epochs if c.max_epochs is not None else c.epochs
        total = cap * per_epoch  # schedule horizon
        ruled = c.max_epochs is not None
        # fixed epochs: phase 1 = the first 40 % of the steps (official schedule); under
        # the convergence rule: phase 1 runs until its own objective (routing loss +
        # anchors) plateaus, for at most 40 % of the max_epochs budget, then phase 2
        phase1_steps = int(s.phase1_fraction * cap * per_epoch) if two_phase and not ruled else 0
        rule1 = None
        if two_phase and ruled:
            p1_cap = max(1, int(s.phase1_fraction * cap))
            rule1 = Plateau(window=1, patience=c.patience, min_delta=c.tol, cap=p1_cap)
        miner = HardNegativeMiner(
            self.hub.n_registered(len(self.hub.experiences) - 1), c.hard_pool, device=dev
        )
        neighbors = None
        if c.soft_targets:
            nb = taxonomy_neighbors(
                self.hub.model_domain[:n_models], self.hub.model_family[:n_models],
                c.soft_target_neighbors, numpy_rng(self.seed, "neighbors", n_models),
            )  # fmt: skip
            neighbors = torch.as_tensor(nb, device=dev)
        self._slots = [0, 0]
        losses: list[float] = []
        full_losses: list[float] = []
        train_errors: list[float] = []
        phase1_losses: list[float] = []
        # house convergence rule on the epoch's mean phase-2 training loss (all ranks)
        rule = Plateau(window=1, patience=c.patience, min_delta=c.tol, cap=cap)
        chance_loss = float(np.log(min(c.candidates.k_total, n_models)))
        above_chance = 0
        epochs_run, step = 0, 0
        for epoch in range(cap):
            epoch_loss, epoch_batches, p1_loss, p1_batches = 0.0, 0, 0.0, 0
            epoch_phase1 = rule1 is not None and not rule1.stopped
            for batch in loader:
                phase1 = epoch_phase1 or step < phase1_steps
                base = {
                    "adapter": 0.0 if phase1 else c.lr_adapter,
                    "projection": s.phase1_lr_projection if phase1 else c.lr_projection,
                    "embedding": s.phase1_lr_embedding if phase1 else c.lr_embedding,
                }
                sched = min(1.0, (step + 1) / max(1, c.warmup_steps))
                if c.lr_schedule == "linear":
                    sched *= max(0.0, (total - step) / max(1, total - c.warmup_steps))
                for g in optimizer.param_groups:
                    g["lr"] = c.lr_scale * base[g["name"]] * min(1.0, sched)
                if step > 0 and step % c.mine_every == 0:
                    self._mine(accelerator.unwrap_model(model), data, miner, n_models, dev)
                loss = self._loss_terms(
                    model, batch, n_models, miner, None if phase1 else neighbors,
                    s.replay_loss_multiplier if phase1 else 1.0,
                )  # fmt: skip
                if not torch.isfinite(loss):
                    raise FloatingPointError(
                        f"{s.name}: the training loss became {loss.item()} at step {step}"
                    )
                if not phase1:
                    epoch_loss += float(loss.detach())
                    epoch_batches += 1
                if phase1 and anchor is not None:
                    inner = accelerator.unwrap_model(model)
                    loss = loss + s.anchor_embedding * anchor.embedding_loss(inner)
                    loss = loss + s.anchor_projection * anchor.projection_loss(inner)
                if phase1:
                    p1_loss += float(loss.detach())
                    p1_batches += 1
                if self.ewc is not None:
                    loss = loss + self.ewc.penalty(accelerator.unwrap_model(model))
                optimizer.zero_grad(set_to_none=True)
                accelerator.backward(loss)
                if c.max_grad_norm > 0:
                    accelerator.clip_grad_norm_(model.parameters(), c.max_grad_norm)
                optimizer.step()
                # the fused step writes the rows in place without bumping their version
                # counter: drop the cached normalised registry, or the per-epoch training
                # error below would score against stale rows (0.6.0's diagnostics did)
                router.invalidate_cache()
                step += 1
            epochs_run = epoch + 1
            full = self._train_objective(accelerator.unwrap_model(model), data, n_models, dev)
            full_losses.append(full[0])
            train_errors.append(full[1])
            # every rank judges the same number: the mean loss over all ranks' batches
            totals = accelerator.reduce(
                torch.tensor([epoch_loss, float(epoch_batches), p1_loss, float(p1_batches)],
                             device=dev), reduction="sum",
            )  # fmt: skip
            if epoch_phase1 and float(totals[3]) > 0:
                phase1_losses.append(float(totals[2] / totals[3]))
                rule1.update(phase1_losses[-1])
            if float(totals[1]) == 0:
                continue  # still in phase 1: nothing to judge convergence on
            losses.append(float(totals[0] / totals[1]))
            # a loss at or above the uniform guess over the K candidates, log K, means the
            # router has not started to learn (CMRBench's first experience: flat for 3
            # epochs, then falling fast); such an epoch is no plateau: the rule skips it
            if losses[-1] < chance_loss:
                rule.update(losses[-1])
            else:
                above_chance += 1
            if c.max_epochs is not None and epochs_run >= c.epochs and rule.stopped:
                break
        if not rule.stopped or (rule.reason == "plateau" and c.max_epochs is None):
            rule.reason = "cap"  # ran its whole epoch budget
        self.router = accelerator.unwrap_model(model)
        self.router.invalidate_cache()
        self.train_seconds += time.perf_counter() - start
        self.train_examples += epochs_run * len(x)
        hard_share = self._slots[0] / max(1, self._slots[1])
        self.history.append({"experience": self.experiences_seen, "epochs": epochs_run,
                             "steps": step, "losses": losses, "phase1_losses": phase1_losses,
                             "phase1_stopping": rule1.summary() if rule1 else None,
                             "full_losses": full_losses, "train_errors": train_errors,
                             "hard_share": hard_share,
                             "mined_models": miner.coverage, "stopping": rule.summary(),
                             "epochs_above_chance": above_chance,
                             "world_size": accelerator.num_processes})  # fmt: skip
        log.info("%s: %d epochs, %d steps on %d examples (%d models), hard share %.2f",
                 s.name, epochs_run, step, len(x), n_models, hard_share)  # fmt: skip

    @torch.no_grad()
    def _train_objective(
        self, router: CarveRouter, data: _Examples, n_models: int, dev: torch.device,
        chunk: int = 1024,
    ) -> tuple[float, float]:  # fmt: skip
        """Routing loss and top-1 error on this fit's training set, scored against every
        registered model (the quantity evaluated at test time), in eval mode."""
        was_training = router.training
        router.eval()
        table = router.normalized_registry(n_models).to(dev)
        ce, wrong = 0.0, 0
        for i in range(0, len(data), chunk):
            z = router.encode(data.x[i : i + chunk].to(dev))
            logits = z @ table.T / router.tau
            gold = data.gold[i : i + chunk].to(dev)
            ce += float(F.cross_entropy(logits, gold, reduction="sum"))
            wrong += int((logits.argmax(1) != gold).sum())
        router.train(was_training)
        return ce / max(1, len(data)), wrong / max(1, len(data))

    @torch.no_grad()
    def _mine(
        self, router: CarveRouter, data: _Examples, miner: HardNegativeMiner, n_models: int,
        dev: torch.device, chunk: int = 1024,
    ) -> None:  # fmt: skip
        """Hard negatives for every gold model of this fit's training set."""
        was_training = router.training
        router.eval()
        q = torch.cat([router.encode(data.x[i : i + chunk].to(dev))
                       for i in range(0, len(data), chunk)])  # fmt: skip
        router.train(was_training)
        miner.mine(q, data.gold.to(dev), router.model_embeddings.weight[:n_models], self.sampler)

    def _fisher(
        self, x: np.ndarray, gold: np.ndarray, dom: np.ndarray, n_models: int
    ) -> dict[str, torch.Tensor]:
        """Diagonal empirical Fisher: mean squared gradient of the routing loss over
        batches of ``strategy.ewc_fisher_batch`` examples (official: 4), in eval mode."""
        c = self.train_config
        step = self.strategy.ewc_fisher_batch
        router = self.router
        dev = router.projection.weight.device
        fisher = {k: torch.zeros_like(p) for k, p in router.named_parameters() if p.requires_grad}
        miner = HardNegativeMiner(n_models, c.hard_pool, device=dev)
        data = _Examples(x, gold, dom, np.zeros(len(x), dtype=bool))
        order = self.rng.permutation(len(x))
        n_batches = 0
        was_training = router.training
        router.eval()
        for i in range(0, len(x), step):
            batch = {
                k: v.to(dev) for k, v in data.__getitems__(order[i : i + step].tolist()).items()
            }
            router.zero_grad(set_to_none=True)
            self._loss_terms(router, batch, n_models, miner, None, 1.0).backward()
            for k, p in router.named_parameters():
                if k in fisher and p.grad is not None:
                    fisher[k] += p.grad.detach().pow(2)
            n_batches += 1
        router.zero_grad(set_to_none=True)
        router.train(was_training)
        return {k: f / max(1, n_batches) for k, f in fisher.items()}


def with_strategy(strategy: Strategy, **changes: Any) -> Strategy:
    """A copy of ``strategy`` with fields changed (e.g. ``replay_ratio=0.2``)."""
    return replace(strategy, **changes)
