"""The user-domain suite (`gaprune_nb.domain_eval`): metrics against independent references, Δ and intervals on
identical and destroyed models, texts-shape agreement, the model's own token limit, and refusals before any work."""
import copy, itertools, json

import datasets
import numpy as np
import pytest
import pytrec_eval
import torch
from sklearn.metrics import ndcg_score

from gaprune_nb.core import Encoder
from gaprune_nb.domain_eval import (DomainEvalError, MIN_HELD, check_held, domain_compare, domain_scores, domain_texts,
                                    neighbour_overlap, ranking_metrics, retrieval_set)
from gaprune_nb.fixtures import minilm_path, tiny_model

WORDS = ('revenue margin bond equity dividend cash asset yield loss profit debt audit tax stock fund price rate '
         'acid ester ketone enzyme protein ligand reagent solvent polymer catalyst').split()


def held_triplets(n=60, seed=0):
    "Held-out triplets whose query and positive share words (a tiny random model retrieves some)."
    rng = np.random.default_rng(seed)
    pairs = list(itertools.permutations(WORDS, 2)); rng.shuffle(pairs)
    return datasets.Dataset.from_list([dict(query=f'what is the {a} of {b}', positive=f'the {a} of {b} is {c}',
                                            negative=f'the {b} of {a} is {c}') for (a, b), c in zip(pairs[:n], rng.choice(WORDS, n))])


@pytest.fixture(scope='module')
def tiny():
    m, tok = tiny_model('bert')
    return Encoder(m, tok, pooling='mean', max_length=200)  # 256 positions


def test_ranking_metrics_match_pytrec_eval_and_sklearn():
    rng = np.random.default_rng(1)
    Q, D = 50, 40
    sim = rng.normal(size=(Q, 12)) @ rng.normal(size=(D, 12)).T
    relevant = [sorted(rng.choice(D, size=rng.integers(1, 5), replace=False).tolist()) for _ in range(Q)]
    ndcg, mrr = ranking_metrics(sim, relevant)
    qrels = {f'q{i}': {f'd{j}': 1 for j in r} for i, r in enumerate(relevant)}
    run = lambda k: {f'q{i}': {f'd{j}': float(sim[i, j]) for j in np.argsort(-sim[i])[:k]} for i in range(Q)}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {'ndcg_cut.10'}).evaluate(run(D))
    np.testing.assert_allclose(ndcg, [ref[f'q{i}']['ndcg_cut_10'] for i in range(Q)], atol=1e-12)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {'recip_rank'}).evaluate(run(10))  # reciprocal rank within the top 10
    np.testing.assert_allclose(mrr, [ref[f'q{i}']['recip_rank'] for i in range(Q)], atol=1e-12)
    gold = np.zeros((Q, D))
    for i, r in enumerate(relevant): gold[i, r] = 1
    np.testing.assert_allclose(ndcg, [ndcg_score(gold[i:i + 1], sim[i:i + 1], k=10) for i in range(Q)], atol=1e-12)
    assert 0 < (mrr == 0).sum() < Q and (mrr == 1).any()  # misses, first-place hits and the rest all occur


def test_neighbour_overlap_matches_brute_force():
    rng = np.random.default_rng(2)
    a = rng.normal(size=(40, 6)); a /= np.linalg.norm(a, axis=1, keepdims=True)
    b = a + 0.4 * rng.normal(size=a.shape)
    near = lambda e, i: set(sorted((j for j in range(len(e)) if j != i), key=lambda j: -e[i] @ e[j])[:10])
    brute = [len(near(a, i) & near(b, i)) / 10 for i in range(len(a))]
    np.testing.assert_array_equal(neighbour_overlap(a, b, chunk=9), brute)
    assert 0 < np.mean(brute) < 1


def test_retrieval_set_corpus_is_every_distinct_held_out_positive_and_negative():
    held = held_triplets()
    rs = retrieval_set(held)
    assert set(rs.corpus) == set(held['positive']) | set(held['negative']) and len(rs.corpus) == len(set(rs.corpus))
    assert all([rs.corpus[j] for j in r] == [p] for r, p in zip(rs.relevant, held['positive']))
    assert set(retrieval_set(held.select_columns(['query', 'positive'])).corpus) == set(held['positive'])


def test_identical_models_give_zero_delta_with_zero_width_interval(tiny):
    res = domain_compare(tiny, copy.deepcopy(tiny), held_triplets(), name='copy')
    assert set(res['metrics']) == {'nDCG@10', 'MRR@10'} and res['shape'] == 'triplets' and res['items'] == 60
    for m in res['metrics'].values():
        assert (m['delta'], m['lo'], m['hi']) == (0, 0, 0) and m['dense'] == m['copy'] > 0
    json.dumps(res)  # a run report can hold it


