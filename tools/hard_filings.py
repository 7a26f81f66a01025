"""Build the second finance hard suite (issue 52), `bench/hard/finance/filing_statements`: financial-statement pages of
real 10-K filings as a PDF text extractor gives them, with analyst questions that name the company, the fiscal year and
the metric. Five earlier builds from FinQA and TAT-QA (tables re-typed by annotators, no company name) left mpnet-base and
MiniLM-L6 level; this one separates them (results/hard/finance_filings_probe.txt).

Source: the 10-K PDFs of `patronus-ai/financebench` @ cc39aeb, every file pinned by git blob SHA-1 in
`tools/financebench_pins.tsv`; text by PyMuPDF (`pip install pymupdf==2.0`; the version is recorded in the manifest, since
another version may extract a page differently).

What is kept out: the texts of FinanceBench's 150 public questions and of their evidence are all listed in the hold-out
hashes, so no page of a document those questions draw from (84 documents) is read at all, and every query and passage is
still checked against the hold-out hashes and the finance training triplets (`build_hard_suites.apply_filters`).

- Passages: every page of the other 10-K filings (196 in the snapshot, 36 companies) with >= 30 numbers: the primary
  statements (income statement, balance sheet, statement of cash flows: found by the title in the page's first lines and
  a line item of their own) and, as look-alikes, every other number-dense page (notes, segment and quarterly tables); each
  page's lines packed into chunks of <= 254 MiniLM word pieces (`build_hard_suites.chunk`), a statement's title lines
  (company, statement) leading each of its chunks.
- Queries: for each statement page one analyst question naming the company, the fiscal year and a metric whose line item
  the page holds (template and metric chosen by sha256 order), and for about one filing in four per ratio a question on a
  ratio of two metrics of two statements.
- Relevant: the chunk(s) holding the metric's line item, on the statement page of that filing and of the company's next
  filings whose columns still show that year (two more for income and cash-flow statements, one for the balance sheet).

    python tools/hard_filings.py --mirror /work/.mirror      # after tools/build_hard_suites.py: adds its suite to bench/hard/MANIFEST.json
    python tools/hard_filings.py --mirror /work/.mirror --pin      # (maintainers) write tools/financebench_pins.tsv
"""
import argparse, collections, json, os, re, subprocess, sys
from pathlib import Path
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT/'tools')]
import build_hard_suites as B

REPO, COMMIT = 'patronus-ai/financebench', 'cc39aeb4afdf33909ee1412188bf89035950c2eb'
PINS = ROOT/'tools'/'financebench_pins.tsv'
QUESTIONS, DOCS = 'data/financebench_open_source.jsonl', 'data/financebench_document_information.jsonl'
NAME, N_QUERIES, N_CORPUS = 'filing_statements', 600, 3000
LICENSE = ('FinanceBench (patronus-ai/financebench): the repository states no license; the texts are public SEC 10-K filings '
           '(U.S. government filings, public record)')
DERIVATION = 'tools/hard_filings.py (its docstring): statement pages of 10-K PDFs (PyMuPDF text) chunked to <= 256 MiniLM word pieces; '\
             'templated analyst questions (company, fiscal year, metric or ratio) -> the chunks holding the line items; every page of the '\
             'documents FinanceBench\'s public questions use is left out.'

