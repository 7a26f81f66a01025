"""Probe (issue 52): does mpnet lead MiniLM on the hard finance suite when passages fill mpnet's limit? The suite rebuilt
with chunks of <= 382 MiniLM word pieces instead of 254 (python tools/build_hard_suites.py with BUDGET = 382, --only finance
--out /tmp/p384/hard; MiniLM then reads the first 256, mpnet 384), dense MiniLM-L6 and mpnet-base scored on it, paired
bootstrap 95% interval of mpnet - MiniLM. Output: results/hard/finance_passage_length_probe.txt."""
import sys, time, json, torch
sys.path.insert(0, '/work/main')
torch.set_num_threads(1)
from gaprune_nb.core import Encoder
from gaprune_nb.devsuite import hard_suite, dev_scores, save_scores, paired_bootstrap, fmt_delta, load_scores
from gaprune_nb.fixtures import minilm_path, mpnet_path
from pathlib import Path
t = hard_suite('finance', root='/tmp/p384/hard')[0]
out = {}
for name, path in (('minilm', minilm_path()), ('mpnet', mpnet_path())):
    f = Path(f'/tmp/p384/{name}.json')
    if not f.exists():
        s = time.time(); sc = dev_scores(Encoder.from_pretrained(path), [t], batch_size=32); save_scores(f, sc, seconds=time.time() - s)
    out[name] = load_scores(f)
    print(name, round(100 * out[name][t.name].values.mean(), 2), flush=True)
print('mpnet - minilm', fmt_delta(paired_bootstrap(out['mpnet'], out['minilm']).loc[t.name]))
