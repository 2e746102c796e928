import numpy as np
import pytest

from icml26.prism.germline import (
    REGION_ID,
    GermlineSet,
    assign_germline,
    cased,
    imgt_region,
    ngl_labels,
    regions_from_airr,
)


def test_ngl_labels_on_hand_made_alignments():
    # substitution at column 2, a deletion in the sequence at column 4, an N-addition 'X'
    seq, lab = ngl_labels("EVKL-SGAG", "EVQLVSG-G")
    assert seq == "EVKLSGAG"
    assert lab.tolist() == [False, False, True, False, False, False, False, False]
    # untemplated residue (germline gap) counts NGL when asked
    _, lab2 = ngl_labels("EVKL-SGAG", "EVQLVSG-G", unknown="ngl")
    assert lab2.tolist()[-2] is True
    assert cased("EVKLSGAG", lab) == "EVkLSGAG"
    with pytest.raises(ValueError, match="differ in length"):
        ngl_labels("EVQ", "EV")
    with pytest.raises(ValueError, match="column 1"):
        ngl_labels("E1Q", "EVQ")


def test_imgt_regions():
    assert imgt_region(1) == REGION_ID["FR1"]
    assert imgt_region(27) == REGION_ID["CDR1"] and imgt_region(38) == REGION_ID["CDR1"]
    assert imgt_region(56) == REGION_ID["CDR2"] and imgt_region(104) == REGION_ID["FR3"]
    assert imgt_region(105) == REGION_ID["CDR3"] and imgt_region(118) == REGION_ID["FR4"]
    with pytest.raises(ValueError):
        imgt_region(0)


def test_germlines_from_anarci_and_assignment():
    gs = GermlineSet("human", "H")
    assert len(gs.v) > 200 and len(gs.functional_j()) == 6
    v = gs.v["IGHV3-23*01"]
    j = gs.j["IGHJ4*02"]
    naive = v.sequence + "GYSSG" + j.sequence
    mutated = list(naive)
    for p in (30, 55):  # two substitutions in CDR1/CDR2
        mutated[p] = "W" if mutated[p] != "W" else "Y"
    a = assign_germline("".join(mutated), germlines=gs)
    assert a.v_call.startswith("IGHV3-23")
    assert a.j_call is not None and a.j_call.startswith("IGHJ4")
    assert np.flatnonzero(a.ngl).tolist() == [30, 55]
    assert a.regions[0] == REGION_ID["FR1"] and a.regions[-1] == REGION_ID["FR4"]
    assert REGION_ID["CDR3"] in a.regions.tolist()
    with pytest.raises(ValueError, match="unknown species"):
        GermlineSet("martian", "H")


def test_regions_from_airr_fields():
    seq, reg = regions_from_airr(
        {
            "fwr1_aa": "EV",
            "cdr1_aa": "GF",
            "fwr2_aa": "W",
            "cdr2_aa": "",
            "fwr3_aa": "R",
            "cdr3_aa": "AR",
            "fwr4_aa": "WG",
        }
    )
    assert seq == "EVGFWRARWG"
    assert reg.tolist() == [0, 0, 1, 1, 2, 4, 5, 5, 6, 6]


TRASTUZUMAB_VH = (
    "EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSL"
    "RAEDTAVYYCSRWGGDGFYAMDYWGQGTLVTVSS"
)
TRASTUZUMAB_VL = (
    "DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSGSRSGTDFTLTISSLQPEDFATYY"
    "CQQHYTTPPTFGQGTKVEIK"
)


def test_assignment_is_identity_first_over_functional_alleles():
    gs = GermlineSet("human", "K")
    a = assign_germline(TRASTUZUMAB_VL, chain="K", germlines=gs)
    # IGKV1D-7-1 has the higher BLOSUM62 score, IGKV1-39 more identical residues
    assert a.v_call == "IGKV1-39*01" and a.j_call == "IGKJ1*01"
    assert 0.85 < a.v_identity < 0.9 and a.called and a.note == ""
    functional = {g.name for g in gs.functional_v(first_allele_only=False)}
    assert a.v_call in functional


def test_assignment_of_partial_and_foreign_chains_is_clear():
    part = assign_germline(TRASTUZUMAB_VH[:35])  # ends inside CDR1: no J gene, no crash
    assert part.called and part.v_call.startswith("IGHV3") and part.j_call is None
    assert "no J gene" in part.note and len(part.regions) == 35
    junk = assign_germline("WWWWWWWW")
    assert not junk.called and junk.v_call is None and "no call" in junk.note
    assert not junk.ngl.any()
    low = assign_germline(TRASTUZUMAB_VH, min_identity=0.95)
    assert not low.called and "identity 0.8" in low.note
    with pytest.raises(ValueError, match="min_identity"):
        assign_germline(TRASTUZUMAB_VH, min_identity=1.5)
    with pytest.raises(TypeError):
        assign_germline(None)  # type: ignore[arg-type]
