"""Training K independent runs of one architecture at once, on stacked parameters.

The smoke grid trains dozens of tiny networks (every split × method); one at a time,
each step is dominated by per-operation overhead, not arithmetic. Here the K runs of a
group (same architecture and sizes) keep their own parameters, data, sampler, seed,
plateau rule and MER weights, but their layers are stacked along a leading dimension
(a ``Linear`` becomes one batched matrix product over the K copies), so one step advances
all of them. This is exact, not an approximation:

- the total loss is the sum of the K per-run losses, each computed from its own
  parameters and batch, so each run's gradient is its own loss's gradient;
- Adam and SGD (with weight decay and momentum) act elementwise, so one optimiser on the
  stacked tensors equals K separate ones (Adam runs on one flat buffer, :class:`FlatAdam`);
- a run whose plateau rule fires keeps the parameters of its stopping epoch (a snapshot,
  restored at the end); its curves end there;
- batch statistics (MER, SupCon, BatchNorm) are per run and per batch.

Initial parameters are those of :func:`icml26.merdg.train.train_method` (each run's
:class:`MultimodalNet` is built under its own seed); with dropout off, both trainers give
the same losses up to floating-point rounding (tested). Each run draws its dropout masks
from its own generator (seeded by the run's seed), so a run's numbers do not depend on
which runs share its stack (tested); with dropout on, the stacked and the one-run
trainers still draw different masks (the latter from the global generator).
LARS (layer-wise norms) and multi-process runs use :func:`train_method` one run at a time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from icml26.merdg.data import LODOSplit
from icml26.merdg.mer import _spectral_entropy, _variance_floor
from icml26.merdg.models import MultimodalNet, ProjectHead
from icml26.merdg.sampler import BalancedDomainSampler
from icml26.merdg.train import (
    METHODS,
    Method,
    TrainConfig,
    TrainResult,
    _dist,
    _optimizer,
    objective,
    train_method,
)
from icml26.shared import Plateau

__all__ = ["FlatAdam", "Job", "StackedNet", "train_batched", "train_many"]


@dataclass(frozen=True)
class Job:
    """One training run: a method on a split with its training seed."""

    method: Method | str
    split: LODOSplit
    seed: int = 0


class _Stacked(nn.Module):
    """K copies of an ``nn.Sequential`` (or :class:`ProjectHead`) of ``Linear``,
    ``LayerNorm``, ``BatchNorm1d``, ``ReLU`` and ``Dropout`` layers; inputs K × N × d."""

    def __init__(self, mods: Sequence[nn.Module]):
        super().__init__()
        self.normalize = isinstance(mods[0], ProjectHead) and bool(mods[0].normalize)
        self.noise = None  # x -> uniform draws of x's shape (per-run generators)
        seqs = [m.head if isinstance(m, ProjectHead) else m for m in mods]
        self.kinds: list[tuple] = []
        self.weights = nn.ParameterList()
        for i, layer in enumerate(seqs[0]):
            group = [s[i] for s in seqs]
            if any(type(g) is not type(layer) for g in group):
                raise TypeError("the K models differ in structure")
            if isinstance(layer, nn.Linear):
                self.kinds.append(("linear", len(self.weights)))
                self._add(torch.stack([g.weight.detach().T for g in group]))
                self._add(torch.stack([g.bias.detach() for g in group]).unsqueeze(1))
            elif isinstance(layer, nn.LayerNorm | nn.BatchNorm1d):
                kind = "layer" if isinstance(layer, nn.LayerNorm) else "batch"
                self.kinds.append((kind, len(self.weights), float(layer.eps), i))
                self._add(torch.stack([g.weight.detach() for g in group]).unsqueeze(1))
                self._add(torch.stack([g.bias.detach() for g in group]).unsqueeze(1))
                if kind == "batch":
                    self.register_buffer(
                        f"mean{i}", torch.stack([g.running_mean for g in group]).clone()
                    )
                    self.register_buffer(
                        f"var{i}", torch.stack([g.running_var for g in group]).clone()
                    )
                    self.momentum = 0.1 if layer.momentum is None else float(layer.momentum)
            elif isinstance(layer, nn.ReLU):
                self.kinds.append(("relu",))
            elif isinstance(layer, nn.Dropout):
                self.kinds.append(("dropout", float(layer.p)))
            else:
                raise TypeError(f"cannot stack a {type(layer).__name__} layer")

    def _add(self, t: torch.Tensor) -> None:
        self.weights.append(nn.Parameter(t.contiguous().clone()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weights
        for kind in self.kinds:
            if kind[0] == "linear":
                x = torch.baddbmm(w[kind[1] + 1], x, w[kind[1]])
            elif kind[0] == "relu":
                x = F.relu(x)
            elif kind[0] == "dropout":
                if self.training and kind[1] > 0:
                    # inverted dropout; a uniform draw is ~2× faster than F.dropout's here
                    u = self.noise(x) if self.noise is not None else torch.rand_like(x)
                    x = x * (u >= kind[1]) / (1.0 - kind[1])
            elif kind[0] == "layer":
                x = F.layer_norm(x, x.shape[-1:], eps=kind[2]) * w[kind[1]] + w[kind[1] + 1]
            else:  # BatchNorm1d over each copy's batch
                _, j, eps, i = kind
                rm, rv = getattr(self, f"mean{i}"), getattr(self, f"var{i}")
                if self.training:
                    # centred squares, not Tensor.var: over this middle axis var is ~2×
                    # slower on CPU; the running variance is the unbiased one
                    n = x.shape[-2]
                    mean = x.mean(-2, keepdim=True)
                    var = (x - mean).square().mean(-2, keepdim=True)
                    with torch.no_grad():
                        rm.lerp_(mean.squeeze(-2), self.momentum)
                        rv.lerp_(var.squeeze(-2) * (n / max(n - 1, 1)), self.momentum)
                else:
                    mean, var = rm.unsqueeze(-2), rv.unsqueeze(-2)
                x = (x - mean) / torch.sqrt(var + eps) * w[j] + w[j + 1]
        return F.normalize(x, dim=-1) if self.normalize else x

    @torch.no_grad()
    def write(self, mod: nn.Module, k: int) -> None:
        """Copy run ``k``'s parameters into the (unstacked) module ``mod``."""
        seq = mod.head if isinstance(mod, ProjectHead) else mod
        w = self.weights
        pos = 0
        for layer in seq:
            if isinstance(layer, nn.Linear):
                layer.weight.copy_(w[pos][k].T)
                layer.bias.copy_(w[pos + 1][k, 0])
                pos += 2
            elif isinstance(layer, nn.LayerNorm | nn.BatchNorm1d):
                layer.weight.copy_(w[pos][k, 0])
                layer.bias.copy_(w[pos + 1][k, 0])
                pos += 2
        for kind in self.kinds:
            if kind[0] == "batch":
                i = kind[3]
                seq[i].running_mean.copy_(getattr(self, f"mean{i}")[k])
                seq[i].running_var.copy_(getattr(self, f"var{i}")[k])


