"""Which ONNX graph onnxruntime runs fastest: the same model exported in three forms, timed in one run.

    OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/onnx_forms.py > results/bench/onnx_forms.txt
    OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/onnx_forms.py --quant > results/bench/onnx_int8_settings.txt

transformers runs BERT-like attention through torch's `scaled_dot_product_attention` ("sdpa") unless told otherwise.
Traced by the dynamo exporter, that becomes a graph whose attention guards fully masked rows with `IsNaN` and `Where`
over the whole batch x heads x tokens x tokens score tensor. The forms:
  sdpa+dynamo         how `gaprune_nb.onnx_export` exported until 2026-11-27 (the model's own attention, dynamo exporter)
  eager+dynamo        transformers' eager attention (matmul, additive mask, softmax), dynamo exporter
  eager+torchscript   eager attention, TorchScript exporter: what the package exports now
For MiniLM dense, MiniLM with half its MLP neurons removed (slim-50, as bench/slim_speed.py makes it) and mpnet dense:
each form's fp32 and int8 graph (onnxruntime dynamic quantization of the MatMuls, as `export_onnx` writes it), timed in
onnxruntime at 2 threads, one session at a time, after the PyTorch models (interleaved among themselves; batch 32 x 128
tokens and one text of 128 tokens; median of 7 rounds); speed-up = PyTorch dense / graph, in this one run. Then the cosine of each int8 graph's embeddings to
PyTorch's on 64 finance passages (the forms compute the same function; int8 rounds it), and onnxruntime's profile of
MiniLM dense's int8 graph in the old and the new form: the share of time per operator type.

With --quant: the new form's fp32 graph quantized two ways, timed and compared the same way:
  per-tensor MatMul   what `export_onnx` writes (model_int8.onnx; the frontier's +int8 points): MatMul weights int8, one
                      scale per matrix
  per-channel (ST)    what `export_st_onnx` writes for sentence-transformers (`gaprune slim --export onnx-int8`):
                      `ST_INT8`, optimum's avx512_vnni settings: one scale per output channel, symmetric, every
                      integer-capable operator (the embedding lookup too)
"""
import collections, json, os, platform, sys, tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slim_speed import variants  # noqa: E402  (the slim-50 model, one definition)

from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import minilm_path, mpnet_path
from gaprune_nb.onnx_export import ST_INT8, TENSOR_INT8, OnnxEncoder, _Embed, _quantize, _trace
from gaprune_nb.onnx_speed import _Graph
from gaprune_nb.speed import allocator, encode_times, steady_allocator

FORMS = {'sdpa+dynamo': (None, 'dynamo'), 'eager+dynamo': ('eager', 'dynamo'), 'eager+torchscript': ('eager', 'torchscript')}
THREADS, BATCH, TOKENS, ROUNDS = 2, 32, 128, 7


QUANTS = {'per-tensor MatMul': TENSOR_INT8, 'per-channel (ST)': ST_INT8}


def export(enc, form, d, quants=('per-tensor MatMul',)) -> dict:
    "{'fp32': path, quantization: path} of `enc` exported in `form` ('int8' for the first quantization)."
    attn, exporter = FORMS[form]
    b = enc.tokenize(['an example text to trace', 'another'], 'document')
    d.mkdir(parents=True)
    _trace(_Embed(enc).eval(), (b['input_ids'], b['attention_mask']), d/'model.onnx', ['input_ids', 'attention_mask'], ['sentence_embedding'],
           attention=attn, exporter=exporter)
    out = {'fp32': d/'model.onnx'}
    for i, q in enumerate(quants):
        out['int8' if i == 0 and len(quants) == 1 else q] = d/f'model_int8_{i}.onnx'
        _quantize(d/'model.onnx', d/f'model_int8_{i}.onnx', **QUANTS[q])
    return out


def ort_time(path, ids, mask) -> float:
    """Median seconds per run of one graph, its session alone: an idle onnxruntime session's threads spin for a while
    after each run, so sessions timed interleaved on 2 cores slow each other (one text: up to 3x)."""
    return _Graph(path, THREADS).seconds({'input_ids': ids, 'attention_mask': mask}, ROUNDS)


