"""The README's quickstart runs as written and prints what the README says."""

import os
import subprocess
import sys
from pathlib import Path

from icml26.shared.readme import quickstart_code

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quickstart_prints_what_the_readme_says(tmp_path):
    code = quickstart_code(README)
    promised = [ln[2:] for ln in code.split("# prints\n", 1)[1].splitlines() if ln.startswith("# ")]
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == promised
    assert proc.stderr == ""
