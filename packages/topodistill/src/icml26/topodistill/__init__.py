"""TopoDistill: Distilling Global System Topology for Causal Discovery in Multivariate
Time Series (ICML 2026; arXiv id not found) — reference implementation.

Convergent cross mapping (CCM) on univariate shadow manifolds whose neighbourhood
structure is distilled from a multivariate "global" embedder, with fast vectorised
CCM, surrogate significance tests, reference systems and peers. The method below the
abstract level is **reconstructed** (no paper text or code was found); every
reconstructed choice is a switch of :class:`DistillConfig`.

- :mod:`~icml26.topodistill.ccm` — CCM (:func:`ccm`, :func:`cross_map`);
- :mod:`~icml26.topodistill.embedding` — delay embedding, τ by mutual information,
  E by simplex projection;
- :mod:`~icml26.topodistill.significance` and :mod:`~icml26.topodistill.surrogates`;
- :mod:`~icml26.topodistill.distill` — :class:`TopoDistill` (teacher, students, KL);
- :mod:`~icml26.topodistill.discover` — causal graphs, AUROC/AUPRC;
- :mod:`~icml26.topodistill.systems` and :mod:`~icml26.topodistill.data`;
- :mod:`~icml26.topodistill.baselines` — pyEDM, PCMCI, Granger (extra ``peers``).
"""

from icml26.topodistill.ccm import CCMResult, ccm, cross_map, library_sizes
from icml26.topodistill.data import (
    TimeSeries,
    from_array,
    from_dataframe,
    load_csv,
    load_sardine_anchovy,
)
from icml26.topodistill.discover import (
    CausalGraph,
    Manifolds,
    build_manifolds,
    discover_graph,
    score_graph,
)
from icml26.topodistill.distill import DistillConfig, TopoDistill
from icml26.topodistill.embedders import DelayEmbedder, GlobalEmbedder
from icml26.topodistill.embedding import (
    check_series,
    choose_E,
    choose_tau,
    delay_embed,
    mutual_information,
    simplex_forecast,
)
from icml26.topodistill.significance import CausalTest, cross_map_significance
from icml26.topodistill.surrogates import (
    block_shuffle,
    make_surrogates,
    random_phase,
    shuffle,
    twin,
)
from icml26.topodistill.systems import (
    System,
    add_observation_noise,
    coupled_logistic,
    lorenz96,
    rossler_lorenz,
    rossler_ring,
)

__all__ = [
    "CCMResult",
    "CausalGraph",
    "CausalTest",
    "DelayEmbedder",
    "DistillConfig",
    "GlobalEmbedder",
    "Manifolds",
    "System",
    "TimeSeries",
    "TopoDistill",
    "add_observation_noise",
    "block_shuffle",
    "build_manifolds",
    "ccm",
    "check_series",
    "choose_E",
    "choose_tau",
    "coupled_logistic",
    "cross_map",
    "cross_map_significance",
    "delay_embed",
    "discover_graph",
    "from_array",
    "from_dataframe",
    "library_sizes",
    "load_csv",
    "load_sardine_anchovy",
    "lorenz96",
    "make_surrogates",
    "mutual_information",
    "random_phase",
    "rossler_lorenz",
    "rossler_ring",
    "score_graph",
    "shuffle",
    "simplex_forecast",
    "twin",
]

__version__ = "0.2.0"
