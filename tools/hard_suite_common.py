#!/usr/bin/env python
"""Shared parts of the hard-suite builders (`tools/build_hard_suites.py`, `tools/hard_filings.py`, `bench/tatqa_probe.py`):
the pinned raw-file reader (git blob SHA-1 checked against a pin file), the text hashes and sha256 orders that make every
choice deterministic, word-piece chunking, a stdlib BM25, the hold-out / training-triplet filters, query and distractor
selection, and the BEIR writers with the MANIFEST entry of a suite.

Builder-independent: the suites' own sources, query templates and derivations stay with their builders, which import
this module (`build_hard_suites` re-exports every name here but `BUDGET`, so `build_hard_suites.<name>` keeps working).
`chunk` reads the module global `BUDGET`: a builder that changes the budget sets `hard_suite_common.BUDGET`.
"""
from __future__ import annotations
import collections, hashlib, json, math, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT/'tools'/'hard_suite_pins.tsv'
BUDGET = 254          # word pieces of title + text: MiniLM-L6's max_seq_length 256 less [CLS] and [SEP]
SLICE_QUERIES, SLICE_DISTRACTORS = 30, 70

COMMITS = {  # repo -> the commit every file of it is read at (`read_pins` checks the pin file against it; hard_filings and tatqa_probe add theirs)
    'sukritganesh/FinQA_Analysis': 'dcc6164e6b6ee0741628a624dedd769de33080e1',
    'abhisvakil/FinQA-Mini-Project': 'e77f3193479d4be236a3a5e56befadfd0f52cedd',
    'Aitslab/nlp_2021_alexander_petter': '1784721ed0b1fa1252f2359486f84e9b3514a6b3',
    'ppasupat/WikiTableQuestions': '7d455a5a707b96341ef72aff9428749d443d8aa9',
    'humblef00ls/FinQA-new': 'ddef84d4dc397f5e14cb1623bc86dac133a8821c',
}


def blob_sha1(data: bytes) -> str: return hashlib.sha1(b'blob %d\0' % len(data) + data).hexdigest()
def sha256_hex(b: bytes) -> str: return hashlib.sha256(b).hexdigest()
def norm(t: str) -> str: return ' '.join(t.casefold().split())
def text_hash(t: str) -> str: return sha256_hex(norm(t).encode('utf-8'))   # shared/data README's hold-out hash rule
def order_key(s: str) -> str: return sha256_hex(('hard52:' + s).encode('utf-8'))