def _shape_key(mod: nn.Module) -> tuple:
    return tuple(
        (type(m).__name__, *(tuple(p.shape) for p in m.parameters(recurse=False)))
        for m in mod.modules()
    )


class _Joint(nn.Module):
    """The S slots of a module list (one per modality, half or modality pair) of K runs.

    Slots of one shape are stacked together (S·K copies, slot-major), so one batched
    product serves every modality; otherwise each slot is its own stack of K."""

    def __init__(self, slots: Sequence[Sequence[nn.Module]]):
        super().__init__()
        self.s, self.k = len(slots), len(slots[0])
        self.joint = len({_shape_key(mods[0]) for mods in slots}) == 1
        if self.joint:
            self.stacks = nn.ModuleList([_Stacked([m for mods in slots for m in mods])])
        else:
            self.stacks = nn.ModuleList(_Stacked(mods) for mods in slots)

    def __len__(self) -> int:
        return self.s

    def apply_each(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        if len(inputs) != self.s:
            raise ValueError(f"expected {self.s} inputs, got {len(inputs)}")
        if not self.joint or len({tuple(x.shape) for x in inputs}) > 1:
            if self.joint:
                raise ValueError("stacked slots need inputs of one shape")
            return [st(x) for st, x in zip(self.stacks, inputs, strict=True)]
        out = self.stacks[0](torch.cat(list(inputs), dim=0))
        return list(out.view(self.s, self.k, *out.shape[1:]).unbind(0))

    def write(self, mods: Sequence[nn.Module], k: int) -> None:
        for i, mod in enumerate(mods):
            if self.joint:
                self.stacks[0].write(mod, i * self.k + k)
            else:
                self.stacks[i].write(mod, k)


class StackedNet(nn.Module):
    """K :class:`MultimodalNet` copies of one architecture with stacked parameters; the
    same interface (``embed``, ``logits_from``, heads) on K × N × d inputs."""

    def __init__(self, models: Sequence[MultimodalNet]):
        super().__init__()
        if not models:
            raise ValueError("StackedNet needs at least one model")
        first = models[0]
        for m in models[1:]:
            if (m.arch, m.dims, m.n_classes, m.config) != (
                first.arch,
                first.dims,
                first.n_classes,
                first.config,
            ):
                raise ValueError("every stacked model needs the same architecture and sizes")
        self.arch, self.config = first.arch, first.config
        self.dims, self.n_classes, self.k = first.dims, first.n_classes, len(models)

        def stack(attr: str) -> _Joint:
            n = len(getattr(first, attr))
            return _Joint([[getattr(m, attr)[i] for m in models] for i in range(n)])

        self._names = ["encoders"]
        self.encoders = stack("encoders")
        if self.arch == "unimodal":
            self._names.append("heads")
            self.heads = stack("heads")
            return
        self.fusion = _Stacked([m.fusion for m in models])
        if self.arch == "fusion":
            self._names.append("proj")
            self.proj = stack("proj")
        else:
            self._names += ["proj_shared", "proj_specific", "translators"]
            self.proj_shared = stack("proj_shared")
            self.proj_specific = stack("proj_specific")
            self.translators = stack("translators")
            self.pairs = first.pairs

    def embed(self, xs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        if len(xs) != len(self.dims):
            raise ValueError(f"the model has {len(self.dims)} modalities; got {len(xs)} tensors")
        for m, (x, d) in enumerate(zip(xs, self.dims, strict=True)):
            if x.ndim != 3 or x.shape[0] != self.k or x.shape[2] != d:
                raise ValueError(f"modality {m} must be ({self.k} × N × {d}), got {tuple(x.shape)}")
        return self.encoders.apply_each(xs)

    def logits_from(self, embeddings: Sequence[torch.Tensor]) -> torch.Tensor:
        if self.arch == "unimodal":
            probs = torch.stack([h.softmax(-1) for h in self.heads.apply_each(embeddings)]).mean(0)
            return probs.clamp_min(1e-12).log()
        return self.fusion(torch.cat(list(embeddings), dim=-1))

    def forward(self, xs: Sequence[torch.Tensor]) -> torch.Tensor:
        return self.logits_from(self.embed(xs))

    def use_generators(self, generators: Sequence[torch.Generator]) -> None:
        """Draw every dropout mask of run ``k`` from ``generators[k]`` alone, so a run's
        numbers do not depend on which runs share its stack."""
        if len(generators) != self.k:
            raise ValueError(f"expected {self.k} generators, got {len(generators)}")
        k = self.k

        def noise(x: torch.Tensor) -> torch.Tensor:
            slots = x.shape[0] // k  # slot-major rows: i·K + k belongs to run k
            draws = [
                torch.rand((slots, *x.shape[1:]), generator=g, device=x.device, dtype=x.dtype)
                for g in generators
            ]
            return torch.stack(draws, dim=1).reshape(x.shape)

        for mod in self.modules():
            if isinstance(mod, _Stacked):
                mod.noise = noise

    def snapshot(self, k: int) -> dict[str, torch.Tensor]:
        """Run ``k``'s rows of every stacked tensor (rows k, K + k, … of joint slots)."""
        return {name: t[k :: self.k].clone() for name, t in self.state_dict().items()}

    @torch.no_grad()
    def restore(self, k: int, snap: dict[str, torch.Tensor]) -> None:
        for name, t in self.state_dict().items():
            t[k :: self.k] = snap[name]

    @torch.no_grad()
    def write(self, models: Sequence[MultimodalNet], skip: Sequence[set[str]] = ()) -> None:
        """Copy every run's parameters back into its own :class:`MultimodalNet`, except
        the heads named in ``skip[k]`` (heads run ``k``'s loss never used: a one-run
        optimiser leaves them at their initial values, weight decay here would not)."""
        for k, model in enumerate(models):
            if self.arch != "unimodal":
                self.fusion.write(model.fusion, k)
            for name in self._names:
                if k < len(skip) and name in skip[k]:
                    continue
                getattr(self, name).write(getattr(model, name), k)


class FlatAdam:
    """``torch.optim.Adam`` (L2 weight decay, no amsgrad) on one flat buffer.

    Every parameter becomes a view into one flat tensor and its gradient a view into one
    flat gradient buffer (backward accumulates into it in place), so a step is a few
    elementwise kernels on one tensor instead of some per tensor. The update is
    torch's multi-tensor Adam operation for operation (tested equal); parameters that
    get no gradient see a zero one (with weight decay they still move: only heads a
    run's loss never uses, which :meth:`StackedNet.write` leaves out).
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
    ):
        params = [p for p in params if p.requires_grad]
        if not params:
            raise ValueError("FlatAdam needs at least one parameter")
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        first = params[0]
        n = sum(p.numel() for p in params)
        self.flat = torch.empty(n, device=first.device, dtype=first.dtype)
        self.grad = torch.zeros_like(self.flat)
        offset = 0
        with torch.no_grad():
            for p in params:
                k = p.numel()
                self.flat[offset : offset + k].copy_(p.detach().reshape(-1))
                p.data = self.flat[offset : offset + k].view_as(p)
                p.grad = self.grad[offset : offset + k].view_as(p)
                offset += k
        self.exp_avg = torch.zeros_like(self.flat)
        self.exp_avg_sq = torch.zeros_like(self.flat)
        self.steps = 0

    def zero_grad(self) -> None:
        self.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        beta1, beta2 = self.betas
        self.steps += 1
        grad = self.grad
        if self.weight_decay:
            grad = grad.add(self.flat, alpha=self.weight_decay)
        # m ← β1 m + (1 − β1) g ;  v ← β2 v + (1 − β2) g²
        self.exp_avg.lerp_(grad, 1 - beta1)
        self.exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias1 = 1 - beta1**self.steps
        bias2_sqrt = (1 - beta2**self.steps) ** 0.5
        denom = self.exp_avg_sq.sqrt().div_(bias2_sqrt).add_(self.eps)
        # p ← p − lr / (1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + ε)
        self.flat.addcdiv_(self.exp_avg, denom, value=-(self.lr / bias1))


def _pad(arrays: Sequence[torch.Tensor], length: int) -> torch.Tensor:
    out = arrays[0].new_zeros((len(arrays), length, *arrays[0].shape[1:]))
    for k, a in enumerate(arrays):
        out[k, : len(a)] = a
    return out


class _EvalSet:
    """Every run's evaluation part, zero-padded to a common length."""

    def __init__(self, parts, device: torch.device):
        n = max(len(p) for p in parts)
        self.sizes = torch.tensor([len(p) for p in parts], device=device)
        self.empty = [len(p) == 0 for p in parts]
        length = max(n, 1)
        self.xs = [
            _pad([torch.as_tensor(p.features[m], device=device) for p in parts], length)
            for m in range(parts[0].n_modalities)
        ]
        self.y = _pad([torch.as_tensor(p.labels, device=device) for p in parts], length)
        self.valid = torch.arange(length, device=device)[None, :] < self.sizes[:, None]

    @torch.no_grad()
    def accuracy(self, net: StackedNet) -> list[float]:
        was = net.training
        net.eval()
        hit = (net(self.xs).argmax(-1) == self.y) & self.valid
        net.train(was)
        acc = (hit.sum(1).double() / self.sizes.clamp_min(1)).tolist()
        return [float("nan") if e else a for a, e in zip(acc, self.empty, strict=True)]


def _mer_fn(methods: Sequence[Method], cfg: TrainConfig, device: torch.device):
    """Per-run MER weights: one penalty per run, zero for runs without MER."""
    idx = [k for k, m in enumerate(methods) if m.mer]
    if not idx:
        return None
    mcfgs = [methods[k].mer_config or cfg.mer for k in idx]
    if len({(c.eps, c.shrinkage) for c in mcfgs}) > 1:
        raise ValueError("stacked MER runs need one eps and one shrinkage")
    eps, shrink = mcfgs[0].eps, mcfgs[0].shrinkage
    sel = torch.tensor(idx, device=device)
    lam = torch.tensor([c.lambda_mer for c in mcfgs], device=device)
    a_marg = torch.tensor([c.alpha_marg for c in mcfgs], device=device)
    a_spec = torch.tensor([c.alpha_spec for c in mcfgs], device=device)
    use_marg, use_spec = bool(a_marg.any()), bool(a_spec.any())
    k_all = len(methods)

    def penalty(features: Sequence[torch.Tensor]) -> torch.Tensor:
        total = features[0].new_zeros(len(idx))
        for z in features:
            zz = z[sel] if len(idx) < k_all else z
            if use_marg:
                total = total + a_marg * _variance_floor(zz, eps)
            if use_spec:
                total = total + a_spec * _spectral_entropy(zz, eps, shrink)
        if len(idx) == k_all:
            return lam * total
        return features[0].new_zeros(k_all).index_add(0, sel, lam * total)

    return penalty


def train_batched(
    jobs: Sequence[Job],
    config: TrainConfig | None = None,
    *,
    device: str | torch.device | None = None,
    progress_callback=None,
) -> list[TrainResult | Exception]:
    """Train every job of one architecture at once; one result (or its error) per job.

    The jobs need the same architecture, modality widths, class count and number of
    sampler batches per epoch (:func:`train_many` groups arbitrary jobs for you).
    """
    cfg = config or TrainConfig()
    if cfg.optimizer not in ("adam", "sgd"):
        raise ValueError("stacked training needs an elementwise optimiser ('adam' or 'sgd')")
    if not jobs:
        return []
    methods = [METHODS[j.method] if isinstance(j.method, str) else j.method for j in jobs]
    for j in jobs:
        if isinstance(j.method, str) and j.method not in METHODS:
            raise ValueError(f"unknown method {j.method!r}; choose from {sorted(METHODS)}")
        if j.split.target in j.split.sources:
            raise ValueError(
                f"the target domain {j.split.target} is among the sources {j.split.sources}"
            )
    if any(m.dg for m in methods):
        raise ValueError("MixStyle and RSC runs train one at a time (train_method)")
    if any(m.arch == "mbcd" for m in methods):
        raise ValueError("MBCD runs (a teacher per run) train one at a time (train_method)")
    arch = {m.arch for m in methods}
    if len(arch) > 1:
        raise ValueError(f"stacked runs need one architecture, got {sorted(arch)}")
    trains = [j.split.train for j in jobs]
    dims = {t.dims for t in trains} | {j.split.test.dims for j in jobs}
    if len(dims) > 1:
        raise ValueError(f"stacked runs need the same modality widths, got {sorted(dims)}")
    n_classes = {int(t.n_classes) for t in trains}
    if len(n_classes) > 1:
        raise ValueError(f"stacked runs need one class count, got {sorted(n_classes)}")
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    samplers = [
        BalancedDomainSampler(t.domains, cfg.batch_size, drop_last=cfg.drop_last, seed=j.seed)
        for t, j in zip(trains, jobs, strict=True)
    ]
    if len({len(s) for s in samplers}) > 1:
        raise ValueError("stacked runs need the same number of batches per epoch")
    K = len(jobs)
    models = []
    for j, m in zip(jobs, methods, strict=True):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(j.seed)
            models.append(
                MultimodalNet(trains[0].dims, int(trains[0].n_classes), m.arch, cfg.model)
            )
    net = StackedNet(models).to(device)
    net.use_generators([torch.Generator(device=device).manual_seed(j.seed) for j in jobs])
    if cfg.optimizer == "adam":  # one flat buffer: a handful of kernels per step
        opt = FlatAdam(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    else:
        opt = _optimizer(net, cfg)
    n_max = max(len(t) for t in trains)
    xs = [
        _pad([torch.as_tensor(t.features[m], device=device) for t in trains], n_max)
        for m in range(trains[0].n_modalities)
    ]
    y = _pad([torch.as_tensor(t.labels, device=device) for t in trains], n_max)
    val = _EvalSet([j.split.val for j in jobs], device)
    test = _EvalSet([j.split.test for j in jobs], device)
    mer_fn = _mer_fn(methods, cfg, device)
    rules = [
        Plateau(
            window=1, patience=cfg.plateau_patience, min_delta=cfg.plateau_min_delta, cap=cfg.epochs
        )
        for _ in jobs
    ]
    losses: list[list[float]] = [[] for _ in jobs]
    vals: list[list[float]] = [[] for _ in jobs]
    tests: list[list[float]] = [[] for _ in jobs]
    seen: list[list[int]] = [[] for _ in jobs]
    alive = torch.ones(K, dtype=torch.bool, device=device)
    failed: dict[int, Exception] = {}
    snaps: dict[int, dict[str, torch.Tensor]] = {}
    rows = torch.arange(K, device=device)[:, None]
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(jobs[0].seed)
        epoch = 0
        while bool(alive.any()):
            net.train()
            total, count = torch.zeros(K, device=device), 0
            for batches in zip(*samplers, strict=True):
                idx = torch.as_tensor(batches, device=device)
                if epoch == 0:
                    for k in range(K):
                        seen[k].extend(batches[k])
                loss = objective(net, [x[rows, idx] for x in xs], y[rows, idx], cfg, mer_fn)
                bad = alive & ~torch.isfinite(loss)
                if bool(bad.any()):
                    for k in bad.nonzero().flatten().tolist():
                        failed[k] = FloatingPointError(
                            f"{methods[k].name}: the training loss became "
                            f"{float(loss[k])} at epoch {epoch}"
                        )
                    alive = alive & ~bad
                    if not bool(alive.any()):
                        break
                opt.zero_grad()
                loss[alive].sum().backward()
                opt.step()
                total += loss.detach()
                count += 1
            if not bool(alive.any()):
                break
            epoch_loss = (total / max(count, 1)).tolist()
            va, te = val.accuracy(net), test.accuracy(net)
            for k in alive.nonzero().flatten().tolist():
                losses[k].append(epoch_loss[k])
                vals[k].append(va[k])
                tests[k].append(te[k])
                rules[k].update(epoch_loss[k])
                if rules[k].stopped:
                    alive[k] = False
                    snaps[k] = net.snapshot(k)
            epoch += 1
            if progress_callback is not None:
                progress_callback()
    for k, snap in snaps.items():
        net.restore(k, snap)
    unused = {"fusion": {"proj"}, "simmmdg": {"proj_specific"}}.get(methods[0].arch, set())
    net.write(models, [set() if m.mer else unused for m in methods])
    out: list[TrainResult | Exception] = []
    for k, m in enumerate(methods):
        if k in failed:
            out.append(failed[k])
            continue
        if not all(math.isfinite(v) for v in losses[k]):
            out.append(FloatingPointError(f"{m.name}: non-finite epoch loss"))
            continue
        out.append(
            TrainResult(
                method=m.name,
                model=models[k],
                train_loss=losses[k],
                val_acc=vals[k],
                test_acc=tests[k],
                stopping=rules[k].summary(),
                samples_seen=seen[k],
            )
        )
    return out


def train_many(
    jobs: Sequence[Job],
    config: TrainConfig | None = None,
    *,
    device: str | torch.device | None = None,
    progress_callback=None,
) -> list[TrainResult | Exception]:
    """Every job, stacked by architecture where exact (Adam/SGD, one process), else one at
    a time with :func:`train_method`; results in the order of ``jobs``."""
    cfg = config or TrainConfig()
    for j in jobs:
        if isinstance(j.method, str) and j.method not in METHODS:
            raise ValueError(f"unknown method {j.method!r}; choose from {sorted(METHODS)}")
    _, world = _dist()
    results: list[TrainResult | Exception | None] = [None] * len(jobs)

    def resolved(j: Job) -> Method:
        return METHODS[j.method] if isinstance(j.method, str) else j.method

    single = [
        i
        for i, j in enumerate(jobs)
        if cfg.optimizer == "lars" or world > 1 or resolved(j).dg or resolved(j).arch == "mbcd"
    ]  # LARS, several processes, MixStyle / RSC, MBCD: one run at a time
    for i in single:
        j = jobs[i]
        try:
            results[i] = train_method(j.method, j.split, cfg, seed=j.seed, device=device)
        except (FloatingPointError, RuntimeError) as err:
            results[i] = err
        if progress_callback is not None:
            progress_callback()
    groups: dict[tuple, list[int]] = {}
    for i, j in enumerate(jobs):
        if i in single:
            continue
        m = resolved(j)
        n_batches = len(j.split.train) // cfg.batch_size  # grouping key only
        # runs with and without MER apart: a group without MER skips the projection heads
        key = (m.arch, m.mer, j.split.train.dims, int(j.split.train.n_classes), n_batches)
        groups.setdefault(key, []).append(i)
    for members in groups.values():
        try:
            res = train_batched(
                [jobs[i] for i in members], cfg, device=device, progress_callback=None
            )
        except ValueError:  # e.g. unequal sampler lengths: one at a time
            res = []
            for i in members:
                try:
                    res.append(
                        train_method(
                            jobs[i].method, jobs[i].split, cfg, seed=jobs[i].seed, device=device
                        )
                    )
                except (FloatingPointError, RuntimeError) as err:
                    res.append(err)
        except RuntimeError as err:
            res = [err] * len(members)
        for i, r in zip(members, res, strict=True):
            results[i] = r
            if progress_callback is not None:
                progress_callback()
    return results  # type: ignore[return-value]
