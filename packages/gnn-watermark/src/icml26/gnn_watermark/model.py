"""The GNN node classifier of the official code (``models.Net``) and its checkpoints.

``num_layers`` message-passing layers from torch_geometric (GCN, GraphSAGE, GAT,
GraphConv, SGC or graph Transformer), each followed by the activation (ELU in every
preset) and dropout; with ``skip_connections`` the outputs of all layers are
concatenated and mapped to the classes by a linear layer. The model returns
log-probabilities. Dropout is an argument of ``forward`` because the official code
runs the secret subgraphs with dropout 0 (``dropout_subgraphs``) while the training
graph uses the configured rate.

Checkpoints are safetensors files with a JSON sidecar holding the architecture.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv, GraphConv, SAGEConv, SGConv, TransformerConv

ARCHITECTURES = ("GCN", "SAGE", "GAT", "GraphConv", "SGC", "Transformer")
ACTIVATIONS = {"elu": F.elu, "relu": F.relu}


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a :class:`NodeClassifier` (official ``node_classifier_kwargs``).

    The presets of every real dataset use 3 layers, hidden size 256, ELU, dropout 0.1
    and skip connections; GAT uses 8 heads in the first layer and 1 afterwards.
    """

    arch: str = "GCN"
    hidden: int = 256
    num_layers: int = 3
    dropout: float = 0.1
    activation: str = "elu"
    skip_connections: bool = True
    heads_first: int = 8
    heads_rest: int = 1

    def __post_init__(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise ValueError(f"arch must be one of {ARCHITECTURES}, got {self.arch!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {sorted(ACTIVATIONS)}, got {self.activation!r}"
            )
        if self.num_layers < 1 or self.hidden < 1:
            raise ValueError(
                f"need num_layers >= 1 and hidden >= 1, got {self.num_layers}, {self.hidden}"
            )
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must lie in [0, 1), got {self.dropout}")
        if self.arch == "GAT" and self.hidden % self.heads_first:
            raise ValueError(
                f"GAT hidden size {self.hidden} must be divisible by {self.heads_first} heads"
            )


def default_device() -> torch.device:
    """CUDA when present, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class NodeClassifier(nn.Module):
    """A stack of torch_geometric convolutions with optional skip connections (official ``Net``)."""

    def __init__(self, in_dim: int, out_dim: int, config: ModelConfig | None = None) -> None:
        super().__init__()
        config = config or ModelConfig()
        if in_dim < 1 or out_dim < 2:
            raise ValueError(f"need in_dim >= 1 and out_dim >= 2 classes, got {in_dim}, {out_dim}")
        self.config, self.in_dim, self.out_dim = config, int(in_dim), int(out_dim)
        self.activation = ACTIVATIONS[config.activation]
        h, n = config.hidden, config.num_layers
        dims = [in_dim] + [h] * (n - 1) + [out_dim]
        self.convs = nn.ModuleList(self._conv(dims[i], dims[i + 1], i, n) for i in range(n))
        self.lin = nn.Linear((n - 1) * h + out_dim, out_dim) if config.skip_connections else None

    def _conv(self, d_in: int, d_out: int, layer: int, n_layers: int) -> nn.Module:
        c = self.config
        if c.arch == "GAT":
            last = layer == n_layers - 1
            heads = c.heads_first if layer == 0 else c.heads_rest
            if last:
                return GATConv(d_in, d_out, heads=heads, concat=False, dropout=c.dropout)
            return GATConv(d_in, d_out // heads, heads=heads, concat=True, dropout=c.dropout)
        conv = {
            "GCN": GCNConv,
            "SAGE": SAGEConv,
            "GraphConv": GraphConv,
            "SGC": SGConv,
            "Transformer": TransformerConv,
        }[c.arch]
        return conv(d_in, d_out)

    def forward(self, x: Tensor, edge_index: Tensor, dropout: float | None = None) -> Tensor:
        """Log-probabilities (N, C). ``dropout`` overrides the configured rate (0 for subgraphs)."""
        p = self.config.dropout if dropout is None else dropout
        outs = []
        for conv in self.convs:
            x = self.activation(conv(x, edge_index))
            x = F.dropout(x, p=p, training=self.training)
            outs.append(x)
        if self.lin is not None:
            x = self.lin(torch.cat(outs, dim=-1))
        return F.log_softmax(x, dim=-1)


def check_model_fits(model: object, data) -> None:
    """Raise a clear error unless ``model`` is a :class:`NodeClassifier` for ``data``'s features."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch module, got {type(model).__name__}")
    in_dim = getattr(model, "in_dim", None)
    f = data.x.shape[-1]
    if in_dim is not None and in_dim != f:
        raise ValueError(
            f"the model takes {in_dim} input features, the graph has {f}: "
            "wrong model for this graph"
        )


def build_model(
    in_dim: int, out_dim: int, config: ModelConfig | None = None, *, seed: int = 0, device=None
) -> NodeClassifier:
    """A freshly initialised classifier; ``seed`` fixes the initial weights."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = NodeClassifier(in_dim, out_dim, config)
    return model.to(device or default_device())


def save_model(model: NodeClassifier, path: str | Path) -> Path:
    """Write ``path`` (safetensors weights) and ``path.json`` (architecture); returns ``path``."""
    from safetensors.torch import save_file

    if not isinstance(model, NodeClassifier):
        raise TypeError(f"expected a NodeClassifier, got {type(model).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path))
    meta = {"in_dim": model.in_dim, "out_dim": model.out_dim, "config": asdict(model.config)}
    path.with_name(path.name + ".json").write_text(json.dumps(meta, indent=2))
    return path


def load_model(path: str | Path, *, device=None) -> NodeClassifier:
    """Read a checkpoint written by :func:`save_model` (no pickle involved)."""
    from safetensors.torch import load_file

    path = Path(path)
    sidecar = path.with_name(path.name + ".json")
    if not path.is_file() or not sidecar.is_file():
        raise FileNotFoundError(f"need both {path} and {sidecar}")
    try:
        meta = json.loads(sidecar.read_text())
        model = NodeClassifier(meta["in_dim"], meta["out_dim"], ModelConfig(**meta["config"]))
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{sidecar} is not a model description: {err}") from err
    model.load_state_dict(load_file(str(path)))
    return model.to(device or default_device())
