"""Issues 52 / 54: the hard frontier's saved MiniLM-L6 finance points scored on the second finance hard suite
(`bench/hard/finance/filing_statements`, tools/hard_filings.py), the one on which mpnet-base leads MiniLM-L6.

Points (folders `bench/frontier.py --hard` saved in --work): dense MiniLM, MiniLM fine-tuned on finance with the package's
default recovery (`dense-ft-mined-s1`: 100 `mined` steps, report seed 1), and the per-channel int8 graph of each
(`+int8-st`, what `--export onnx-int8` writes), and dense mpnet's per-channel int8 graph (`mpnet-dense+int8-st-s1`, exported
here when missing). Dense MiniLM and mpnet come from `bench/hard_sensitivity.py`'s cells.
Per-query nDCG@10 cached as results/hard_frontier/filings/<point>.json (resumable); the report prints every point's
Δ against dense MiniLM and against dense mpnet with paired-bootstrap 95% intervals, to results/hard_frontier/filings/summary.md.

Run: OMP_NUM_THREADS=2 HF_HUB_OFFLINE=1 python bench/filings_points.py [--work /tmp/hard_frontier_work] [--threads 2]
"""
import argparse, sys, time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT/'bench'))
from hard_sensitivity import md_table
from gaprune_nb.core import Encoder
from gaprune_nb.devsuite import dev_scores, fmt_delta, hard_suite, load_scores, paired_bootstrap, save_scores
from gaprune_nb.store import write_text

SUITE = 'finance.filing_statements'
OUT = ROOT/'results'/'hard_frontier'/'filings'
CELLS = ROOT/'results'/'hard'
POINTS = ('dense-ft-mined-s1', 'dense+int8-st-s1', 'dense-ft-mined-s1+int8-st', 'mpnet-dense+int8-st-s1')


def encoder(name: str, work: Path, threads: int):
    """The saved point `name`: a model folder, or the int8 ONNX graph a `+int8-st` folder holds (tokenizer and pooling from
    its base). mpnet's dense graph is exported here when missing, as `frontier.int8_point` does (per channel)."""
    if '+int8' not in name: return Encoder.from_pretrained(work/name)
    from gaprune_nb.fixtures import minilm_path, mpnet_path
    from gaprune_nb.onnx_export import ST_INT8, OnnxEncoder, export_onnx
    base = name.split('+int8')[0] + name.split('+int8-st')[1]   # 'dense+int8-st-s1' -> 'dense-s1'
    enc = Encoder.from_pretrained(work/base if (work/base/'config.json').exists() else mpnet_path() if name.startswith('mpnet') else minilm_path())
    if not (work/name/'model_int8.onnx').exists() and name.startswith('mpnet-dense'): export_onnx(enc, work/name, int8_settings=ST_INT8)
    return OnnxEncoder(work/name/'model_int8.onnx', enc, threads=threads)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--work', type=Path, default=Path('/tmp/hard_frontier_work'))
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--report-only', action='store_true')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    task = next(t for t in hard_suite('finance') if t.name == SUITE)
    if not a.report_only:
        for p in POINTS:
            f = OUT/f'{p}.json'
            if f.exists(): continue
            if not (a.work/p).exists() and not p.startswith('mpnet-dense'): print(f'{p}: no folder in {a.work}; skipped', file=sys.stderr); continue
            t = time.perf_counter(); sc = dev_scores(encoder(p, a.work, a.threads), [task], batch_size=32)
            save_scores(f, sc, point=p, seconds_eval=round(time.perf_counter() - t, 1), threads=a.threads)
            print(f'{p}: nDCG@10 {100 * sc[SUITE].values.mean():.2f}', file=sys.stderr, flush=True)
    files = {'MiniLM-L6 dense': CELLS/'minilm-dense'/f'{SUITE}.json', 'mpnet-base dense': CELLS/'mpnet-dense'/f'{SUITE}.json'} | \
            {p: OUT/f'{p}.json' for p in POINTS}
    got = {k: load_scores(f) for k, f in files.items() if f.exists()}
    ref = ('MiniLM-L6 dense', 'mpnet-base dense', 'dense+int8-st-s1')   # each point against these (MiniLM's int8 graph: the small sibling at its fastest)
    rows = []
    for p, sc in got.items():
        row = {'point': p, 'nDCG@10': round(100 * sc[SUITE].values.mean(), 2)}
        for k in ref:
            if k in got and k != p: row[f'Δ vs {k}'] = fmt_delta(paired_bootstrap(sc, got[k], n=2000, seed=0).loc[SUITE])
        rows.append(row)
    import pandas as pd
    md = ['# The MiniLM-L6 finance points on the filings suite (nDCG@10 × 100, paired bootstrap 95% intervals)', '',
          f'Written by `bench/filings_points.py`: `{SUITE}` ({len(task.data.queries)} queries). `dense-ft-mined-s1`: MiniLM-L6 '
          'fine-tuned with the default recovery (100 `mined` steps, seed 1); `+int8-st`: its per-channel int8 ONNX graph; '
          '`mpnet-dense+int8-st-s1`: dense mpnet\'s.', '',
          md_table(pd.DataFrame(rows).fillna(''))]
    write_text(OUT/'summary.md', '\n'.join(md) + '\n')
    print('\n'.join(md))


if __name__ == '__main__':
    main()
