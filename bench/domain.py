"""Your domain, measured (issue 32): which method keeps a domain when it is scored on full-length documents and on
the user's own held-out rows, how much of that is domain-awareness, and what each data shape gets. Resumable.

Every cell is one model; its scores are cached per suite as JSON under results/domain/<cell>.json (per-item scores,
so every comparison can be paired and bootstrapped) and a suite already there is skipped. Models are made again
when a suite is missing (calibration samples and statistics are cached in --work, so that is cheap).

Suites (every text at the model's own token limit, 256 tokens for MiniLM; nothing truncated to 128):
  held-<d>-s<seed>  the held-out 10% of domain d's triplets (hash split of seed <seed>, never calibrated or trained on),
                    retrieval over all held-out positives and negatives: nDCG@10 and MRR@10 per query (`domain_scores`)
  fin-long          finance evidence passages: the held-out tickers' 10-K contexts (fin_qa10k_eval) packed in file
                    order into passages of up to 230 tokens (whole contexts, never cut; 2 of 269 passages are one
                    context over 256); a question's relevant passage is the one holding its context (1,374 questions)
  hard-<d>          the hard retrieval suite of d (bench/hard; general: wtq_tables), every query
  dev-<d>           the bundled development suite of d (DEV spec), as the one-shot experiment scored; chemistry's
                    retrieval documents are abstracts (median 368 tokens), embedded up to the model's limit already
Grids:
  methods  magnitude, wanda-row (the default), obd-kfac (domain + general Fisher), sparsegpt at 50% of MLP weights,
           calibrated on finance and on chemistry (the domain's 90% after the held-out split), seeds 0 (select) 1, 2 (report)
  shapes   finance given as a user's own files (texts .txt, pairs .csv, triplets .parquet, made from the 90%), a free
           domain name, each with the recoveries its shape allows (20 LoRA steps), seeds 1, 2
Run: OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/domain.py [--grid methods|shapes] [--only REGEX]
"""
from __future__ import annotations
import argparse, json, re, sys, time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from datasets import Dataset

from gaprune_nb.core import Encoder
from gaprune_nb.data import RetrievalData, data_root, load_retrieval
from gaprune_nb.devsuite import DEV, DevTask, TaskScores, dev_scores, dev_suite, hard_suite
from gaprune_nb.domain_eval import domain_scores
from gaprune_nb.fixtures import minilm_path
from gaprune_nb.options import RunConfig
from gaprune_nb.pipeline import prune_run
from gaprune_nb.sources import run_data
from gaprune_nb.store import write_text

OUT = Path(__file__).resolve().parents[1]/'results'/'domain'
DOMAINS = ('finance', 'chemistry')
METHODS = ('magnitude', 'wanda-row', 'obd-kfac', 'sparsegpt')
SELECT_SEED, REPORT_SEEDS = 0, (1, 2)
N_CALIB, POOL, BATCH = 256, 4000, 8   # the one-shot experiment's calibration (13_exp_oneshot)
PASSAGE_TOKENS = 230

def cell_path(name, out=OUT): return Path(out)/f'{name}.json'

def read_cell(name, out=OUT) -> dict:
    p = cell_path(name, out)
    return json.loads(p.read_text()) if p.exists() else dict(cell=name, scores={})

def scores_of(cell:dict, suite:str) -> dict[str, TaskScores]|None:
    sc = cell['scores'].get(suite)
    if sc is None: return None
    return {t: TaskScores(t, v['type'], np.array(v['values']), None if v['gold'] is None else np.array(v['gold'])) for t, v in sc.items()}

def _json_scores(sc:dict[str, TaskScores]) -> dict:
    return {k: dict(type=v.type, values=v.values.tolist(), gold=None if v.gold is None else v.gold.tolist()) for k, v in sc.items()}

