#!/usr/bin/env python3
"""Peak memory per scored parameter of gradient statistics, scoring and selection, and what it means for big embedders.

    OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 GAPRUNE_DATA=../shared/data .venv/bin/python bench/memory.py > results/bench/memory.txt

Every (model, method) runs in a fresh subprocess. After the model is loaded, the peak resident set size is reset
(`/proc/self/clear_refs`, Linux) and each phase's peak is read from `VmHWM`; *extra* = that peak minus the resident
size when the phase started, i.e. everything the phase allocated at its worst moment, model excluded.
`MALLOC_MMAP_THRESHOLD_=65536` (set for the subprocesses) makes glibc return freed blocks, so RSS follows live memory.

Phases:
  statistics   `gradient_statistics` with the fields the method reads (`options.stat_fields`) and the pipeline's defaults
               (the paper's loss with in-batch negatives, batch 8): 8 general + 8 finance triplets, 128 tokens (the
               activations of such a batch are in the figure)
  scoring      `importance(lazy=True)` as `prune_run` calls it (scores made matrix by matrix where the method allows;
               for Wanda / the default, a calibration pass over the same 8 domain triplets) followed
               by `make_mask` at 50% in the method's scope, with the statistics still held
Figures per scored parameter are in fp32 values (extra bytes / 4 / scored weights). The target of issue 14: statistics
<= 5 fp32 values per scored parameter, and statistics + scoring <= the magnitude peak + 5.

Models: all-MiniLM-L6-v2 (22.7M parameters, 7.1M scored), SmolLM2-135M (GGUF fixture, 80M scored) and a random-weight
Gemma3 text embedder shaped like EmbeddingGemma-300M (hidden 768, MLP 1152, 24 layers, vocabulary 262,144: 303M
parameters, 64M scored). Then an extrapolation, on paper, from the measured per-parameter costs to 0.6B / 4B / 7B
embedders (Qwen3-Embedding shapes) on one 80 GB GPU and on 8: data-parallel statistics (`torchrun`) divide the time,
not the memory: every process holds the model and the accumulators (`--stats-groups K` divides those by K).

Last, whole `gaprune prune` runs on a random-weight decoder shaped like Qwen2-0.5B (the model a 24 GB machine could not
prune before, issue 14): the peak resident memory of the process, for magnitude, the default and `obd-kfac`.
`--end-to-end` runs only that part; `--batch-study` only the statistics batch sizes for MiniLM's `obd-kfac`;
`--recompute-study` (-> results/bench/memory_recompute.txt) `obd-kfac` with and without `--recompute`;
`--recompute-study balanced` (-> results/bench/memory_recompute_balanced.txt) another method, N = 0 and 1;
`--groups-study [MODEL ...]` (-> results/bench/memory_groups.txt) `gaprune-paper` with `--stats-groups` and `--recompute`.
"""
import json, os, shutil, subprocess, sys, time
from pathlib import Path

METHODS = ('magnitude', 'gaprune', 'obd-kfac', 'balanced', 'gaprune-paper')
MODELS = ('minilm', 'smollm2', 'gemma3-300m')
GEMMA = dict(hidden_size=768, intermediate_size=1152, num_hidden_layers=24, num_attention_heads=3, num_key_value_heads=1,
             head_dim=256, vocab_size=262144, max_position_embeddings=2048, sliding_window=512)


def rss() -> int: return _status('VmRSS')
def hwm() -> int: return _status('VmHWM')
def _status(key) -> int:
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'): return int(line.split()[1]) * 1024
    raise KeyError(key)
def reset_peak(): open('/proc/self/clear_refs', 'w').write('5')


