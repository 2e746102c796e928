"""``icml26 samerging merge`` on save_pretrained folders; bad input exits with a message."""

import torch

from icml26.samerging import cli, sa_merge
from icml26.samerging.io import load_state_dict, save_state_dict


def _folders(tmp_path):
    g = torch.Generator().manual_seed(0)
    base = {"l0.weight": torch.randn(8, 4, generator=g), "l0.bias": torch.zeros(8),
            "l1.weight": torch.randn(3, 8, generator=g), "l1.bias": torch.zeros(3)}  # fmt: skip
    experts = [{k: v + 0.1 * torch.randn(v.shape, generator=g) for k, v in base.items()}
               for _ in range(2)]  # fmt: skip
    save_state_dict(base, tmp_path / "base")
    for i, e in enumerate(experts):
        save_state_dict(e, tmp_path / f"e{i}")
    return base, experts


def test_merge_writes_what_sa_merge_returns(tmp_path, capsys):
    base, experts = _folders(tmp_path)
    args = ["merge", str(tmp_path / "base"), str(tmp_path / "e0"), str(tmp_path / "e1"),
            "--out", str(tmp_path / "out"), "--iterations", "3"]  # fmt: skip
    assert cli.main(args) == 0
    # (1 − p)^3 = 0.512, per-tensor rounding on these tiny tensors keeps a little more
    assert "merged 2 experts: density 0.522" in capsys.readouterr().out
    merged = load_state_dict(tmp_path / "out")
    expected = sa_merge(base, experts, iterations=3).state_dict
    for k in base:
        torch.testing.assert_close(merged[k], expected[k])


def test_bad_input_exits_2_with_the_reason(tmp_path, capsys):
    _folders(tmp_path)
    (tmp_path / "e1" / "model.safetensors").unlink()
    (tmp_path / "e1" / "pytorch_model.bin").write_bytes(b"\x80\x04")
    args = ["merge", str(tmp_path / "base"), str(tmp_path / "e1"), "--out", str(tmp_path / "o")]
    assert cli.main(args) == 2
    assert "pickled" in capsys.readouterr().err
    assert cli.main(["merge", str(tmp_path / "base"), str(tmp_path / "e0"), "--out",
                     str(tmp_path / "o"), "--prune", "1.5"]) == 2  # fmt: skip
    assert "prune ratio p must lie in (0, 1)" in capsys.readouterr().err
    assert cli.main(["train-experts", str(tmp_path / "t"), "--tasks", "nope"]) == 2
    assert "unknown Digits-8 task 'nope'" in capsys.readouterr().err
