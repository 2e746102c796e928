"""The MCAB encoder is invariant, the decoder equivariant, to gene permutations, and
memory grows linearly in the number of genes."""

from __future__ import annotations

import torch

from icml26.scldm import MCAB, AutoencoderConfig, MCABAutoencoder
from icml26.scldm.tokenize import expressed_tokens

CFG = AutoencoderConfig(
    n_embed=16, n_latent_tokens=4, latent_dim=8, n_layer=2, n_head=4, n_head_cross=2
)


def _model_and_counts(n_genes: int = 30, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = MCABAutoencoder(n_genes, CFG).eval()
    counts = torch.poisson(torch.rand(6, n_genes, generator=gen) * 3, generator=gen)
    counts[:, 0] += 1  # no empty cell
    return model, counts, torch.arange(1, n_genes + 1)


def test_encoder_is_invariant_to_gene_order():
    model, counts, ids = _model_and_counts()
    perm = torch.randperm(ids.numel(), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        z, _ = model.encode(counts, ids)
        z_perm, _ = model.encode(counts[:, perm], ids[perm])
    assert z.shape == (6, 4, 8)
    torch.testing.assert_close(z_perm, z, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(z[0], z[1])  # different cells, different latents


def test_encoder_is_invariant_to_padding():
    model, counts, ids = _model_and_counts()
    genes, values, mask = expressed_tokens(counts, ids)
    pad = torch.zeros(genes.shape[0], 7, dtype=genes.dtype)
    with torch.no_grad():
        z, _ = model.encode_tokens(genes, values, mask)
        z_pad, _ = model.encode_tokens(
            torch.cat([genes, pad], 1),
            torch.cat([values, pad.float()], 1),
            torch.cat([mask, pad.bool()], 1),
        )
    torch.testing.assert_close(z_pad, z, atol=1e-5, rtol=1e-5)


def test_unmasked_encoder_sees_padding():
    """The released (unmasked) variant is not padding-invariant: the mask matters."""
    torch.manual_seed(0)
    model = MCABAutoencoder(
        30, AutoencoderConfig(**{**CFG.to_dict(), "mask_padding": False})
    ).eval()
    _, counts, ids = _model_and_counts()
    genes, values, mask = expressed_tokens(counts, ids)
    pad = torch.zeros(genes.shape[0], 7, dtype=genes.dtype)
    with torch.no_grad():
        z, _ = model.encode_tokens(genes, values, mask)
        z_pad, _ = model.encode_tokens(
            torch.cat([genes, pad], 1),
            torch.cat([values, pad.float()], 1),
            torch.cat([mask, pad.bool()], 1),
        )
    assert (z_pad - z).abs().max() > 1e-4


def test_decoder_is_equivariant_to_gene_order():
    model, counts, ids = _model_and_counts()
    z = torch.randn(6, 4, 8, generator=torch.Generator().manual_seed(2))
    lib = counts.sum(1)
    perm = torch.randperm(ids.numel(), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        mu, theta = model.decode(z, ids, lib)
        mu_p, theta_p = model.decode(z, ids[perm], lib)
    torch.testing.assert_close(mu_p, mu[:, perm], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(theta_p, theta[:, perm])
    torch.testing.assert_close(mu.sum(1), lib, rtol=1e-5, atol=1e-3)  # softmax · library


def test_expressed_tokens_pack_left_in_order():
    counts = torch.tensor([[0.0, 2.0, 0.0, 5.0], [1.0, 0.0, 0.0, 0.0]])
    genes, values, mask = expressed_tokens(counts, torch.tensor([11, 12, 13, 14]))
    assert genes.tolist() == [[12, 14], [11, 0]]
    assert values.tolist() == [[2.0, 5.0], [1.0, 0.0]]
    assert mask.tolist() == [[True, True], [True, False]]


def _largest_saved(module: MCAB, x: torch.Tensor, q: torch.Tensor) -> int:
    sizes: list[int] = []

    def pack(t):
        sizes.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(x, q).sum().backward()
    return max(sizes)


def test_mcab_memory_is_linear_in_genes():
    """Unpooling 4× more genes stores 4× (not 16×) larger activations: no G×G attention."""
    torch.manual_seed(0)
    block = MCAB(16, 2)
    latent = torch.randn(2, 4, 16)
    small = _largest_saved(block, latent, torch.randn(1, 100, 16))
    large = _largest_saved(block, latent, torch.randn(1, 400, 16))
    assert 3.5 <= large / small <= 4.5


def test_log1p_encoding_sees_which_genes_are_expressed_not_how_much():
    """Released ``agg_func="log1p"``: the pooling MCAB's pre-LN normalises each token
    e_g · log1p(c_g), so only the set of expressed genes reaches the latent;
    ``count_encoding="projconcat"`` keeps the magnitudes."""
    model, counts, ids = _model_and_counts()
    rescaled = torch.where(counts > 0, counts * 7 + 3, counts)
    with torch.no_grad():
        torch.testing.assert_close(
            model.encode(rescaled, ids)[0], model.encode(counts, ids)[0], atol=1e-4, rtol=1e-4
        )
        torch.manual_seed(0)
        mixed = MCABAutoencoder(
            30, AutoencoderConfig(**{**CFG.to_dict(), "count_encoding": "projconcat"})
        ).eval()
        assert (mixed.encode(rescaled, ids)[0] - mixed.encode(counts, ids)[0]).abs().max() > 1e-3
