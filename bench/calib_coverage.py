"""How good is a calibration sample chosen from a bounded, truncated pool? (issue 53) The 5,408 distinct passages of the
finance triplets (Financial-QA-10k positives) as a texts-only corpus, MiniLM. Every passage is embedded once at the
model's own limit (256 tokens): the reference geometry. For each pool size (a seeded random subset) and each token
length the pool is embedded at, k-means picks 256 passages (`sampling.kmeans_indices`, seeds 0 and 1); the score is the
coverage of the whole corpus in the reference geometry: the mean, over all 5,408 passages, of the cosine to the nearest
chosen one (higher = the sample stands for more of the corpus). A seeded random 256 is the floor.
Run: OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/calib_coverage.py > results/bench/calib_coverage.txt
"""
from __future__ import annotations
import json, time
from pathlib import Path
import numpy as np
from gaprune_nb.core import Encoder
from gaprune_nb.data import data_root
from gaprune_nb.fixtures import default_model
from gaprune_nb.pipeline import token_limit
from gaprune_nb.sampling import kmeans_indices

CACHE = Path(__file__).resolve().parents[1]/'runs/calib53'

def texts() -> list[str]:
    "The distinct positives of the finance triplets, in file order."
    rows = (json.loads(l) for l in open(data_root()/'triplets/finance/fin_qa10k.jsonl', encoding='utf-8'))
    return list(dict.fromkeys(r['positive'] for r in rows))

def embedded(enc:Encoder, t:list[str], length:int|None) -> np.ndarray:
    "Unit embeddings of `t` at `length` tokens (None: the model's own), cached under runs/calib53/."
    f = CACHE/f'finpos-{length or "full"}.npy'
    if f.is_file(): return np.load(f)
    with token_limit(enc, length): e = enc.encode(t, batch_size=64, normalize=True)
    CACHE.mkdir(parents=True, exist_ok=True); np.save(f, e)
    return e

def coverage(ref:np.ndarray, idx:np.ndarray) -> float:
    "Mean over every point of its best cosine to a chosen point."
    return float((ref @ ref[idx].T).max(1).mean())

if __name__ == '__main__':
    enc, t = Encoder.from_pretrained(default_model(None)), texts()
    embs = {}
    for length in (None, 64, 32):
        t0 = time.perf_counter(); embs[length] = embedded(enc, t, length)
        print(f"embedded {len(t)} passages at {length or 'full (256)'} tokens: {time.perf_counter() - t0:.0f} s (0 if cached)", flush=True)
    ref = embs[None]
    print(f"\ncoverage of all {len(t)} passages by 256 chosen (mean best cosine, reference = full-length embeddings)")
    print(f"{'pool':>6} {'tokens':>6} {'seed 0':>8} {'seed 1':>8}")
    for seed_row in [('random', None)]:
        r = [coverage(ref, np.random.default_rng(s).choice(len(t), 256, replace=False)) for s in (0, 1)]
        print(f"{'random':>6} {'-':>6} {r[0]:8.4f} {r[1]:8.4f}")
    for pool in (None, 4000, 2000, 1000, 500):
        for length in (None, 64, 32):
            row = []
            for s in (0, 1):
                p = np.arange(len(t)) if pool is None else np.sort(np.random.default_rng(s).choice(len(t), pool, replace=False))
                row.append(coverage(ref, p[kmeans_indices(embs[length][p], 256, seed=s)]))
            print(f"{pool or 'all':>6} {length or 'full':>6} {row[0]:8.4f} {row[1]:8.4f}", flush=True)