class Reader:
    "Pinned raw files, from bare git mirrors or a raw folder, each checked against its git blob SHA-1."
    def __init__(self, pins: dict, raw: Path|None = None, mirror: Path|None = None):
        self.pins, self.raw, self.mirror, self.procs, self.used = pins, raw, mirror, {}, {}

    def _git(self, repo: str, spec: str) -> bytes:
        p = self.procs.get(repo)
        if p is None:
            gd = self.mirror/repo.replace('/', '+')/'repo'
            p = self.procs[repo] = subprocess.Popen(['git', '--git-dir', str(gd), 'cat-file', '--batch'],
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        p.stdin.write(spec.encode() + b'\n'); p.stdin.flush()
        head = p.stdout.readline().split()
        if len(head) < 3: raise SystemExit(f"{repo}: {spec} is not in the mirror ({head!r})")
        data = p.stdout.read(int(head[2])); p.stdout.read(1)
        return data

    def get(self, repo: str, path: str) -> bytes:
        blob = self.pins.get((repo, path))
        if blob is None: raise SystemExit(f"{repo}:{path} is not pinned in {PINS.name}")
        data = ((self.raw/repo.replace('/', '+')/path).read_bytes() if self.raw else self._git(repo, f'{COMMITS[repo]}:{path}'))
        if blob_sha1(data) != blob: raise SystemExit(f"{repo}:{path}: git blob SHA-1 {blob_sha1(data)} != pinned {blob}")
        self.used[(repo, path)] = blob
        return data

    def text(self, repo, path): return self.get(repo, path).decode('utf-8')


def read_pins(path: Path = PINS) -> dict:
    "(repo, path) -> git blob SHA-1 from a pin file, each repo's commit checked against `COMMITS`."
    pins = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith('#'):
            repo, commit, path, blob = line.split('\t')
            if COMMITS[repo] != commit: raise SystemExit(f"pin file: {repo} at {commit}, the script reads {COMMITS[repo]}")
            pins[(repo, path)] = blob
    return pins


# ---------------------------------------------------------------------------------------------------------------- tokens and chunks
class Counter_:
    def __init__(self, tokenizer_json: Path):
        from tokenizers import Tokenizer
        self.tok = Tokenizer.from_file(str(tokenizer_json)); self.tok.no_truncation(); self.tok.no_padding()
        self.cache = {}
    def __call__(self, s: str) -> int:
        n = self.cache.get(s)
        if n is None: n = self.cache[s] = len(self.tok.encode(s, add_special_tokens=False).ids)
        return n


def split_long(text: str, avail: int, ntok) -> list[str]:
    "A unit longer than `avail` word pieces as consecutive word windows that fit."
    words, out, cur = text.split(), [], []
    for w in words:
        if cur and ntok(' '.join(cur + [w])) > avail: out.append(' '.join(cur)); cur = []
        cur.append(w)
    if cur: out.append(' '.join(cur))
    return out


def chunk(header: str, units: list[tuple[str, object]], ntok, lead: str = '') -> list[tuple[str, set]]:
    "Pack units (text, key) in order into chunks of at most BUDGET word pieces counting the header (title) and `lead` (repeated)."
    avail = BUDGET - ntok(header) - (ntok(lead) if lead else 0) - 2
    pieces = []
    for text, key in units:
        for p in ([text] if ntok(text) <= avail else split_long(text, avail, ntok)): pieces.append((p, key))
    chunks, cur, keys = [], [], set()
    def flush():
        if cur: chunks.append(('\n'.join(([lead] if lead else []) + cur), set(keys)))
    for p, key in pieces:
        if cur and ntok('\n'.join(([lead] if lead else []) + cur + [p])) > BUDGET - ntok(header) - 1:
            flush(); cur.clear(); keys.clear()
        cur.append(p); keys.add(key)
    flush()
    return chunks


# ---------------------------------------------------------------------------------------------------------------- BM25 (stdlib)
WORD = re.compile(r'[a-z0-9]+(?:\.[0-9]+)?')
STOP = set('a an and are as at be by for from has have in is it its of on or that the this to was were what which with how did does do'.split())
def bm25_tokens(t: str) -> list[str]: return [w for w in WORD.findall(t.casefold()) if w not in STOP]


class BM25:
    def __init__(self, docs: list[str], k1=0.9, b=0.4):
        self.k1, self.b, self.post, self.dl = k1, b, collections.defaultdict(list), []
        for i, d in enumerate(docs):
            tf = collections.Counter(bm25_tokens(d)); self.dl.append(sum(tf.values()))
            for w, c in tf.items(): self.post[w].append((i, c))
        self.avg = sum(self.dl) / max(1, len(self.dl)); n = len(docs)
        self.idf = {w: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for w, p in self.post.items()}

    def rank(self, q: str, k: int) -> list[int]:
        s = collections.defaultdict(float)
        for w in set(bm25_tokens(q)):
            for i, c in self.post.get(w, ()):
                s[i] += self.idf[w] * c * (self.k1 + 1) / (c + self.k1 * (1 - self.b + self.b * self.dl[i] / self.avg))
        return [i for i, _ in sorted(s.items(), key=lambda x: (-x[1], x[0]))[:k]]


# ---------------------------------------------------------------------------------------------------------------- filters
def shingles(t: str, n=12) -> set:
    w = norm(t).split()
    return {' '.join(w[i:i+n]) for i in range(0, max(0, len(w) - n + 1))}


class Filters:
    "Hold-out hashes (shared/data README rule) and the domain's training triplets (exact text, or 3+ shared 12-word shingles)."
    def __init__(self, data: Path, domain: str):
        self.holdout = set((data/'holdout_hashes.txt').read_text().split())
        self.exact, self.shing = set(), collections.Counter()
        for f in sorted((data/'triplets'/domain).glob('*.jsonl')):
            for line in f.open(encoding='utf-8'):
                r = json.loads(line)
                for k in ('query', 'positive', 'negative'):
                    self.exact.add(norm(r[k]))
                    for s in shingles(r[k]): self.shing[s] += 1
        self.files = sorted(str(f.relative_to(data)) for f in (data/'triplets'/domain).glob('*.jsonl'))

    def held(self, *texts) -> bool: return any(text_hash(t) in self.holdout for t in texts if t)
    def trained(self, text: str) -> bool:
        return norm(text) in self.exact or sum(1 for s in shingles(text) if s in self.shing) >= 3


def apply_filters(queries: dict, corpus: dict, qrels: dict, flt: Filters) -> tuple[dict, dict, dict, dict]:
    "Drop hold-out / training texts, merge identical passages (qrels union), drop queries left without a relevant passage."
    drop = collections.Counter()
    keepc = {}
    for pid, (title, text) in corpus.items():
        if flt.held(text, f'{title} {text}'.strip()): drop['holdout_passages'] += 1
        elif flt.trained(text): drop['triplet_passages'] += 1
        else: keepc[pid] = (title, text)
    seen, alias = {}, {}
    for pid, (title, text) in keepc.items():
        key = norm(f'{title} {text}')
        if key in seen: alias[pid] = seen[key]; drop['duplicate_passages_merged'] += 1
        else: seen[key] = pid; alias[pid] = pid
    corpus = {pid: keepc[pid] for pid in keepc if alias[pid] == pid}
    keepq, newrels = {}, {}
    for qid, q in queries.items():
        if flt.held(q): drop['holdout_queries'] += 1; continue
        if flt.trained(q): drop['triplet_queries'] += 1; continue
        rel = sorted({alias[p] for p in qrels.get(qid, ()) if p in alias})
        if not rel: drop['queries_without_relevant_passage'] += 1; continue
        keepq[qid], newrels[qid] = q, rel
    seenq = {}
    for qid in list(keepq):
        k = norm(keepq[qid])
        if k in seenq:   # identical queries: merge their relevant passages
            newrels[seenq[k]] = sorted(set(newrels[seenq[k]]) | set(newrels.pop(qid))); del keepq[qid]; drop['duplicate_queries_merged'] += 1
        else: seenq[k] = qid
    return keepq, corpus, newrels, dict(drop)


def select(queries: dict, corpus: dict, qrels: dict, max_queries: int, corpus_size: int, per_group=None):
    "Queries in sha256 order (at most `per_group` per group key), their relevant passages, then BM25-hardest distractors round-robin."
    qids = sorted(queries, key=order_key)
    if per_group:
        n = collections.Counter(); kept = []
        for q in qids:
            g = per_group(q)
            if n[g] < 1: kept.append(q); n[g] += 1
        qids = kept
    chosen, rel = [], []
    relset = set()
    for q in qids:
        new = [p for p in qrels[q] if p not in relset]
        if len(chosen) >= max_queries or len(relset) + len(new) > corpus_size * 0.45: continue
        chosen.append(q); relset.update(new); rel += new
    pids = sorted(corpus)
    bm = BM25([f'{corpus[p][0]} {corpus[p][1]}' for p in pids])
    ranked = [[pids[i] for i in bm.rank(queries[q], 200)] for q in chosen]
    keep, seen = list(rel), set(rel)
    for depth in range(200):
        for r in ranked:
            if len(keep) >= corpus_size: break
            if depth < len(r) and r[depth] not in seen: keep.append(r[depth]); seen.add(r[depth])
    rest = [p for p in sorted(corpus, key=order_key) if p not in seen]
    keep += rest[:max(0, corpus_size - len(keep))]
    return chosen, keep, ranked


# ---------------------------------------------------------------------------------------------------------------- writing
def dump_jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w', encoding='utf-8', newline='\n') as f:
        for r in rows: f.write(json.dumps(r, ensure_ascii=False) + '\n')


def write_beir(folder: Path, qids, pids, queries, corpus, qrels) -> dict:
    pset = set(pids)
    dump_jsonl(folder/'corpus.jsonl', ({'_id': p, 'title': corpus[p][0], 'text': corpus[p][1]} for p in pids))
    dump_jsonl(folder/'queries.jsonl', ({'_id': q, 'text': queries[q]} for q in qids))
    (folder/'qrels').mkdir(parents=True, exist_ok=True)
    lines = [f'{q}\t{p}\t1' for q in qids for p in qrels[q] if p in pset]
    (folder/'qrels'/'test.tsv').write_text('query-id\tcorpus-id\tscore\n' + ''.join(l + '\n' for l in lines), encoding='utf-8', newline='\n')
    return dict(queries=len(qids), corpus=len(pids), qrels=len(lines))


def write_suite(out: Path, domain, name, queries, corpus, qrels, nq, nc, group, rd: Reader, flt: Filters, before: dict, dropped: dict,
                meta: dict, license: str, derivation: str, pins: Path, export_raw: Path|None = None,
                read_note: str = 'every file of this repo listed there is read') -> dict:
    "Select, write `out/<domain>/<name>` and its slice, and return the suite's MANIFEST entry (files with sha256, sources, counts)."
    qids, pids, ranked = select(queries, corpus, qrels, nq, nc, group)
    counts = write_beir(out/domain/name, qids, pids, queries, corpus, qrels)
    # the slice: the first SLICE_QUERIES queries, their relevant passages and their BM25-hardest kept distractors
    sq = qids[:SLICE_QUERIES]; kept = set(pids)
    sp = list(dict.fromkeys(p for q in sq for p in qrels[q]))
    dis = [p for d in range(200) for r in ranked[:SLICE_QUERIES] if d < len(r) and r[d] in kept for p in [r[d]]]
    sp += [p for p in dict.fromkeys(dis) if p not in set(sp)][:SLICE_DISTRACTORS]
    sc = write_beir(out/domain/f'{name}-slice', sq, [p for p in pids if p in set(sp)], queries, corpus, qrels)
    files = {}
    for f in sorted((out/domain/name).rglob('*')) + sorted((out/domain/f'{name}-slice').rglob('*')):
        if f.is_file(): files[str(f.relative_to(out))] = dict(sha256=sha256_hex(f.read_bytes()), bytes=f.stat().st_size)
    used = sorted(rd.used.items())
    by_repo = collections.defaultdict(dict)
    for (repo, path), blob in used: by_repo[repo][path] = blob
    entry = dict(
        domain=domain, name=name, path=f'{domain}/{name}', slice=f'{domain}/{name}-slice', counts=counts, slice_counts=sc,
        candidates_before_filters=before, candidates_after_filters=dict(queries=len(queries), corpus=len(corpus)),
        dropped=dict(holdout_queries=dropped.get('holdout_queries', 0), holdout_passages=dropped.get('holdout_passages', 0),
                     triplet_queries=dropped.get('triplet_queries', 0), triplet_passages=dropped.get('triplet_passages', 0),
                     **{k: v for k, v in sorted(dropped.items()) if not k.startswith(('holdout', 'triplet'))}),
        triplet_files=flt.files, build_notes=meta, license=license, derivation=derivation,
        sources=[dict(repo=r, commit=COMMITS[r], files=len(p), **({'paths': [dict(path=k, git_blob_sha1=v) for k, v in p.items()]} if len(p) <= 10 else
                      {'paths': f'tools/{pins.name} lists each path and git blob SHA-1 ({read_note})',
                       'pins_sha256': sha256_hex(pins.read_bytes())}))
                 for r, p in by_repo.items()],
        files=files)
    print(f"{domain}/{name}: {counts} (slice {sc}); dropped {entry['dropped']}; notes {meta}", file=sys.stderr)
    if export_raw:
        for (repo, path), _ in used:
            dst = export_raw/repo.replace('/', '+')/path; dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_bytes(rd.get(repo, path))
    return entry
