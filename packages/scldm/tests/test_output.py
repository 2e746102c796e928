"""What a user sees during ``icml26 reproduce scldm``: our lines only.

The command runs in a fresh interpreter on a tiny preset that includes the scVI peer
(lightning, scvi-tools), and its whole output (stdout and stderr) must carry none of
lightning's INFO lines ("GPU available", "Trainer ..."), no litlogger tip and no
deprecation or future warnings.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from icml26.scldm.baselines import scvi_available

SCRIPT = textwrap.dedent(
    """
    import dataclasses, sys
    from icml26.scldm import reproduce as r
    r.PRESETS["tiny"] = dataclasses.replace(
        r.PRESETS["smoke"], n_cells=300, n_genes=40, n_programs=4, ae_batch_size=64,
        ae_max_steps=8, dit_max_steps=8, dit_window=4, mlp_epochs=2, scvi_epochs=2,
        solver_steps=2, umap=False, n_pcs=5,
    )
    from icml26.shared.cli import main
    sys.exit(main(["reproduce", "scldm", "--preset", "tiny", "--seeds", "1",
                   "--out", sys.argv[1]]))
    """
)

NOISE = (
    "INFO",
    "GPU available",
    "TPU available",
    "HPU available",
    "LOCAL_RANK",
    "litlogger",
    "LitLogger",
    "DeprecationWarning",
    "FutureWarning",
    "PendingDeprecationWarning",
    "`Trainer",
)


@pytest.mark.slow  # a fresh interpreter imports torch, scanpy, scvi-tools and lightning
@pytest.mark.skipif(not scvi_available(), reason="the scVI peer is the noisy dependency")
def test_a_reproduction_prints_no_third_party_noise(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("LITLOGGER_DISABLE", None)  # the command itself must switch the tip off
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "results")],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1), output  # 1: the tiny preset's claim does not hold
    assert "scldm" in output  # the command's own lines are there
    found = [word for word in NOISE if word in output]
    assert not found, f"third-party noise {found} in:\n{output}"
