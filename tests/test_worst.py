"""What was lost (issue 52, item 4): `gaprune eval --worst N` on the hard finance slice and on a held-out split of the
user's data lists exactly the items whose score drops most from dense to compressed, checked against per-query nDCG@10
computed here by brute force (numpy over cosine similarities); bad input is one line before any model loads; a run's
report has the section."""
import json

import numpy as np
import pytest

from conftest import gaprune, one_line_error
from gaprune_nb.core import Encoder
from gaprune_nb.devsuite import hard_suite
from gaprune_nb.fixtures import tiny_model



@pytest.fixture(scope='module')
def other(tmp_path_factory):
    "Another tiny BERT (seed 1) as the 'compressed' model: far from the dense one, so it loses on many queries."
    d = tmp_path_factory.mktemp('models') / 'tiny-bert-1'
    Encoder(*tiny_model('bert', seed=1)).save_pretrained(d)
    return d


def pairs_file(path, slice=True):
    "The hard finance suite (or its slice) as a user's pairs file: each query with its (first) most relevant page, one JSON line each."
    rd = hard_suite('finance', slice=slice)[0].data
    docs = {i: f"{t} {x}".strip() for i, t, x in zip(rd.corpus['_id'], rd.corpus['title'], rd.corpus['text'])}
    order = {d: k for k, d in enumerate(rd.corpus['_id'])}
    first = lambda q: min(((-g, order[d]), d) for d, g in rd.qrels[q].items() if g > 0)[1]
    rows = [dict(query=t, positive=docs[first(q)]) for q, t in zip(rd.queries['_id'], rd.queries['text'])]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(''.join(json.dumps(r) + '\n' for r in rows))
    return rows


def ndcg10(sim, gains, tiebreak):
    "Per-query nDCG@10 by brute force: each row of `sim` ranked (equal scores by `tiebreak`, smaller first), graded gains / log2(rank + 1)."
    out = []
    for s, g in zip(sim, gains):
        order = sorted(range(len(s)), key=lambda j: (-s[j], tiebreak[j]))[:10]
        dcg = sum(g[j] / np.log2(r + 2) for r, j in enumerate(order))
        ideal = sum(x / np.log2(r + 2) for r, x in enumerate(sorted(g, reverse=True)[:10]))
        out.append(dcg / ideal if ideal > 0 else 0.)
    return np.array(out)


def expected_worst(a, b, n):
    "Indices of the `n` largest drops a − b (> 0 only), the earlier item first on equal drops."
    d = a - b
    return [i for i in sorted(range(len(d)), key=lambda i: (-d[i], i))[:n] if d[i] > 0]


def first12(t):
    w = t.split()
    return ' '.join(w[:12]) + (' …' if len(w) > 12 else '')


def embed(folder, queries, docs):
    enc = Encoder.from_pretrained(folder)
    return enc.encode(queries, kind='query', normalize=True).astype(np.float64), enc.encode(docs, kind='document', normalize=True).astype(np.float64)


def test_eval_worst_lists_the_largest_drops_on_the_hard_finance_slice(tmp_path, bert, other):
    r = gaprune('eval', '--model', other, '--dense', bert, '--suite', 'hard-finance', '--limit', 'tiny', '--worst', 5,
                '--json', tmp_path / 'w.json')
    assert r.returncode == 0, r.stderr[-3000:]
    rd = hard_suite('finance', slice=True)[0].data
    queries, ids = list(rd.queries['text']), list(rd.corpus['_id'])
    docs = [f"{t} {x}".strip() for t, x in zip(rd.corpus['title'], rd.corpus['text'])]
    gains = [[rd.qrels.get(q, {}).get(d, 0) for d in ids] for q in rd.queries['_id']]
    rank_of_id = {d: -k for k, d in enumerate(sorted(ids))}  # trec_eval: equal scores, the larger document id first
    tb = [rank_of_id[d] for d in ids]
    (qa, da), (qb, db) = embed(bert, queries, docs), embed(other, queries, docs)
    a, b = ndcg10(qa @ da.T, gains, tb), ndcg10(qb @ db.T, gains, tb)
    want = expected_worst(a, b, 5)
    assert want, 'the pruned model should lose on some query'
    got = json.loads((tmp_path / 'w.json').read_text())['worst']['finance.finqa_statements']['items']
    assert [x['item'] for x in got] == want and [x['query'] for x in got] == [queries[i] for i in want]
    for x, i in zip(got, want):
        assert x['dense'] == pytest.approx(100 * a[i], abs=2e-3) and x['model'] == pytest.approx(100 * b[i], abs=2e-3)
        assert x['drop'] == pytest.approx(100 * (a[i] - b[i]), abs=2e-3)
        best = max(gains[i]); first = next(j for j, g in enumerate(gains[i]) if g == best)  # the (first) most relevant page
        assert x['passage'] == first12(docs[first])
    out = r.stdout
    assert 'what was lost: finance.finqa_statements' in out and 'Δ [95% CI]' in out
    for x in got: assert f"{x['drop']:6.1f}" in out and x['passage'] in out