def test_destroyed_weights_give_a_negative_delta_whose_interval_excludes_zero(tiny):
    bad = copy.deepcopy(tiny)
    torch.manual_seed(1)
    with torch.no_grad():
        for p in bad.model.parameters(): p.normal_(0, 1)
    held = held_triplets().select_columns(['query', 'positive'])
    res = domain_compare(tiny, bad, held, name='destroyed')
    for m in res['metrics'].values():
        assert m['lo'] <= m['delta'] <= m['hi'] < 0, res['metrics']
        assert abs(m['delta'] - (m['destroyed'] - m['dense'])) < 1e-9
    agree = domain_compare(tiny, bad, datasets.Dataset.from_dict({'text': held['positive']}), name='destroyed')
    for m in agree['metrics'].values(): assert m['hi'] < 0 and m['dense'] == 100


def test_texts_agreement_is_one_for_identical_models(tiny):
    texts = datasets.Dataset.from_dict({'text': held_triplets()['positive']})
    sc = domain_scores(tiny, texts, dense=copy.deepcopy(tiny))
    np.testing.assert_allclose(sc['cosine'].values, 1, atol=1e-12)
    np.testing.assert_array_equal(sc['10-NN overlap'].values, 1)
    res = domain_compare(tiny, copy.deepcopy(tiny), texts)
    for m in res['metrics'].values(): assert abs(m['delta']) < 1e-9 and m['lo'] <= m['delta'] <= m['hi']


def test_long_texts_are_encoded_at_the_models_own_limit(tiny):
    "The compressed model's limit (200 here) for both models, even a dense one left at 128; the record counts the longer texts."
    short, model, widths = copy.deepcopy(tiny), copy.deepcopy(tiny), {}
    short.max_length = 128
    for key, e in (('dense', short), ('model', model)):
        f = e.tokenize
        def tokenize(texts, kind='document', f=f, key=key):
            b = f(texts, kind); widths.setdefault(key, []).append(b['input_ids'].shape[1]); return b
        e.tokenize = tokenize
    long_text = ' '.join(WORDS * 12)
    held = datasets.Dataset.from_dict({'text': held_triplets()['positive'][:30] + [long_text]})
    res = domain_compare(short, model, held)
    assert max(widths['dense']) == max(widths['model']) == 200 and short.max_length == 128
    assert (res['max_length'], res['tokens']['document']['truncated']) == (200, 1)
    assert res['tokens']['document']['longest'] > 300


def test_minilm_is_evaluated_at_its_folder_limit():
    "all-MiniLM-L6-v2's own limit is its sentence-transformers max_seq_length (256), not the training limit of 128."
    enc = Encoder.from_pretrained(minilm_path())
    limit = json.loads((minilm_path() / 'sentence_bert_config.json').read_text())['max_seq_length']
    texts = [' '.join(WORDS[:10] * 18), ' '.join(WORDS * 12)]  # lengths counted below, not assumed
    n = [len(enc.tokenizer(t)['input_ids']) for t in texts]
    assert 128 < n[0] <= limit < n[1]
    held = datasets.Dataset.from_dict({'text': held_triplets()['positive'][:25] + texts})
    res = domain_compare(enc, enc, held)  # the same model twice: only the token record matters here
    assert res['max_length'] == enc.max_length == limit == 256
    assert (res['tokens']['document']['truncated'], res['tokens']['document']['longest']) == (1, n[1])
    full = enc.encode(texts[:1])
    enc.max_length = 128
    cut = enc.encode(texts[:1])
    assert float((full * cut).sum()) < 1 - 1e-4  # at 128 tokens this text's embedding would have been another


def test_small_or_malformed_held_out_split_is_refused_in_one_line(tiny):
    with pytest.raises(DomainEvalError, match=f'has 5 distinct queries; a domain suite needs at least {MIN_HELD}'):
        check_held(held_triplets(5))
    with pytest.raises(DomainEvalError, match='needs at least'): domain_texts({'text': ['same text'] * 50})
    with pytest.raises(DomainEvalError, match="needs 'text' \\(texts\\) or 'query' and 'positive'"): check_held({'sentence': ['a'] * 50})
    with pytest.raises(DomainEvalError, match='pass `dense`'): domain_scores(tiny, {'text': [f't {w}' for w in WORDS]})
    assert check_held(held_triplets()) == 'triplets'


def test_run_refuses_a_too_small_split_before_pruning(tmp_path):
    from gaprune_nb.jobs import run
    from gaprune_nb.options import RunConfig
    with pytest.raises(DomainEvalError, match='needs at least'):
        run(RunConfig(method='magnitude', sparsity=0.3), tmp_path / 'out', limit='tiny', show_progress=False,
            domain_held=held_triplets(5))
    assert not (tmp_path / 'out').exists()
