#!/usr/bin/env python3
"""GPU memory per scored parameter of gradient statistics, scoring and selection, measured on random-weight embedders
of 0.3B to 7B parameters in bf16 on one GPU: the extrapolation of `bench/memory.py` (on paper, from CPU runs) put to
the test.

    HF_HUB_OFFLINE=1 GAPRUNE_DATA=../shared/data python bench/gpu_memory.py [MODEL ...] > results/bench/gpu_memory.txt

(`GPU_BENCH_METHODS=magnitude,obd-kfac` measures only those methods; magnitude first, as the reference.
`--estimates` (no GPU needed) -> results/bench/memory_estimate.txt: prune_run's memory estimate against these peaks.)

Each (model, method) runs in a fresh process with the model built directly on the GPU (random weights, bf16: a
measurement of memory, not of quality), the statistics on 8 general + 8 finance triplets of 128 tokens in batches of
8 (the pipeline's defaults, the paper's loss with in-batch negatives), then `importance(lazy=True)` and `make_mask` at
50% as `prune_run` calls them. Figures are from PyTorch's allocator (`torch.cuda.max_memory_allocated`): *extra* =
the phase's peak minus what was allocated when it began (the model's weights), in fp32 values per scored weight.
The host's resident-set growth during scoring is printed too (selection keeps its bookkeeping on the host).
A run that does not fit is reported as out of memory, not hidden.
"""
import json, os, subprocess, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from memory import GEMMA, SHAPES, hwm, per, reset_peak, rss  # the CPU benchmark's model shape and helpers

METHODS = ('magnitude', 'gaprune', 'obd-kfac', 'balanced', 'gaprune-paper')
_QWEN3 = dict(num_key_value_heads=8, head_dim=128, vocab_size=151669, max_position_embeddings=4096, tie_word_embeddings=True)
SPECS = {  # name: (model_type, config): the shapes of the embedders of `memory.SHAPES`
    'gemma3-300m': ('gemma3_text', dict(GEMMA)),
    'qwen3-0.6b': ('qwen3', dict(_QWEN3, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16)),
    'qwen3-4b': ('qwen3', dict(_QWEN3, hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32)),
    'mistral-7b': ('mistral', dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                                   num_key_value_heads=8, vocab_size=32000, max_position_embeddings=4096)),
}


