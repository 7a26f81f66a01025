"""What was lost (issue 52, item 4): per-query nDCG@10 of dense all-MiniLM-L6-v2 and of MiniLM with 50% of its MLP
weights pruned by the default method (wanda-row) as `gaprune run --domain finance` prunes it (calibration: the bundled
finance triplets, n_calib 256, pool 4000, seed 0), on the whole hard finance suite (bench/hard/finance/finqa_pages:
300 queries, 1,500 report pages). Resumable: one JSON per model, results/worst/<cell>.json (`devsuite.save_scores`);
nbs/09c_worst.ipynb reads them and lists the queries that lose most.

Run: OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> TOKENIZERS_PARALLELISM=false nice -n 5 python bench/worst.py
"""
from __future__ import annotations
import time
from pathlib import Path

from gaprune_nb.core import Encoder
from gaprune_nb.devsuite import dev_scores, save_scores
from gaprune_nb.fixtures import minilm_path
from gaprune_nb.options import RunConfig
from gaprune_nb.pipeline import prune_run
from gaprune_nb.worst import suite_tasks

OUT = Path(__file__).resolve().parents[1]/'results'/'worst'
SUITE = 'hard-finance'
CFG = dict(domain='finance', method='wanda-row', sparsity=0.5, seed=0)   # the CLI's defaults otherwise


def cell(name:str, make, tasks, **info):
    f = OUT/f'{name}.json'
    if f.exists(): print(f"{name}: kept {f}"); return
    t = time.perf_counter()
    save_scores(f, dev_scores(make(), tasks), suite=SUITE, **info)
    print(f"{name}: {time.perf_counter() - t:.0f}s -> {f}")


def main():
    tasks = suite_tasks(SUITE)
    cell('minilm-dense', lambda: Encoder.from_pretrained(minilm_path()), tasks, model='all-MiniLM-L6-v2')
    cell('finance-wanda-row-s0', lambda: prune_run(RunConfig(**CFG), show_progress=False)[0], tasks, model='all-MiniLM-L6-v2', **CFG)


if __name__ == '__main__': main()