# statement kind -> (title patterns in the page head, spaces removed, case-folded; a line item the page must hold)
KINDS = {
    'income statement': (('statementsofoperations', 'statementofoperations', 'statementsofincome', 'statementofincome',
                          'statementsofearnings', 'statementofearnings', 'incomestatement', 'statementsofconsolidatedincome',
                          'statementofconsolidatedincome', 'statementsofconsolidatedoperations'), r'net (income|earnings|loss|\(loss\))'),
    'balance sheet': (('balancesheet', 'statementsoffinancialposition', 'statementoffinancialposition', 'statementsofconditon',
                       'statementsofcondition'), r'total assets'),
    'cash flow statement': (('statementsofcashflow', 'statementofcashflow', 'cashflowsstatement', 'statementsofconsolidatedcashflow',
                             'statementofconsolidatedcashflow'), r'operating activities'),
}
METRICS = {  # kind -> [(metric as an analyst names it, line-item regex)]
    'income statement': [('total revenue', r'^(total )?(net )?(revenues?|sales)\b|^net sales|^total net (sales|revenues?)'),
                         ('net income', r'^net (income|earnings)\b'), ('operating income', r'^(operating income|income from operations|operating profit)'),
                         ('cost of goods sold', r'^(total )?cost of (goods sold|sales|revenues?|products sold)'),
                         ('interest expense', r'^interest expense'), ('diluted earnings per share', r'^diluted'),
                         ('income tax expense', r'^(provision for|benefit from|\(benefit\)|)\s*income tax')],
    'balance sheet': [('total assets', r'^total assets'), ('total current assets', r'^total current assets'), ('inventory', r'^(total )?inventor(y|ies)'),
                      ('accounts receivable', r'(accounts|trade) receivable'), ('total current liabilities', r'^total current liabilities'),
                      ('cash and cash equivalents', r'^cash and (cash )?equivalents'), ('long-term debt', r'^long-term debt'),
                      ('accounts payable', r'^accounts payable'), ("total shareholders' equity", r"^total (share|stock)holders.? equity")],
    'cash flow statement': [('capital expenditure', r'(purchases? of|additions to|payments for|expenditures for) (property|plant|premises)|^capital expenditures'),
                            ('cash from operations', r'^net cash (provided by|from|generated)'),
                            ('dividends paid', r'dividends paid|^cash dividends|payments? of dividends|^dividends'),
                            ('depreciation and amortization', r'^depreciation'),
                            ('share repurchases', r'(repurchases?|purchases?) of (common|treasury|company) (stock|shares)|^share repurchases')],
}
RATIOS = [  # (metric, numerator kind/metric, denominator kind/metric)
    ('capital expenditure as a percentage of revenue', ('cash flow statement', 'capital expenditure'), ('income statement', 'total revenue')),
    ('operating margin', ('income statement', 'operating income'), ('income statement', 'total revenue')),
    ('current ratio', ('balance sheet', 'total current assets'), ('balance sheet', 'total current liabilities')),
    ('return on assets', ('income statement', 'net income'), ('balance sheet', 'total assets')),
    ('dividend payout ratio', ('cash flow statement', 'dividends paid'), ('income statement', 'net income')),
    ('inventory turnover', ('income statement', 'cost of goods sold'), ('balance sheet', 'inventory')),
    ('operating cash flow ratio', ('cash flow statement', 'cash from operations'), ('balance sheet', 'total current liabilities')),
]
TEMPLATES = [
    'What is the FY{y} {m} (in USD millions) for {c}? Answer from the {k}.',
    'According to its {k}, what was {c}\'s {m} in fiscal year {y}?',
    'How much {m} did {c} report for FY{y}?',
    '{c} FY{y} {m}: what does the {k} show?',
]
RATIO_TEMPLATES = [
    'What is {c}\'s FY{y} {m}? Calculate it from the {src}.',
    'Using the {src}, compute the {m} of {c} for fiscal year {y}.',
]


def pin(mirror: Path):
    gd = mirror/REPO.replace('/', '+')/'repo'
    out = subprocess.run(['git', '--git-dir', str(gd), 'ls-tree', '-r', COMMIT], capture_output=True, text=True, check=True).stdout
    rows = [(l.split('\t', 1)[1], l.split()[2]) for l in out.splitlines()]
    rows = [(p, b) for p, b in rows if p.startswith('pdfs/') or p in (QUESTIONS, DOCS)]
    PINS.write_text('# repo\tcommit\tpath\tgit blob SHA-1 (written by tools/hard_filings.py --pin)\n' +
                    ''.join(f'{REPO}\t{COMMIT}\t{p}\t{b}\n' for p, b in sorted(rows)))
    print(f'pinned {len(rows)} files in {PINS}')


