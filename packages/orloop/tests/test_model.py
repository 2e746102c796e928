import math

import numpy as np
import pytest

from icml26.orloop import Model, MPSFormatError, make_seed_milp
from icml26.shared import numpy_rng


def test_mps_and_lp_round_trip_keep_names_and_data(tmp_path, row_conflict):
    mip = make_seed_milp(numpy_rng(0, "rt"), name="rt")
    for model in (row_conflict, mip):
        for suffix in (".mps", ".lp"):
            back = Model.read(model.write(tmp_path / f"m{suffix}"))
            assert back.row_names == model.row_names
            assert back.col_names == model.col_names
            assert back.sense == model.sense
            np.testing.assert_allclose(back.a.toarray(), model.a.toarray(), rtol=1e-12)
            np.testing.assert_allclose(back.row_lower, model.row_lower, rtol=1e-12)
            np.testing.assert_allclose(back.row_upper, model.row_upper, rtol=1e-12)
            np.testing.assert_allclose(back.col_upper, model.col_upper)
            np.testing.assert_array_equal(back.integrality, model.integrality)
    sol, back_sol = mip.solve(), Model.read(tmp_path / "m.mps").solve()
    assert sol.optimal and math.isclose(sol.objective, back_sol.objective, rel_tol=1e-9)


def test_malformed_mps_names_file_and_line(tmp_path, row_conflict):
    path = row_conflict.write(tmp_path / "bad.mps")
    lines = path.read_text().splitlines()
    idx = next(i for i, ln in enumerate(lines) if ln.strip().startswith("x0") and "r0" in ln)
    lines[idx] = "    x0        r0        one"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(MPSFormatError, match=rf"bad\.mps:{idx + 1}: 'one' is not a number"):
        Model.read(path)
    undeclared = tmp_path / "undeclared.mps"
    undeclared.write_text("NAME t\nROWS\n N obj\n L c1\nCOLUMNS\n    x obj 1 c9 2\nENDATA\n")
    with pytest.raises(ValueError, match=r"undeclared\.mps:6: row 'c9' is not declared"):
        Model.read(undeclared)
    good = row_conflict.write(tmp_path / "good.mps").read_text().splitlines()
    cut = next(i for i, ln in enumerate(good) if ln.startswith("RHS"))
    (tmp_path / "cut.mps").write_text("\n".join(good[:cut]) + "\n")
    with pytest.raises(MPSFormatError, match=rf"cut\.mps:{cut}: the file ends without ENDATA"):
        Model.read(tmp_path / "cut.mps")
    bounds = "NAME t\nROWS\n N obj\n L c1\nCOLUMNS\n    x obj 1 c1 2\nRHS\n    RHS c1 4\n"
    (tmp_path / "ub.mps").write_text(bounds + "BOUNDS\n UP BND y 3\nENDATA\n")
    with pytest.raises(MPSFormatError, match=r"ub\.mps:10: column 'y' is not declared"):
        Model.read(tmp_path / "ub.mps")
    other = tmp_path / "model.txt"
    other.write_text("x")
    with pytest.raises(ValueError, match=r"expected a \.mps or \.lp file"):
        Model.read(other)


def test_model_rejects_bad_input(row_conflict):
    with pytest.raises(ValueError, match="unique"):
        Model(["x", "x"], [], [1, 1], [0, 0], [1, 1], np.zeros((0, 2)), [], [])
    with pytest.raises(ValueError, match="NaN"):
        Model(["x"], [], [math.nan], [0], [1], np.zeros((0, 1)), [], [])
    with pytest.raises(KeyError, match="no row named 'nope'"):
        row_conflict.row("nope")
    with pytest.raises(ValueError, match="lower <= upper"):
        row_conflict.set_row_bounds("r0", 5, 1)
    assert row_conflict.solve().status == "INFEASIBLE"
    fixed = row_conflict.copy().drop_rows(["r0"])
    sol = fixed.solve(time_limit=5)
    assert sol.optimal and sol.objective == pytest.approx(20.0)
