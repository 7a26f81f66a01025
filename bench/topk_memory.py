#!/usr/bin/env python3
"""Peak extra memory of the exact global top-k of `gaprune_nb.masks.make_mask` vs the concatenate-and-select references.

    OMP_NUM_THREADS=1 MALLOC_MMAP_THRESHOLD_=65536 .venv/bin/python bench/topk_memory.py > results/bench/topk_memory.txt

Every measurement runs in a fresh subprocess: it builds the score dict (fp32 uniform noise, filled in place so that
building it leaves no temporaries), reads the peak resident set size (`ru_maxrss`), selects the top 50% of all scores
into a bool mask dict, and reads the peak again. *extra* = the increase of the peak = everything the selection
allocated at its worst moment. The output (the bool mask, 1 byte per score) is allocated by every method and is
counted separately: *working* = extra - mask bytes, reported per scored parameter. `MALLOC_MMAP_THRESHOLD_=65536` makes
glibc serve every block >= 64 KiB with mmap, so freed memory leaves the process and RSS follows live memory (the script
sets it for its subprocesses if it is not set).

Methods:
  radix      `make_mask(scores, 0.5)`: radix selection over chunks, exact, ties by position (this package)
  cat+topk   `torch.topk` on the concatenated scores, as the official GAPrune code does
  cat+sort   stable descending sort of the concatenated scores (the brute-force reference of the tests)

Sizes: `minilm` = the MLP of all-MiniLM-L6-v2 (6 layers x 2 matrices of 1536x384 = 7.08M scores); `100M` = 16 layers x
3 matrices of 2048x1024 (100.7M scores, a Qwen3-0.6B-sized MLP is 0.44B). Ratios are taken within one run.
"""
import json, os, resource, subprocess, sys, time

SIZES = {'minilm': [(1536, 384), (384, 1536)] * 6, '100M': [(2048, 1024), (2048, 1024), (1024, 2048)] * 16}
METHODS = ('radix', 'cat+topk', 'cat+sort')


def peak_mb() -> float: return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def select(method: str, scores: dict, k: int) -> dict:
    "Keep the k highest scores: {name: bool mask}."
    import torch
    from gaprune_nb.masks import make_mask
    n = sum(v.numel() for v in scores.values())
    if method == 'radix': return make_mask(scores, 1 - k / n)
    flat = torch.cat([v.reshape(-1) for v in scores.values()])
    idx = torch.topk(flat, k).indices if method == 'cat+topk' else torch.sort(flat, descending=True, stable=True).indices[:k]
    keep = torch.zeros(n, dtype=torch.bool); keep[idx] = True
    del flat, idx
    return {nm: m.view(v.shape) for (nm, v), m in zip(scores.items(), keep.split([v.numel() for v in scores.values()]))}


def one(method: str, size: str) -> dict:
    import torch
    torch.manual_seed(0)
    select(method, {'a': torch.rand(700, 800), 'b': torch.rand(300)}, 280_150)  # warm-up: load code pages, init kernels
    scores = {f'layers.{i // 3 if size == "100M" else i // 2}.m{i}': torch.empty(s).uniform_() for i, s in enumerate(SIZES[size])}
    n = sum(v.numel() for v in scores.values()); k = n - n // 2
    before = peak_mb(); t = time.perf_counter()
    mask = select(method, scores, k)
    secs = time.perf_counter() - t
    extra = peak_mb() - before
    kept = sum(int(m.sum()) for m in mask.values())
    assert kept == k, (kept, k)
    mask_mb = n / 2**20
    return dict(method=method, size=size, n=n, seconds=secs, extra_mb=extra, mask_mb=mask_mb,
                working_b_per_param=(extra - mask_mb) * 2**20 / n, extra_b_per_param=extra * 2**20 / n)


def main():
    env = {**os.environ, 'MALLOC_MMAP_THRESHOLD_': os.environ.get('MALLOC_MMAP_THRESHOLD_', '65536'), 'OMP_NUM_THREADS': os.environ.get('OMP_NUM_THREADS', '1')}
    import torch
    print(__doc__.strip().splitlines()[0])
    print(f"command: OMP_NUM_THREADS={env['OMP_NUM_THREADS']} MALLOC_MMAP_THRESHOLD_={env['MALLOC_MMAP_THRESHOLD_']} python bench/topk_memory.py")
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, one subprocess per row; extra = peak RSS increase during the selection;")
    print("mask = the bool output (1 B/score); working = extra - mask. Target: working <= 2 B per scored parameter.\n")
    print(f"{'size':>7} {'scores':>12} {'method':>9} {'time s':>7} {'extra MiB':>10} {'mask MiB':>9} {'working B/param':>16} {'extra B/param':>14}")
    rows = []
    for size in SIZES:
        for method in METHODS:
            out = subprocess.run([sys.executable, __file__, '--one', method, size], env=env, capture_output=True, text=True)
            if out.returncode: sys.exit(f"{method} {size} failed:\n{out.stderr}")
            r = json.loads(out.stdout.strip().splitlines()[-1]); rows.append(r)
            print(f"{size:>7} {r['n']:>12,} {method:>9} {r['seconds']:>7.2f} {r['extra_mb']:>10.1f} {r['mask_mb']:>9.1f} "
                  f"{r['working_b_per_param']:>16.2f} {r['extra_b_per_param']:>14.2f}", flush=True)
    print()
    for size in SIZES:
        by = {r['method']: r for r in rows if r['size'] == size}
        rad = by['radix']
        print(f"{size}: radix working memory {rad['working_b_per_param']:.2f} B/param "
              f"({'meets' if rad['working_b_per_param'] <= 2 else 'MISSES'} the 2 B/param target); extra memory vs radix: "
              + ', '.join(f"{m} {by[m]['extra_mb'] / max(rad['extra_mb'], 1e-9):.1f}x" for m in METHODS[1:])
              + '; time vs radix: ' + ', '.join(f"{m} {by[m]['seconds'] / rad['seconds']:.1f}x" for m in METHODS[1:]))


if __name__ == '__main__':
    if len(sys.argv) == 4 and sys.argv[1] == '--one': print(json.dumps(one(sys.argv[2], sys.argv[3])))
    else: main()