# ---------------------------------------------------------------------------------------------------- the suites
def long_finance(root, tokenizer) -> RetrievalData:
    "fin_qa10k_eval's contexts packed, in file order, into evidence passages of up to PASSAGE_TOKENS tokens."
    rd = load_retrieval(root/'retrieval'/'finance'/'fin_qa10k_eval')
    ids, texts = rd.corpus['_id'], rd.corpus['text']
    n = [len(x) for x in tokenizer(list(texts), add_special_tokens=False)['input_ids']]
    where, passages, cur, size = {}, [], [], 0
    for i, (d, k) in enumerate(zip(ids, n)):
        if cur and size + k + 1 > PASSAGE_TOKENS: passages.append(cur); cur, size = [], 0
        cur.append(i); size += k + 1; where[d] = len(passages)
    if cur: passages.append(cur)
    corpus = Dataset.from_dict(dict(_id=[f'p{j}' for j in range(len(passages))], title=[''] * len(passages),
                                    text=[' '.join(texts[i] for i in p) for p in passages]))
    qrels = {q: {f'p{where[d]}': s for d, s in r.items()} for q, r in rd.qrels.items()}
    return RetrievalData(corpus, rd.queries, qrels, 'finance.fin_long')


def held_rows(domain, seed, root):
    "(the domain's rows to learn from, its held-out rows) of the 10% hash split of `seed`."
    rd = run_data(RunConfig(domain=domain, holdout=0.1, seed=seed, data=str(root)), None, 'the experiment', general=False)
    return rd.domain, rd.held

class Suites:
    "Every suite, built once per process on first use."
    def __init__(self, root, tokenizer): self.root, self.tok, self.made = root, tokenizer, {}
    def get(self, name):
        if name not in self.made:
            kind, _, rest = name.partition('-')
            if kind == 'dev': self.made[name] = dev_suite(rest, self.root, DEV)
            elif kind == 'fin': self.made[name] = [DevTask('finance.fin_long', 'retrieval', long_finance(self.root, self.tok))]
            elif kind == 'hard': self.made[name] = hard_suite(rest)   # bench/hard: 'hard-finance', 'hard-chemistry', 'hard-general'
            else:
                d, s = rest.rsplit('-s', 1)
                self.made[name] = held_rows(d, int(s), self.root)[1].data
        return self.made[name]
    def missing(self, name, have:dict) -> list:
        "The tasks of suite `name` a cell's scores `have` lack: a hard suite gains a task when bench/hard gains a suite of its domain."
        return [t for t in self.get(name) if t.name not in have] if name.startswith('hard-') else []
    def score(self, enc, name) -> dict[str, TaskScores]:
        return domain_scores(enc, self.get(name), 'triplets') if name.startswith('held-') else dev_scores(enc, self.get(name))

def evaluate(name:str, make, suites:list[str], S:Suites, out=OUT, **info):
    "Score the model `make()` returns on the suites `name` lacks; save after each suite (in `out`, this experiment's folder by default)."
    cell = read_cell(name, out)
    todo = {s: S.missing(s, cell['scores'][s]) if s in cell['scores'] else None for s in suites}
    todo = {s: m for s, m in todo.items() if m != []}   # None: the whole suite; a list: the tasks added to it since (hard suites)
    if not todo: return
    t = time.perf_counter(); enc, more = make()
    cell.update(info, **more, threads=torch.get_num_threads()); cell.setdefault('seconds_make', round(time.perf_counter() - t, 1))  # a resumed cell keeps its first
    for s, tasks in todo.items():
        t = time.perf_counter()
        cell['scores'][s] = _json_scores(S.score(enc, s)) if tasks is None else cell['scores'][s] | _json_scores(dev_scores(enc, tasks))
        cell.setdefault('seconds_eval', {})[s] = round(time.perf_counter() - t, 1)
        write_text(cell_path(name, out), json.dumps(cell, default=str))
        print(f'{name}: {s} saved ({cell["seconds_eval"][s]} s)', file=sys.stderr, flush=True)

# ---------------------------------------------------------------------------------------------------- the grids
def method_config(model, domain, seed, meth, **over) -> RunConfig:
    return RunConfig(**dict(dict(model=str(model), domain=domain, seed=seed, method=meth, sparsity=0.5, holdout=0.1,
                                 n_calib=N_CALIB, pool=POOL, batch_size=BATCH), **over))

def pruned(cfg, work, tag):
    def make():
        enc, _, rep = prune_run(cfg, cache=work/f'cache-{cfg.domain}-s{cfg.seed}', show_progress=False)
        return enc, dict(config=rep.get('config'), timings=rep.get('timings'))
    return make

