import pytest

from icml26.orloop import compute_iis, deletion_filter, highs_iis, write_iis_model


def test_row_conflict_iis(row_conflict):
    found = highs_iis(row_conflict)
    assert found.valid and found.method == "highs"
    assert set(found.rows) == {"r0", "r1"}
    assert ("x1", "lower") in found.bounds  # x1 >= 0 is needed, x0's bounds are not
    assert "x0" not in found.columns
    df = deletion_filter(row_conflict)
    assert df.valid and set(df.rows) == {"r0", "r1"} and df.size == found.size


def test_bound_conflict_iis(bound_conflict):
    for found in (highs_iis(bound_conflict), deletion_filter(bound_conflict)):
        assert found.valid
        assert found.rows == ("r0",)
        assert found.bounds == (("x0", "upper"),)


def test_integrality_only_conflict_falls_back_to_deletion_filter(integrality_conflict, tmp_path):
    assert not highs_iis(integrality_conflict).valid  # the LP relaxation is feasible
    found = compute_iis(integrality_conflict)
    assert found.valid and found.method == "deletion_filter"
    assert found.rows == ("r0",) and found.bounds == ()
    with pytest.raises(ValueError, match="no HiGHS IIS"):
        write_iis_model(integrality_conflict, tmp_path / "iis.lp")


def test_feasible_model_has_no_iis(row_conflict, tmp_path):
    feasible = row_conflict.copy().drop_rows(["r1"])
    assert not highs_iis(feasible).valid and not deletion_filter(feasible).valid
    path = write_iis_model(row_conflict, tmp_path / "iis.lp")
    assert "r0" in path.read_text() and "r1" in path.read_text()
    with pytest.raises(ValueError, match="method"):
        compute_iis(row_conflict, method="gurobi")
