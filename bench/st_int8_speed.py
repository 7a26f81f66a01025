"""The int8 files `gaprune slim --export` writes, timed as its report times them, for saved frontier points.

    OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 python bench/st_int8_speed.py [--work /tmp/frontier_work] > results/bench/st_int8_speed.txt

For each point (a copy of its saved folder): `export_st_onnx` writes `onnx/model_qint8_avx512_vnni.onnx` (per output
channel, `--export onnx-int8`) and `onnx/model_qint8_per_tensor.onnx` (per matrix, `--export onnx-int8-tensor`; the
same quantization as `export_onnx`'s int8 graph, which page 18 scores as `+int8-eager`), and `onnx_speedup` times each
against the point's dense model (2 threads, batch 32 x 128 tokens and one text): the figure `slim --export` puts in
its report and card. Points: mpnet's `slim --speedup 2` at 400 steps and MiniLM's distilled 800-step points planned
with the steady timing, seeds 1 and 2 (the int8 goal's candidates on page 18).
"""
import argparse, platform, shutil, sys, tempfile
from pathlib import Path

import torch

from gaprune_nb.core import Encoder
from gaprune_nb.onnx_export import export_st_onnx
from gaprune_nb.onnx_speed import onnx_speedup

POINTS = ('mpnet-slim2-importance-contrastive-400steps-s{s}', 'slim2-importance-distill+contrastive-800steps-steady-s{s}')   # the default points
KINDS = ('onnx-int8', 'onnx-int8-tensor')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--work', default='/tmp/frontier_work')
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--points', nargs='+', default=list(POINTS), help='which saved points ({s}: the seed), of mpnet or MiniLM on finance')
    a = ap.parse_args()
    work, tmp = Path(a.work), Path(tempfile.mkdtemp())
    torch.set_num_threads(2)
    print(f'# st_int8_speed: 2 threads, batch 32 x 128 tokens and one text, onnx_speedup (dense before and after, the graph alone between), '
          f'torch {torch.__version__}, {platform.processor() or platform.machine()}')
    for point in a.points:
        dense = ('mpnet-' if point.startswith('mpnet-') else '') + 'dense-s{s}'
        for s in a.seeds:
            name = point.format(s=s)
            if not (work/name/'config.json').exists(): print(f'# {name}: not saved under {work}', file=sys.stderr); continue
            folder = shutil.copytree(work/name, tmp/name)
            paths = export_st_onnx(folder, KINDS, card=False)
            ref = Encoder.from_pretrained(work/dense.format(s=s), device='cpu')
            for k in KINDS:
                r = onnx_speedup(ref, paths[k], 128, 32, 2)
                print(f"{name:60s} {k:17s} batch {r['batch_speedup']:5.2f}x  one text {r['single_speedup']:5.2f}x  "
                      f"(others busy: {r['others']:.1f} cores; {r['runtime']}; {r['allocator']})", flush=True)
            shutil.rmtree(folder)


if __name__ == '__main__': main()
