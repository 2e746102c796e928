"""On CUDA: an expert fine-tuning step and an SA-Merging pass at small size."""

import pytest
import torch

from icml26.samerging import sa_merge
from icml26.samerging.suites import Head, backbone_features, backbone_path, init_backbone

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    return torch.device("cuda")


def test_finetune_step_and_merge_on_cuda(cuda):
    base = {k: v.to(cuda) for k, v in init_backbone((64, 128, 32), seed=0).items()}
    head = Head(torch.randn(10, 32, device=cuda), torch.zeros(10, device=cuda))
    x, y = torch.randn(16, 64, device=cuda), torch.randint(0, 10, (16,), device=cuda)
    experts = []
    for seed in range(2):
        torch.manual_seed(seed)
        state = {k: v.clone().requires_grad_(True) for k, v in base.items()}
        opt = torch.optim.Adam(list(state.values()), lr=1e-2)
        loss = torch.nn.functional.cross_entropy(head(backbone_features(state, x)), y)
        loss.backward()
        opt.step()
        experts.append({k: v.detach() for k, v in state.items()})
    res = sa_merge(base, experts, path=backbone_path(base), iterations=3)
    assert all(v.is_cuda for v in res.state_dict.values())
    cpu = sa_merge({k: v.cpu() for k, v in base.items()},
                   [{k: v.cpu() for k, v in e.items()} for e in experts], iterations=3)  # fmt: skip
    for k in base:
        assert torch.equal(res.masks[0][k].cpu(), cpu.masks[0][k])
