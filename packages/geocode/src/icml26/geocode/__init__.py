"""icml26.geocode — GeoCode (ICML 2026, arXiv 2602.18745).

"Synthesizing Multimodal Geometry Datasets from Scratch and Enabling Visual Alignment
via Plotting Code": problems are generated code-first (symbolic seed → metric, text and
plotting-code realisation → semantic and coordinate verification → execution →
deterministic rendering, with a per-stage rejection funnel), and models predict the
plotting code (an IR) from the image before answering. The paper's LLM authors and 7B
VLMs are replaced by a deterministic programmatic generator and a small model.
"""

from icml26.geocode.align import (
    ARMS,
    AlignConfig,
    AlignModel,
    GRPOConfig,
    Vocab,
    evaluate,
    grpo,
    rewards,
    target_tokens,
    train,
)
from icml26.geocode.baselines import (
    AnnotationProbe,
    ir_oracle,
    question_majority,
    template_majority,
)
from icml26.geocode.dataset import (
    Funnel,
    Problem,
    Synthesis,
    complexity,
    export,
    load_geometry3k,
    load_jsonl,
    synthesize,
)
from icml26.geocode.dataset import reverify as verify_problem
from icml26.geocode.dsl import KINDS, TEMPLATES, Construction, Program, ProofTemplate, parse_program
from icml26.geocode.instantiate import Instance, instantiate
from icml26.geocode.ir import (
    IR,
    compile_ir,
    element_f1,
    interpret,
    ir_tokens,
    parse_ir,
    render_png,
    to_matplotlib_code,
)
from icml26.geocode.seeds import TIERS, Seed, sample_program, select_seed
from icml26.geocode.verify import FAULTS, STAGES, Candidate, Verdict, inject, verify

__all__ = [
    "ARMS",
    "FAULTS",
    "IR",
    "KINDS",
    "STAGES",
    "TEMPLATES",
    "TIERS",
    "AlignConfig",
    "AlignModel",
    "AnnotationProbe",
    "Candidate",
    "Construction",
    "Funnel",
    "GRPOConfig",
    "Instance",
    "Problem",
    "Program",
    "ProofTemplate",
    "Seed",
    "Synthesis",
    "Verdict",
    "Vocab",
    "compile_ir",
    "complexity",
    "element_f1",
    "evaluate",
    "export",
    "grpo",
    "inject",
    "instantiate",
    "interpret",
    "ir_oracle",
    "ir_tokens",
    "load_geometry3k",
    "load_jsonl",
    "parse_ir",
    "parse_program",
    "question_majority",
    "render_png",
    "rewards",
    "sample_program",
    "select_seed",
    "synthesize",
    "target_tokens",
    "template_majority",
    "to_matplotlib_code",
    "train",
    "verify",
    "verify_problem",
]

__version__ = "0.3.1"
