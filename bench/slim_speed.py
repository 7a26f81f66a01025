"""CPU encode speed of dense vs self-slimmed vs MLP-dropped models, beside their parameter and FLOP reductions.

    HF_HUB_OFFLINE=1 python bench/slim_speed.py > results/bench/slim_speed.txt
    HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/slim_speed.py --models minilm --onnx > results/bench/slim_speed_onnx.txt

For all-MiniLM-L6-v2 and SmolLM2-135M: the dense model; 30% and 50% of the MLP neurons removed (`remove_neurons`,
one global ranking of neuron magnitude: the speed depends on the shapes, not on which neurons go); and the MLP
sub-layers of a third of the layers dropped (`drop_sublayers`, EffiR's coarse step). Inputs are random token ids of
a fixed batch and length without padding, so every model does the same work per text. With `--onnx`, dense and
slim-50 are also exported (`gaprune_nb.onnx_export`: the whole encoder, fp32, and int8 by onnxruntime's dynamic
quantization) and timed in onnxruntime with the same thread counts (`<variant>+onnx`, `<variant>+int8`; their FLOP
ratio is the PyTorch variant's), with the cosine of their embeddings to PyTorch's on 64 finance passages. FLOPs are counted by
`torch.utils.flop_counter.FlopCounterMode` on that batch (matrix products; norms and activations are not counted).
Each model runs `--rounds` times, interleaved with the others (background load hits all alike); the median time of
a forward pass counts. Speed-up and FLOP ratio are dense / model, from this one run; the target is
speed-up >= 0.9 x FLOP ratio for the slimmed models.
"""
import argparse, copy, platform, statistics, tempfile, time

import torch
from torch.utils.flop_counter import FlopCounterMode

from gaprune_nb.arch import drop_sublayers, find_layers
from gaprune_nb.core import Encoder
from gaprune_nb.methods import importance
from gaprune_nb.fixtures import minilm_path, smollm2_path
from gaprune_nb.slimming import neuron_scores, remove_neurons, select_neurons


def variants(enc:Encoder) -> dict:
    "name -> model: dense, slim-30, slim-50, MLP sub-layers of a third of the layers dropped (the last ones but the final)."
    out = {'dense': enc}
    scores = neuron_scores(enc, importance('magnitude', enc))
    for cut in (30, 50):
        m = copy.deepcopy(enc)
        remove_neurons(m, select_neurons(scores, keep=1 - cut / 100))
        out[f'slim-{cut}'] = m
    n = len(find_layers(enc))
    k = max(1, n // 3)
    out[f'drop-{k}-mlp'] = drop_sublayers(copy.deepcopy(enc), mlp=range(n - 1 - k, n - 1))
    return out


def n_params(m) -> int: return sum(p.numel() for p in m.parameters())


def flops(m, ids, mask) -> int:
    with FlopCounterMode(display=False) as fc, torch.inference_mode(): m.model(input_ids=ids, attention_mask=mask)
    return fc.get_total_flops()


def export_all(models, d) -> dict:
    "'<variant>+onnx' / '<variant>+int8' -> ONNX file of dense and slim-50 (`gaprune_nb.onnx_export`)."
    from gaprune_nb.onnx_export import export_onnx
    out = {}
    for k in ('dense', 'slim-50'):
        p = export_onnx(models[k], f'{d}/{k}')
        out[f'{k}+onnx'], out[f'{k}+int8'] = p['fp32'], p['int8']
    return out


def session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions(); so.intra_op_num_threads = threads; so.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=['CPUExecutionProvider'])


def feeds(ids, mask): return {'input_ids': ids.numpy(), 'attention_mask': mask.numpy()}


def onnx_times(onnx, threads, ids, mask, rounds) -> dict:
    "Seconds per batch of each ONNX graph in onnxruntime with `threads` intra-op threads (after a warm-up run)."
    sess = {k: session(p, threads) for k, p in onnx.items()}
    times = {k: [] for k in sess}
    for s in sess.values(): s.run(None, feeds(ids, mask))
    for _ in range(rounds):
        for k, s in sess.items():
            t0 = time.perf_counter(); s.run(None, feeds(ids, mask)); times[k].append(time.perf_counter() - t0)
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--models', nargs='+', default=['minilm', 'smollm2'])
    ap.add_argument('--threads', nargs='+', type=int, default=[1, 2])
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--length', type=int, default=128)
    ap.add_argument('--rounds', type=int, default=7)
    ap.add_argument('--onnx', action='store_true', help='also the ONNX graphs (fp32 and int8) of dense and slim-50 in onnxruntime')
    a = ap.parse_args()
    print(f'# slim_speed: batch {a.batch} x {a.length} tokens, {a.rounds} rounds (median), torch {torch.__version__}, '
          f'{platform.processor() or platform.machine()}')
    print(f'{"model":8s} {"variant":12s} {"threads":>7s} {"params M":>9s} {"GFLOP":>8s} {"ms/batch":>9s} {"texts/s":>8s} '
          f'{"param ratio":>11s} {"FLOP ratio":>10s} {"speed-up":>8s} {"speed-up/FLOP":>13s}')
    for name in a.models:
        enc = Encoder.from_pretrained(minilm_path() if name == 'minilm' else smollm2_path()).eval()
        models = variants(enc)
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(1000, 5000, (a.batch, a.length), generator=g)
        mask = torch.ones_like(ids)
        fl = {k: flops(m, ids, mask) for k, m in models.items()}
        onnx = export_all(models, tempfile.mkdtemp()) if a.onnx else {}
        for t in a.threads:
            torch.set_num_threads(t)
            times = {k: [] for k in models}
            with torch.inference_mode():
                for k, m in models.items(): m.model(input_ids=ids, attention_mask=mask)  # warm-up
                for _ in range(a.rounds):
                    for k, m in models.items():
                        t0 = time.perf_counter(); m.model(input_ids=ids, attention_mask=mask)
                        times[k].append(time.perf_counter() - t0)
            if a.onnx: times.update(onnx_times(onnx, t, ids, mask, a.rounds))
            med = {k: statistics.median(v) for k, v in times.items()}
            for k in med:
                m = models[k.split('+')[0]]
                sp, fr = med['dense'] / med[k], fl['dense'] / fl[k.split('+')[0]]
                print(f'{name:8s} {k:12s} {t:7d} {n_params(m) / 1e6:9.2f} {fl[k.split("+")[0]] / 1e9:8.2f} {1e3 * med[k]:9.1f} '
                      f'{a.batch / med[k]:8.1f} {n_params(models["dense"]) / n_params(m):11.3f} {fr:10.3f} {sp:8.3f} {sp / fr:13.3f}',
                      flush=True)
        if a.onnx:  # how close the exported graphs are to PyTorch, on real finance texts
            from gaprune_nb.data import domain_triplets
            from gaprune_nb.onnx_export import OnnxEncoder
            texts = list(domain_triplets('finance', limit=64)['positive'])
            for k, path in onnx.items():
                ref = models[k.split('+')[0]].encode(texts, normalize=True)
                cos = (OnnxEncoder(path, models[k.split('+')[0]], threads=1).encode(texts, normalize=True) * ref).sum(1)
                print(f'# {name} {k}: cosine to the PyTorch embedding over {len(texts)} finance passages, min {cos.min():.4f} mean {cos.mean():.4f}')

if __name__ == '__main__': main()
