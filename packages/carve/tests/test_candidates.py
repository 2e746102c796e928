import torch

from icml26.carve import CandidateSampler, CandidateSpec, HardNegativeMiner
from icml26.carve.candidates import FAR, FILL, HARD, POSITIVE, SEMANTIC


def _lookups():
    # 3 areas x 4 domains each, 10 models per domain: 120 models
    domain_area = torch.arange(12) // 4
    model_domain = torch.arange(120) // 10
    return model_domain, domain_area


def test_candidate_sets_follow_the_proportions():
    model_domain, domain_area = _lookups()
    spec = CandidateSpec(k_total=32, k_semantic=16, k_far=6, k_hard=9)
    sampler = CandidateSampler(spec, model_domain, domain_area)
    gold = torch.tensor([0, 15, 47, 119])
    cache = torch.full((120, 50), -1, dtype=torch.long)
    for g in gold.tolist():  # a mined list: same-area wrong models
        area = int(domain_area[model_domain[g]])
        pool = [m for m in range(120) if int(domain_area[model_domain[m]]) == area and m != g]
        cache[g, :20] = torch.tensor(pool[:20])
    cands, kinds = sampler.sample(
        gold,
        model_domain[gold],
        120,
        hard_cache=cache,
        generator=torch.Generator().manual_seed(0),
        return_kinds=True,
    )
    assert cands.shape == (4, 32)
    assert torch.equal(cands[:, 0], gold)
    for row, kind, g in zip(cands, kinds, gold, strict=True):
        assert len(set(row.tolist())) == 32
        counts = torch.bincount(kind, minlength=5).tolist()
        assert counts == [1, 9, 16, 6, 0]  # positive, hard, semantic, far, fill
        g_area = domain_area[model_domain[g]]
        assert torch.all(domain_area[model_domain[row[kind == SEMANTIC]]] == g_area)
        assert torch.all(model_domain[row[kind == FAR]] != model_domain[g])
        assert set(row[kind == HARD].tolist()) <= set(cache[g].tolist())
        assert kind[0] == POSITIVE


def test_semantic_shortfall_moves_to_far_and_fill_completes():
    model_domain, domain_area = _lookups()
    spec = CandidateSpec(k_total=40, k_semantic=38, k_far=1, k_hard=0)
    sampler = CandidateSampler(spec, model_domain, domain_area)
    gold = torch.tensor([3])
    _cands, kinds = sampler.sample(gold, model_domain[gold], 120, return_kinds=True)
    counts = torch.bincount(kinds[0], minlength=5).tolist()
    # the area holds 39 other models; 38 semantic then 1 far
    assert counts[SEMANTIC] == 38 and counts[FAR] == 1 and counts[FILL] == 0
    # a registry smaller than K: every registered model, gold first
    small = sampler.sample(gold, model_domain[gold], 20)
    assert sorted(small[0].tolist()) == list(range(20)) and small[0, 0] == 3


def test_unregistered_gold_is_an_error():
    model_domain, domain_area = _lookups()
    sampler = CandidateSampler(CandidateSpec(8, 3, 2, 1), model_domain, domain_area)
    try:
        sampler.sample(torch.tensor([50]), model_domain[torch.tensor([50])], 40)
    except ValueError as err:
        assert "unregistered" in str(err)
    else:
        raise AssertionError("an unregistered gold model must raise")


def test_hard_negative_miner_keeps_top_scoring_same_area_models():
    model_domain, domain_area = _lookups()
    sampler = CandidateSampler(CandidateSpec(8, 3, 2, 2), model_domain, domain_area)
    rows = torch.eye(120)  # model m's embedding is e_m
    q = torch.zeros(1, 120)
    q[0, [5, 7, 60]] = torch.tensor([3.0, 2.0, 9.0])  # 60 scores highest but is another area
    miner = HardNegativeMiner(120, pool=4)
    miner.update(q, torch.tensor([0]), model_domain[torch.tensor([0])], rows, sampler)
    assert miner.cache[0, :2].tolist() == [5, 7]
    assert 60 not in miner.cache[0].tolist() and 0 not in miner.cache[0].tolist()
