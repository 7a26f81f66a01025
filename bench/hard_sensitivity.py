"""Do the hard retrieval suites (issue 52, `bench/hard/`) see what compression costs? Resumable.

Cells (each scored on the hard suite(s) it belongs to; per-query nDCG@10 cached as results/hard/<cell>/<suite>.json):
  minilm-dense      all-MiniLM-L6-v2, every suite
  mpnet-dense       all-mpnet-base-v2, every suite
  <domain>-<method>-s<seed>   MiniLM-L6 with 50% of its MLP weights pruned by `method` (magnitude, wanda-row = the
                    default, obd-kfac) as `gaprune run` does with its defaults (calibration: the domain's bundled triplets,
                    n_calib 256, pool 4000; the general suite gets the default run's model, calibrated on finance + general,
                    since `general` is not a target domain), scored on that domain's hard suite. magnitude uses no data and no seed: one model
                    (`magnitude`), scored on every suite.
Report (results/hard/sensitivity.csv and .md): per suite, each cell's nDCG@10, every method's Δ vs dense MiniLM with its
paired-bootstrap 95% interval (`devsuite.paired_bootstrap`; a method's seeds are averaged per query first), the pairs of
methods, and mpnet − MiniLM; then whether the suite meets issue 52's goals.

Run: OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> TOKENIZERS_PARALLELISM=false \
     nice -n 5 python bench/hard_sensitivity.py [--seeds 1 2] [--domains finance general chemistry] [--threads 2] [--report-only]
"""
from __future__ import annotations
import argparse, json, sys, time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gaprune_nb.core import Encoder
from gaprune_nb.devsuite import dev_scores, fmt_delta, hard_suite, load_scores, paired_bootstrap, save_scores
from gaprune_nb.fixtures import minilm_path, mpnet_path
from gaprune_nb.options import RunConfig
from gaprune_nb.pipeline import prune_run
from gaprune_nb.store import write_text

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT/'results'/'hard'
METHODS = ('magnitude', 'wanda-row', 'obd-kfac')
EXTRA = ('sparsegpt',)   # `--extra`: made only when asked, reported whenever cached
DOMAINS = ('finance', 'general', 'chemistry')   # the order cells are made in: finance first
CALIB = {'general': 'finance'}   # a run always keeps the general side; for the general suite the CLI's default run (--domain finance)
GOAL_MAG, N_BOOT = 3.0, 2000


def cell_file(cell: str, suite: str) -> Path: return OUT/cell/f'{suite}.json'


def score_cell(cell: str, make, suites: dict, **info):
    "Score the model `make()` returns on every suite of `suites` ({name: DevTask}) not yet cached for `cell`."
    todo = {s: t for s, t in suites.items() if not cell_file(cell, s).exists()}
    if not todo: return
    t0 = time.perf_counter(); enc, more = make(); made = round(time.perf_counter() - t0, 1)
    for s, task in todo.items():
        t = time.perf_counter()
        sc = dev_scores(enc, [task], batch_size=32)
        save_scores(cell_file(cell, s), sc, cell=cell, suite=s, seconds_make=made, seconds_eval=round(time.perf_counter() - t, 1),
                    threads=torch.get_num_threads(), **info, **more)
        print(f'{time.strftime("%H:%M:%S")} {cell} on {s}: nDCG@10 {100 * sc[s].values.mean():.2f} (made in {made} s, '
              f'scored in {time.perf_counter() - t:.0f} s)', file=sys.stderr, flush=True)


def pruned(domain: str, method: str, seed: int, work: Path):
    def make():
        cfg = RunConfig(model=str(minilm_path()), domain=CALIB.get(domain, domain), method=method, sparsity=0.5, seed=seed)   # the CLI's defaults otherwise
        enc, _, rep = prune_run(cfg, cache=work/f'cache-{domain}-s{seed}', show_progress=False)
        return enc, dict(config=rep.get('config'), timings=rep.get('timings'))
    return make


def run(a, suites: dict):
    "Cheapest and most telling cells first (resumable: a cell already scored is skipped), so a short run still answers the goals."
    work = Path(a.work); work.mkdir(parents=True, exist_ok=True)
    by = {d: {s: t for s, t in suites.items() if s.startswith(d + '.')} for d in a.domains}
    minilm = lambda: (Encoder.from_pretrained(minilm_path()), {})
    mpnet = lambda: (Encoder.from_pretrained(mpnet_path()), {})
    meth = lambda d, m, s: score_cell(f'{d}-{m}-s{s}', pruned(d, m, s, work), by[d], domain=d, method=m, seed=s, sparsity=0.5)
    first, fin = a.seeds[0], [d for d in a.domains if d == 'finance']
    for d in fin:         # 1. finance first: dense, magnitude, mpnet (its goal), the default method
        score_cell('minilm-dense', minilm, by[d], model='all-MiniLM-L6-v2')
        score_cell('magnitude', pruned(d, 'magnitude', 0, work), by[d], method='magnitude', sparsity=0.5)
        score_cell('mpnet-dense', mpnet, by[d], model='all-mpnet-base-v2')
        meth(d, 'wanda-row', first)
    for d in a.domains:   # 2. dense MiniLM and magnitude (no calibration): two encodings per suite
        score_cell('minilm-dense', minilm, by[d], model='all-MiniLM-L6-v2')
        score_cell('magnitude', pruned(d, 'magnitude', 0, work), by[d], method='magnitude', sparsity=0.5)
    for d in a.domains: meth(d, 'wanda-row', first)                                   # 3. the default method
    for d in a.domains: meth(d, 'obd-kfac', first)                                    # 4. the Fisher method (slow statistics)
    for s in a.seeds[1:]:                                                             # 5. the other seeds
        for d in a.domains:
            for m in METHODS[1:]: meth(d, m, s)
    for s in a.seeds:                                                                 # 6. the methods asked for besides
        for d in a.domains:
            for m in a.extra: meth(d, m, s)
    if not a.extra:
        for d in a.domains: score_cell('mpnet-dense', mpnet, by[d], model='all-mpnet-base-v2')   # 7. mpnet (slow) elsewhere


