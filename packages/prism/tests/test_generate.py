import numpy as np
import pytest

from icml26.prism.generate import generate, masked_log_probs, select_positions
from icml26.prism.germline import REGION_ID, assign_germline

VH = (
    "QVQLVQSGAEVKKPGASVKVSCKASGYTFTSYGISWVRQAPGQGLEWMGWISAYNGNTNYAQKLQGRVTMTTDTSTSTAY"
    "MELRSLRSDDTAVYYCARDGYSSGWYFDYWGQGTLVTVSS"
)


def test_generation_respects_region_and_mode(make_model):
    model = make_model("prism", dual_heads=True)
    cache = masked_log_probs(model, VH)
    regions = assign_germline(VH).regions
    rng = np.random.default_rng(0)
    out = generate(
        model,
        VH,
        n_samples=30,
        n_mutations=4,
        mode="ngl",
        rng=rng,
        regions=regions,
        restrict_to=["CDR3"],
        cache=cache,
    )
    for v in out:
        assert all(regions[p] == REGION_ID["CDR3"] for p in v.positions)
        diff = [i for i, (a, b) in enumerate(zip(VH, v.sequence, strict=True)) if a != b]
        assert set(diff) <= set(v.positions)
    # greedy sampling returns the argmax of the requested channel
    for mode, table in (("gl", cache.gl), ("ngl", cache.ngl), ("full", cache.full)):
        vs = generate(
            model,
            VH,
            n_samples=5,
            n_mutations=2,
            mode=mode,
            rng=rng,
            top_k=1,
            randomize_n_mutations=False,
            cache=cache,
        )
        for v in vs:
            for p in v.positions:
                assert v.sequence[p] == "ACDEFGHIKLMNPQRSTVWY"[int(np.argmax(table[p]))]
    # region-specific: GL channel in frameworks, NGL channel in CDRs
    vs = generate(
        model,
        VH,
        n_samples=10,
        n_mutations=3,
        mode="region_specific",
        rng=rng,
        top_k=1,
        regions=regions,
        cache=cache,
    )
    for v in vs:
        for p in v.positions:
            table = cache.ngl if regions[p] in (1, 3, 5) else cache.gl
            assert v.sequence[p] == "ACDEFGHIKLMNPQRSTVWY"[int(np.argmax(table[p]))]


def test_position_selection_and_errors(make_model):
    rng = np.random.default_rng(1)
    scores = np.arange(20.0)
    for _ in range(20):
        pos = select_positions(scores, 3, 5, rng, exclude=np.array([0]))
        assert len(pos) == 3 and set(pos) <= {1, 2, 3, 4, 5}
    model = make_model("prismless")
    with pytest.raises(ValueError, match="mode"):
        generate(model, VH, mode="best", rng=rng)
    with pytest.raises(TypeError):
        generate(model, VH, rng=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="every position"):
        select_positions(np.zeros(3), 1, 2, rng, exclude=np.arange(3))


def test_region_specific_generation_refuses_an_uncalled_sequence(make_model):
    model = make_model("prism")
    with pytest.raises(ValueError, match="no call"):
        generate(
            model, "WWWWWWWWWW", n_samples=2, mode="region_specific", rng=np.random.default_rng(0)
        )
