"""A static-embedding baseline: model2vec distils a sentence-transformers model into one vector per vocabulary token
(a forward pass per token, PCA, SIF weights), and a text's embedding is the mean of its tokens' vectors: no attention,
no token limit. How far below a dense or pruned model is it on a domain suite, and how much faster?

A bench helper, not part of the package: `distill_static` makes the static model from a local folder (offline),
`StaticEncoder` lets the package's evaluation functions score it (`dev_scores`, `domain_scores`, `domain_alone`).

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 GAPRUNE_DATA=<data> python bench/static_baseline.py [--model minilm|mpnet] [--pca-dims 256]

prints the distillation time, the dev-suite scores of the static and the dense model on one domain (finance by
default) and the time each takes to embed 1,000 of the domain's retrieval passages on one thread.

Measured (all-MiniLM-L6-v2, PCA 256, 2 CPU cores shared with other jobs, 1 thread; timings are indicative only):
distillation 35.9 s (29,525 tokens x 256); dev-finance Avg. 70.96 static vs 78.89 dense (Retr. 63.86 vs 74.88,
Cla. 78.06 vs 82.90); 1,000 fin_qa10k_eval passages (median 36 tokens) embedded in 0.21 s vs 22.15 s (~100x).
"""
from __future__ import annotations
import argparse, json, sys, time
from pathlib import Path

import numpy as np

from gaprune_nb.store import atomic_dir, write_json


def distill_static(model_folder:str|Path,  # A local sentence-transformers / transformers model folder
                   out_folder:str|Path,    # Where the StaticModel is saved (replaced atomically)
                   pca_dims:int|None=256   # PCA dimensions of the token vectors (None: the model's width, no PCA)
                  ) -> Path:
    "Distil `model_folder` into a model2vec `StaticModel` saved at `out_folder`, with the seconds it took in `gaprune_distill.json`."
    from model2vec.distill import distill
    model_folder, out_folder = Path(model_folder), Path(out_folder)
    if not (model_folder/'config.json').is_file(): raise FileNotFoundError(f"{model_folder} is not a local model folder (no config.json)")
    t = time.perf_counter()
    m = distill(str(model_folder), pca_dims=pca_dims, device='cpu')  # a local path: model2vec asks the hub nothing
    seconds = time.perf_counter() - t
    with atomic_dir(out_folder) as tmp:
        m.save_pretrained(tmp)
        write_json(tmp/'gaprune_distill.json', dict(source=str(model_folder), pca_dims=pca_dims, seconds=round(seconds, 1),
                                                    vocabulary=int(m.embedding.shape[0]), dim=int(m.dim)))
    return out_folder


class _StaticTokens:
    "The static model's own tokenization (no special tokens, unknown tokens dropped), callable as `token_record` calls a transformers tokenizer."
    eos_token = None
    def __init__(self, model): self.model = model
    def __call__(self, texts, truncation=False, verbose=False, **kwargs): return {'input_ids': self.model.tokenize(list(texts))}


class StaticEncoder:
    """A model2vec `StaticModel` behind the package's encoder interface: `encode(texts, kind=, batch_size=, normalize=)`.

    `max_length` is None by default: a static model has no position embeddings and so no token limit; every token of
    every text counts. An int truncates each text to that many tokens (what `domain_eval._limit` sets, e.g. to score it
    at a dense model's limit). `token_record` (used by `domain_compare` / `domain_alone`) compares token counts with the
    limit, so it needs an int one; `tokenizer`, `query_prompt`, `document_prompt` and `add_eos` are there for it:
    the model's own tokenizer, no prompts (queries and documents are embedded alike), no end-of-sequence token."""
    query_prompt = document_prompt = ''
    add_eos = False

    def __init__(self, path:str|Path,           # A folder saved by `distill_static` (or any model2vec folder)
                 max_length:int|None=None):     # Tokens kept per text; None: all of them
        from model2vec import StaticModel
        self.path, self.max_length = Path(path), max_length
        self.model = StaticModel.from_pretrained(str(path), max_length=None)  # truncation and normalisation are decided per call
        self.tokenizer, self.dim = _StaticTokens(self.model), self.model.dim

    def encode(self, texts:list[str],          # The texts (a list, not one string)
               kind:str='document',            # 'query' or 'document': no difference, a static model has no prompts
               batch_size:int=32,              # Texts per call of the model (the result does not depend on it)
               normalize:bool|None=None        # Unit-length embeddings (None: yes, as the package's encoders)
              ) -> np.ndarray:
        "Embeddings of `texts` in order, float32, (len(texts), dim); a text with no known token embeds to zeros."
        if isinstance(texts, str): raise TypeError("Pass a list of texts, not a single string.")
        texts = list(texts)
        if not texts: return np.zeros((0, self.dim), dtype=np.float32)
        e = np.asarray(self.model.encode(texts, max_length=self.max_length, normalize=False, batch_size=batch_size,
                                         use_multiprocessing=False), dtype=np.float32)
        if normalize is None or normalize:
            n = np.linalg.norm(e, axis=1, keepdims=True)
            e = np.divide(e, n, out=np.zeros_like(e), where=n > 0)
        return e


