"""icml26.carve — Continual Model Routing in Evolving Model Hubs (ICML 2026).

Jack Bell, Giacomo Carfì, Gerlando Gramaglia, Vincenzo Lomonaco, arXiv:2605.28577;
official code collagelab/CMR. A router picks one model id for a request from a hub of
thousands, before running any candidate, and keeps learning as models, families and
domains arrive. CARvE (Continual Anchored Router via contrastive Embeddings) trains a
query projection and one embedding per model with a candidate-set contrastive loss,
anchors old embeddings and the projection to a checkpoint, and replays a
domain-stratified coreset.

Modules: ``hub`` (CMRBench-style simulator, official JSON loader), ``encoders``
(hashed n-grams, MiniLM), ``lora`` (LoRA on a transformer query encoder), ``router``,
``candidates``, ``anchoring``, ``replay``, ``batching``, ``carve`` (the continual
learner), ``baselines``, ``metrics``, ``reproduce``.
"""

from icml26.carve.anchoring import Anchor
from icml26.carve.baselines import (
    EWC,
    RANDOM_REPLAY,
    SEQUENTIAL_FT,
    BM25Retrieval,
    CardRetrieval,
    retrieval_stream,
    ties_merge,
    ties_merge_stream,
)
from icml26.carve.batching import DomainBatchSampler
from icml26.carve.candidates import CandidateSampler, CandidateSpec, HardNegativeMiner
from icml26.carve.carve import CARVE, ContinualRouter, Strategy, TrainConfig, with_strategy
from icml26.carve.encoders import HashedNgramEncoder, MiniLMEncoder, TextEncoder, make_encoder
from icml26.carve.hub import (
    Experience,
    Hub,
    HubConfig,
    ModelCard,
    Split,
    area_of,
    load_cmrbench,
    simulate_hub,
)
from icml26.carve.lora import LoRALinear, TransformerBackbone, apply_lora
from icml26.carve.metrics import AccuracyMatrix, routing_accuracy
from icml26.carve.replay import coreset_replay, farthest_point_sampling, random_replay
from icml26.carve.router import CarveRouter, UnknownModelError

__all__ = [
    "CARVE",
    "EWC",
    "RANDOM_REPLAY",
    "SEQUENTIAL_FT",
    "AccuracyMatrix",
    "Anchor",
    "BM25Retrieval",
    "CandidateSampler",
    "CandidateSpec",
    "CardRetrieval",
    "CarveRouter",
    "ContinualRouter",
    "DomainBatchSampler",
    "Experience",
    "HardNegativeMiner",
    "HashedNgramEncoder",
    "Hub",
    "HubConfig",
    "LoRALinear",
    "MiniLMEncoder",
    "ModelCard",
    "Split",
    "Strategy",
    "TextEncoder",
    "TrainConfig",
    "TransformerBackbone",
    "UnknownModelError",
    "apply_lora",
    "area_of",
    "coreset_replay",
    "farthest_point_sampling",
    "load_cmrbench",
    "make_encoder",
    "random_replay",
    "retrieval_stream",
    "routing_accuracy",
    "simulate_hub",
    "ties_merge",
    "ties_merge_stream",
    "with_strategy",
]

__version__ = "0.7.0"
