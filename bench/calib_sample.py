"""A first result in minutes (issue 53): the calibration sample from a bounded pool embedded at 64 tokens, against the
old sample (a pool of 4,000 rows per side embedded whole, at the model's 256 tokens). MiniLM, finance given as a
texts-only corpus of 5,000 texts (the first 5,000 distinct passages of the Financial-QA-10k triplets' positives, one per
line, as a user's export would be), the general side the bundled preset, the default pruning (`wanda-row`, 50%).

For each seed (0, 1): the calibration stage (`pipeline.calibration_sets`, exactly what `calibrate` runs) timed in this
process for the old settings and the new ones, one after the other, with the threads it ran on and the load other
processes put on the machine meanwhile (`busy.others_busy`, `busy.quiet`); then each sample's pruned model (the
stages of `prune_run`: score, select, apply) is scored on the finance and general development suites
(`devsuite.dev_suite`) and on issue 52's hard retrieval suites if they exist (HARD, full size), and the new sample's
model is compared with the old one's: Δ = new − old with its paired-bootstrap 95% interval (`devsuite.paired_bootstrap`).
Per-item scores are kept in results/bench/calib_sample/ (delete them to redo).
Run: OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/calib_sample.py > results/bench/calib_sample.txt
"""
from __future__ import annotations
import argparse, json, os, time
from pathlib import Path

import numpy as np, torch

from gaprune_nb.busy import others_busy, quiet
from gaprune_nb.core import Encoder
from gaprune_nb.data import data_root, load_retrieval
from gaprune_nb.devsuite import DevTask, dev_scores, dev_suite, fmt_delta, load_scores, paired_bootstrap, save_scores
from gaprune_nb.fixtures import default_model
from gaprune_nb.options import RunConfig
from gaprune_nb.pipeline import apply, calibration_sets, prune_data, score, select

ROOT = Path(__file__).resolve().parents[1]
RES, CORPUS = ROOT/'results/bench/calib_sample', ROOT/'runs/calib53/finance-5000.txt'
HARD = Path(os.environ.get('GAPRUNE_HARD', '/work/wt52/bench/hard'))
ARMS = dict(old=dict(pool=4000, cluster_tokens=None), new=dict(pool=2000, cluster_tokens=64), small=dict(pool=1000, cluster_tokens=64))

def corpus(n:int=5000) -> Path:
    "The texts-only finance corpus: the first `n` distinct triplet positives, whitespace collapsed, one per line."
    if not CORPUS.is_file():
        rows = (json.loads(l) for l in open(data_root()/'triplets/finance/fin_qa10k.jsonl', encoding='utf-8'))
        texts = list(dict.fromkeys(' '.join(r['positive'].split()) for r in rows))[:n]
        CORPUS.parent.mkdir(parents=True, exist_ok=True)
        CORPUS.write_text(''.join(t + '\n' for t in texts), encoding='utf-8')
    return CORPUS

def suites() -> dict[str, list[DevTask]]:
    "{suite name: tasks}: the dev suites of finance and general, then the hard ones found under HARD."
    out = {f'{d} dev': dev_suite(d) for d in ('finance', 'general')}
    for d, name in (('finance', 'finqa_pages'),):  # general/wtq_tables left out: 1,500 long tables per model, beyond this run's time
        if (HARD/d/name).is_dir(): out[f'{d} hard'] = [DevTask(f'{d}.{name}', 'retrieval', load_retrieval(HARD/d/name))]
    return out

def timed_sample(enc:Encoder, cfg:RunConfig, data, arm:str) -> tuple[dict, dict]:
    "The calibration sample of `arm` and its timing: seconds, threads, other processes' load, quiet."
    with others_busy(o := {}):
        t = time.perf_counter()
        calib = calibration_sets(enc, cfg.domain, cfg.n_calib, cfg.seed, root=cfg.data, balance=cfg.balance, data=data.sides(), **ARMS[arm])
        s = time.perf_counter() - t
    return calib, dict(seconds=round(s, 1), threads=torch.get_num_threads(), others=o['others'], quiet=quiet(o['others']))

def pruned(cfg:RunConfig, calib:dict) -> Encoder:
    "The dense model pruned by `cfg` on `calib`: `prune_run`'s stages for a method without statistics."
    enc = Encoder.from_pretrained(default_model(cfg.model))
    apply(enc, select(score(enc, cfg, None, calib), cfg), cfg, calib)
    return enc

if __name__ == '__main__':
    ap = argparse.ArgumentParser(); ap.add_argument('--seeds', type=int, nargs='+', default=[0, 1]); a = ap.parse_args()
    RES.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0); tasks = suites()
    print(f"corpus {corpus()}: {len(CORPUS.read_text().splitlines())} texts; arms {ARMS}; suites {list(tasks)}", flush=True)
    for seed in a.seeds:
        cfg = RunConfig(domain='finance', domain_data=[str(CORPUS)], seed=seed)  # the defaults: wanda-row, 50%
        data = prune_data(cfg)
        print(f"\nseed {seed}: {len(data.domain)} finance texts after the held-out split, {len(data.general)} general triplets", flush=True)
        for arm in ARMS:
            f = RES/f'time-{arm}-s{seed}.json'
            if not f.is_file() or not all((RES/f'{arm}-s{seed}-{s.replace(" ", "-")}.json').is_file() for s in tasks):
                calib, t = timed_sample(Encoder.from_pretrained(default_model(None)), cfg, data, arm)
                f.write_text(json.dumps(t))
                enc = pruned(cfg, calib)
                for s, ts in tasks.items():
                    save_scores(RES/f'{arm}-s{seed}-{s.replace(" ", "-")}.json', dev_scores(enc, ts), arm=arm, seed=seed, **ARMS[arm])
                    print(f"  {arm} s{seed}: {s} scored", flush=True)
            print(f"  calibration stage, {arm} {ARMS[arm]}: {json.loads(f.read_text())}", flush=True)
        old = json.loads((RES/f'time-old-s{seed}.json').read_text())
        for arm in list(ARMS)[1:]:
            new = json.loads((RES/f'time-{arm}-s{seed}.json').read_text())
            print(f"  {arm}: speed-up of the stage {old['seconds'] / new['seconds']:.1f}x ({old['seconds']} s -> {new['seconds']} s, "
                  f"{old['threads']} thread(s); others kept {old['others']} / {new['others']} cores busy: "
                  f"{'quiet' if old['quiet'] and new['quiet'] else 'NOT quiet'})", flush=True)
            print(f"  {arm} - old sample, paired bootstrap 95% intervals (x100):")
            for s in tasks:
                d = paired_bootstrap(*(load_scores(RES/f'{x}-s{seed}-{s.replace(" ", "-")}.json') for x in (arm, 'old')))
                print(f"    {s:<13} " + '; '.join(f"{t}: {fmt_delta(r)}" for t, r in d.iterrows()), flush=True)
