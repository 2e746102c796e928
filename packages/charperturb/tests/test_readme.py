"""The README's quickstart runs as written and prints what the README says."""

from pathlib import Path

from icml26.shared.readme import quickstart_code
from icml26.shared.testing import run_quickstart

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quickstart_prints_what_the_readme_says(tmp_path):
    code = quickstart_code(README)
    promised = [ln[2:] for ln in code.split("# prints\n", 1)[1].splitlines() if ln.startswith("# ")]
    proc = run_quickstart(README, cwd=tmp_path, timeout_s=120)
    assert proc.returncode == 0, proc.tail()
    assert proc.stdout.splitlines() == promised
    assert proc.stderr == ""
