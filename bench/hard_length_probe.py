"""Is slim's loss on the finance hard suite about passage length? (issue 52, the probe quoted in 18_exp_frontier)

Scores the dense model and the slimmed models of report seed 1 (saved by `bench/frontier.py --hard` in --work) on the
finance hard suite with every text cut to 128 tokens (slim's training limit), beside their committed scores at the
model's 256 (results/hard_frontier), and prints each one's nDCG@10 at both lengths and its Δ vs dense at 128 with a
paired-bootstrap 95% interval. Printed, for results/hard_frontier/length_probe.txt.
Run: OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/hard_length_probe.py [--work /tmp/hard_frontier_work]
"""
import argparse, sys
from pathlib import Path
import torch
sys.path.insert(0, str(Path(__file__).resolve().parent))
from hard_recovery_report import delta, slim_cell   # noqa: E402  (one definition of a cell and a Δ)
from gaprune_nb.core import Encoder
from gaprune_nb.devsuite import dev_scores, fmt_delta, hard_suite
from gaprune_nb.pipeline import token_limit

POINTS = ('dense-s1', 'slim2-importance-none-s1-then-mined', 'slim1.5-importance-mined-s1')

def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--work', default='/tmp/hard_frontier_work'); a = ap.parse_args()
    torch.set_num_threads(1)
    task, cut = hard_suite('finance'), {}
    for name in POINTS:
        enc = Encoder.from_pretrained(Path(a.work)/name)
        with token_limit(enc, 128): cut[name] = next(iter(dev_scores(enc, task).values()))
        full = slim_cell('finance', name, 1)['scores']['hard']
        print(f"{name:40s} nDCG@10 at 256 tokens {100 * full.values.mean():6.2f}   at 128 {100 * cut[name].values.mean():6.2f}", flush=True)
    for name in POINTS[1:]:
        print(f"{name:40s} - dense, both at 128 tokens: {fmt_delta(delta(cut[name], cut[POINTS[0]]))}")

if __name__ == '__main__': main()
