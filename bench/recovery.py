"""Recovery by distillation vs today's contrastive recovery (issue 32 item 3, issue 33 item 3), resumable.

Every cell (a model evaluated on the finance and general dev suites) is cached as JSON under results/recovery/ and
skipped when present; models made along the way are kept in --work so a later recovery reuses them.
  (a) slim: drop 1 MLP sub-layer, keep 0.6, slimmed ONCE per seed with finetune='none', then fine-tuned with each
      recovery (contrastive / distill / distill+contrastive; same steps, batch, token limit, seed);
  (b) prune 50% with the default method, then retrained with each recovery (LoRA with the mask kept, as prune_run).
Run: OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/recovery.py [--only REGEX]
"""
from __future__ import annotations
import argparse, json, re, sys, time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from gaprune_nb.core import Encoder
from gaprune_nb.data import data_root, domain_triplets
from gaprune_nb.devsuite import DevSpec, TaskScores, dev_scores, dev_suite
from gaprune_nb.fixtures import minilm_path
from gaprune_nb.masks import load_mask
from gaprune_nb.options import RunConfig, SlimConfig
from gaprune_nb.pipeline import prune_run, recovery_teacher, token_limit
from gaprune_nb.retraining import RetrainConfig, retrain
from gaprune_nb.slim_pipeline import slim_run
from gaprune_nb.store import write_text

OUT = Path(__file__).resolve().parents[1]/'results'/'recovery'
SUITES = ('finance', 'general')

def cell_path(name): return OUT/f'{name}.json'

def save_cell(name, enc, tasks, **info):
    t = time.perf_counter()
    scores = {s: dev_scores(enc, tasks[s]) for s in SUITES}
    info['seconds_eval'] = round(time.perf_counter() - t, 1)
    d = dict(info, cell=name, scores={s: {k: dict(type=v.type, values=v.values.tolist(), gold=None if v.gold is None else v.gold.tolist())
                                          for k, v in sc.items()} for s, sc in scores.items()})
    write_text(cell_path(name), json.dumps(d, default=str))
    print(f'{name}: saved ({info})', file=sys.stderr, flush=True)

