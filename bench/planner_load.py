"""Does `slim --speedup` plan the same on a busy machine? (issue 51) MiniLM, `--speedup 2` for finance as the README runs it
(unit contributions, the default ranking, planned at the default length), each seed planned twice: on the quiet machine
and beside a busy loop started in its own session at the lowest priority (`setsid nice -n 19`: an ordinary laptop with
a browser open; in another session the scheduler gives it a fair share of a core whatever its niceness). Fine-tuning is
off: it does not change what is removed. Then every slimmed model is timed again against dense on the quiet machine
(interleaved, 2 threads, batch 32 at the plan's length, the median of three `measure_speedup` runs) and the table says
what each plan kept, what it measured, and what it runs at.
Goal (the issue's): the loaded plan's quiet speed-up within 15% of the quiet plan's, and none past 1.3x the target.
Resumable: each plan is saved under runs/planner_load/ with its report in results/bench/planner_load/; delete to redo.
Run alone on the machine: OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/planner_load.py > results/bench/planner_load.txt
"""
from __future__ import annotations
import argparse, json, os, platform, statistics, subprocess, sys, time
from pathlib import Path

import torch

from gaprune_nb.busy import idle_load, settle, usable_cores
from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import minilm_path
from gaprune_nb.heads import head_layout, kept_heads
from gaprune_nb.options import SlimConfig
from gaprune_nb.slim_pipeline import slim_run
from gaprune_nb.speed import measure_speedup

ROOT = Path(__file__).resolve().parents[1]
RES, RUNS = ROOT/'results/bench/planner_load', ROOT/'runs/planner_load'
SPIN = 'while True: pass'

def plan(arm:str, seed:int, target:float, threads:int) -> dict:
    "One `slim --speedup` plan, quiet or beside the busy loop; its report cached."
    f = RES/f'{arm}-s{seed}.json'
    if f.is_file(): return json.loads(f.read_text())
    spin = subprocess.Popen(['nice', '-n', '19', sys.executable, '-c', SPIN], start_new_session=True) if arm == 'loaded' else None
    try:
        time.sleep(1.0)
        before = idle_load(2.0)   # what the plan started beside
        cfg = SlimConfig(domain='finance', speedup=target, finetune='none', seed=seed, threads=threads)
        t0 = time.perf_counter()
        _, rep = slim_run(cfg, out=RUNS/f'{arm}-s{seed}', show_progress=False, overwrite=True)
    finally:
        if spin: spin.kill()
    sp = rep['speed_plan']
    row = dict(arm=arm, seed=seed, load_before=before, settle=sp['settle'], tries=[{k: t[k] for k in ('asked', 'measured', 'others')} for t in sp['tries']],
               plan_measured=sp['measured'], reached=sp['reached'], stopped=sp['stopped'], tokens=rep['speed']['tokens'], tokens_why=rep['speed']['tokens_why'],
               mlp_neurons=sum(w for w in rep['widths'] if w), end_measure=rep['speed']['batch_speedup'],
               seconds=round(time.perf_counter() - t0))
    RES.mkdir(parents=True, exist_ok=True); f.write_text(json.dumps(row, indent=1))
    return row

def quiet_speed(name:str, dense:Encoder, tokens:int, threads:int) -> dict:
    "The saved model timed against dense on the quiet machine: the median of three measurements."
    s = settle(threads, wait=300)
    m = Encoder.from_pretrained(RUNS/name)
    runs = [measure_speedup(dense, m, tokens, 32, threads, rounds=7) for _ in range(3)]
    n_heads = head_layout(m.model)[0]
    return dict(batch=statistics.median(r['batch_speedup'] for r in runs), one=statistics.median(r['single_speedup'] for r in runs),
                quiet=s['quiet'] and all(r['quiet'] for r in runs), others=max(r['others'] for r in runs),
                heads=sum(n_heads if h is None else len(h) for h in kept_heads(m.model)))  # (None: a layer that keeps every head)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--target', type=float, default=2.0)
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--threads', type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    rows = [plan(arm, s, a.target, a.threads) for s in a.seeds for arm in ('quiet', 'loaded')]
    dense = Encoder.from_pretrained(minilm_path())
    for r in rows: r['quiet_remeasure'] = quiet_speed(f"{r['arm']}-s{r['seed']}", dense, r['tokens'], a.threads)
    print(f"MiniLM-L6 slim --speedup {a.target:g} (finance, defaults, no fine-tuning), {a.threads} threads asked, {platform.processor() or platform.machine()}, "
          f"{len(usable_cores())} usable cores, torch {torch.__version__}; loaded = a busy loop at nice 19 in its own session")
    print(f"{'plan':12s} {'load':>5s} {'threads':>7s} {'tokens':>6s} {'tries':>5s} {'plan meas.':>10s} {'MLP kept':>9s} {'heads':>5s} {'quiet batch':>11s} {'quiet one':>9s} {'re-measure quiet':>16s}")
    for r in rows:
        q = r['quiet_remeasure']
        print(f"{r['arm'] + '-s' + str(r['seed']):12s} {r['load_before']:5.2f} {r['settle']['threads']:>4d}/{r['settle']['asked']:<2d} {r['tokens']:6d} {len(r['tries']):5d} "
              f"{r['plan_measured']:9.2f}x {r['mlp_neurons']:9d} {q['heads']:5d} {q['batch']:10.2f}x {q['one']:8.2f}x {str(q['quiet']):>16s}")
    print()
    for s in a.seeds:
        qq, ql = (next(r for r in rows if r['arm'] == arm and r['seed'] == s)['quiet_remeasure']['batch'] for arm in ('quiet', 'loaded'))
        print(f"seed {s}: loaded plan / quiet plan, both re-measured quiet: {ql / qq:.3f} ({abs(ql / qq - 1):.1%} apart; goal within 15%); "
              f"past the target: quiet {qq / a.target:.2f}x, loaded {ql / a.target:.2f}x (goal at most 1.3x)")
    ok = all(abs(next(r for r in rows if r['arm'] == 'loaded' and r['seed'] == s)['quiet_remeasure']['batch'] /
                 next(r for r in rows if r['arm'] == 'quiet' and r['seed'] == s)['quiet_remeasure']['batch'] - 1) <= 0.15 for s in a.seeds) \
         and all(r['quiet_remeasure']['batch'] <= 1.3 * a.target for r in rows)
    print(f"goal {'met' if ok else 'missed'}")

if __name__ == '__main__': main()
