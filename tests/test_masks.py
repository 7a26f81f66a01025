"Tests for `gaprune_nb.masks` (and the mask side of `gaprune_nb.methods`): exact top-k, scopes, apply, save/load, errors."
import os

import pytest
import torch

import gaprune_nb.masks as M
import gaprune_nb.store as S
from gaprune_nb.core import Encoder
from gaprune_nb.arch import mlp_linears
from gaprune_nb.methods import importance
from gaprune_nb.fixtures import tiny_model
from gaprune_nb.masks import (MaskError, apply_mask, kth_largest, layer_of, load_mask, make_mask, mask_difference,
                              mask_metadata, save_mask, sparsity_report)


def brute_topk(scores, k):
    "Reference: stable descending sort of all scores concatenated (ties: earlier tensor, lower index first)."
    flat = torch.cat([s.reshape(-1).float() for s in scores.values()]) + 0.0
    keep = torch.zeros(flat.numel(), dtype=torch.bool)
    keep[torch.sort(flat, descending=True, stable=True).indices[:k]] = True
    sizes = [s.numel() for s in scores.values()]
    return {n: m.view(s.shape) for (n, s), m in zip(scores.items(), keep.split(sizes))}


def tied_scores(seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return {'enc.layer.0.up': (torch.randn(33, 17, generator=g) * 3).round().to(dtype),   # few distinct values
            'enc.layer.0.down': torch.full((17, 33), 1.0, dtype=dtype),                  # one big tie block
            'enc.layer.1.up': torch.randn(33, 17, generator=g).to(dtype),
            'enc.layer.1.down': -torch.rand(17, 33, generator=g).round(decimals=1).to(dtype) * 0.0}  # -0.0 and +0.0


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(M, 'CHUNK', 100)  # every tensor spans several chunks


@pytest.mark.parametrize('seed', range(4))
@pytest.mark.parametrize('dtype', [torch.float32, torch.float16, torch.bfloat16])
def test_global_topk_exact_vs_brute_force(seed, dtype, small_chunks):
    sc = tied_scores(seed, dtype)
    n = sum(v.numel() for v in sc.values())
    for sparsity in (0.0, 0.1, 0.25, 0.5, 0.77, 0.999, 1.0):
        k = n - int(sparsity * n + 0.5)
        got, ref = make_mask(sc, sparsity), brute_topk(sc, k)
        assert sum(int(m.sum()) for m in got.values()) == k
        for name in sc:
            assert got[name].dtype == torch.bool and got[name].shape == sc[name].shape
            assert torch.equal(got[name], ref[name]), (name, sparsity)


def test_every_k_on_a_small_tied_dict(small_chunks):
    sc = {'a.0.w': torch.tensor([[2., 1., 1.], [0., 1., 3.]]), 'a.1.w': torch.tensor([1., 1., -1., 2.])}
    for k in range(11):
        got, ref = M._topk_mask(sc, k), brute_topk(sc, k)
        for name in sc: assert torch.equal(got[name], ref[name]), k


def test_kth_largest_matches_sort(small_chunks):
    g = torch.Generator().manual_seed(1)
    sc = {'x': torch.randn(40, 25, generator=g), 'y': torch.randn(333, generator=g).round(decimals=1)}
    srt = torch.cat([v.reshape(-1) for v in sc.values()]).sort(descending=True).values
    for k in (1, 2, 500, 1332, 1333):
        assert kth_largest(sc, k) == srt[k - 1].item()
    assert kth_largest({'z': torch.tensor([float('-inf'), 5., float('inf')])}, 3) == float('-inf')


def test_large_values_and_infinities():
    sc = {'a.0.w': torch.tensor([1e38, -1e38, float('inf'), float('-inf'), 1e-45, -1e-45, 0.0, 3.0])}
    got, ref = make_mask(sc, 0.5), brute_topk(sc, 4)
    assert torch.equal(got['a.0.w'], ref['a.0.w'])


def test_determinism():
    model, tok = tiny_model('bert', seed=0)
    enc = Encoder(model, tok)
    masks = [make_mask(importance('random', enc, seed=s), 0.5) for s in (3, 3, 4)]
    for name in masks[0]: assert torch.equal(masks[0][name], masks[1][name])
    assert mask_difference(masks[0], masks[2]) > 0.3
    sc = tied_scores(0)
    a, b = make_mask(sc, 0.4, 'layer'), make_mask(sc, 0.4, 'layer')
    assert all(torch.equal(a[n], b[n]) for n in a)


def test_layer_scope_exact_per_layer(small_chunks):
    sc = tied_scores(2)
    m = make_mask(sc, 0.3, 'layer')
    for layer in ('enc.layer.0', 'enc.layer.1'):
        sub = {n: s for n, s in sc.items() if layer_of(n) == layer}
        n = sum(v.numel() for v in sub.values())
        assert sum(int(m[k].sum()) for k in sub) == n - int(0.3 * n + 0.5)
        ref = brute_topk(sub, n - int(0.3 * n + 0.5))
        assert all(torch.equal(m[k], ref[k]) for k in sub)
    rep = sparsity_report(m, by='layer')
    assert list(rep.layer) == [0, 1] and (rep.sparsity - 0.3).abs().max() < 2e-3


def test_matrix_and_row_scopes():
    sc = tied_scores(1)
    for name, v in make_mask(sc, 0.5, 'matrix').items():
        assert int(v.sum()) == v.numel() - int(0.5 * v.numel() + 0.5)
    for name, v in make_mask(sc, 0.4, 'row').items():
        cols = v.shape[-1]
        assert torch.equal(v.sum(-1), torch.full((v.shape[0],), cols - int(0.4 * cols + 0.5)))


@pytest.mark.parametrize('nm', ['2:4', '1:4', '4:8'])
def test_n_m_structure(nm):
    n, m = map(int, nm.split(':'))
    g = torch.Generator().manual_seed(0)
    sc = {'enc.layer.0.up': torch.randn(8, 16, generator=g), 'enc.layer.0.down': torch.randn(16, 8, generator=g).round()}
    mask = make_mask(sc, scope=nm)
    for name, v in mask.items():
        grp, s = v.view(-1, m), sc[name].view(-1, m)
        assert torch.equal(grp.sum(1), torch.full((grp.shape[0],), n))
        kept_min = s.masked_fill(~grp, float('inf')).min(1).values
        pruned_max = s.masked_fill(grp, -float('inf')).max(1).values
        assert bool((kept_min >= pruned_max).all())
    with pytest.raises(MaskError, match='fixes the sparsity'): make_mask(sc, 0.3, nm)
    with pytest.raises(MaskError, match='multiple of'): make_mask({'l.0.w': torch.randn(4, 6)}, scope='4:8')


def test_apply_mask_zeroes_exactly_the_masked_weights():
    model, tok = tiny_model('llama', seed=0)
    enc = Encoder(model, tok)
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    mask = make_mask(importance('magnitude', enc), 0.6)
    out = apply_mask(enc, mask)
    assert out is enc and isinstance(enc, torch.nn.Module)
    after = enc.state_dict()
    for name, m in mask.items():
        w = after[f'{name}.weight']
        assert torch.equal(w[~m], torch.zeros(int((~m).sum())))
        assert torch.equal(w[m], before[f'{name}.weight'][m])
    touched = {f'{n}.weight' for n in mask}
    for k in before:
        if k not in touched: assert torch.equal(before[k], after[k]), k
    rep = sparsity_report(enc)
    assert abs(1 - rep.kept.sum() / rep.numel.sum() - 0.6) < 1e-3


def test_apply_mask_keeps_nan_weights_out():
    lin = torch.nn.Linear(4, 2)
    with torch.no_grad(): lin.weight[0, 0] = float('nan')
    m = torch.ones(2, 4, dtype=torch.bool); m[0, 0] = False
    apply_mask(torch.nn.Sequential(lin), {'0': m})
    assert lin.weight[0, 0].item() == 0.0


def test_bad_masks_raise_and_change_nothing():
    model, tok = tiny_model('bert', seed=0)
    enc = Encoder(model, tok)
    good = make_mask(importance('magnitude', enc), 0.5)
    before = {k: v.clone() for k, v in enc.state_dict().items()}
    name = next(iter(good))
    bad_key = {**good, 'model.encoder.layer.99.intermediate.dense': good[name]}
    bad_shape = {**good, name: good[name].T.contiguous()}
    bad_dtype = {**good, name: good[name].float()}
    with pytest.raises(MaskError, match="layer.99.*no nn.Linear of that name"): apply_mask(enc, bad_key)
    with pytest.raises(MaskError, match=r"mask shape .* != weight shape"): apply_mask(enc, bad_shape)
    with pytest.raises(MaskError, match="expected a torch.bool tensor"): apply_mask(enc, bad_dtype)
    with pytest.raises(MaskError, match="named like 'encoder.layer.0"): apply_mask(enc.model, good)  # Encoder names on the bare model
    with pytest.raises(MaskError, match='non-empty'): apply_mask(enc, {})
    after = enc.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    with pytest.raises(MaskError, match='different matrices'): mask_difference(good, bad_key)
    with pytest.raises(MaskError, match='floating-point'): make_mask({'a.0.w': torch.arange(4)}, 0.5)
    with pytest.raises(MaskError, match='NaN'): make_mask({'a.0.w': torch.tensor([1., float('nan')])}, 0.5)
    with pytest.raises(MaskError, match='non-empty dict'): make_mask({}, 0.5)


def test_save_load_round_trip(tmp_path):
    sc = tied_scores(0)
    mask = make_mask(sc, 0.5)
    p = save_mask(mask, tmp_path/'a'/'mask.safetensors', metadata={'method': 'magnitude', 'sparsity_target': 0.5})
    back = load_mask(p)
    assert set(back) == set(mask)
    for n in mask: assert back[n].dtype == torch.bool and torch.equal(back[n], mask[n])
    meta = mask_metadata(p)
    assert meta['format'] == 'gaprune_mask' and meta['method'] == 'magnitude' and abs(float(meta['sparsity']) - 0.5) < 1e-6
    assert os.path.getsize(p) < sum(v.numel() for v in mask.values()) + 4096  # one byte per weight
    assert sorted(os.listdir(tmp_path/'a')) == ['mask.safetensors']


def test_save_is_atomic(tmp_path, monkeypatch):
    p = tmp_path/'mask.safetensors'
    first = make_mask(tied_scores(0), 0.5)
    save_mask(first, p)
    def boom(fd): raise OSError('disk full')  # the new bytes are partly written when the disk fills up
    monkeypatch.setattr(S.os, 'fsync', boom)
    with pytest.raises(OSError, match='disk full'): save_mask(make_mask(tied_scores(1), 0.2), p)
    assert os.listdir(tmp_path) == ['mask.safetensors']   # no temporary left
    back = load_mask(p)                                     # the old mask, intact
    assert all(torch.equal(back[n], first[n]) for n in first)


def test_save_refuses_non_bool_and_load_refuses_scores(tmp_path):
    with pytest.raises(MaskError, match='torch.bool'): save_mask({'a': torch.ones(3)}, tmp_path/'x.safetensors')
    assert not (tmp_path/'x.safetensors').exists()
    from safetensors.torch import save_file
    save_file({'a': torch.ones(3)}, str(tmp_path/'scores.safetensors'))
    with pytest.raises(MaskError, match='not a mask'): load_mask(tmp_path/'scores.safetensors')


def test_mask_keys_are_mlp_linears():
    for arch in ('bert', 'qwen3'):
        model, tok = tiny_model(arch, seed=0)
        enc = Encoder(model, tok)
        mask = make_mask(importance('magnitude', enc), 0.5)
        assert list(mask) == list(mlp_linears(enc))