def load_cell(name) -> dict:
    "{suite: {task: TaskScores}} of a cached cell."
    d = json.loads(cell_path(name).read_text())
    return {s: {t: TaskScores(t, v['type'], np.array(v['values']), None if v['gold'] is None else np.array(v['gold']))
                for t, v in sc.items()} for s, sc in d['scores'].items()}

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seeds', type=int, nargs='+', default=[0, 1])
    ap.add_argument('--steps', type=int, default=20)           # recovery steps (every recovery the same)
    ap.add_argument('--batch-size', type=int, default=16)      # triplets per step (distillation: 3x as many texts)
    ap.add_argument('--train-max-length', type=int, default=64) # token limit while training (evaluation: the model's)
    ap.add_argument('--gate-steps', type=int, default=30)      # slim gate training steps
    ap.add_argument('--work', default='/tmp/recovery_work')    # slimmed / pruned models kept between chunks
    ap.add_argument('--queries', type=int, default=150)        # dev suites: retrieval queries (corpus 4x), classification / STS test items 400, train 1000
    ap.add_argument('--n-calib', type=int, default=64)         # prune: calibration triplets per side (the default method's statistics)
    ap.add_argument('--pool', type=int, default=1000)          # prune: k-means pool per side
    ap.add_argument('--only', default='')                      # regex on cell names
    ap.add_argument('--losses', nargs='+', default=['contrastive', 'distill', 'distill+contrastive'])
    a = ap.parse_args()
    torch.set_num_threads(1)
    OUT.mkdir(parents=True, exist_ok=True); work = Path(a.work); work.mkdir(parents=True, exist_ok=True)
    root, model = data_root(None), minilm_path()
    spec = DevSpec(queries=a.queries, corpus=4 * a.queries, test=400, train=1000)
    tasks = {s: dev_suite(s, root, spec) for s in SUITES}
    todo = lambda n: re.search(a.only, n) and not cell_path(n).exists()
    common = dict(steps=a.steps, batch_size=a.batch_size, train_max_length=a.train_max_length, threads=torch.get_num_threads(), dev_spec=spec.tag)
    if todo('dense'):
        save_cell('dense', Encoder.from_pretrained(model), tasks, **common)
    for seed in a.seeds:
        # (a) slim once, then each recovery on that same slimmed model
        scfg = SlimConfig(model=str(model), domain='finance', drop_mlp=1, keep=0.6, finetune='none', gate_steps=a.gate_steps,
                          finetune_steps=a.steps, batch_size=a.batch_size, train_max_length=a.train_max_length, seed=seed)
        sdir = work/f'slim-s{seed}'
        names = [f'slim-s{seed}-{l}' for l in a.losses]
        if any(todo(n) for n in names):
            if not (sdir/'slim_report.json').exists():
                t = time.perf_counter(); slim_run(scfg, out=sdir, show_progress=False, overwrite=True)
                print(f'slim seed {seed}: {time.perf_counter() - t:.0f}s', file=sys.stderr, flush=True)
            trip = domain_triplets('finance', root=root).shuffle(seed=seed)   # as slim_run selects its training triplets
            train = trip.select(range(min(len(trip), a.batch_size * max(a.gate_steps, a.steps, 1))))
            for loss, n in zip(a.losses, names):
                if not todo(n): continue
                rc = RetrainConfig(method='full', batch_size=a.batch_size, seed=seed + 1, progress=False, loss=loss)  # as slim_run
                t = time.perf_counter()
                dense = Encoder.from_pretrained(model)
                with token_limit(dense, a.train_max_length): teacher = recovery_teacher(dense, train, domain_triplets('general', root=root), a.steps, rc)
                del dense
                enc, hist = Encoder.from_pretrained(sdir), []
                with token_limit(enc, a.train_max_length): retrain(enc, train, a.steps, config=rc, inplace=True, teacher=teacher, history=hist)
                save_cell(n, enc, tasks, **common, recovery=loss, seed=seed, seconds_train=round(time.perf_counter() - t, 1),
                          slim=asdict(scfg), retrain=asdict(rc), last_step=hist[-1], first_step=hist[0])
        # (b) prune 50% with the default method, then each recovery (LoRA, mask kept)
        pcfg = RunConfig(model=str(model), domain='finance', sparsity=0.5, seed=seed, n_calib=a.n_calib, pool=a.pool)
        pdir = work/f'prune-s{seed}'
        names = [f'prune-s{seed}-{l}' for l in a.losses if l != 'distill+contrastive']
        if any(todo(n) for n in names):
            if not (pdir/'gaprune_report.json').exists():
                t = time.perf_counter(); prune_run(pcfg, out=pdir, show_progress=False, overwrite=True)
                print(f'prune seed {seed}: {time.perf_counter() - t:.0f}s', file=sys.stderr, flush=True)
            mask = load_mask(pdir/'mask.safetensors')
            trip = domain_triplets('finance', root=root).shuffle(seed=seed)
            train = trip.select(range(min(len(trip), a.batch_size * a.steps)))
            for n in names:
                if not todo(n): continue
                loss = n.split(f'-s{seed}-')[1]
                rc = RetrainConfig(batch_size=a.batch_size, seed=seed + 1, progress=False, loss=loss)  # as prune_run
                t = time.perf_counter()
                dense = Encoder.from_pretrained(model)
                with token_limit(dense, a.train_max_length): teacher = recovery_teacher(dense, train, domain_triplets('general', root=root), a.steps, rc)
                del dense
                enc, hist = Encoder.from_pretrained(pdir), []
                with token_limit(enc, a.train_max_length):
                    enc = retrain(enc, train, a.steps, mask=mask, config=rc, inplace=True, teacher=teacher, history=hist)
                save_cell(n, enc, tasks, **common, recovery=loss, seed=seed, seconds_train=round(time.perf_counter() - t, 1),
                          prune=asdict(pcfg), retrain=asdict(rc), last_step=hist[-1], first_step=hist[0])

if __name__ == '__main__': main()
