"""Scoring methods of the registry: every method is deterministic (same seed and data, same mask), registered,
and reachable from the pipeline's stages; SparseGPT keeps its sparsity and the OBS update follows a given mask; and
magnitude, Fisher × magnitude, Wanda (the default too), OBD's `exponent` and `first_order`, and the activation norms
equal their formulas written out here."""
import copy

import pytest
import torch
from datasets import Dataset

from gaprune_nb.core import Encoder, evaluating
from gaprune_nb.arch import mlp_linears
from gaprune_nb.methods import importance
from gaprune_nb.scoring import PRUNERS, SCORERS, activation_norms
from gaprune_nb.fisher import gradient_statistics
from gaprune_nb.fixtures import tiny_model
from gaprune_nb.masks import make_mask
from gaprune_nb.registry import LEGACY_SCORE_FIELDS, METHODS, REGISTRY, DAIConfig, OBDConfig, method, method_config, stat_fields
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


def _mask(enc, stats, name, scope=None):  # None: the method's own scope
    cfg = RunConfig(method=name, scope=scope, sparsity=0.5, seed=3)
    e = copy.deepcopy(enc)
    m = None if method(name).kind == 'pruner' else select(score(e, cfg, stats, {'finance': DOM}), cfg)
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
    "Each method of the table is registered once (importing `methods` imports every scorer module): a scorer, or a pruner with its own update (SparseGPT)."
    for name, m in REGISTRY.items():
        assert (name in SCORERS, name in PRUNERS) == (m.kind == 'score', m.kind == 'pruner'), name
    assert set(SCORERS) | set(PRUNERS) == set(REGISTRY) and method('gaprune') is REGISTRY['wanda-row']  # an alias is no second entry


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


OLD_SCORES = [dict(), dict(beta=0), dict(alpha=0), dict(alpha=0, beta=0), dict(fisher='batch_squared'), dict(alignment='official'), dict(alignment='sign', fisher='batch_squared', beta=0), dict(lam=0), dict(first_order=True), dict(align=0.5), dict(lam=0, align=0.5, first_order=True)]
OLD_STAT_FIELDS = {  # method: the fields it read with each of OLD_SCORES, recorded from the name-based if-chain it replaced
    'random': ('',) * 11,
    'magnitude': ('',) * 11,
    'fisher-gen': ('fisher_gen',) * 11,
    'fisher-dom': ('fisher_dom',) * 11,
    'wanda': ('',) * 11,
    'gaprune': ('',) * 11,
    'wanda-row': ('',) * 11,
    'gaprune-paper': ('fisher_gen fisher_dom cross sq_gen sq_dom', 'fisher_dom cross sq_gen sq_dom',
        'fisher_gen fisher_dom', 'fisher_dom', 'cross sq_gen sq_dom', 'fisher_gen fisher_dom grad_gen grad_dom',
        'grad_gen grad_dom sq_dom', 'fisher_gen fisher_dom cross sq_gen sq_dom',
        'fisher_gen fisher_dom cross sq_gen sq_dom', 'fisher_gen fisher_dom cross sq_gen sq_dom',
        'fisher_gen fisher_dom cross sq_gen sq_dom'),
    'gaprune-official': ('grad_gen grad_dom sq_gen sq_dom',) * 11,
    'obd': ('fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom',
        'fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_dom',
        'fisher_gen fisher_dom grad_gen grad_dom', 'fisher_gen fisher_dom cross sq_gen sq_dom',
        'fisher_dom grad_gen grad_dom cross sq_gen sq_dom'),
    'obd-kfac': ('fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom',
        'fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_dom',
        'fisher_gen fisher_dom grad_gen grad_dom', 'fisher_gen fisher_dom cross sq_gen sq_dom',
        'fisher_dom grad_gen grad_dom cross sq_gen sq_dom'),
    'balanced': ('fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom',
        'fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom', 'fisher_gen fisher_dom',
        'fisher_gen fisher_dom grad_gen grad_dom', 'fisher_gen fisher_dom cross sq_gen sq_dom',
        'fisher_gen fisher_dom grad_gen grad_dom cross sq_gen sq_dom'),
    'ria': ('',) * 11,
    'sparsegpt': ('',) * 11,
}