def profile(path, ids, mask, runs=4) -> dict:
    "Share of onnxruntime's kernel time per operator type over `runs` runs."
    import onnxruntime as ort
    so = ort.SessionOptions(); so.intra_op_num_threads = THREADS; so.inter_op_num_threads = 1
    so.enable_profiling = True; so.profile_file_prefix = str(Path(tempfile.mkdtemp())/'p')
    s = ort.InferenceSession(str(path), so, providers=['CPUExecutionProvider'])
    for _ in range(runs): s.run(None, {'input_ids': ids.numpy(), 'attention_mask': mask.numpy()})
    ev = json.loads(Path(s.end_profiling()).read_text())
    t = collections.Counter()
    for e in ev:
        if e.get('cat') == 'Node' and e['name'].endswith('_kernel_time'): t[e['args']['op_name']] += e['dur']
    tot = sum(t.values())
    return {k: (v / tot, v / runs / 1e3) for k, v in t.most_common()}


def main():
    quant = '--quant' in sys.argv[1:]
    forms, quants = (['eager+torchscript'], tuple(QUANTS)) if quant else (list(FORMS), ('per-tensor MatMul',))
    torch.set_num_threads(THREADS); steady_allocator()
    print(f'# onnx_forms: {THREADS} threads, batch {BATCH} x {TOKENS} tokens and 1 x {TOKENS}, {ROUNDS} rounds (median), torch {torch.__version__}, '
          f'{platform.processor() or platform.machine()}, {os.cpu_count()} cores, allocator: {allocator()}')
    import onnxruntime as ort
    print(f'# onnxruntime {ort.__version__}; speed-up = PyTorch dense / model, in this run')
    print(f'{"model":8s} {"variant":9s} {"form":18s} {"graph":{18 if quant else 5}s} {"ms/batch":>9s} {"batch x":>8s} {"ms/text":>8s} {"1 text x":>8s}')
    work, cos_lines = Path(tempfile.mkdtemp()), []
    g = torch.Generator().manual_seed(0)
    for name, path in (('minilm', minilm_path), ('mpnet', mpnet_path)):
        enc = Encoder.from_pretrained(path()).eval()
        models = {'dense': enc} if name == 'mpnet' else {k: v for k, v in variants(enc).items() if k in ('dense', 'slim-50')}
        graphs = {(v, f, k): p for v, m in models.items() for f in forms for k, p in export(m, f, work/name/v/f, quants).items()}
        res = {}
        for b in (BATCH, 1):
            ids = torch.randint(1000, 5000, (b, TOKENS), generator=g); mask = torch.ones_like(ids)
            pt = encode_times(models, TOKENS, b, THREADS, rounds=ROUNDS)
            ot = {k: ort_time(p, ids, mask) for k, p in graphs.items()}
            res[b] = {**{(v, 'pytorch', ''): t for v, t in pt.items()}, **ot}
        for key in res[BATCH]:
            v, f, k = key
            print(f'{name:8s} {v:9s} {f:18s} {k:{18 if quant else 5}s} {1e3 * res[BATCH][key]:9.1f} {res[BATCH][("dense", "pytorch", "")] / res[BATCH][key]:8.2f} '
                  f'{1e3 * res[1][key]:8.2f} {res[1][("dense", "pytorch", "")] / res[1][key]:8.2f}', flush=True)
        from gaprune_nb.data import domain_triplets
        texts = list(domain_triplets('finance', limit=64)['positive'])
        for (v, f, k), p in graphs.items():
            if k == 'fp32': continue
            ref = models[v].encode(texts, normalize=True)
            c = (OnnxEncoder(p, models[v], threads=THREADS).encode(texts, normalize=True) * ref).sum(1)
            cos_lines.append(f'# {name} {v} {f} {k}: cosine to the PyTorch embedding over {len(texts)} finance passages, min {c.min():.4f} mean {c.mean():.4f}')
        if name == 'minilm' and not quant:
            ids = torch.randint(1000, 5000, (BATCH, TOKENS), generator=g); mask = torch.ones_like(ids)
            for f in ('sdpa+dynamo', 'eager+torchscript'):
                pr = profile(graphs[('dense', f, 'int8')], ids, mask)
                print(f'# profile, minilm dense {f} int8, batch {BATCH}: ' + ', '.join(f'{op} {100 * s:.0f}% ({ms:.0f} ms)' for op, (s, ms) in list(pr.items())[:8]))
    print('\n'.join(cos_lines))


if __name__ == '__main__': main()
