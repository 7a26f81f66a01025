"""Probe (issue 52): a finance hard suite from a source other than FinQA. Does mpnet-base lead MiniLM-L6 on it?

Four FinQA builds left the two dense models level (`results/hard/finance_passage_length_probe.txt`). This one is built
from TAT-QA (`NExTplusplus/TAT-QA` @ 870accc, pinned by git blob SHA-1 below): hybrid contexts of 2019-2020 annual
reports, each a financial table plus the paragraphs around it. Passage = a context's table row by row
('<line item> | <column>: <value> | ...') and its paragraphs, packed in order into chunks of <= 256 MiniLM word pieces
(`tools/build_hard_suites.chunk`); corpus = every chunk of the dev and test-gold contexts (556 reports' tables: the
look-alikes). Queries = test-gold questions answered from the table or table + text, as TAT-QA's annotators wrote them;
relevant = the chunk(s) holding a table cell or paragraph of the question's own evidence annotation (`mappings`, in
test-gold only). The same hold-out hash and training-triplet filters as the committed suites (`apply_filters`), then
`select` (queries in sha256 order, BM25-hardest distractors).

Run: OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/tatqa_probe.py --mirror /work/.mirror [--out /tmp/tatqa]
Writes <out>/hard (a one-suite hard folder), <out>/minilm.json and mpnet.json (per-query nDCG@10) and prints mpnet − MiniLM
with its paired-bootstrap 95% interval. The TAT-QA dev and test-gold paragraphs also form `$GAPRUNE_DATA/retrieval/finance/tatqa`
(text questions -> paragraphs, an evaluation set)."""
import argparse, collections, json, os, sys, time
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT/'tools')]
import build_hard_suites as B

REPO, COMMIT = 'NExTplusplus/TAT-QA', '870accc41953dcde885aabeb963d94aabdc0fbc3'
FILES = {'dataset_raw/tatqa_dataset_dev.json': '48075c812af3fe6698b1d5cb50d9dbf358d52784',
         'dataset_raw/tatqa_dataset_test_gold.json': '3d5d3b691af572646ba9b1ac4d8f78c5dca09732'}


def table_units(tab: list) -> list:
    "A TAT-QA table as units (text, 'table_<row>'): leading rows without a line-item label are the column header."
    nh = 0
    while nh < len(tab) - 1 and not tab[nh][0].strip(): nh += 1
    nh = max(nh, 1)
    cols = [' '.join(r[j].strip() for r in tab[:nh] if j < len(r) and r[j].strip()) for j in range(max(map(len, tab)))]
    units = [('table columns: ' + ' | '.join(c for c in cols if c), 'table_0')]
    for i, r in enumerate(tab[nh:], nh):
        cells = [f'{h}: {v.strip()}' if h else v.strip() for h, v in zip(cols[1:], r[1:]) if v.strip()]
        units.append((f'{r[0].strip()} | ' + ' | '.join(cells) if cells else r[0].strip(), f'table_{i}'))
    return [u for u in units if u[0].strip(' |')]


def tatqa(rd, ntok):
    corpus, queries, qrels, meta = {}, {}, {}, collections.Counter()
    for path in FILES:
        split = 'test' if 'test' in path else 'dev'
        for c in json.loads(rd.text(REPO, path)):
            uid = c['table']['uid']
            paras = [(p['text'].strip(), f"para_{p['order']}") for p in sorted(c['paragraphs'], key=lambda p: p['order']) if p['text'].strip()]
            chunks = B.chunk('', table_units(c['table']['table']) + paras, ntok)
            for j, (t, _) in enumerate(chunks): corpus[f'tatqa-{uid}#c{j}'] = ('', t)
            meta['contexts'] += 1
            if split != 'test': continue
            for q in c['questions']:
                if q['answer_from'] not in ('table', 'table-text'): continue
                gold = set()
                for m in q.get('mappings') or []:
                    for k, v in m.items():
                        if k == 'table': gold.add(f'table_{v[0]}')   # one cell [row, column]
                        elif k.startswith('paragraph_'): gold.add('para_' + k.split('_', 1)[1])
                rel = [f'tatqa-{uid}#c{j}' for j, (_, keys) in enumerate(chunks) if keys & gold]
                if not rel: meta['queries_without_located_evidence'] += 1; continue
                queries[f"tatqa-test-{q['uid']}"] = q['question'].strip(); qrels[f"tatqa-test-{q['uid']}"] = rel
    meta.update(chunks=len(corpus), queries=len(queries))
    return queries, corpus, qrels, dict(meta)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--mirror', type=Path, required=True)
    ap.add_argument('--out', type=Path, default=Path('/tmp/tatqa'))
    ap.add_argument('--queries', type=int, default=600)
    ap.add_argument('--corpus', type=int, default=3000)
    a = ap.parse_args()
    data = Path(os.environ.get('GAPRUNE_DATA', '/work/shared/data'))
    from gaprune_nb.fixtures import minilm_path, mpnet_path
    B.COMMITS[REPO] = COMMIT
    rd = B.Reader({(REPO, p): b for p, b in FILES.items()}, mirror=a.mirror)
    queries, corpus, qrels, meta = tatqa(rd, B.Counter_(minilm_path()/'tokenizer.json'))
    before = (len(queries), len(corpus))
    queries, corpus, qrels, dropped = B.apply_filters(queries, corpus, qrels, B.Filters(data, 'finance'))
    qids, pids, _ = B.select(queries, corpus, qrels, a.queries, a.corpus)
    folder = a.out/'hard'/'finance'/'tatqa_tables'
    counts = B.write_beir(folder, qids, pids, queries, corpus, qrels)
    print(f'built: {counts}; candidates {before}; dropped {dropped}; notes {meta}', flush=True)
    (a.out/'hard'/'MANIFEST.json').write_text(json.dumps({'suites': [dict(domain='finance', name='tatqa_tables', path='finance/tatqa_tables',
                                                                            slice='finance/tatqa_tables', counts=counts)]}))
    import torch; torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', 1)))
    from gaprune_nb.core import Encoder
    from gaprune_nb.devsuite import dev_scores, fmt_delta, hard_suite, load_scores, paired_bootstrap, save_scores
    t = hard_suite('finance', root=a.out/'hard')[0]
    out = {}
    for name, path in (('minilm', minilm_path()), ('mpnet', mpnet_path())):
        f = a.out/f'{name}.json'
        if not f.exists():
            s = time.time(); sc = dev_scores(Encoder.from_pretrained(path), [t], batch_size=32); save_scores(f, sc, seconds=time.time() - s)
        out[name] = load_scores(f)
        print(name, f"{100 * out[name][t.name].values.mean():.2f}", flush=True)
    bt = paired_bootstrap(out['mpnet'], out['minilm'], n=2000, seed=0).loc[t.name]
    print('mpnet - minilm', fmt_delta(bt), flush=True)


if __name__ == '__main__':
    main()
