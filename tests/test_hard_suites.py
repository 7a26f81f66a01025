"""The hard retrieval suites of issue 52 (`bench/hard/`, built by tools/build_hard_suites.py): the committed files are the
ones MANIFEST.json records, every suite is BEIR-shaped and as large as issue 52 asks, holds no hold-out text, and its test
slice scores per query with `dev_scores` (a tiny model: the plumbing, not the numbers)."""
import hashlib, json

import numpy as np
import pytest

from gaprune_nb.core import Encoder
from gaprune_nb.devsuite import dev_scores, hard_root, hard_suite, paired_bootstrap
from gaprune_nb.fixtures import tiny_model

ROOT = hard_root()
MANIFEST = json.loads((ROOT/'MANIFEST.json').read_text())


def norm_hash(t): return hashlib.sha256(' '.join(t.casefold().split()).encode('utf-8')).hexdigest()


def test_files_match_manifest():
    for s in MANIFEST['suites']:
        for rel, meta in s['files'].items():
            assert hashlib.sha256((ROOT/rel).read_bytes()).hexdigest() == meta['sha256'], rel


@pytest.mark.parametrize('s', MANIFEST['suites'], ids=lambda s: s['path'])
def test_suite_shape(s):
    assert s['counts']['queries'] >= 150 and s['counts']['corpus'] >= 1000
    folder = ROOT/s['path']
    corpus = [json.loads(l) for l in (folder/'corpus.jsonl').open(encoding='utf-8')]
    queries = [json.loads(l) for l in (folder/'queries.jsonl').open(encoding='utf-8')]
    qrels = [l.split('\t') for l in (folder/'qrels'/'test.tsv').read_text(encoding='utf-8').splitlines()[1:]]
    ids, qids = {d['_id'] for d in corpus}, {q['_id'] for q in queries}
    assert len(ids) == len(corpus) and len(qids) == len(queries)
    assert all(q in qids and d in ids for q, d, _ in qrels) and {q for q, _, _ in qrels} == qids
    assert sum(q['_id'] in qids for q in queries) == s['counts']['queries']


def test_no_holdout_text():
    from gaprune_nb.data import data_root
    try: data = data_root(None)
    except Exception: pytest.skip('no data folder ($GAPRUNE_DATA)')
    if not (data/'holdout_hashes.txt').exists(): pytest.skip('the data folder has no holdout_hashes.txt')
    held = set((data/'holdout_hashes.txt').read_text().split())
    for s in MANIFEST['suites']:
        folder = ROOT/s['path']
        for f in ('corpus.jsonl', 'queries.jsonl'):
            for l in (folder/f).open(encoding='utf-8'):
                r = json.loads(l)
                assert norm_hash(r['text']) not in held and norm_hash(f"{r.get('title', '')} {r['text']}".strip()) not in held


def test_slices_score_per_query():
    tasks = hard_suite(slice=True)
    assert [t.name.split('.')[0] for t in tasks] == ['finance', 'chemistry', 'general', 'finance']
    m, tok = tiny_model('bert')
    enc = Encoder(m, tok, pooling='mean', max_length=200)  # the tiny model has 256 positions
    a = dev_scores(enc, tasks, batch_size=16)
    for t in tasks:
        v = a[t.name].values
        assert len(v) == len(t.data.queries) == 30 and np.all((v >= 0) & (v <= 1))
    bt = paired_bootstrap(a, a, n=50)
    assert np.allclose(bt[['delta', 'lo', 'hi']].values, 0)