def test_stat_fields_come_from_the_registry_unchanged():
    """Each method's entry says what it reads (`Method.reads` or its config's `reads()`, only with `stats`); `stat_fields`
    gives what the if-chain gave, for the settings as old runs saved them (one 16-field dict) and as the family's config."""
    assert set(OLD_STAT_FIELDS) == set(METHODS)
    old = lambda kw: {**{f: v for c in (DAIConfig(), OBDConfig()) for f, v in vars(c).items()}, **kw}  # an old run's `score`
    assert set(old({})) == LEGACY_SCORE_FIELDS
    for name in METHODS:
        assert [' '.join(stat_fields(name, old(kw))) for kw in OLD_SCORES] == list(OLD_STAT_FIELDS[name]), name
        assert [' '.join(stat_fields(name, method_config(name, old(kw)))) for kw in OLD_SCORES] == list(OLD_STAT_FIELDS[name]), name


def test_sparsegpt_refuses_scopes_it_cannot_honour():
    "SparseGPT picks each matrix's mask itself (or N:M): another scope is refused, not recorded and ignored; OBS after a scorer keeps its scope."
    for scope in ('global', 'layer', 'row'):
        with pytest.raises(ValueError, match=f"method 'sparsegpt' can only prune with scope matrix or N:M .*not '{scope}'"):
            RunConfig(method='sparsegpt', scope=scope)
    assert RunConfig(method='sparsegpt').scope == 'matrix' and RunConfig(method='sparsegpt', scope='2:4').sparsity == 0.5
    for name, m in REGISTRY.items(): assert RunConfig(method=name).scope == m.scope  # every default scope is accepted
    assert RunConfig(method='wanda', scope='row', update='obs').scope == 'row'


def test_score_config_checks():
    with pytest.raises(ValueError, match='lam >= 0'): OBDConfig(lam=-1)
    with pytest.raises(ValueError, match='align < 1'): OBDConfig(align=1.0)
    with pytest.raises(ValueError, match="update must be None or 'obs'"): RunConfig(update='sgd')
    with pytest.raises(ValueError, match='chooses its mask'): importance('sparsegpt', Encoder(*tiny_model('bert')))


def test_cli_magnitude_with_obs_update(tmp_path, bert, data):
    "A method that needs no calibration still gets the domain triplets when --update obs asks for the OBS Hessians."
    from conftest import gaprune
    r = gaprune('prune', '--model', bert, '--data', data, '--method', 'magnitude', '--update', 'obs', '--n-calib', '4', '--pool', '0',
                '--out', tmp_path / 'run')
    assert r.returncode == 0, r.stderr[-1500:]
    import json
    rep = json.loads((tmp_path / 'run' / 'gaprune_report.json').read_text())
    assert rep['config']['update'] == 'obs' and abs(rep['sparsity'] - 0.5) < 1e-6


@pytest.mark.parametrize('name', [n for n, m in REGISTRY.items() if m.kind == 'score'])
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


# Each scorer against its formula, written out here from the weights, the statistics and hooked activations.

def _weights(enc): return {k: lin.weight.detach().double() for k, lin in mlp_linears(enc).items()}


def _hooked_sq(enc, texts, kind='document'):
    "Brute force: each MLP Linear's inputs on one padded batch, squared and summed token by token over the real tokens."
    seen = {}
    hooks = [lin.register_forward_hook(lambda mod, args, out, k=k: seen.__setitem__(k, args[0].detach().double()))
             for k, lin in mlp_linears(enc).items()]
    batch = enc.tokenize(texts, kind)
    try:
        with evaluating(enc), torch.no_grad(): enc(batch=batch)
    finally:
        for h in hooks: h.remove()
    real = batch['attention_mask'].tolist()
    sq = {k: sum(x[b, t] ** 2 for b in range(x.shape[0]) for t in range(x.shape[1]) if real[b][t]) for k, x in seen.items()}
    with_pad = {k: x.square().sum((0, 1)) for k, x in seen.items()}
    return sq, with_pad, batch['attention_mask']


def _hooked_norms(enc, triplets):
    "‖X_j‖ over a triplet set: its queries (as queries), positives and negatives (as documents), each one padded batch."
    parts = [_hooked_sq(enc, list(triplets[c]), 'query' if c == 'query' else 'document')[0] for c in ('query', 'positive', 'negative')]
    return {k: sum(p[k] for p in parts).sqrt() for k in parts[0]}


def _top_half(keep, ref, what):
    "`keep` marks exactly half of `ref`, and no pruned value is above a kept one (up to float rounding at the threshold)."
    keep, ref = keep.flatten(), ref.flatten()
    assert int(keep.sum()) * 2 == keep.numel(), what
    assert ref[keep].min() >= ref[~keep].max() * (1 - 1e-5), what


