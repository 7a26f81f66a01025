"""Does the CPU speed-up depend on the memory allocator's state? (issue 33, page 18 "Timing and the allocator")

Times a saved slimmed point against the dense model three times in one fresh process (`measure_speedup`, batch 32 x 128
tokens and one text, 2 threads) and prints each model's milliseconds for a batch. Run it once with glibc malloc's
defaults (GAPRUNE_MALLOC=asis: without it the package's timing keeps the buffers itself, `steady_allocator`) and once
with large buffers kept on the heap:
    GAPRUNE_MALLOC=asis OMP_NUM_THREADS=2 python bench/allocator_check.py POINT_FOLDER
    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 OMP_NUM_THREADS=2 python bench/allocator_check.py POINT_FOLDER
"""
import sys
from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import minilm_path
from gaprune_nb.speed import allocator, measure_speedup

def main(folder:str):
    dense, enc = Encoder.from_pretrained(minilm_path()), Encoder.from_pretrained(folder)
    env = allocator()
    for i in range(3):
        r = measure_speedup(dense, enc, 128, 32, 2)
        ms = {k: round(v * 1000, 1) for k, v in r['batch_seconds'].items()}
        print(f"{env}: pass {i}: batch {r['batch_speedup']:.2f}x (dense {ms['dense']} ms, model {ms['model']} ms), one text {r['single_speedup']:.2f}x", flush=True)

if __name__ == '__main__': main(sys.argv[1])
