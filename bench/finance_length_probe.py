"""Probe (issue 52): does mpnet lead MiniLM on the hard finance suite when passages fill mpnet's limit? The suite rebuilt
with chunks of <= 382 MiniLM word pieces instead of 254 (`python tools/build_hard_suites.py --mirror M --only finance
--budget 382 --out /tmp/p384/hard`; MiniLM then reads the first 256, mpnet 384), dense MiniLM-L6 and mpnet-base scored on
it, paired bootstrap 95% interval of mpnet - MiniLM. First it checks that the package's mpnet and MiniLM embeddings are
sentence-transformers' (cosine of each text's two embeddings). Output: results/hard/finance_passage_length_probe.txt.
`--check-only`: only that check. A folder as first argument (default /tmp/p384) scores the suite built there, e.g. every
report page (`... --budget 382 --finance-size 1000 3000 --out /tmp/p4/hard`, 579 queries): `python bench/finance_length_probe.py /tmp/p4`.
`--header`: the earlier build with the `<TICKER> <year> annual report` header on every passage and query (commit
87ee13c's bench/hard/finance/finqa_statements), copied from git into the folder with a one-suite MANIFEST.json."""
import subprocess, sys, time, json, torch
import numpy as np
sys.path.insert(0, str(__import__('pathlib').Path(__file__).resolve().parents[1]))
torch.set_num_threads(1)
from gaprune_nb.core import Encoder
from gaprune_nb.devsuite import hard_suite, dev_scores, save_scores, paired_bootstrap, fmt_delta, load_scores
from gaprune_nb.fixtures import minilm_path, mpnet_path
from pathlib import Path
from sentence_transformers import SentenceTransformer
for path in (mpnet_path(), minilm_path()):   # the package's encoder is sentence-transformers' model
    c = hard_suite('finance')[0].data
    texts = dict(query=list(c.queries['text'][:8]), document=list(c.corpus['text'][:8]))
    st = SentenceTransformer(str(path), device='cpu'); enc = Encoder.from_pretrained(path)
    cos = [float(np.min((enc.encode(t, kind=k, normalize=True) * st.encode(t, normalize_embeddings=True)).sum(1))) for k, t in texts.items()]
    print(f'{path.name}: min cosine with sentence-transformers over 8 queries and 8 passages: {min(cos):.5f}', flush=True)
if '--check-only' in sys.argv: sys.exit()
root = next((x for x in sys.argv[1:] if not x.startswith('--')), '/tmp/p384')
if '--header' in sys.argv:   # the suite as commit 87ee13c built it, from git
    repo, src = Path(__file__).resolve().parents[1], 'bench/hard/finance/finqa_statements'
    for f in ('corpus.jsonl', 'queries.jsonl', 'qrels/test.tsv'):
        (Path(root)/'hard'/src.removeprefix('bench/hard/')/f).parent.mkdir(parents=True, exist_ok=True)
        (Path(root)/'hard'/src.removeprefix('bench/hard/')/f).write_bytes(subprocess.run(['git', 'show', f'87ee13c:{src}/{f}'], cwd=repo, capture_output=True, check=True).stdout)
    row = next(r for r in json.loads((repo/'bench/hard/MANIFEST.json').read_text())['suites'] if r['domain'] == 'finance')
    (Path(root)/'hard'/'MANIFEST.json').write_text(json.dumps({'suites': [dict(row, path='finance/finqa_statements', slice='finance/finqa_statements')]}))
t = hard_suite('finance', root=f'{root}/hard')[0]
out = {}
for name, path in (('minilm', minilm_path()), ('mpnet', mpnet_path())):
    f = Path(f'{root}/{name}.json')
    if not f.exists():
        s = time.time(); sc = dev_scores(Encoder.from_pretrained(path), [t], batch_size=32); save_scores(f, sc, seconds=time.time() - s)
    out[name] = load_scores(f)
    print(name, round(100 * out[name][t.name].values.mean(), 2), flush=True)
print('mpnet - minilm', fmt_delta(paired_bootstrap(out['mpnet'], out['minilm']).loc[t.name]))
