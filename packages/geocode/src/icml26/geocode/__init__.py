"""icml26.geocode — GeoCode (ICML 2026, arXiv 2602.18745).

"Synthesizing Multimodal Geometry Datasets from Scratch and Enabling Visual Alignment
via Plotting Code": problems are generated code-first (symbolic seed → metric, text and
plotting-code realisation → semantic and coordinate verification → execution →
deterministic rendering, with a per-stage rejection funnel), and models predict the
plotting code (an IR) from the image before answering. The paper's LLM authors and 7B
VLMs are replaced by a deterministic programmatic generator and a small model.
"""
