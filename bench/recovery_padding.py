#!/usr/bin/env python3
"""Does padding the recovery's batches to a multiple of 32 tokens stop its memory from growing step by step?

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=../shared/data .venv/bin/python bench/recovery_padding.py > results/bench/recovery_padding.txt

`bench/slim_memory.py` found `slim`'s fine-tuning peak growing ~13 MiB a step with glibc malloc's defaults, and flat when
every large buffer gets its own pages (`MALLOC_MMAP_THRESHOLD_`, a third slower): the heap fragments, because each step's
activations come in sizes set by its longest text. `RetrainConfig.pad_multiple` pads every training batch to a multiple
of that many tokens, so a run sees a few sizes that the allocator can reuse. Here, one child process per setting
(`--pads`: 0 = to the longest text, as before): `retrain` as `slim`'s recovery calls it (MiniLM-L6, the bundled finance
rows of seed 1, full fine-tuning, batch 16, 128 tokens, `distill+contrastive`: the bundled negatives instead of mined
ones, the same shapes without the mining's minutes), no heap trim (`GAPRUNE_MALLOC=asis`), resident memory sampled every
50 ms. Per setting: resident and peak memory by step, the peak's growth per step after step 10, seconds per step (the
settings run one after the other: other work on the machine moves these seconds; `--time BLOCKS STEPS` compares them in
one process, alternating blocks of steps with and without padding; `--shapes` counts the tokens and distinct shapes
of the steps' batches under each setting).
"""
from __future__ import annotations
import argparse, os, subprocess, sys, threading, time

CHILD = r'''
import os, sys, threading, time, psutil, torch
torch.set_num_threads(int(os.environ.get('OMP_NUM_THREADS', '1')))
from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import minilm_path
from gaprune_nb.options import SlimConfig
from gaprune_nb.pipeline import recovery_teacher, token_limit
from gaprune_nb.retraining import RetrainConfig, retrain
from gaprune_nb.slim_pipeline import slim_data
pad, steps = int(sys.argv[1]) or None, int(sys.argv[2])
data = slim_data(SlimConfig(model=str(minilm_path()), domain='finance', holdout=0.1, seed=1))
rows = data.domain.data.shuffle(seed=1).select(range(16 * steps))
enc = Encoder.from_pretrained(minilm_path())
rc = RetrainConfig(method='full', batch_size=16, seed=2, progress=False, loss='distill+contrastive', pad_multiple=pad)
with token_limit(enc, 128): teacher = recovery_teacher(enc, rows, data.general.data, steps, rc)
proc, peak = psutil.Process(), [0]
def sample():
    while True: peak[0] = max(peak[0], proc.memory_info().rss); time.sleep(0.05)
threading.Thread(target=sample, daemon=True).start()
class Steps(list):
    def append(self, x):
        print(x['step'], proc.memory_info().rss / 2**20, peak[0] / 2**20, time.perf_counter(), flush=True); super().append(x)
print('start', proc.memory_info().rss / 2**20, flush=True)
if len(sys.argv) > 3:   # --time BLOCKS: alternating blocks of `steps` steps with and without padding, one process
    from dataclasses import replace
    secs = {None: [], pad: []}
    for b in range(int(sys.argv[3])):
        for p in ((pad, None) if b % 2 == 0 else (None, pad)):
            t0 = time.perf_counter()
            with token_limit(enc, 128): retrain(enc, rows, steps, config=replace(rc, pad_multiple=p, seed=2 + b), inplace=True, teacher=teacher)
            secs[p].append((time.perf_counter() - t0) / steps)
    print('time', *secs[pad], '|', *secs[None], flush=True); sys.exit()
with token_limit(enc, 128): retrain(enc, rows, steps, config=rc, inplace=True, teacher=teacher, history=Steps())
'''


def run(pad: int, steps: int, blocks: int = 0) -> list[tuple]:
    "(step, rss MiB, peak MiB, seconds) of one child process; with `blocks`: [(seconds a step padded, ...), (unpadded, ...)]."
    env = os.environ | dict(GAPRUNE_MALLOC='asis')
    out = subprocess.run([sys.executable, '-c', CHILD, str(pad), str(steps)] + ([str(blocks)] if blocks else []), env=env, capture_output=True, text=True)
    if out.returncode: raise SystemExit(f'pad {pad}: the child failed:\n{out.stderr[-3000:]}')
    if blocks: return [tuple(float(x) for x in part.split()) for part in next(l for l in out.stdout.splitlines() if l.startswith('time'))[4:].split('|')]
    got = [tuple(float(x) for x in l.split()) for l in out.stdout.splitlines() if l and l[0].isdigit()]
    return got