def methods_grid(a, model, S, work, todo):
    seeds = [SELECT_SEED, *REPORT_SEEDS]
    held = [f'held-{d}-s{s}' for d in DOMAINS for s in seeds]
    held_of = lambda d, s: [f'held-{x}-s{s}' for x in DOMAINS]
    if todo('dense'):
        evaluate('dense', lambda: (Encoder.from_pretrained(model), {}), held + ['fin-long'] + [f'dev-{x}' for x in (*DOMAINS, 'general')], S)
    for s in a.seeds:
        for d in DOMAINS:
            for m in METHODS:
                name = f'{d}-s{s}-{m}' if m != 'magnitude' else f'magnitude-s{s}'
                if m == 'magnitude' and d != DOMAINS[0]: continue  # no calibration: one model, scored on every seed's held-out rows
                shared = ['fin-long'] + ([f'dev-{d}', 'dev-general'] if m != 'magnitude' else [f'dev-{x}' for x in (*DOMAINS, 'general')])
                suites = held_of(d, s) + (shared if m != 'magnitude' or s == SELECT_SEED else [])  # magnitude: one model, its shared suites once
                if todo(name): evaluate(name, pruned(method_config(model, d, s, m), work, name), suites, S, grid='methods', domain=d, seed=s, method=m)

SHAPE_ARMS = {  # shape -> (method, recovery or None) arms; every recovery 20 LoRA steps. The triplet file's one-shot
    'texts':    [('wanda-row', None), ('wanda-row', 'distill')],          # models are the methods grid's (same rows)
    'pairs':    [('wanda-row', 'contrastive'), ('wanda-row', 'distill')],
    'triplets': [('wanda-row', 'contrastive'), ('obd-kfac', 'contrastive')],
}

def user_files(root, seed, work) -> dict[str, Path]:
    "The finance rows a run may learn from (the held-out 10% of `seed` left out), written as a user's files of each shape."
    fit, _ = held_rows('finance', seed, root)
    ds, d = fit.data, work/f'user-s{seed}'
    d.mkdir(parents=True, exist_ok=True)
    f = dict(texts=d/'notes.txt', pairs=d/'qa.csv', triplets=d/'triplets.parquet')
    if not f['triplets'].exists():
        texts = list(dict.fromkeys(t.replace('\n', ' ').strip() for c in ('query', 'positive', 'negative') for t in ds[c] if t and t.strip()))
        f['texts'].write_text('\n'.join(texts) + '\n', encoding='utf-8')
        pd.DataFrame(dict(question=ds['query'], answer=ds['positive'])).to_csv(f['pairs'], index=False)
        ds.to_pandas()[['query', 'positive', 'negative']].to_parquet(f['triplets'])
    return f

def shapes_grid(a, model, S, work, todo):
    for s in a.seeds:
        files = user_files(S.root, s, work)
        for shape, arms in SHAPE_ARMS.items():
            for m, rec in arms:
                name = f'user-{shape}-s{s}-{m}-{rec or "oneshot"}'
                if not todo(name): continue
                cfg = method_config(model, 'acme-finance', s, m, domain_data=[str(files[shape])], holdout=0.0,
                                    retrain_steps=a.steps if rec else 0, recovery=rec or 'contrastive')
                evaluate(name, pruned(cfg, work, name), [f'held-finance-s{s}', 'fin-long', 'dev-general'], S,
                         grid='shapes', shape=shape, seed=s, method=m, recovery=rec)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--grid', choices=('methods', 'shapes'), default='methods')
    ap.add_argument('--seeds', type=int, nargs='+', default=[SELECT_SEED, *REPORT_SEEDS])
    ap.add_argument('--steps', type=int, default=20)
    ap.add_argument('--work', default='/tmp/domain_work')
    ap.add_argument('--only', default='')
    a = ap.parse_args()
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True); work = Path(a.work); work.mkdir(parents=True, exist_ok=True)
    model = minilm_path()
    S = Suites(data_root(None), Encoder.from_pretrained(model).tokenizer)
    todo = lambda n: re.search(a.only, n)
    (methods_grid if a.grid == 'methods' else shapes_grid)(a, model, S, work, todo)

if __name__ == '__main__': main()
