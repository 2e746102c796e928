"""The BW gradient-flow baseline reproduces the official notebook (experiment_2D.ipynb).

Reference numbers: the notebook run unmodified (100 runs, T = 10, Δt = 0.05) by a
third-party reproduction that saved every run's KL trajectory. Run i of the notebook
starts at ``np.random.default_rng(i).uniform(-5, 5, 2)`` with Σ0 = I (its initial KL
values match ours to 1e-9 with these starts).
"""

import numpy as np
import pytest

from icml26.gausscbo import KLDivergence, gaussian_flow, paper_target

#: notebook's median final BW KL over its 100 runs, and its first four runs' final KL
NOTEBOOK_BW = {
    "A": (0.664196, [0.407904, 0.408069, 0.664383, 0.664505]),
    "B": (0.034616, [0.061050, 0.019745, 0.032809, 0.025871]),
    "C": (0.036036, [0.059401, 0.036541, 0.032288, 0.031967]),
    "D": (0.429286, [0.385508, 0.429306, 0.720620, 0.720262]),
}
STARTS = np.array([np.random.default_rng(i).uniform(-5, 5, 2) for i in range(100)])


@pytest.mark.parametrize("name", sorted(NOTEBOOK_BW))
def test_bw_flow_matches_the_notebook(name):
    kl = KLDivergence(paper_target(name), d=2, pad_to=4)
    res = gaussian_flow("bw", kl, STARTS, np.eye(2), dt=0.05, steps=200, record_every=200)
    median, first = NOTEBOOK_BW[name]
    assert np.median(res.final_energy) == pytest.approx(median, abs=0.005)
    np.testing.assert_allclose(res.final_energy[:4], first, atol=1e-5)


def test_flow_moment_rule_decides_the_fixed_point_on_a():
    """With the objective's own (2d+1)-point rule, BW instead settles at the quadrature-KL
    minimiser (0.3036 on A, as CBO): the notebook's 0.408/0.664 come from its 2d-point rule."""
    kl = KLDivergence(paper_target("A"), d=2, pad_to=4)
    starts = STARTS[:4]
    own = gaussian_flow("bw", kl, starts, np.eye(2), dt=0.05, steps=200, record_every=200,
                        moments="objective")  # fmt: skip
    assert np.all(own.final_energy < 0.31)
    with pytest.raises(ValueError, match="moments"):
        gaussian_flow("bw", kl, starts, np.eye(2), dt=0.05, steps=2, moments="stein")