def clean_lines(page: str) -> list:
    return [l for l in (' '.join(x.split()) for x in page.splitlines()) if l]


def kind_of(lines: list) -> tuple:
    "(the primary statement a page holds, its title lines): the title among the first 8 lines, the statement's line item, >= 30 numbers."
    body = '\n'.join(lines).casefold()
    if len(B.NUM.findall(body)) < 30: return None, ''
    for i in range(min(8, len(lines))):
        head = re.sub(r'\s+', '', ' '.join(lines[:i + 1]).casefold())
        for k, (titles, item) in KINDS.items():
            if any(t in head for t in titles) and re.search(item, body):
                return k, ' '.join(l for l in lines[max(0, i - 2):i + 1] if l.casefold() not in ('table of contents', 'index'))   # <= 3 title lines
    return None, ''


def pages_of(rd, docs, cache: Path|None) -> dict:
    "doc_name -> [page texts] from PyMuPDF (cached as JSON in `cache` if given)."
    if cache and cache.exists():   # made from the pinned PDFs by this function: the manifest lists them as read
        out = json.loads(cache.read_text())
        for d in out: rd.used[(REPO, f'pdfs/{d}.pdf')] = rd.pins[(REPO, f'pdfs/{d}.pdf')]
        return out
    import pymupdf
    out = {}
    for i, d in enumerate(docs):
        try: data = rd.get(REPO, f"pdfs/{d['doc_name']}.pdf")
        except SystemExit as e:   # the snapshot lacks some large files
            print(f'skipped: {e}', file=sys.stderr); continue
        pdf = pymupdf.open(stream=data, filetype='pdf')
        out[d['doc_name']] = [p.get_text() for p in pdf]
        if i % 20 == 0: print(f'{i}/{len(docs)} documents read', file=sys.stderr, flush=True)
    if cache: cache.write_text(json.dumps(out))
    return out


