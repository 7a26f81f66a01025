"""How long the calibration-sample stage takes (issue 53): the old choice (a pool of 4,000 rows per side embedded at the
model's own 256 tokens) against the bounded one (`--pool` rows per side embedded at `pipeline.CLUSTER_TOKENS`), on
MiniLM, the general side the bundled preset, the domain a texts-only corpus:
* finance-5000: the first 5,000 distinct passages of the Financial-QA-10k triplets (`bench/calib_sample.py` writes it);
* tutorial: the 2,538 TAT-QA annual-report paragraphs of `tutorial_your_domain`.
Each arm runs `pipeline.calibration_sets` (what the stage `calibrate` runs) in this process; the bounded arm is timed
before and after the old one (their mean is the figure, so a load that comes or goes is shared) and the ratio is printed
with the threads, the cores other processes kept busy during each timing (`busy.others_busy`) and whether that left
the timing its cores (`busy.quiet`). On a shared machine wall time wanders with the load, so `--count` prints the
work instead, which no load changes: the texts and the tokens each arm embeds (its encoder counts them and returns
random vectors, so nothing is computed; the k-means it then runs is seconds).
Run: OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/calib_speed.py > results/bench/calib_speed.txt
"""
from __future__ import annotations
import argparse, json, platform, time
from pathlib import Path

import numpy as np, torch

from gaprune_nb.busy import others_busy, quiet, usable_cores
from gaprune_nb.core import Encoder
from gaprune_nb.data import data_root
from gaprune_nb.fixtures import default_model
from gaprune_nb.options import RunConfig
from gaprune_nb.pipeline import CLUSTER_TOKENS, calibration_sets, prune_data

ROOT = Path(__file__).resolve().parents[1]
CORPORA = dict(**{'finance-5000': ROOT/'runs/calib53/finance-5000.txt'}, tutorial=ROOT/'runs/calib53/reports.txt')

def tutorial() -> Path:
    "The tutorial's corpus: TAT-QA's paragraphs, whitespace collapsed, one per line."
    f = CORPORA['tutorial']
    if not f.is_file():
        rows = (json.loads(l) for l in open(data_root()/'retrieval/finance/tatqa/corpus.jsonl', encoding='utf-8'))
        f.parent.mkdir(parents=True, exist_ok=True); f.write_text(''.join(' '.join(r['text'].split()) + '\n' for r in rows), encoding='utf-8')
    return f

def timed(enc:Encoder, data, pool:int|None, tokens:int|None) -> dict:
    "One calibration stage: seconds and the load beside it."
    with others_busy(o := {}):
        t = time.perf_counter()
        calibration_sets(enc, 'finance', 256, 0, pool=pool, balance=True, data=data.sides(), cluster_tokens=tokens)
        s = time.perf_counter() - t
    return dict(seconds=round(s, 1), others=o['others'], quiet=quiet(o['others']))

def counted(enc:Encoder, data, pool:int|None, tokens:int|None) -> dict:
    "The texts and tokens one calibration stage embeds (nothing is embedded: the encoder counts and returns random vectors)."
    n, rng = dict(texts=0, tokens=0), np.random.default_rng(0)
    def encode(texts, **kw):
        ids = enc.tokenizer(list(texts), truncation=True, max_length=enc.max_length)['input_ids']
        n['texts'] += len(ids); n['tokens'] += sum(map(len, ids))
        e = rng.normal(size=(len(ids), 8)).astype(np.float32)
        return e / np.linalg.norm(e, axis=1, keepdims=True)
    enc.encode = encode
    try: calibration_sets(enc, 'finance', 256, 0, pool=pool, balance=True, data=data.sides(), cluster_tokens=tokens)
    finally: del enc.encode
    return n

if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--pool', type=int, default=2000, help='rows per side of the bounded pool')
    ap.add_argument('--corpora', nargs='+', default=list(CORPORA))
    ap.add_argument('--count', action='store_true', help='count the texts and tokens embedded instead of timing')
    a = ap.parse_args()
    tutorial()
    enc = Encoder.from_pretrained(default_model(None))
    print(f"{platform.node()}: {len(usable_cores())} usable cores, torch threads {torch.get_num_threads()}; "
          f"old = pool 4000 at the model's {enc.max_length} tokens, bounded = pool {a.pool} at {CLUSTER_TOKENS} tokens", flush=True)
    for name in a.corpora:
        data = prune_data(RunConfig(domain='finance', domain_data=[str(CORPORA[name])]))
        if a.count:
            old, new = counted(enc, data, 4000, None), counted(enc, data, a.pool, CLUSTER_TOKENS)
            print(f"{name}: old embeds {old['texts']} texts, {old['tokens']:,} tokens; bounded {new['texts']} texts, {new['tokens']:,} tokens: "
                  f"{old['tokens'] / new['tokens']:.1f}x fewer tokens", flush=True)
            continue
        runs = [timed(enc, data, a.pool, CLUSTER_TOKENS), timed(enc, data, 4000, None), timed(enc, data, a.pool, CLUSTER_TOKENS)]
        new = sum(r['seconds'] for r in runs[::2]) / 2
        ok = all(r['quiet'] for r in runs)
        print(f"{name} ({len(data.domain)} texts; general {len(data.general)} triplets): old {runs[1]['seconds']} s, "
              f"bounded {runs[0]['seconds']} s / {runs[2]['seconds']} s (before / after): {runs[1]['seconds'] / new:.1f}x faster; "
              f"{torch.get_num_threads()} thread(s); others kept {runs[0]['others']} / {runs[1]['others']} / {runs[2]['others']} cores busy: "
              f"{'quiet' if ok else 'NOT quiet'}", flush=True)