def test_eval_worst_on_the_held_out_split_of_the_users_data(tmp_path, bert, other, data):
    rows = pairs_file(tmp_path / 'mine' / 'held.jsonl')
    r = gaprune('eval', '--model', other, '--dense', bert, '--data', data, '--domain-data', tmp_path / 'mine' / 'held.jsonl',
                '--holdout', 0, '--worst', 4, '--json', tmp_path / 'w.json')
    assert r.returncode == 0, r.stderr[-3000:]
    queries, positives = [x['query'] for x in rows], [x['positive'] for x in rows]
    corpus = list(dict.fromkeys(positives))
    gains = [[int(d == p) for d in corpus] for p in positives]
    tb = list(range(len(corpus)))  # equal scores: the earlier document first
    (qa, da), (qb, db) = embed(bert, queries, corpus), embed(other, queries, corpus)
    a, b = ndcg10(qa @ da.T, gains, tb), ndcg10(qb @ db.T, gains, tb)
    want = expected_worst(a, b, 4)
    assert want, 'the pruned model should lose on some query'
    res = json.loads((tmp_path / 'w.json').read_text())
    got = res['worst']['nDCG@10']['items']
    assert [x['query'] for x in got] == [queries[i] for i in want] and [x['passage'] for x in got] == [first12(positives[i]) for i in want]
    for x, i in zip(got, want): assert x['drop'] == pytest.approx(100 * (a[i] - b[i]), abs=2e-3)
    assert 'what was lost: nDCG@10' in r.stdout


def test_bad_worst_is_one_line_before_any_model_loads(tmp_path, bert):
    missing = tmp_path / 'no-such-model'
    line = one_line_error(gaprune('eval', '--model', missing, '--suite', 'hard-finance', '--worst', 0), code=2)
    assert '--worst' in line and '>= 1' in line
    line = one_line_error(gaprune('eval', '--model', missing, '--suite', 'hard-finance', '--worst', 3))
    assert '--dense' in line and 'no-such-model' not in line  # refused before the model is even looked for
    line = one_line_error(gaprune('eval', '--model', bert, '--dense', bert, '--suite', 'hard-legal'), code=2)
    assert 'hard-legal' in line


def test_a_runs_report_says_what_was_lost(tmp_path, bert, data):
    src = tmp_path / 'legal' / 'legal.jsonl'
    pairs_file(src, slice=False)  # 300 pairs, 20% held out: 60 queries
    r = gaprune('run', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', src, '--holdout', 0.2,
                '--method', 'magnitude', '--out', tmp_path / 'run')
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.loads((tmp_path / 'run' / 'gaprune_report.json').read_text())
    lost = rep['evaluation']['domain_suite']['worst']['nDCG@10']
    assert lost['metric'] == 'nDCG@10' and len(lost['items']) <= 5
    drops = [x['drop'] for x in lost['items']]
    assert drops == sorted(drops, reverse=True) and all(d > 0 for d in drops)
    md = (tmp_path / 'run' / 'gaprune_report.md').read_text()
    assert '## What was lost' in md and all(x['query'] in md for x in lost['items'])
    assert lost['items'] or 'No item scores lower than with the dense model.' in md  # a tiny model may lose nowhere
    assert 'what was lost: nDCG@10' in r.stdout
    again = gaprune('eval', '--model', tmp_path / 'run', '--dense', bert, '--data', data, '--domain-data', src,
                    '--holdout', 0.2, '--worst', 5, '--json', tmp_path / 'e.json')  # the same split (holdout 0.2, seed 0), the same two models
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((tmp_path / 'e.json').read_text())['worst']['nDCG@10']['items'] == lost['items']
