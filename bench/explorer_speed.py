"""Seconds per explorer update on all-MiniLM-L6-v2 (target: under 5 s on 2 CPU cores).

    HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/explorer_speed.py > results/bench/explorer_speed.txt

Statistics and activation norms from 64 + 64 finance calibration triplets (computed once when the explorer is made, not
timed), 64 held-out triplets for the proxies (texts cut at 128 tokens).
Each update is timed once per setting, in the order a user would click: a new method or knob rescores and reselects;
a new sparsity or scope only reselects (the scores are cached).
"""
import time, torch
from gaprune_nb.core import Encoder
from gaprune_nb.data import domain_triplets
from gaprune_nb.explorer import Explorer
from gaprune_nb.fixtures import minilm_path
from gaprune_nb.pipeline import RunConfig, calibrate, statistics


def main():
    enc = Encoder.from_pretrained(minilm_path())
    cfg = RunConfig(domain='finance', n_calib=64, pool=1000)
    calib = calibrate(enc, cfg)
    stats, _ = statistics(enc, calib, cfg, show_progress=False)
    ex = Explorer(enc, domain_triplets('finance').shuffle(seed=123).select(range(64)), stats, calib['finance'])
    print(f'# explorer_speed: torch {torch.__version__}, {torch.get_num_threads()} threads, 64 held-out triplets')
    steps = [('gaprune', 0.5, None, {}), ('gaprune', 0.3, None, {}), ('magnitude', 0.5, None, {}), ('obd-kfac', 0.5, None, {}),
             ('obd-kfac', 0.5, None, dict(lam=0.5)), ('gaprune-paper', 0.5, None, {}), ('gaprune-paper', 0.5, None, dict(beta=0.0)),
             ('gaprune-paper', 0.5, 'layer', dict(beta=0.0)), ('gaprune-paper', 0.5, '2:4', dict(beta=0.0))]
    worst = 0
    for m, sp, scope, knobs in steps:
        s = ex.state(m, sp, scope, **knobs)
        worst = max(worst, s['seconds'])
        print(f"{m:16s} sparsity {sp} scope {s['scope']:7s} {str(knobs):14s} {s['seconds']:6.2f} s  "
              f"(differs from magnitude {s['differs_from_magnitude']:.3f}, cos {s['cosine_to_dense']:.3f}, acc {s['triplet_accuracy']:.2f})")
    print(f'slowest update: {worst:.2f} s (target < 5 s): {"met" if worst < 5 else "NOT met"}')


if __name__ == '__main__': main()