def shapes(pads: list[int], steps: int) -> str:
    "Tokens and distinct batch shapes of the run's `steps` steps (queries, documents, distillation texts), by tokenizing them under each setting."
    from gaprune_nb.core import Encoder
    from gaprune_nb.fixtures import minilm_path
    from gaprune_nb.options import SlimConfig
    from gaprune_nb.pipeline import recovery_texts
    from gaprune_nb.retraining import RetrainConfig, _batches, _columns, _text_batches
    from gaprune_nb.slim_pipeline import slim_data
    data = slim_data(SlimConfig(model=str(minilm_path()), domain='finance', holdout=0.1, seed=1))
    rows = data.domain.data.shuffle(seed=1).select(range(16 * steps))
    enc, rc = Encoder.from_pretrained(minilm_path()), RetrainConfig(batch_size=16, seed=2, loss='distill+contrastive')
    enc.max_length = 128
    q, p, n = _columns(rows, pairs=True)
    texts = recovery_texts(rows, data.general.data, steps * 48, rc.general_texts, rc.seed)
    out = []
    for pad in [0] + [x for x in pads if x]:
        enc.pad_multiple, tokens, seen = pad or None, 0, set()
        for idx, ti in zip(_batches(list(zip(p, n)), 16, steps, rc.seed, True), _text_batches(len(texts), 48, steps, rc.seed)):
            for kind, tx in (('query', [q[i] for i in idx]), ('document', [p[i] for i in idx] + [n[i] for i in idx]), ('document', [texts[i] for i in ti])):
                b = enc.tokenize(tx, kind)['input_ids'].shape; tokens += b[0] * b[1]; seen.add(tuple(b))
        out.append(f'pad_multiple {pad or None}: {tokens:,} tokens in {len(seen)} shapes')
    return f'## the batches of {steps} steps, tokenized\n' + '\n'.join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--pads', type=int, nargs='+', default=[0, 32])
    ap.add_argument('--steps', type=int, default=60)
    ap.add_argument('--time', type=int, nargs=2, metavar=('BLOCKS', 'STEPS'), help='only time steps: BLOCKS blocks of STEPS steps each way, alternating, in one process (the second --pads value against none)')
    ap.add_argument('--shapes', action='store_true', help="only count the tokens and distinct shapes of the steps' batches under each setting")
    a = ap.parse_args()
    if a.shapes: return print(shapes(a.pads, a.steps))
    if a.time:
        import statistics
        pad, off = run(a.pads[-1], a.time[1], a.time[0])
        print(f'## seconds a step, pad_multiple {a.pads[-1]} against None: {a.time[0]} blocks of {a.time[1]} steps each way, alternating, one process, '
              f'{os.environ.get("OMP_NUM_THREADS", "?")} thread(s), load average {os.getloadavg()[0]:.1f} at the end')
        print(f'median of blocks: padded {statistics.median(pad):.2f}, not padded {statistics.median(off):.2f}: ratio {statistics.median(pad) / statistics.median(off):.3f}')
        print('every block (s/step): padded ' + ', '.join(f'{x:.2f}' for x in pad) + '; not padded ' + ', '.join(f'{x:.2f}' for x in off)); return
    print(f'# retrain (MiniLM-L6, finance, full, batch 16, 128 tokens, distill+contrastive), {a.steps} steps, no heap trim; '
          f'{os.environ.get("OMP_NUM_THREADS", "?")} thread(s), {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start\n')
    summary = []
    for pad in a.pads:
        load = os.getloadavg()[0]
        r = run(pad, a.steps)
        print(f'## pad_multiple {pad or None} (load average {load:.1f} at its start)\nstep   resident   peak (MiB)')
        for s, rss, pk, _ in r[::10] + r[-1:]: print(f'{int(s) + 1:4d}   {rss:7.0f}   {pk:7.0f}')
        a10, z = r[9], r[-1]
        grow, sps = (z[2] - a10[2]) / (z[0] - a10[0]), (z[3] - a10[3]) / (z[0] - a10[0])
        summary.append(f'pad_multiple {pad or None}: peak {z[2]:.0f} MiB after {int(z[0]) + 1} steps, grows {grow:.1f} MiB a step after step 10, {sps:.2f} s a step')
        print()
    print('\n'.join(summary))


if __name__ == '__main__': main()
