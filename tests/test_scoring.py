"""Scoring methods of the registry: every method is deterministic (same seed and data, same mask), registered,
and reachable from the pipeline's stages; SparseGPT keeps its sparsity and the OBS update follows a given mask."""
import copy

import pytest
import torch
from datasets import Dataset

from gaprune_nb.core import Encoder, mlp_linears
from gaprune_nb.dai import SCORERS, importance
from gaprune_nb.fisher import gradient_statistics
from gaprune_nb.fixtures import tiny_model
from gaprune_nb.masks import make_mask
from gaprune_nb.options import METHODS, REGISTRY, ScoreConfig, method
from gaprune_nb.pipeline import RunConfig, apply, score, select

T = ["what is a bond", "define the equity risk premium of a small company", "how are dividends taxed", "ebitda",
     "a bond is a loan to an issuer", "the extra return investors demand over the risk free rate",
     "qualified dividends are taxed at capital gains rates", "earnings before interest taxes depreciation",
     "the weather is nice today", "cats sleep", "paris is in france and has many museums", "a recipe for bread"]
GEN = Dataset.from_dict(dict(query=T[:4] * 2, positive=T[4:8] * 2, negative=T[8:] * 2))
DOM = Dataset.from_dict(dict(query=T[1:4] * 2, positive=T[5:8] * 2, negative=T[9:] * 2))


def _stats(enc, in_batch):
    return gradient_statistics(enc, GEN, DOM, batch_size=3, in_batch=in_batch, domain_name='finance', show_progress=False)


@pytest.fixture(scope='module')
def setup():
    enc = Encoder(*tiny_model('bert', seed=5))
    return enc, _stats(enc, True)


def _mask(enc, stats, name, scope='global'):
    cfg = RunConfig(method=name, scope=scope, sparsity=0.5, seed=3)
    e = copy.deepcopy(enc)
    m = None if method(name).update else select(score(e, cfg, stats, {'finance': DOM}), cfg)
    return apply(e, m, cfg, {'finance': DOM}), e


@pytest.mark.parametrize('name', METHODS)
def test_same_seed_same_mask(setup, name):
    "Every method, twice from the same inputs (statistics recomputed too): identical masks, the asked-for sparsity."
    enc, stats = setup
    a, ea = _mask(enc, stats, name)
    b, eb = _mask(enc, _stats(enc, True), name)
    assert a.keys() == set(mlp_linears(enc))
    for k in a: assert torch.equal(a[k], b[k]), k
    kept = sum(int(v.sum()) for v in a.values()) / sum(v.numel() for v in a.values())
    assert abs(kept - 0.5) < 0.01
    for k, lin in mlp_linears(ea).items():  # the model has exactly the mask's zeros (SparseGPT also updates the rest)
        assert torch.equal(lin.weight != 0, a[k]) or (lin.weight[~a[k]] == 0).all()


def test_registry_is_complete():
    "Each method has a scorer once its module is imported, or is a pruner with its own update (SparseGPT)."
    import gaprune_nb.saliency, gaprune_nb.sparsegpt  # noqa: F401
    for name, m in REGISTRY.items():
        assert (name in SCORERS) != m.update, name


def test_obs_update_keeps_a_given_mask(setup):
    "update='obs' keeps exactly the mask of the method's scores and changes kept weights (the OBS update)."
    enc, stats = setup
    cfg = RunConfig(method='magnitude', update='obs', sparsity=0.5)
    plain = make_mask(importance('magnitude', enc), 0.5)
    e = copy.deepcopy(enc)
    got = apply(e, select(score(e, cfg, stats), cfg), cfg, {'finance': DOM})
    for k, lin in mlp_linears(e).items():
        assert torch.equal(got[k], plain[k])
        assert (lin.weight[~plain[k]] == 0).all()
    before, after = mlp_linears(enc), mlp_linears(e)
    assert any(not torch.equal(before[k].weight[plain[k]], after[k].weight[plain[k]]) for k in plain)


def test_sparsegpt_2_4(setup):
    enc, stats = setup
    m, _ = _mask(enc, stats, 'sparsegpt', scope='2:4')
    for k, v in m.items(): assert (v.view(v.shape[0], -1, 4).sum(-1) == 2).all(), k


def test_score_config_checks():
    with pytest.raises(ValueError, match='lam >= 0'): ScoreConfig(lam=-1)
    with pytest.raises(ValueError, match='align < 1'): ScoreConfig(align=1.0)
    with pytest.raises(ValueError, match="update must be None or 'obs'"): RunConfig(update='sgd')
    with pytest.raises(ValueError, match='chooses its mask'): importance('sparsegpt', Encoder(*tiny_model('bert')))


def test_cli_magnitude_with_obs_update(tmp_path):
    "A method that needs no calibration still gets the domain triplets when --update obs asks for the OBS Hessians."
    import subprocess, sys
    from pathlib import Path
    r = subprocess.run([str(Path(sys.executable).parent / 'gaprune'), 'prune', '--method', 'magnitude', '--update', 'obs',
                        '--n-calib', '4', '--pool', '50', '--out', str(tmp_path / 'run')], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1500:]
    import json
    rep = json.loads((tmp_path / 'run' / 'gaprune_report.json').read_text())
    assert rep['config']['update'] == 'obs' and abs(rep['sparsity'] - 0.5) < 1e-6


@pytest.mark.parametrize('name', [n for n, m in REGISTRY.items() if not m.update])
def test_lazy_scores_same_mask(setup, name):
    "importance(lazy=True): a PerMatrix exactly for the `per_matrix` methods, the same scores and the same masks as eager."
    from gaprune_nb.masks import PerMatrix
    enc, stats = setup
    eager = importance(name, enc, stats=stats, calib=DOM, seed=1)
    lazy = importance(name, enc, stats=stats, calib=DOM, seed=1, lazy=True)
    assert isinstance(eager, dict) and isinstance(lazy, PerMatrix) == method(name).per_matrix
    for k in eager: assert torch.equal(lazy[k], eager[k]), k
    for scope in ('global', 'row'):
        a, b = make_mask(lazy, 0.5, scope), make_mask(eager, 0.5, scope)
        for k in a: assert torch.equal(a[k], b[k]), (scope, k)