def load(name, dtype='bfloat16'):
    "A random-weight `Encoder` of `SPECS[name]`, built on the GPU in `dtype` (on the CPU without one)."
    import torch
    from transformers import AutoConfig, AutoModel
    from gaprune_nb.core import Encoder
    from gaprune_nb.fixtures import tiny_tokenizer
    mt, kw = SPECS[name]
    tok = tiny_tokenizer(mt)
    cfg = AutoConfig.for_model(mt, **kw, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    with torch.device('cuda' if torch.cuda.is_available() else 'cpu'):
        m = AutoModel.from_config(cfg, dtype=getattr(torch, dtype)).eval()
    return Encoder(m, tok, pooling='mean' if mt.startswith('gemma') else 'last', max_length=128)


def child(name, meth, dtype='bfloat16', batch='8'):
    "One measurement in its own process: print a JSON line."
    import gc, torch
    from gaprune_nb.arch import mlp_linears
    from gaprune_nb.data import domain_triplets, load_triplets
    from gaprune_nb.methods import importance
    from gaprune_nb.fisher import gradient_statistics
    from gaprune_nb.masks import make_mask
    from gaprune_nb.registry import REGISTRY, stat_fields
    import gaprune_nb.saliency  # registers the OBD scorers
    cuda = torch.cuda.is_available()
    alloc = torch.cuda.memory_allocated if cuda else rss
    peak = torch.cuda.max_memory_allocated if cuda else hwm
    def reset():
        gc.collect()
        if cuda: torch.cuda.synchronize(); torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()
        else: reset_peak()
        return alloc()
    batch = int(batch)
    gen, dom = domain_triplets('general', limit=3).select(range(8)), load_triplets('finance/fin_qa10k', limit=8)
    t = time.perf_counter(); enc = load(name, dtype)
    out = dict(model=name, method=meth, dtype=dtype, device=torch.cuda.get_device_name() if cuda else 'cpu',
               params=sum(p.numel() for p in enc.parameters()), scored=sum(m.weight.numel() for m in mlp_linears(enc).values()),
               weights=alloc(), load_s=round(time.perf_counter() - t, 1))
    fields, stats = stat_fields(meth), None
    try:
        if fields:
            kw = dict(batch_size=batch, fields=fields, in_batch=True, show_progress=False)
            gradient_statistics(enc, gen.select([0]), dom.select([0]), **dict(kw, batch_size=1))  # warm-up: kernels, allocator pools
            base = reset(); t = time.perf_counter()
            stats = gradient_statistics(enc, gen, dom, **kw)
            if cuda: torch.cuda.synchronize()
            out.update(stats_extra=peak() - base, stats_s=round(time.perf_counter() - t, 2), stats_held=alloc() - base)
        base = reset(); host = rss(); reset_peak(); t = time.perf_counter()
        mask = make_mask(importance(meth, enc, stats=stats, calib=dom, lazy=True), 0.5, scope=REGISTRY[meth].scope)
        if cuda: torch.cuda.synchronize()
        out.update(score_extra=peak() - base, score_s=round(time.perf_counter() - t, 2), host_score_extra=hwm() - host,
                   kept=round(sum(int(m.sum()) for m in mask.values()) / out['scored'], 4))
        out['total_extra'] = max(out.get('stats_extra', 0), out['score_extra'] + out.get('stats_held', 0))
    except torch.OutOfMemoryError as e:
        out['oom'] = str(e).split('.')[0]
    print(json.dumps(out), flush=True)


def run(name, meth):
    r = subprocess.run([sys.executable, __file__, '--child', name, meth], capture_output=True, text=True,
                       env=dict(os.environ, MALLOC_MMAP_THRESHOLD_='65536'))
    if r.returncode: return dict(model=name, method=meth, failed=r.stderr.strip().splitlines()[-1][:200])
    return json.loads(r.stdout.strip().splitlines()[-1])


def line(r:dict, mag:int) -> str:
    "One table row of a child's JSON `r`; `mag`: magnitude's `total_extra` on the same model."
    n, gb = r['scored'], lambda b: f"{b / 1e9:9.2f}"
    return (f"{r['model']:12s} {r['method']:14s} {r['params'] / 1e9:6.2f}B {n / 1e9:6.2f}B {r['weights'] / 1e9:10.2f} {gb(r.get('stats_extra', 0))} "
            f"{gb(r['score_extra'])} {r['total_extra'] / 1e9:8.2f} {per(r.get('stats_extra', 0), n):6.2f} {per(r['total_extra'], n):6.2f} "
            f"{per(r['total_extra'] - mag, n):+8.2f} {r['host_score_extra'] / 2**20:8.0f} {r.get('stats_s', 0):8.2f} {r['score_s']:8.2f}")


def main(models):
    import platform, torch
    print(__doc__.split('\n\n')[0].strip('\n'))
    print(f"\n{torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU'}  {platform.node()}  torch {torch.__version__}  "
          f"{time.strftime('%Y-%m-%d')}\n")
    print(f"{'model':12s} {'method':14s} {'params':>7s} {'scored':>7s} {'weights GB':>10s} {'stats GB':>9s} {'score GB':>9s} "
          f"{'peak GB':>8s} {'stats':>6s} {'peak':>6s} {'vs mag.':>8s} {'host MB':>8s} {'stats s':>8s} {'score s':>8s}")
    for name in models:
        mag = None
        for meth in os.environ.get('GPU_BENCH_METHODS', ','.join(METHODS)).split(','):
            r = run(name, meth)
            if 'failed' in r or 'oom' in r:
                print(f"{name:12s} {meth:14s} {'out of GPU memory: ' + r['oom'] if 'oom' in r else 'failed: ' + r['failed']}", flush=True)
                continue
            mag = mag or r['total_extra']
            print(line(r, mag), flush=True)
    print("\nGB: GPU memory from PyTorch's allocator (weights: the bf16 model; stats: the statistics pass's peak beyond the")
    print("weights, one batch's activations included; score: scoring + selection's peak beyond the weights and the statistics")
    print("held; peak: the larger of stats and score + held statistics). stats / peak / vs mag.: the same in fp32 values per")
    print("scored weight (targets of issue 14: stats <= 5, peak - magnitude's <= +5). host MB: resident-set growth on the")
    print(f"host during scoring. Paper shapes: {', '.join(SHAPES)} (bench/memory.py's extrapolation).")


def _meta(mt, kw, dtype, tok):
    "An `Encoder` of that shape on the meta device (no memory): enough for `memory_needed`."
    import torch
    from transformers import AutoConfig, AutoModel
    from gaprune_nb.core import Encoder
    with torch.device('meta'): m = AutoModel.from_config(AutoConfig.for_model(mt, **kw, pad_token_id=tok.pad_token_id), dtype=dtype)
    return Encoder(m, tok, pooling='last', max_length=128)


def estimates():
    """`--estimates`: `prune_run`'s memory estimate (`memory_needed`, `memory_total`) for `obd-kfac` at batch 8 and 128
    tokens, next to the peaks measured here (results/bench/gpu_memory.txt) and on the CPU (results/bench/memory.txt)."""
    import re, torch
    from transformers import AutoConfig
    from gaprune_nb.core import Encoder
    from gaprune_nb.fixtures import minilm_path, smollm2_path, tiny_tokenizer
    from gaprune_nb.memory import memory_needed, memory_total
    from gaprune_nb.options import RunConfig
    import gaprune_nb.saliency  # registers the OBD scorers
    res = Path(__file__).parent.parent/'results'/'bench'
    gpu = {m.group(1): float(m.group(2)) for m in re.finditer(r'^(\S+)\s+obd-kfac\s+(?:\S+\s+){3}(\S+)', (res/'gpu_memory.txt').read_text(), re.M)}
    cpu = {m.group(1): float(m.group(2)) for m in re.finditer(r'^(\S+)\s+obd-kfac\s+\S+\s+(\S+)', (res/'memory.txt').read_text(), re.M)}
    cfg = RunConfig(method='obd-kfac', max_length=128)
    print("`obd-kfac`, batch 8, 128 tokens: prune_run's estimate beyond the model against the measured peak.")
    print(f"GPU, bf16 (measured: 'stats GB' of results/bench/gpu_memory.txt):\n{'model':12s} {'activations':>12s} {'memory_total':>13s} {'measured':>9s} {'ratio':>6s}")
    for name in ('gemma3-300m', 'qwen3-4b', 'mistral-7b'):
        mt, kw = SPECS[name]
        need = memory_needed(_meta(mt, kw, torch.bfloat16, tiny_tokenizer(mt)), cfg)
        print(f"{name:12s} {need['activations'] / 1e9:9.2f} GB {memory_total(need) / 1e9:10.2f} GB {gpu[name]:6.2f} GB {memory_total(need) / 1e9 / gpu[name]:6.2f}")
    print(f"CPU, fp32, activations alone (measured: 'act. MB' of results/bench/memory.txt):\n{'model':12s} {'activations':>12s} {'measured':>9s} {'ratio':>6s}")
    encs = {'minilm': lambda: Encoder.from_pretrained(minilm_path(), max_length=128),
            'smollm2': lambda: _meta('llama', {k: v for k, v in AutoConfig.from_pretrained(smollm2_path()).to_diff_dict().items()
                                          if k not in ('pad_token_id', 'model_type')}, torch.float32, tiny_tokenizer('llama')),
            'gemma3-300m': lambda: _meta('gemma3_text', GEMMA, torch.float32, tiny_tokenizer('gemma3_text'))}
    for name, make in encs.items():
        a = memory_needed(make(), cfg)['activations'] / 2**20
        print(f"{name:12s} {a:9.0f} MB {cpu[name]:6.0f} MB {a / cpu[name]:6.2f}")


if __name__ == '__main__':
    if sys.argv[1:2] == ['--child']:
        import gaprune_nb.core
        child(*sys.argv[2:6])
    elif sys.argv[1:2] == ['--estimates']: estimates()
    else: main(sys.argv[1:] or list(SPECS))
