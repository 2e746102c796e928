"""The ``icml26 topodistill`` subcommand on a CSV file."""

from __future__ import annotations

import numpy as np

from icml26.topodistill import coupled_logistic
from icml26.topodistill.cli import main


def test_ccm_and_discover_commands(tmp_path, capsys):
    system = coupled_logistic(300, np.random.default_rng(0))
    path = tmp_path / "logistic.csv"
    rows = ["time,x,y"] + [f"{t},{a:.8f},{b:.8f}" for t, (a, b) in enumerate(system.data)]
    path.write_text("\n".join(rows) + "\n")
    assert main(["ccm", str(path), "x", "y", "--E", "2", "--tau", "1", "--samples", "5"]) == 0
    out = capsys.readouterr().out
    assert "| y:x | x → y |" in out
    assert main(["discover", str(path), "--method", "ccm", "--surrogates", "9"]) == 0
    assert "| x → y |" in capsys.readouterr().out
    argv = ["discover", str(path), "--method", "ccm", "--surrogates", "9", "--surrogate", "twin"]
    assert main(argv) == 0
    assert "| x → y |" in capsys.readouterr().out
    assert main(["discover", str(path), "--surrogate", "bogus"]) == 2
    assert main(["ccm", str(path), "x", "nope"]) == 2
    assert "no channel" in capsys.readouterr().err