def load(name):
    import torch
    from transformers import AutoConfig, AutoModel
    from gaprune_nb.core import Encoder
    from gaprune_nb.fixtures import minilm_path, smollm2_path, tiny_tokenizer
    if name == 'minilm': return Encoder.from_pretrained(minilm_path(), max_length=128)
    if name == 'smollm2': return Encoder.from_pretrained(smollm2_path(), pooling='last', max_length=128)
    tok = tiny_tokenizer('gemma3_text')
    cfg = AutoConfig.for_model('gemma3_text', **GEMMA, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    return Encoder(AutoModel.from_config(cfg).eval(), tok, pooling='mean', max_length=128)


def child(name, meth, batch='8', recompute='0', groups='1'):
    "One measurement (in its own process), statistics in batches of `batch` triplets: print a JSON line."
    batch, recompute, groups = int(batch), int(recompute), int(groups)
    import gc, tempfile, torch
    from gaprune_nb.arch import mlp_linears
    from gaprune_nb.data import domain_triplets, load_triplets
    from gaprune_nb.methods import importance
    from gaprune_nb.fisher import grad_stream, gradient_statistics
    from gaprune_nb.masks import make_mask
    from gaprune_nb.registry import REGISTRY, stat_fields
    from gaprune_nb.stat_groups import grouped_statistics
    import gaprune_nb.saliency  # registers the OBD scorers
    torch.manual_seed(0)
    gen, dom = domain_triplets('general', limit=3).select(range(8)), load_triplets('finance/fin_qa10k', limit=8)
    enc = load(name)
    lin = mlp_linears(enc)
    n = sum(m.weight.numel() for m in lin.values())
    out = dict(model=name, method=meth, batch=batch, recompute=recompute, groups=groups, params=sum(p.numel() for p in enc.parameters()), scored=n)
    fields = stat_fields(meth)
    # warm-up on one triplet: lazy imports and allocator pools are not what a statistic costs
    gradient_statistics(enc, gen.select([0]), dom.select([0]), batch_size=1, fields=fields or ('fisher_dom',), show_progress=False)
    gc.collect(); base = rss(); reset_peak()
    with torch.enable_grad():
        for m in lin.values(): m.weight.requires_grad_(True)
        g = grad_stream(enc, lin, dom[:batch], in_batch=True, recompute=recompute); next(g); del g  # one batch's forward + backward, up to the first matrix
    out['activations'] = hwm() - base
    gc.collect(); base = rss(); reset_peak(); stats = None
    if fields:
        t = time.perf_counter()
        kw = dict(batch_size=batch, fields=fields, in_batch=True, recompute=recompute, show_progress=False)
        stats = (gradient_statistics(enc, gen, dom, **kw) if groups == 1 else  # groups: on disk, read back lazily
                 grouped_statistics(enc, gen, dom, tempfile.mkdtemp(), groups, **kw))
        out.update(stats_extra=hwm() - base, stats_s=round(time.perf_counter() - t, 1), fields=list(fields))
    base2 = rss(); reset_peak()
    mask = make_mask(importance(meth, enc, stats=stats, calib=dom, lazy=True), 0.5, scope=REGISTRY[meth].scope)  # as prune_run
    peak = hwm() - base
    out.update(score_extra=hwm() - base2, held_after_stats=base2 - base, total_extra=max(out.get('stats_extra', 0), peak))
    print(json.dumps(out), flush=True)


def run(name, meth, batch=8, recompute=0, groups=1):
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_='65536')
    r = subprocess.run([sys.executable, __file__, '--child', name, meth, str(batch), str(recompute), str(groups)], capture_output=True, text=True, env=env)
    if r.returncode: raise SystemExit(f'{name} {meth} failed:\n{r.stderr[-3000:]}')
    return json.loads(r.stdout.strip().splitlines()[-1])


def per(b, n): return b / 4 / n  # fp32 values per scored parameter


