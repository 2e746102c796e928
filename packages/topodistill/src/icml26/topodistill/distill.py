"""TopoDistill: delay embedders distilled from a multivariate embedder's neighbourhoods.

From the abstract (the only source; no paper text or code was found): a global
embedder is trained on the multivariate observations; per-variable delay embedders
are distilled so that their neighbourhood distributions match the global topology;
CCM then runs on the learned shadow manifolds. **Everything below is reconstructed**:

1. standardise every channel on the training block (§Method step 1);
2. teacher :class:`~icml26.topodistill.embedders.GlobalEmbedder` on windows of all
   channels, trained to forecast ``X_{t+h_G}`` (optionally denoising its input);
3. student :class:`~icml26.topodistill.embedders.DelayEmbedder` per variable on its
   own delay window of length ``L ≥ E`` at lag τ;
4. minibatch neighbourhoods: teacher ``P`` (perplexity-calibrated or kNN softmax) and
   student ``Q`` (Gaussian or Student-t kernel), both Theiler-excluded;
5. loss ``μ · KL(P ‖ Q) + λ · MSE(x̂_i(t + h), x_i(t + h))`` with the teacher frozen.

Leakage safeguard (brief, "Specificity safeguard"): :meth:`TopoDistill.fit` sees the
training block only; :meth:`TopoDistill.embed` maps a variable's *own* series — no
other channel enters a student at inference — so cross-mapping on a later block
carries no information from other variables beyond what the variable's own past holds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from icml26.shared.progress import progress
from icml26.shared.seeding import derive_seed
from icml26.topodistill.embedders import ARCHITECTURES, DelayEmbedder, GlobalEmbedder
from icml26.topodistill.embedding import check_series, choose_tau
from icml26.topodistill.neighbourhood import (
    KERNELS,
    knn_affinities,
    neighbourhood_kl,
    perplexity_affinities,
    squared_distances,
    student_log_affinities,
    theiler_mask,
)
from icml26.topodistill.neighbours import default_device
from icml26.topodistill.stopping import Plateau

__all__ = ["DistillConfig", "TopoDistill"]

log = logging.getLogger(__name__)

AFFINITIES = ("perplexity", "knn")
# elements of the teacher's P calibrated at once: a few minibatches (cache-sized blocks are
# several times faster than one large block)
_P_BLOCK_ELEMENTS = 262_144


@dataclass(frozen=True)
class DistillConfig:
    """Every choice of the (reconstructed) method; the defaults are the smoke settings.

    Teacher: ``window`` samples at lag ``teacher_lag`` of all channels → ``teacher_latent``
    dims, forecasting ``teacher_step`` ahead (None: the median student lag), with Gaussian
    input noise ``teacher_input_noise`` (0: a plain forecaster; > 0: the
    denoising-autoencoder variant). Student: window ``student_window`` (L) at the
    variable's lag τ → ``latent`` dims (None: the CCM E passed to ``fit``), as a
    correction of the delay vector when ``residual``, forecasting ``student_step`` ahead
    (None: τ) with weight ``forecast_weight``; the KL term has weight ``topo_weight``
    (0: the forecasting-only ablation). Neighbourhoods: ``affinity`` ("perplexity" or
    "knn") with ``perplexity`` / ``knn`` / ``teacher_temperature``; student ``kernel``
    ("gaussian" or "student_t") with ``temperature``; Theiler window ``theiler`` (None:
    the largest lag).

    Convergence (:class:`~icml26.topodistill.stopping.Plateau`, on the training block):
    the teacher stops when its epoch-mean forecast loss has not improved by a fraction
    ``teacher_min_delta`` for ``teacher_patience`` epochs, at most ``teacher_epochs``
    epochs; each student stops when its mean KL over windows of ``plateau_window``
    minibatches has not improved by a fraction ``min_delta`` for ``patience`` windows,
    at most ``student_steps`` minibatches (a student that has stopped is frozen while
    the others go on).
    """

    window: int = 5
    teacher_lag: int = 1
    teacher_latent: int = 8
    teacher_hidden: int = 64
    teacher_epochs: int = 200
    teacher_patience: int = 5
    teacher_min_delta: float = 0.005
    teacher_step: int | None = None
    teacher_input_noise: float = 0.0
    student_window: int = 20
    latent: int | None = None
    student_hidden: int = 64
    student_steps: int = 3000
    plateau_window: int = 100
    patience: int = 2
    min_delta: float = 0.02
    student_step: int | None = None
    architecture: str = "mlp"
    residual: bool = True
    forecast_weight: float = 1.0
    topo_weight: float = 1.0
    affinity: str = "perplexity"
    perplexity: float = 10.0
    knn: int = 10
    teacher_temperature: float = 1.0
    kernel: str = "student_t"
    temperature: float = 1.0
    theiler: int | None = None
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 1e-4

    def __post_init__(self) -> None:
        positive = (
            "window",
            "teacher_lag",
            "teacher_latent",
            "teacher_hidden",
            "teacher_epochs",
            "student_window",
            "student_hidden",
            "student_steps",
            "batch_size",
            "knn",
            "teacher_patience",
            "plateau_window",
            "patience",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.affinity not in AFFINITIES:
            raise ValueError(f"affinity must be one of {AFFINITIES}, got {self.affinity!r}")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.kernel!r}")
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}")
        for name in ("perplexity", "temperature", "teacher_temperature", "lr"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("forecast_weight", "topo_weight", "teacher_input_noise", "weight_decay"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("min_delta", "teacher_min_delta"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must lie in [0, 1), got {getattr(self, name)}")


@dataclass
class _Fitted:
    mean: np.ndarray
    sd: np.ndarray
    lags: list[int]
    dims: list[int]
    theiler: int
    teacher_step: int
    history: dict[str, list[float]] = field(default_factory=dict)
    stopping: dict[str, dict] = field(default_factory=dict)


def _windows(series: torch.Tensor, times: torch.Tensor, length: int, lag: int) -> torch.Tensor:
    """Delay windows ``[s(t), s(t − lag), …, s(t − (length−1) lag)]``; series (T,) or (T, d)."""
    offsets = torch.arange(length, device=series.device) * lag
    return series[times[:, None] - offsets[None, :]]


class TopoDistill:
    """Teacher and per-variable students; ``fit`` on one block, ``embed`` on another.

    >>> model = TopoDistill(DistillConfig(student_steps=50), seed=0, device="cpu")
    >>> model.fit(train_block, lags=[8, 8], dims=[3, 3])           # doctest: +SKIP
    >>> z, times = model.embed(test_block[:, 1], variable=1)       # doctest: +SKIP
    """

    def __init__(
        self,
        config: DistillConfig | None = None,
        *,
        seed: int = 0,
        device: torch.device | str | None = None,
    ):
        self.config = config or DistillConfig()
        if not isinstance(self.config, DistillConfig):
            raise TypeError(f"config must be a DistillConfig, got {type(config).__name__}")
        self.seed = int(seed)
        self.device = torch.device(device) if device is not None else default_device()
        self.teacher: GlobalEmbedder | None = None
        self.students: dict[int, DelayEmbedder] = {}
        self._fitted: _Fitted | None = None

    # -- fitting ------------------------------------------------------------------
    def fit(
        self,
        data: np.ndarray,
        *,
        lags: Sequence[int] | int | None = None,
        dims: Sequence[int] | int | None = None,
        variables: Sequence[int] | None = None,
        callback: Callable[[int, TopoDistill], None] | None = None,
    ) -> TopoDistill:
        """Train the teacher on ``data`` (T, d) and the students of ``variables``.

        ``lags``: each variable's delay τ (None: first minimum of mutual information);
        ``dims``: each student's latent size when ``config.latent`` is None (default 3);
        ``callback(step, model)`` runs after every ``plateau_window`` student steps (the
        students can be used with :meth:`embed` inside it; budget studies use it).
        """
        cfg = self.config
        data = np.asarray(data, dtype=float)
        if data.ndim != 2 or data.shape[1] < 1:
            raise ValueError(f"data must be (T, d), got shape {data.shape}")
        if not np.all(np.isfinite(data)):
            raise ValueError("data contains NaN or inf; drop or impute them first")
        t_len, d = data.shape
        for i in range(d):
            check_series(data[:, i], f"channel {i}", min_length=20, varying=True)
        lags = self._per_variable(lags, d, "lags") or [choose_tau(data[:, i]) for i in range(d)]
        dims = self._per_variable(dims, d, "dims") or [3] * d
        variables = list(range(d)) if variables is None else [int(v) for v in variables]
        if any(not 0 <= v < d for v in variables):
            raise ValueError(f"variables must lie in 0..{d - 1}, got {variables}")
        theiler = cfg.theiler if cfg.theiler is not None else max(lags)
        teacher_step = cfg.teacher_step or int(np.median(lags))
        mean, sd = data.mean(0), data.std(0)
        if np.any(sd == 0):
            raise ValueError("a channel is constant on the training block")
        self._fitted = _Fitted(mean, sd, lags, dims, theiler, teacher_step)
        x = torch.as_tensor((data - mean) / sd, dtype=torch.float32, device=self.device)

        span = max(
            (cfg.student_window - 1) * max(lags[v] for v in variables),
            (cfg.window - 1) * cfg.teacher_lag,
        )
        ahead = max([teacher_step] + [cfg.student_step or lags[v] for v in variables])
        available = t_len - ahead - span
        if available < 2 * cfg.batch_size:
            raise ValueError(
                f"the training block has {t_len} points; student windows of span "
                f"(L - 1) * tau = {span} and a forecast {ahead} ahead leave {max(available, 0)} "
                f"training samples, fewer than 2 * batch_size = {2 * cfg.batch_size}; give a "
                "longer series, or lower student_window, batch_size or the lags"
            )
        times = torch.arange(span, t_len - ahead, device=self.device)
        self._train_teacher(x, times)
        with torch.no_grad():
            z_global = self.teacher(_windows(x, times, cfg.window, cfg.teacher_lag))
        self.students.update(self._train_students(x, times, z_global, variables, callback))
        return self

    @staticmethod
    def _per_variable(value, d: int, name: str) -> list[int] | None:
        if value is None:
            return None
        out = [int(value)] * d if np.isscalar(value) else [int(v) for v in value]
        if len(out) != d or min(out) < 1:
            raise ValueError(f"{name} must be a positive int or {d} positive ints, got {value}")
        return out

    def _generator(self, *stream: str | int) -> torch.Generator:
        gen = torch.Generator(device="cpu")
        gen.manual_seed(derive_seed(self.seed, *stream))
        return gen

    def _train_teacher(self, x: torch.Tensor, times: torch.Tensor) -> None:
        cfg, fit = self.config, self._fitted
        gen = self._generator("teacher")
        torch.manual_seed(derive_seed(self.seed, "teacher-init"))
        net = GlobalEmbedder(x.shape[1], cfg.window, cfg.teacher_latent, cfg.teacher_hidden)
        net.to(self.device)
        opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        windows = _windows(x, times, cfg.window, cfg.teacher_lag)
        future = x[times + fit.teacher_step][:, None, :]
        rule = Plateau(1, cfg.teacher_patience, cfg.teacher_min_delta, cfg.teacher_epochs)
        losses = []
        while not rule.stopped:
            perm = torch.randperm(times.numel(), generator=gen).to(self.device)
            epoch = []
            for start in range(0, perm.numel(), cfg.batch_size):
                b = perm[start : start + cfg.batch_size]
                inp = windows[b]
                if cfg.teacher_input_noise > 0:
                    noise = torch.randn(inp.shape, generator=gen).to(self.device)
                    inp = inp + cfg.teacher_input_noise * noise
                loss = torch.mean((net.forecast(net(inp)) - future[b]) ** 2)
                opt.zero_grad()
                loss.backward()
                opt.step()
                epoch.append(loss.item())
            losses += epoch
            rule.update(float(np.mean(epoch)))
        net.eval()
        self.teacher = net
        fit.history["teacher"] = losses
        fit.stopping["teacher"] = {**rule.summary(), "unit": "epochs"}

    def _teacher_affinities(self, z: torch.Tensor, excluded: torch.Tensor) -> torch.Tensor:
        cfg = self.config
        sq = squared_distances(z)
        if cfg.affinity == "perplexity":
            return perplexity_affinities(sq, excluded, cfg.perplexity)
        return knn_affinities(sq, excluded, cfg.knn, cfg.teacher_temperature)

    def _train_students(
        self,
        x: torch.Tensor,
        times: torch.Tensor,
        z_global: torch.Tensor,
        variables: list[int],
        callback: Callable[[int, TopoDistill], None] | None = None,
    ) -> dict[int, DelayEmbedder]:
        """Distil every student on the same minibatches, so each batch's teacher P is
        computed once; the students share no parameters, so this equals training them
        one by one on those batches."""
        cfg, fit = self.config, self._fitted
        gen = self._generator("students")
        nets, windows, futures, params = {}, {}, {}, []
        for v in variables:
            torch.manual_seed(derive_seed(self.seed, "student-init", v))
            latent = cfg.latent or fit.dims[v]
            net = DelayEmbedder(
                cfg.student_window, latent, cfg.student_hidden, 1, cfg.architecture, cfg.residual
            )
            nets[v] = net.to(self.device)
            windows[v] = _windows(x[:, v], times, cfg.student_window, fit.lags[v])
            futures[v] = x[times + (cfg.student_step or fit.lags[v]), v][:, None]
            params += list(net.parameters())
        opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        batch = min(cfg.batch_size, times.numel())
        hist = {v: ([], []) for v in variables}
        for v in variables:  # live lists: a callback sees the history so far
            fit.history[f"student{v}_kl"], fit.history[f"student{v}_forecast"] = hist[v]
        rules = {
            v: Plateau(cfg.plateau_window, cfg.patience, cfg.min_delta, cfg.student_steps)
            for v in variables
        }
        # the teacher is frozen: its P for a block of upcoming minibatches is calibrated in
        # one batched call (the same batches, in the same order, as drawing them one by one)
        block = max(1, _P_BLOCK_ELEMENTS // (batch * batch))
        queue: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
        bar = progress(total=cfg.student_steps, desc="distil", leave=False)
        step = 0
        while not all(rule.stopped for rule in rules.values()):
            if not queue:
                count = min(block, cfg.student_steps - step)
                bs = torch.stack(
                    [torch.randperm(times.numel(), generator=gen)[:batch] for _ in range(count)]
                ).to(self.device)
                masks = theiler_mask(times[bs], fit.theiler)
                ps = self._teacher_affinities(z_global[bs], masks)
                queue = list(zip(bs, masks, ps, strict=True))[::-1]
            b, excluded, p = queue.pop()
            total = torch.zeros((), device=self.device)
            active = [v for v in variables if not rules[v].stopped]
            kls = {}
            for v in active:
                net = nets[v]
                z = net(windows[v][b])
                log_q = student_log_affinities(
                    z,
                    excluded,
                    kernel=cfg.kernel,
                    temperature=cfg.temperature,
                    perplexity=cfg.perplexity,
                )
                kl = neighbourhood_kl(p, log_q)
                fc = torch.mean((net.forecast(z) - futures[v][b]) ** 2)
                total = total + cfg.topo_weight * kl + cfg.forecast_weight * fc
                kls[v] = kl.item()
                hist[v][0].append(kls[v])
                hist[v][1].append(fc.item())
            opt.zero_grad(set_to_none=True)  # a frozen student keeps no gradient: AdamW skips it
            total.backward()
            opt.step()
            for v in active:
                # the forecasting-only ablation (topo_weight = 0) watches its forecast loss
                rules[v].update(kls[v] if cfg.topo_weight > 0 else hist[v][1][-1])
            step += 1
            bar.update(1)
            if callback is not None and step % cfg.plateau_window == 0:
                self.students.update(nets)
                callback(step, self)
        bar.close()
        for v, net in nets.items():
            net.eval()
            fit.stopping[f"student{v}"] = {**rules[v].summary(), "unit": "steps"}
            log.info("student %d stopped at step %d (%s)", v, rules[v].steps, rules[v].reason)
        return nets

    # -- inference -----------------------------------------------------------------
    def _require(self) -> _Fitted:
        if self._fitted is None or self.teacher is None:
            raise RuntimeError("call fit() first")
        return self._fitted

    @property
    def lags(self) -> list[int]:
        return list(self._require().lags)

    @property
    def theiler(self) -> int:
        return self._require().theiler

    @property
    def history(self) -> dict[str, list[float]]:
        return self._require().history

    @property
    def stopping(self) -> dict[str, dict]:
        """How each network stopped: ``{"teacher": {"steps", "reason", ...}, ...}``."""
        return self._require().stopping

    def span(self, variable: int) -> int:
        """Samples of past a student window needs: ``(L − 1) τ``."""
        return (self.config.student_window - 1) * self._require().lags[variable]

    @torch.no_grad()
    def embed(self, series: object, variable: int) -> tuple[np.ndarray, np.ndarray]:
        """The learned shadow manifold of ``variable`` from its own ``series`` alone.

        Returns ``(z (M, m), times (M,))`` with ``times`` indexing ``series``.
        """
        fit = self._require()
        if variable not in self.students:
            raise KeyError(f"no student for variable {variable}; fitted: {sorted(self.students)}")
        arr = check_series(series, f"series of variable {variable}")
        span = self.span(variable)
        if arr.size <= span + 1:
            raise ValueError(
                f"the series has {arr.size} points; the student window needs more than {span}"
            )
        x = torch.as_tensor(
            (arr - fit.mean[variable]) / fit.sd[variable], dtype=torch.float32, device=self.device
        )
        times = torch.arange(span, arr.size, device=self.device)
        w = _windows(x, times, self.config.student_window, fit.lags[variable])
        z = self.students[variable](w)
        return z.double().cpu().numpy(), times.cpu().numpy()

    @torch.no_grad()
    def embed_global(self, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The teacher's latent points of a multivariate block (T, d)."""
        fit, cfg = self._require(), self.config
        data = np.asarray(data, dtype=float)
        if data.ndim != 2 or data.shape[1] != fit.mean.size:
            raise ValueError(f"data must be (T, {fit.mean.size}), got {data.shape}")
        x = torch.as_tensor((data - fit.mean) / fit.sd, dtype=torch.float32, device=self.device)
        times = torch.arange((cfg.window - 1) * cfg.teacher_lag, data.shape[0], device=self.device)
        z = self.teacher(_windows(x, times, cfg.window, cfg.teacher_lag))
        return z.double().cpu().numpy(), times.cpu().numpy()

    # -- persistence ---------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Weights as safetensors plus a JSON sidecar (config and fitted statistics)."""
        from safetensors.torch import save_file

        fit = self._require()
        path = Path(path).with_suffix(".safetensors")
        path.parent.mkdir(parents=True, exist_ok=True)
        tensors = {f"teacher.{k}": v for k, v in self.teacher.state_dict().items()}
        for v, net in self.students.items():
            tensors.update({f"student{v}.{k}": t for k, t in net.state_dict().items()})
        save_file({k: t.detach().cpu().contiguous() for k, t in tensors.items()}, str(path))
        meta = {
            "config": asdict(self.config),
            "seed": self.seed,
            "mean": fit.mean.tolist(),
            "sd": fit.sd.tolist(),
            "lags": fit.lags,
            "dims": fit.dims,
            "theiler": fit.theiler,
            "teacher_step": fit.teacher_step,
            "students": sorted(self.students),
        }
        path.with_suffix(".json").write_text(json.dumps(meta, indent=2))
        return path

    @classmethod
    def load(cls, path: str | Path, *, device: torch.device | str | None = None) -> TopoDistill:
        """Read what :meth:`save` wrote (no pickle involved)."""
        from safetensors.torch import load_file

        path = Path(path).with_suffix(".safetensors")
        try:
            meta = json.loads(path.with_suffix(".json").read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"cannot read the TopoDistill sidecar of {path}: {err}") from err
        model = cls(DistillConfig(**meta["config"]), seed=meta["seed"], device=device)
        cfg = model.config
        mean = np.asarray(meta["mean"])
        model._fitted = _Fitted(
            mean,
            np.asarray(meta["sd"]),
            meta["lags"],
            meta["dims"],
            meta["theiler"],
            meta["teacher_step"],
        )
        tensors = load_file(str(path), device=str(model.device))
        model.teacher = GlobalEmbedder(
            mean.size, cfg.window, cfg.teacher_latent, cfg.teacher_hidden
        )
        model.teacher.load_state_dict(
            {k.split(".", 1)[1]: t for k, t in tensors.items() if k.startswith("teacher.")}
        )
        model.teacher.to(model.device).eval()
        for v in meta["students"]:
            net = DelayEmbedder(
                cfg.student_window,
                cfg.latent or meta["dims"][v],
                cfg.student_hidden,
                1,
                cfg.architecture,
                cfg.residual,
            )
            prefix = f"student{v}."
            net.load_state_dict(
                {k[len(prefix) :]: t for k, t in tensors.items() if k.startswith(prefix)}
            )
            model.students[v] = net.to(model.device).eval()
        return model
