"""CPU encode speed of dense vs self-slimmed vs MLP-dropped models, beside their parameter and FLOP reductions.

    HF_HUB_OFFLINE=1 python bench/slim_speed.py > results/bench/slim_speed.txt

For all-MiniLM-L6-v2 and SmolLM2-135M: the dense model; 30% and 50% of the MLP neurons removed (`remove_neurons`,
one global ranking of neuron magnitude: the speed depends on the shapes, not on which neurons go); and the MLP
sub-layers of a third of the layers dropped (`drop_sublayers`, EffiR's coarse step). Inputs are random token ids of
a fixed batch and length without padding, so every model does the same work per text. FLOPs are counted by
`torch.utils.flop_counter.FlopCounterMode` on that batch (matrix products; norms and activations are not counted).
Each model runs `--rounds` times, interleaved with the others (background load hits all alike); the median time of
a forward pass counts. Speed-up and FLOP ratio are dense / model, from this one run; the target is
speed-up >= 0.9 x FLOP ratio for the slimmed models.
"""
import argparse, copy, platform, statistics, time

import torch
from torch.utils.flop_counter import FlopCounterMode

from gaprune_nb.arch import drop_sublayers, find_layers
from gaprune_nb.core import Encoder
from gaprune_nb.dai import importance
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--models', nargs='+', default=['minilm', 'smollm2'])
    ap.add_argument('--threads', nargs='+', type=int, default=[1, 2])
    ap.add_argument('--batch', type=int, default=32)
    ap.add_argument('--length', type=int, default=128)
    ap.add_argument('--rounds', type=int, default=7)
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
        for t in a.threads:
            torch.set_num_threads(t)
            times = {k: [] for k in models}
            with torch.inference_mode():
                for k, m in models.items(): m.model(input_ids=ids, attention_mask=mask)  # warm-up
                for _ in range(a.rounds):
                    for k, m in models.items():
                        t0 = time.perf_counter(); m.model(input_ids=ids, attention_mask=mask)
                        times[k].append(time.perf_counter() - t0)
            med = {k: statistics.median(v) for k, v in times.items()}
            for k, m in models.items():
                sp, fr = med['dense'] / med[k], fl['dense'] / fl[k]
                print(f'{name:8s} {k:12s} {t:7d} {n_params(m) / 1e6:9.2f} {fl[k] / 1e9:8.2f} {1e3 * med[k]:9.1f} '
                      f'{a.batch / med[k]:8.1f} {n_params(models["dense"]) / n_params(m):11.3f} {fr:10.3f} {sp:8.3f} {sp / fr:13.3f}',
                      flush=True)


if __name__ == '__main__': main()