def load(cell: str, suite: str):
    f = cell_file(cell, suite)
    return load_scores(f) if f.exists() else None


def md_table(df: pd.DataFrame) -> str:
    "A markdown table (no tabulate dependency)."
    cells = [[str(c) for c in df.columns]] + [['' if pd.isna(v) else str(v) for v in r] for r in df.itertuples(index=False)]
    return '\n'.join(['| ' + ' | '.join(cells[0]) + ' |', '|' + '---|' * len(df.columns)] + ['| ' + ' | '.join(r) + ' |' for r in cells[1:]])


def report(suites: dict, seeds: list[int]):
    rows, goals = [], []
    for s in suites:
        d = s.split('.')[0]
        dense, mp = load('minilm-dense', s), load('mpnet-dense', s)
        if dense is None: continue
        nq = len(dense[s].values)
        meth = {'magnitude': [x for x in [load('magnitude', s)] if x]}
        seeds_of = {'magnitude': 'none (no calibration)'}
        for m in METHODS[1:] + EXTRA:
            got = [(k, x) for k in seeds for x in [load(f'{d}-{m}-s{k}', s)] if x]
            meth[m] = [x for _, x in got]; seeds_of[m] = ','.join(str(k) for k, _ in got)
        nd = lambda xs: 100 * float(np.mean([x[s].values.mean() for x in xs]))
        def add(what, a, b, n_a, note=''):
            bt = paired_bootstrap(a, b, n=N_BOOT, seed=0).loc[s]
            rows.append(dict(suite=s, queries=nq, comparison=what, nDCG_a=round(nd(a if isinstance(a, list) else [a]), 2),
                             nDCG_b=round(nd(b if isinstance(b, list) else [b]), 2), delta=round(bt['delta'], 2), lo=round(bt['lo'], 2),
                             hi=round(bt['hi'], 2), excludes_zero=bool(bt['lo'] > 0 or bt['hi'] < 0), **{'Δ [95% CI]': fmt_delta(bt)}, note=note))
            return bt
        rows.append(dict(suite=s, queries=nq, comparison='MiniLM-L6 dense', nDCG_a=round(nd([dense]), 2), note='reference'))
        res = {}
        for m, xs in meth.items():
            if xs: res[m] = add(f'{m} 50% − dense', xs, dense, len(xs), note=f'seeds {seeds_of[m]}')
            if len(xs) > 1:   # each seed on its own too
                for k, x in zip(seeds_of[m].split(','), xs): add(f'{m} 50% − dense, seed {k}', x, dense, 1, note=f'seed {k}')
        ms = [m for m in METHODS + EXTRA if meth.get(m)]
        pairs = {}
        for i in range(len(ms)):
            for j in range(i + 1, len(ms)):
                pairs[(ms[j], ms[i])] = add(f'{ms[j]} − {ms[i]}', meth[ms[j]], meth[ms[i]], 0)
        mpb = add('mpnet-base − MiniLM-L6 (dense)', mp, dense, 1) if mp else None
        g = dict(suite=s)
        if 'magnitude' in res: g['magnitude loses >= 3 points, CI excludes 0'] = bool(res['magnitude']['delta'] <= -GOAL_MAG and res['magnitude']['hi'] < 0)
        if pairs: g['a pair of methods separated'] = any(b['lo'] > 0 or b['hi'] < 0 for b in pairs.values())
        if mpb is not None and d == 'finance': g['mpnet above MiniLM, CI excludes 0'] = bool(mpb['lo'] > 0)
        elif d != 'finance': g['mpnet above MiniLM, CI excludes 0'] = 'n/a (asked of finance only)'
        goals.append(g)
    df = pd.DataFrame(rows)
    OUT.mkdir(parents=True, exist_ok=True)
    write_text(OUT/'sensitivity.csv', df.rename(columns={'lo': 'ci95_lo', 'hi': 'ci95_hi'}).to_csv(index=False))  # each Δ with its paired-bootstrap 95% interval
    md = ['# Hard suites: what 50% MLP pruning costs (nDCG@10 × 100, paired bootstrap 95% intervals, '
          f'{N_BOOT} resamples of the queries)', '',
          'Written by `bench/hard_sensitivity.py` from the per-query scores in `results/hard/<cell>/<suite>.json`. '
          'MiniLM-L6 pruned at 50% of its MLP weights with the default `gaprune run` settings, calibrated on the suite\'s '
          'domain; a method with several seeds is the per-query mean of its seeds. nDCG_a / nDCG_b: the two sides of the comparison.', '']
    if len(df):
        md.append(md_table(df))
        md += ['', '## Goals (issue 52)', '', md_table(pd.DataFrame(goals))]
    write_text(OUT/'sensitivity.md', '\n'.join(md) + '\n')
    print('\n'.join(md))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--domains', nargs='+', default=list(DOMAINS))
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--work', default='/tmp/hard_work')
    ap.add_argument('--report-only', action='store_true')
    ap.add_argument('--extra', nargs='*', default=[], choices=EXTRA, help='also make these methods at every seed (then skip mpnet)')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    suites = {t.name: t for t in hard_suite()}
    if not a.report_only: run(a, suites)
    report({s: t for s, t in suites.items() if s.split('.')[0] in a.domains}, a.seeds)


if __name__ == '__main__': main()
