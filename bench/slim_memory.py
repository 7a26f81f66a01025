#!/usr/bin/env python3
"""Peak resident memory of `gaprune slim`'s recovery, stage by stage, and its growth per fine-tuning step.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=../shared/data .venv/bin/python bench/slim_memory.py > results/bench/slim_memory.txt

Runs `gaprune slim --domain finance --keep 1 --no-eval` (the bundled MiniLM-L6 and finance triplets: nothing is removed,
so the recovery alone is measured: mining, the teacher's embeddings, the fine-tuning, the final timing) as a child
process, once per (allocator setting, steps), and samples the child's resident set size every 0.2 s with psutil; the
stage is the last `== ` heading the child printed on stderr. Per run: each stage's peak, and the whole run's. The growth
per step is (fine-tuning peak at the most steps − at the fewest) / the steps between.

Allocator settings (glibc malloc):
  defaults  malloc as a fresh process has it
  kept      `MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1073741824`: what `speed.steady_allocator` sets, from the start; it
            is the state a `slim --speedup` run fine-tunes in when the plan's timing came first and the setting lasts
  mmap      `MALLOC_MMAP_THRESHOLD_=65536`: every buffer above 64 KiB gets its own pages and returns them when freed, so the
            heap cannot fragment (as `bench/memory.py` runs): growth that remains is memory still held
  asis      `GAPRUNE_MALLOC=asis`: malloc's defaults and no `malloc_trim` in the fine-tuning (`retraining._trim_heap`)
Run with `--settings defaults` or `--steps 10 40` for a part; `--speedup 2` slims to a measured 2x first (the real path);
`--code DIR` runs the package in DIR (a git worktree of an earlier commit) to compare with it; `--trim-cost BLOCKS STEPS`
only times fine-tuning steps with and without the heap trim, in one process. results/bench/slim_memory.txt holds five runs
on this machine, each headed by the code it measured: commit 14df460 (before the recovery took a step's terms one at a
time, `08_retraining`), the terms one at a time without trimming, trimming after every step, and trimming every 10 steps
(`retrain` now trims once, when the training ends: the 10-step runs of the last measure just that). All five ran
before `retrain` padded its batches to a multiple of 16 tokens (`RetrainConfig.pad_multiple`, `bench/recovery_padding.py`).
"""
from __future__ import annotations
import argparse, os, re, subprocess, sys, tempfile, threading, time
from pathlib import Path

import psutil

SETTINGS = {'defaults': {}, 'kept': {'MALLOC_MMAP_MAX_': '0', 'MALLOC_TRIM_THRESHOLD_': str(1 << 30)},
            'mmap': {'MALLOC_MMAP_THRESHOLD_': '65536'}, 'asis': {'GAPRUNE_MALLOC': 'asis'}}
GAPRUNE = Path(sys.executable).with_name('gaprune')


