"""A small learned repair policy: a softmax over candidate repairs plus a diagnosis head.

The paper trains an 8B LLM with GRPO on the solver-verified reward. On a CPU we keep
the method and shrink the model (reconstructed, as the brief plans): the policy
scores each candidate repair of the current IIS (:mod:`~icml26.orloop.candidates`)
with a linear function of its features, ``π(a|s) = softmax(F_s θ)``, and declares a
diagnosis — the rows it blames — with a logistic head per row,
``p(row blamed) = σ(g_row · φ)``, over features of the model and of its own phase-1
solve (not of the IIS it is shown). The diagnosis rides on the first action (the
``"diagnosis"`` field of the JSON action), as the LLM's reasoning does in the
paper's composite reward. Trained by :func:`~icml26.orloop.grpo.train_grpo`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from icml26.orloop.candidates import FEATURES, Candidate, candidate_repairs
from icml26.orloop.elastic import phase_one
from icml26.orloop.env import Action, ActionType, DebugState
from icml26.orloop.model import Model

DIAG_FEATURES = (
    "bias",
    "phase1_dual",
    "phase1_priced",
    "phase1_violated",
    "density",
    "zero_cost_share",
    "single_column",
    "has_twin",
)


def diagnosis_features(model: Model) -> np.ndarray:
    """One row of features per model row (order of ``model.row_names``).

    Built from the model alone and one phase-1 elastic solve of the policy's own
    (:func:`~icml26.orloop.elastic.phase_one`), never from the IIS the solver shows:
    the diagnosis is declared before any IIS is seen, so DA measures what the head
    learned rather than a copy of the observation.
    """
    n = max(1, model.n_cols)
    out = np.zeros((model.n_rows, len(DIAG_FEATURES)))
    if model.n_rows == 0:
        return out
    violated, dual = phase_one(model)
    nnz = np.diff(model.a.indptr)
    zero = (model.cost == 0).astype(float)
    supports = [
        frozenset(model.a.indices[model.a.indptr[i] : model.a.indptr[i + 1]].tolist())
        for i in range(model.n_rows)
    ]
    count: dict[frozenset[int], int] = {}
    for sup in supports:
        count[sup] = count.get(sup, 0) + 1
    for i in range(model.n_rows):
        cols = model.a.indices[model.a.indptr[i] : model.a.indptr[i + 1]]
        out[i] = (
            1.0,
            dual[i],
            float(dual[i] > 1e-9),
            violated[i],
            nnz[i] / n,
            float(zero[cols].mean()) if cols.size else 0.0,
            float(nnz[i] == 1),
            float(count[supports[i]] > 1),
        )
    return out


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))


class LearnedPolicy:
    """The GRPO-trained agent; ``greedy`` picks the most likely candidate."""

    name = "GRPO policy"

    def __init__(
        self,
        theta: np.ndarray | None = None,
        phi: np.ndarray | None = None,
        *,
        greedy: bool = True,
        seed: int = 0,
        probe: bool = True,
    ) -> None:
        self.theta = np.zeros(len(FEATURES)) if theta is None else np.asarray(theta, float)
        self.phi = np.zeros(len(DIAG_FEATURES)) if phi is None else np.asarray(phi, float)
        if self.theta.shape != (len(FEATURES),) or self.phi.shape != (len(DIAG_FEATURES),):
            raise ValueError(
                f"theta must have {len(FEATURES)} and phi {len(DIAG_FEATURES)} entries, "
                f"got {self.theta.shape} and {self.phi.shape}"
            )
        self.greedy = greedy
        self.probe = probe
        self.rng = np.random.default_rng(seed)
        self._declared = False

    def reset(self) -> None:
        self._declared = False

    # -- decisions ---------------------------------------------------------------------------
    def choose(self, cands: list[Candidate]) -> int:
        p = softmax(np.stack([c.features for c in cands]) @ self.theta)
        if self.greedy:
            return int(np.argmax(p))
        return int(self.rng.choice(len(cands), p=p))

    def diagnose(self, model: Model) -> tuple[str, ...]:
        """The rows the head blames (``p > 0.5``; sampled when not greedy)."""
        g = diagnosis_features(model)
        p = sigmoid(g @ self.phi)
        keep = p > 0.5 if self.greedy else self.rng.random(p.shape) < p
        return tuple(r for r, k in zip(model.row_names, keep, strict=True) if k)

    def act(self, state: DebugState) -> Action:
        if state.is_optimal():
            return Action(ActionType.SUBMIT)
        diagnosis: tuple[str, ...] = ()
        if not self._declared and state.model is not None:
            self._declared = True
            diagnosis = self.diagnose(state.model)
        if not (state.iis_constraints or state.iis_bounds) or state.model is None:
            kind = ActionType.GET_IIS if state.is_infeasible() else ActionType.SUBMIT
            return Action(kind, diagnosis=diagnosis)
        cands = candidate_repairs(
            state.model,
            state.iis_constraints,
            [tuple(b) for b in state.iis_bounds],
            probe=self.probe,
        )
        if not cands:
            return Action(ActionType.SUBMIT, diagnosis=diagnosis)
        pick = cands[self.choose(cands)].action
        return Action(
            pick.type,
            target=pick.target,
            value=pick.value,
            value2=pick.value2,
            reasoning="learned policy: candidate repair with the highest score",
            diagnosis=diagnosis,
        )

    # -- persistence (plain JSON: numbers only, nothing executable) ---------------------------
    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "features": list(FEATURES),
            "theta": self.theta.tolist(),
            "diagnosis_features": list(DIAG_FEATURES),
            "phi": self.phi.tolist(),
        }
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: str | Path, **kwargs: object) -> LearnedPolicy:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not a policy JSON file: {err}") from None
        if data.get("features") != list(FEATURES) or data.get("diagnosis_features") != list(
            DIAG_FEATURES
        ):
            raise ValueError(f"{path} was saved with a different feature set")
        return cls(np.asarray(data["theta"]), np.asarray(data["phi"]), **kwargs)  # type: ignore[arg-type]
