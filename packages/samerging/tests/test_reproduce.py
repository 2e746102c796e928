"""The reproduction: a tiny config end to end, λ chosen on validation only, the smoke claim."""

from collections.abc import Mapping

import pytest
import torch

from icml26.samerging import task_arithmetic
from icml26.samerging.reproduce import MIXED, PAPER, Task, choose_scale, judge, run, tiny_config
from icml26.samerging.suites import Head
from icml26.shared import Report


class _NoTest(Mapping):
    """A split mapping that fails the test if the test split is read."""

    def __init__(self, data):
        self.data = data

    def __getitem__(self, key):
        if key == "test":
            raise AssertionError("the test split was read while choosing λ")
        return self.data[key]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)


def test_lambda_is_chosen_without_reading_the_test_split():
    g = torch.Generator().manual_seed(0)
    base = {"layers.0.weight": torch.randn(4, 3, generator=g), "layers.0.bias": torch.zeros(4)}
    experts = [
        {k: v + 0.1 * torch.randn(v.shape, generator=g) for k, v in base.items()} for _ in range(2)
    ]
    x = {s: torch.randn(10, 3, generator=g) for s in ("train", "val", "test")}
    y = {s: torch.randint(0, 2, (10,), generator=g) for s in ("train", "val", "test")}
    task = Task("t", 2, _NoTest(x), _NoTest(y))
    head = Head(torch.randn(2, 4, generator=g), torch.zeros(2))
    lam, state = choose_scale(base, task_arithmetic(base, experts, scale=1.0), [head], [task],
                              (0.2, 0.5, 1.0), list(base))  # fmt: skip
    assert lam in (0.2, 0.5, 1.0)
    assert set(state) == set(base)


def test_tiny_config_runs_every_method_and_is_judged(tmp_path):
    config = tiny_config()
    report = run(config, 0, tmp_path)
    methods = {r.method for r in report.rows if r.group == MIXED}
    for m in ("Base + task heads", "Individual experts", "Task arithmetic", "TIES", "DARE-TIES",
              "Consensus-TA", "WUDI", "SA-Merging", "SA-Merging (literal sign)", "SA-Merging T=1",
              "Magnitude × consensus (iterative)", "SynFlow without consensus"):  # fmt: skip
        assert m in methods, m
    sa = report.row("SA-Merging", MIXED)
    assert sa.metrics["density"].mean == pytest.approx(100 * 0.8**3, abs=1.0)
    base = report.row("Base + task heads", MIXED).metrics["accuracy"].mean
    assert 20 < base <= 100
    assert any(
        r["kind"] == "stopping" and r["reason"] in ("plateau", "cap") for r in report.records
    )
    merged = Report.merge([report])
    checks = judge(merged, config)
    assert len(checks) == 7
    assert PAPER.preset("smoke").iterations == 10 and PAPER.preset("smoke").prune == 0.2


@pytest.mark.slow
def test_smoke_preset_runs_and_reports_every_check(tmp_path):
    from icml26.shared import reproduce

    report = reproduce(PAPER, preset="smoke", seeds=[0], out=tmp_path)
    assert len(report.checks) == 7
    spear = next(c for c in report.checks if c.name.startswith("Spearman"))
    assert spear.holds
    assert (tmp_path / "samerging" / "smoke" / "report.json").is_file()
