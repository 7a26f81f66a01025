"""Probe (issue 52): what the "<TICKER> <year> annual report" header of the second finance suite (commit 87ee13c,
bench/hard/finance/finqa_statements with titles and query prefixes) was worth, and what magnitude pruning cost with and
without it: dense MiniLM-L6 and magnitude 50% on the same 300 queries and 2,000 passages, passages with / without their
title, queries with / without the prefix; paired-bootstrap 95% interval of magnitude − dense. Output:
results/hard/finance_header_probe.txt. Run against that commit's suite (git worktree add /tmp/x 87ee13c; F below)."""
import json, math, sys, time, numpy as np, torch
sys.path.insert(0, '/work/main'); sys.path.insert(0, '/work/main/bench')
torch.set_num_threads(1)
from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import minilm_path
from hard_sensitivity import pruned
from pathlib import Path
F = Path('/work/main/bench/hard/finance/finqa_statements')
corpus = [json.loads(l) for l in open(F/'corpus.jsonl')]; qs = [json.loads(l) for l in open(F/'queries.jsonl')]
qrels = {}
for l in open(F/'qrels/test.tsv').read().splitlines()[1:]:
    q, p, s = l.split('\t'); qrels.setdefault(q, set()).add(p)
pids = [c['_id'] for c in corpus]
def ndcg(S):
    out = []
    for i, q in enumerate(qs):
        top = np.argsort(-S[i])[:10]; rel = qrels[q['_id']]
        dcg = sum(1/math.log2(r+2) for r, j in enumerate(top) if pids[j] in rel)
        out.append(dcg / sum(1/math.log2(r+2) for r in range(min(10, len(rel)))))
    return np.array(out)
res = {}
models = {'dense': lambda: Encoder.from_pretrained(minilm_path()), 'magnitude': lambda: pruned('finance', 'magnitude', 0, Path('/tmp/hard_work'))()[0]}
for name, mk in models.items():
    enc = mk()
    D = {'title': enc.encode([f"{c['title']} {c['text']}" for c in corpus], kind='document', normalize=True, batch_size=32),
         'notitle': enc.encode([c['text'] for c in corpus], kind='document', normalize=True, batch_size=32)}
    Q = {'prefix': enc.encode([q['text'] for q in qs], kind='query', normalize=True),
         'noprefix': enc.encode([q['text'].split(': ', 1)[1] for q in qs], kind='query', normalize=True)}
    for d in D:
        for qq in Q:
            res[(name, d, qq)] = ndcg(Q[qq] @ D[d].T)
            print(time.strftime('%H:%M:%S'), name, d, qq, round(100*res[(name, d, qq)].mean(), 2), flush=True)
rng = np.random.default_rng(0)
for d in ('title', 'notitle'):
    for qq in ('prefix', 'noprefix'):
        diff = res[('magnitude', d, qq)] - res[('dense', d, qq)]
        bs = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(2000)]
        print(d, qq, 'mag-dense', round(100*diff.mean(), 2), np.round(100*np.percentile(bs, [2.5, 97.5]), 2))
np.save('/tmp/var/res.npy', {f'{k[0]}|{k[1]}|{k[2]}': v for k, v in res.items()})