def main():
    import platform, torch
    print(__doc__.split('\n\n')[0].strip('\n'))
    print(f"\n{platform.node()}  torch {torch.__version__}  threads {os.environ.get('OMP_NUM_THREADS')}  "
          f"{time.strftime('%Y-%m-%d')}\n")
    rows = [run(m, k) for m in MODELS for k in METHODS]
    print(f"{'model':12s} {'method':14s} {'scored':>8s} {'act. MB':>8s} {'stats MB':>9s} {'score MB':>9s} {'peak MB':>8s} "
          f"{'stats-act':>9s} {'peak':>6s} {'peak-act':>8s} {'vs mag.':>8s} {'-act.':>6s}  fields")
    worst, worst_na = {}, {}
    for r in rows:
        mag = next(x for x in rows if x['model'] == r['model'] and x['method'] == 'magnitude')
        n, mb = r['scored'], lambda b: f"{b / 2**20:8.0f}"
        act = r['activations'] if 'stats_extra' in r else 0  # only a statistics pass runs the backward
        r['per_param'] = per(r['total_extra'] - act, n)    # what grows with the scored weights
        over = per(r['total_extra'] - mag['total_extra'], n)
        over_na = r['per_param'] - per(mag['total_extra'], n)  # the same without the statistics pass's activations
        print(f"{r['model']:12s} {r['method']:14s} {n / 1e6:7.1f}M {mb(r['activations'])} {mb(r.get('stats_extra', 0))} "
              f" {mb(r['score_extra'])} {mb(r['total_extra'])} {per(r.get('stats_extra', act) - act, n):9.2f} "
              f"{per(r['total_extra'], n):6.2f} {r['per_param']:8.2f} {over:+8.2f} {over_na:+6.2f}  {','.join(r.get('fields', [])) or '-'}")
        worst[r['method']] = max(worst.get(r['method'], -1e9), over)
        worst_na[r['method']] = max(worst_na.get(r['method'], -1e9), over_na)
    print("\nMB: extra resident memory beyond the loaded model (act.: one 8-triplet batch's forward + backward, 128 tokens;")
    print("stats: the statistics pass, activations included; score: scoring + selection with the statistics held; peak:")
    print("the larger of the two). The other columns are fp32 values per scored weight: stats-act = the statistics'")
    print("own cost (target <= 5), peak, peak-act, and vs mag. = the peak minus magnitude's (target <= +5); -act.: the")
    print("same without the activations of the statistics pass's batch (which grow with batch x tokens, not with the weights).")
    for k in METHODS[1:]:
        print(f"  {k:14s} vs magnitude, worst over the models: {worst[k]:+.2f} {'(target met)' if worst[k] <= 5 else '(target missed)'}"
              f"; without the batch's activations {worst_na[k]:+.2f}")

    # extrapolation, on paper: weights (bf16) + the measured per-scored-parameter cost of the default and of OBD
    extrapolate({k: max(r['per_param'] for r in rows if r['method'] == k) for k in METHODS}, 'the worst measured peak-act')
    print("8 GPUs (torchrun, data-parallel): the same memory per GPU as one, statistics 8x faster; accumulators that do not")
    print("fit one GPU: --stats-groups K divides them by K (results/bench/memory_groups.txt).")
    batch_study()


SHAPES = {'0.6B (Qwen3-Embedding-0.6B)': (0.6e9, 28 * 3 * 1024 * 3072), '4B (Qwen3-Embedding-4B)': (4.0e9, 36 * 3 * 2560 * 9728),
          '7B (E5-Mistral-7B)': (7.1e9, 32 * 3 * 4096 * 14336)}  # parameters, scored MLP weights


def extrapolate(cost:dict, what:str):
    "On paper: bf16 weights + `cost[label]` fp32 values per scored weight, for the embedders of `SHAPES`."
    print(f"\nExtrapolation (on paper): bf16 weights (2 bytes / parameter) + {what} per scored")
    print("weight above, times the scored MLP weights; activations not included (they grow with batch x tokens x")
    print("width x layers, not with the scored weights; act. above for the small models; lower --batch-size for big ones).")
    print(f"{'model':30s} {'scored':>7s} " + ' '.join(f"{k:>14s}" for k in cost) + "   fits one 80 GB GPU?")
    for name, (p, n) in SHAPES.items():
        gb = {k: (2 * p + 4 * c * n) / 1e9 for k, c in cost.items()}
        print(f"{name:30s} {n / 1e9:6.2f}B " + ' '.join(f"{gb[k]:11.1f} GB" for k in cost) + "   "
              + (', '.join(k for k in cost if gb[k] < 80 * 0.9) or 'none'))