def build(rd, ntok, cache: Path|None = None):
    qs = [json.loads(l) for l in rd.text(REPO, QUESTIONS).splitlines() if l.strip()]
    used = {r['doc_name'] for r in qs} | {e['doc_name'] for r in qs for e in r['evidence']}
    docs = [json.loads(l) for l in rd.text(REPO, DOCS).splitlines() if l.strip()]
    docs = [d for d in docs if d['doc_type'] in ('10k', '10k_annualreport') and d['doc_name'] not in used]
    texts = pages_of(rd, docs, cache)
    missing = [d['doc_name'] for d in docs if d['doc_name'] not in texts]
    docs = [d for d in docs if d['doc_name'] in texts]
    meta = collections.Counter(documents=len(docs), documents_missing_from_snapshot=len(missing), companies=len({d['company'] for d in docs}), documents_excluded=len(used))
    corpus, stmts = {}, collections.defaultdict(dict)   # stmts[(company, kind)][doc] = (period, [(chunk id, text)])
    for d in docs:
        for pno, page in enumerate(texts[d['doc_name']]):
            lines = clean_lines(page)
            if len(B.NUM.findall(' '.join(lines))) < 30: continue
            k, lead = kind_of(lines)
            if k and d['doc_name'] in stmts[(d['company'], k)]: k = None   # the statement's first page only
            chunks = B.chunk('', [(l, i) for i, l in enumerate(lines)], ntok, lead=lead if k else '')
            ids = []
            for j, (t, _) in enumerate(chunks):
                pid = f"{d['doc_name']}-p{pno}#c{j}"; corpus[pid] = ('', t); ids.append((pid, t))
            meta['pages'] += 1
            if k: stmts[(d['company'], k)][d['doc_name']] = (d['doc_period'], ids); meta[f'pages: {k}'] += 1
    def rel(company, kind, year, metric):
        pat = re.compile(dict(METRICS[kind])[metric], re.I | re.M)
        out = []
        for doc, (period, ids) in stmts[(company, kind)].items():
            if not (0 <= period - year <= (1 if kind == 'balance sheet' else 2)): continue
            if not any(str(year) in t for _, t in ids): continue
            out += [pid for pid, t in ids if pat.search(t)]
        return out
    queries, qrels = {}, {}
    for (company, kind), bydoc in sorted(stmts.items()):
        for doc, (year, ids) in sorted(bydoc.items()):
            found = [m for m, _ in METRICS[kind] if rel(company, kind, year, m)]
            if not found: meta['statement pages without a metric'] += 1; continue
            m = min(found, key=lambda m: B.order_key(f'{doc}|{kind}|{m}'))
            t = TEMPLATES[int(B.order_key(f'{doc}|{kind}|t'), 16) % len(TEMPLATES)]
            qid = f'fb-{doc}-{kind.split()[0]}'
            queries[qid] = t.format(y=year, m=m, c=company, k=kind); qrels[qid] = rel(company, kind, year, m)
    for d in docs:
        for m, (k1, m1), (k2, m2) in RATIOS:
            r1, r2 = rel(d['company'], k1, d['doc_period'], m1), rel(d['company'], k2, d['doc_period'], m2)
            if not (r1 and r2): continue
            if B.order_key(f"{d['doc_name']}|{m}")[:1] not in '0123': continue   # about one ratio in four per filing
            t = RATIO_TEMPLATES[int(B.order_key(f"{d['doc_name']}|{m}|t"), 16) % 2]
            qid = f"fb-{d['doc_name']}-ratio-{re.sub('[^a-z]+', '_', m)}"
            queries[qid] = t.format(y=d['doc_period'], m=m, c=d['company'], src=k1 if k1 == k2 else f'{k1} and the {k2}'); qrels[qid] = sorted(set(r1 + r2))
    meta.update(queries=len(queries), chunks=len(corpus))
    return queries, corpus, qrels, dict(meta)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--mirror', type=Path, help='folder of bare git mirrors <owner>+<name>/repo')
    ap.add_argument('--data', type=Path, default=Path(os.environ.get('GAPRUNE_DATA', '/work/shared/data')))
    ap.add_argument('--out', type=Path, default=B.ROOT/'bench'/'hard')
    ap.add_argument('--pages', type=Path, help='cache of the extracted page texts (JSON; default: none)')
    ap.add_argument('--pin', action='store_true', help='write the pin file from the mirror and stop')
    a = ap.parse_args(argv)
    if not a.mirror: ap.error('--mirror is needed')
    if a.pin: return pin(a.mirror)
    import pymupdf
    from gaprune_nb.fixtures import minilm_path
    B.COMMITS[REPO] = COMMIT
    rd = B.Reader(B.read_pins(PINS), mirror=a.mirror)
    tok_json = minilm_path()/'tokenizer.json'
    queries, corpus, qrels, meta = build(rd, B.Counter_(tok_json), a.pages)
    meta['pymupdf'] = pymupdf.VersionBind
    before = dict(queries=len(queries), corpus=len(corpus))
    flt = B.Filters(a.data, 'finance')
    queries, corpus, qrels, dropped = B.apply_filters(queries, corpus, qrels, flt)
    entry = B.write_suite(a.out, 'finance', NAME, queries, corpus, qrels, N_QUERIES, N_CORPUS, None, rd, flt, before, dropped, meta,
                          LICENSE, DERIVATION, PINS, read_note=f'this suite reads {len(rd.used)} of them: the two data files and the 10-K PDFs '
                          'of the documents no public question uses')
    entry = dict(generator='tools/hard_filings.py', **entry)
    mf = a.out/'MANIFEST.json'
    manifest = json.loads(mf.read_text(encoding='utf-8'))
    if manifest.get('tokenizer', {}).get('sha256') != B.sha256_hex(tok_json.read_bytes()): raise SystemExit(f'{mf}: another tokenizer built the other suites')
    manifest['suites'] = [x for x in manifest['suites'] if x['path'] != entry['path']] + [entry]
    mf.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + '\n', encoding='utf-8')


if __name__ == '__main__':
    main()