def test_activation_norms_skip_padding(setup):
    "`activation_norms` = ‖X_j‖ over the real tokens only: a padded batch gives the brute-force sum over unmasked positions."
    enc, _ = setup
    texts = [T[3], T[1], T[0], T[10]]  # different lengths: one padded batch
    sq, with_pad, mask = _hooked_sq(enc, texts)
    assert (mask == 0).any()
    got = activation_norms(enc, texts, batch_size=len(texts))
    for k in sq:
        torch.testing.assert_close(got[k].double(), sq[k].sqrt(), rtol=1e-5, atol=1e-7)
        assert not torch.allclose(got[k].double(), with_pad[k].sqrt(), rtol=1e-3), k  # the padding would have counted
    got = activation_norms(enc, DOM, batch_size=len(DOM))  # a triplet set: queries, positives and negatives
    for k, v in _hooked_norms(enc, DOM).items(): torch.testing.assert_close(got[k].double(), v, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize('name,scope', [('wanda', 'global'), ('gaprune', 'row')])
def test_wanda_formula(setup, name, scope):
    "Wanda and the default `gaprune`: |W_ij|·‖X_j‖ (j the input feature); the mask keeps the top half globally / per output row."
    enc, stats = setup
    norms, w = _hooked_norms(enc, DOM), _weights(enc)
    want = {k: w[k].abs() * norms[k][None, :] for k in w}
    got = importance(name, enc, calib=DOM)
    for k in want: torch.testing.assert_close(got[k].double(), want[k], rtol=1e-5, atol=1e-8)
    cfg = RunConfig(method=name, sparsity=0.5)  # the method's own scope
    assert cfg.scope == scope
    keep = select(score(enc, cfg, stats, {'finance': DOM}), cfg)
    if scope == 'global': _top_half(torch.cat([keep[k].flatten() for k in w]), torch.cat([want[k].flatten() for k in w]), name)
    else:
        for k in w:
            for i in range(w[k].shape[0]): _top_half(keep[k][i], want[k][i], (k, i))


def test_magnitude_and_fisher_formulas(setup):
    "magnitude = |W|; fisher-dom / fisher-gen = F_dom·|W| / F_gen·|W| with the statistics' own Fisher of each side."
    enc, stats = setup
    w = _weights(enc)
    got = importance('magnitude', enc)
    for k in w: assert torch.equal(got[k].double(), w[k].abs()), k
    for name, fisher in (('fisher-dom', stats.fisher_dom), ('fisher-gen', stats.fisher_gen)):
        got = importance(name, enc, stats=stats)
        for k in w: torch.testing.assert_close(got[k].double(), fisher[k].double() * w[k].abs(), rtol=1e-6, atol=0)


@pytest.mark.parametrize('exponent', [1.0, 2.0, 3.0])
@pytest.mark.parametrize('first_order', [False, True])
def test_obd_exponent_and_first_order(setup, exponent, first_order):
    "OBD: ½|θ|^exponent (F_dom/m_dom + λF_gen/m_gen) [− θ(g_dom/√m_dom + λ g_gen/√m_gen)], m = a Fisher's mean over all scored weights."
    enc, stats = setup
    w, lam = _weights(enc), 0.5
    mean = lambda d: torch.cat([d[k].double().flatten() for k in w]).mean()
    md, mg = mean(stats.fisher_dom), mean(stats.fisher_gen)
    got = importance('obd', enc, stats=stats, config=OBDConfig(lam=lam, exponent=exponent, first_order=first_order))
    for k in w:
        want = 0.5 * w[k].abs() ** exponent * (stats.fisher_dom[k].double() / md + lam * stats.fisher_gen[k].double() / mg)
        if first_order: want = want - w[k] * (stats.grad_dom[k].double() / md.sqrt() + lam * stats.grad_gen[k].double() / mg.sqrt())
        torch.testing.assert_close(got[k].double(), want, rtol=1e-5, atol=1e-6 * float(want.abs().max()))  # fp32 scores; the − θg term cancels digits
    if first_order:  # the term is not negligible here: it moves the scores
        plain = importance('obd', enc, stats=stats, config=OBDConfig(lam=lam, exponent=exponent))
        assert any(not torch.allclose(got[k], plain[k], rtol=1e-3) for k in w)