def batch_study(model='minilm', meth='obd-kfac'):
    "Peak memory of `meth` on `model` for several statistics batch sizes (the batch's activations are most of MiniLM's peak)."
    mag = run(model, 'magnitude')['total_extra']
    print(f"\nThe statistics batch (`--batch-size`, 8 by default; with in-batch negatives it is also the count of documents each query is"
          f" contrasted with, so it changes the statistics), {model} {meth}:")
    for b in (8, 4, 2, 1):
        r = run(model, meth, b)
        over = per(r['total_extra'] - mag, r['scored'])
        print(f"  batch {b}: activations {r['activations'] / 2**20:4.0f} MB, peak {r['total_extra'] / 2**20:4.0f} MB, vs magnitude {over:+.2f} "
              f"fp32 values per scored weight {'(target met)' if over <= 5 else '(target missed)'}, statistics {r['stats_s']} s", flush=True)


def recompute_study(meth='obd-kfac', ns=(0, 4, 1)):
    """`--recompute N`: the statistics re-run the forward passes per sample, N texts at a time (`03_fisher`), so one pass's
    activations are held instead of the batch's; the same statistics (tested), more time. Default batch of 8."""
    import platform, torch
    print(f"`{meth}` statistics with `--recompute N` (batch 8, 128 tokens; N = 0: off), peak beyond the loaded model; "
          f"{platform.node()}  torch {torch.__version__}  threads {os.environ.get('OMP_NUM_THREADS')}  {time.strftime('%Y-%m-%d')}")
    print(f"{'model':12s} {'N':>3s} {'act. MB':>8s} {'peak MB':>8s} {'vs mag.':>8s}  {'stats s':>8s} {'time x':>7s}")
    for model in MODELS:
        mag, base = run(model, 'magnitude')['total_extra'], None
        for n in ns:
            r = run(model, meth, 8, n)
            base = base or r['stats_s']
            over = per(r['total_extra'] - mag, r['scored'])
            print(f"{model:12s} {n:3d} {r['activations'] / 2**20:8.0f} {r['total_extra'] / 2**20:8.0f} {over:+8.2f}  "
                  f"{r['stats_s']:8.1f} {r['stats_s'] / base:7.2f}  {'(target met)' if over <= 5 else '(target missed)'}", flush=True)
    print("vs mag.: fp32 values per scored weight above magnitude's peak (target <= +5); time x: statistics time / N = 0's.")