def _passages(root, domain:str, n:int) -> list[str]:
    "The first `n` passages of the domain's first retrieval set that has as many."
    from gaprune_nb.data import load_retrieval
    for d in sorted((Path(root)/'retrieval'/domain).iterdir()):
        c = load_retrieval(d).corpus
        if len(c) >= n: return [f"{t} {x}".strip() for t, x in zip(c['title'][:n], c['text'][:n])]
    raise ValueError(f"no {domain} retrieval set has {n} passages")


def _timed(encode, texts, repeats=3) -> float:
    "Best of `repeats` wall-clock seconds of `encode(texts)`."
    best = float('inf')
    for _ in range(repeats):
        t = time.perf_counter(); encode(texts); best = min(best, time.perf_counter() - t)
    return best


def main(argv=None):
    import torch
    from gaprune_nb.core import Encoder
    from gaprune_nb.data import data_root
    from gaprune_nb.devsuite import DEV, dev_scores, dev_suite, summary
    from gaprune_nb.fixtures import cache_dir, minilm_path, mpnet_path
    a = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    a.add_argument('--model', choices=('minilm', 'mpnet'), default='minilm')
    a.add_argument('--domain', default='finance')
    a.add_argument('--pca-dims', type=int, default=256)
    a.add_argument('--out', type=Path, default=None, help="static model folder (default: the fixture cache's model2vec/ folder)")
    a.add_argument('--redistill', action='store_true')
    a.add_argument('--n-time', type=int, default=1000)
    args = a.parse_args(argv)
    torch.set_num_threads(1)
    src = minilm_path() if args.model == 'minilm' else mpnet_path()
    out = args.out or cache_dir()/'model2vec'/f'{args.model}-pca{args.pca_dims}'
    if args.redistill or not (out/'gaprune_distill.json').exists(): distill_static(src, out, args.pca_dims)
    info = json.loads((out/'gaprune_distill.json').read_text())
    print(f"distilled {args.model} ({src}) -> {out}: {info['seconds']} s, {info['vocabulary']:,} tokens x {info['dim']}")
    root = data_root(None)
    static, dense = StaticEncoder(out), Encoder.from_pretrained(src)
    suite = dev_suite(args.domain, root, DEV)
    rows = {}
    for name, enc in (('model2vec', static), (f'dense {args.model}', dense)):
        t = time.perf_counter(); s = summary(dev_scores(enc, suite)); rows[name] = s
        print(f"{name}: dev-{args.domain} scored in {time.perf_counter() - t:.0f} s", file=sys.stderr)
    import pandas as pd
    print(pd.DataFrame(rows).round(2).to_string())
    texts = _passages(root, args.domain, args.n_time)
    lens = [len(x) for x in dense.tokenizer(texts, truncation=False, verbose=False)['input_ids']]
    print(f"\nembedding {len(texts):,} {args.domain} passages (median {int(np.median(lens))} tokens, dense truncates at "
          f"{dense.max_length}), batch 32, {torch.get_num_threads()} thread:")
    for name, enc in (('model2vec', static), (f'dense {args.model}', dense)):
        s = _timed(lambda x: enc.encode(x, kind='document', batch_size=32), texts, 3 if name == 'model2vec' else 1)
        print(f"  {name:14s} {s:8.2f} s  ({len(texts) / s:,.0f} passages/s){'  best of 3' if name == 'model2vec' else ''}")


if __name__ == '__main__': main()