def run(setting:str, steps:int, speedup:float|None, threads:int, code:str|None=None) -> dict:
    "{stage: peak GB} of one `gaprune slim` run, its whole peak and seconds."
    env = {k: v for k, v in os.environ.items() if not k.startswith('MALLOC_')} | SETTINGS[setting] | dict(OMP_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as tmp:
        cli = [str(GAPRUNE)] if code is None else [sys.executable, '-c', f'import sys; sys.path.insert(0, {code!r}); from gaprune_nb.cli import main; main()']
        cmd = cli + ['slim', '--domain', 'finance', '--no-eval', '--finetune-steps', str(steps), '--out', f'{tmp}/out', '--threads', str(threads)]
        cmd += ['--speedup', str(speedup)] if speedup else ['--keep', '1']
        t0, stage, peaks, lines = time.time(), ['start'], {}, []
        p = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        def read():
            for line in p.stderr:
                lines.append(line)
                if line.startswith('== '): stage[0] = line[3:].strip()
        reader = threading.Thread(target=read, daemon=True); reader.start()
        proc = psutil.Process(p.pid)
        while p.poll() is None:
            try: rss = proc.memory_info().rss
            except psutil.NoSuchProcess: break
            peaks[stage[0]] = max(peaks.get(stage[0], 0), rss)
            time.sleep(0.2)
        reader.join()
        if p.returncode: raise SystemExit(f'{setting}, {steps} steps: gaprune slim failed ({p.returncode}):\n' + ''.join(lines[-20:]))
    secs = {m[1]: float(m[2]) for m in (re.match(r'   (.+): ([\d.]+)s$', l.rstrip()) for l in lines) if m}   # each stage's own line: '   STAGE: 12.3s'
    return dict(peaks={k: v / 2**30 for k, v in peaks.items()}, peak=max(peaks.values()) / 2**30, seconds=time.time() - t0, stage_seconds=secs)


def trim_cost(blocks:int, steps:int, threads:int):
    "Seconds per fine-tuning step with and without `malloc_trim` where `retrain` calls it, in one process, in alternating blocks of one `retrain` call each (load that comes and goes hits both alike)."
    import statistics, torch
    from gaprune_nb import retraining
    from gaprune_nb.core import Encoder
    from gaprune_nb.data import load_triplets
    from gaprune_nb.fixtures import minilm_path
    from gaprune_nb.retraining import RetrainConfig, retrain, teacher_targets
    torch.set_num_threads(threads)
    enc, rows = Encoder.from_pretrained(minilm_path(), max_length=128), load_triplets('finance/fin_qa10k', limit=32 * steps * blocks)
    teacher = teacher_targets(enc, rows['positive'][:96 * steps])
    trim, per = retraining._TRIM, {'trim': [], 'no trim': []}
    if trim is None: raise SystemExit('no glibc malloc_trim here (or GAPRUNE_MALLOC=asis): nothing to compare')
    for b in range(2 * blocks):
        k = ('trim', 'no trim')[b % 2]; retraining._TRIM = trim if k == 'trim' else None
        t0 = time.perf_counter()
        retrain(enc, rows.select(range(32 * steps * (b // 2), 32 * steps * (b // 2 + 1))), steps, config=RetrainConfig(method='full', loss='distill+contrastive', progress=False, seed=b), inplace=True, teacher=teacher)
        per[k].append((time.perf_counter() - t0) / steps)
    retraining._TRIM = trim
    m = {k: statistics.median(v) for k, v in per.items()}
    print(f'\n## malloc_trim where retrain calls it: {blocks} blocks of {steps} steps each way, alternating, {threads} thread(s), one process')
    print(f"seconds per step, median of blocks: trim {m['trim']:.2f}, no trim {m['no trim']:.2f}: ratio {m['trim'] / m['no trim']:.3f}")
    print('every block (s/step): ' + '; '.join(f"{k} {', '.join(f'{x:.2f}' for x in v)}" for k, v in per.items()), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--settings', nargs='+', default=list(SETTINGS), choices=list(SETTINGS))
    ap.add_argument('--steps', type=int, nargs='+', default=[10, 40])
    ap.add_argument('--speedup', type=float, default=None)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--trim-cost', type=int, nargs=2, metavar=('BLOCKS', 'STEPS'), default=None, help="only time fine-tuning steps with and without malloc_trim, in-process")
    ap.add_argument('--code', default=None, help="run the package found in this folder (a git worktree of an earlier commit) instead of the installed one")
    a = ap.parse_args()
    if a.trim_cost: return trim_cost(*a.trim_cost, a.threads)
    print(f'# gaprune slim --domain finance {"--speedup " + str(a.speedup) if a.speedup else "--keep 1"} --no-eval: peak resident memory (GiB), '
          f'{a.threads} thread(s); code: {a.code or "installed"}; machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start', flush=True)
    ft = {}
    for n in a.steps:   # the settings one after another at each step count: a load that comes and goes hits them alike
        for s in a.settings:
            load = os.getloadavg()[0]
            r = run(s, n, a.speedup, a.threads, a.code)
            print(f'\n## {s}, {n} steps: peak {r["peak"]:.2f} GiB, {r["seconds"]:.0f} s (load average {load:.1f} at its start)', flush=True)
            for k, v in r['peaks'].items(): print(f'  {v:6.2f}  {k}' + (f'  ({r["stage_seconds"][k]:.0f} s)' if k in r['stage_seconds'] else ''), flush=True)
            ft[s, n] = next((v for k, v in r['peaks'].items() if k.startswith('fine-tune')), None)
    for s in a.settings:
        lo, hi = min(a.steps), max(a.steps)
        if hi > lo and ft.get((s, lo)) and ft.get((s, hi)):
            print(f'\n{s}: fine-tuning peak grows {(ft[s, hi] - ft[s, lo]) * 2**10 / (hi - lo):.1f} MiB per step ({lo} -> {hi} steps)', flush=True)


if __name__ == '__main__': main()