def groups_study(*models):
    """`--stats-groups K` with `--recompute 1`: the statistics of 1/K of the matrices per pass over the triplets, each group
    saved and the whole read back matrix by matrix (`03a_stat_groups`), for the method that reads the most statistics."""
    import platform, torch
    print(f"`gaprune-paper` statistics (5 fields) with `--stats-groups K` and `--recompute N` (batch 8, 128 tokens), peak beyond "
          f"the loaded model; {platform.node()}  torch {torch.__version__}  threads {os.environ.get('OMP_NUM_THREADS')}  {time.strftime('%Y-%m-%d')}")
    print(f"{'model':12s} {'K':>3s} {'N':>3s} {'stats MB':>9s} {'score MB':>9s} {'peak MB':>8s} {'vs mag.':>8s}  {'stats s':>8s} {'time x':>7s}")
    cost = {}
    for model in models or MODELS:
        mag, base = run(model, 'magnitude')['total_extra'], None
        for k, n in ((1, 0), (1, 1), (2, 1), (4, 1)):
            r = run(model, 'gaprune-paper', 8, n, k)
            base = base or r['stats_s']
            over = per(r['total_extra'] - mag, r['scored'])
            cost[f'K={k} N={n}'] = max(cost.get(f'K={k} N={n}', 0), per(r['total_extra'] - r['activations'], r['scored']))
            print(f"{model:12s} {k:3d} {n:3d} {r['stats_extra'] / 2**20:9.0f} {(r['score_extra'] + r['held_after_stats']) / 2**20:9.0f} "
                  f"{r['total_extra'] / 2**20:8.0f} {over:+8.2f}  {r['stats_s']:8.1f} {r['stats_s'] / base:7.2f}  "
                  f"{'(target met)' if over <= 5 else '(target missed)'}", flush=True)
    print("stats: the statistics pass; score: scoring + selection, the statistics held (in memory, or on disk for K > 1) included;")
    print("vs mag.: fp32 values per scored weight of the peak above magnitude's (target <= +5); time x: statistics time / (K=1, N=0)'s.")
    extrapolate(cost, "gaprune-paper's worst measured peak-act (K groups, recompute N)")
    print("8 GPUs (torchrun): the same memory per GPU; the K passes' time divided by 8.")


QWEN05 = dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
              vocab_size=151936, max_position_embeddings=4096, tie_word_embeddings=True)  # Qwen2-0.5B's shapes


def end_to_end():
    "Peak resident memory of whole `gaprune prune` runs (a fresh process each) on a random-weight Qwen2-0.5B decoder."
    import tempfile, torch
    from transformers import AutoConfig, AutoModel
    from gaprune_nb.fixtures import tiny_tokenizer
    d = Path(tempfile.mkdtemp())
    tok = tiny_tokenizer('qwen2')
    torch.manual_seed(0)
    m = AutoModel.from_config(AutoConfig.for_model('qwen2', **QWEN05, pad_token_id=tok.pad_token_id))
    m.save_pretrained(d/'qwen2-0.5b'); tok.save_pretrained(d/'qwen2-0.5b')
    n = sum(p.numel() for p in m.parameters()); del m
    print(f"\nEnd to end: `gaprune prune --model <random Qwen2-0.5B, {n / 1e6:.0f}M parameters, fp32> --pooling last --n-calib 2 --pool 8 "
          f"--batch-size 2`, peak resident memory of the whole process (model, calibration, statistics, scores, save):")
    for meth in ('magnitude', 'gaprune', 'obd-kfac'):
        cmd = [sys.executable, '-c', 'from gaprune_nb.cli import main; main()', 'prune', '--model', str(d/'qwen2-0.5b'), '--pooling', 'last',
               '--method', meth, '--n-calib', '2', '--pool', '8', '--batch-size', '2', '--out', str(d/f'run-{meth}')]
        probe = 'import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)'
        t = time.perf_counter()
        out = subprocess.run([sys.executable, '-c', probe, *cmd], capture_output=True, text=True)
        rc, kb = out.stdout.split()[-2:]
        print(f"  {meth:10s} exit {rc}  peak {int(kb) / 2**20:5.1f} GB  ({time.perf_counter() - t:.0f} s)", flush=True)
    shutil.rmtree(d, ignore_errors=True)


if __name__ == '__main__':
    if sys.argv[1:2] == ['--child']:
        import gaprune_nb.core
        child(*sys.argv[2:7])
    elif sys.argv[1:2] == ['--end-to-end']: end_to_end()
    elif sys.argv[1:2] == ['--batch-study']: batch_study()
    elif sys.argv[1:2] == ['--recompute-study']: recompute_study(*sys.argv[2:3], **({'ns': (0, 1)} if sys.argv[2:3] else {}))
    elif sys.argv[1:2] == ['--groups-study']: groups_study(*sys.argv[2:])
    else: main(); end_to_end()
