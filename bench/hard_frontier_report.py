"""The frontier on the hard suites (issue 52 item 3, issue 54 item 1): table and figure.

Reads the cells of `bench/frontier.py --hard` (results/hard_frontier/*.json, per-query scores) and its speed pass
(results/hard_frontier/speed.json; its passes' printouts speed*.txt), and writes results/hard_frontier/summary.md, summary.csv and frontier.png: for each
model and domain measured, every point of the report seed against the dense model of the same seed on the domain's hard
suite, the user split (the held-out 10% of the domain's rows) and the general hard suite (Δ nDCG@10 × 100 with a
paired-bootstrap 95% interval, 2,000 resamples of the queries), and its measured speed-ups (batch 32 x 128 tokens and
one text, 2 threads, one pass). The csv has every Δ as numbers: d_<suite>, d_<suite>_ci95_lo, d_<suite>_ci95_hi.
The figure shows the points a user can run today: the recovery grid's other recoveries and the structure before any
recovery stay in the table only. Then, per domain, paired on the same queries (issue 54's goal "above every peer"):
each package point minus its model fine-tuned with the same recovery and steps, fp32 and per-channel int8 ("Against the
fine-tuned model"), and mpnet's points minus MiniLM-L6 dense and fine-tuned the same way ("Across sizes").
Run: python bench/hard_frontier_report.py [--seed 1]
"""
from __future__ import annotations
import argparse, json, re, sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hard_recovery_report import SLIM_OUT, SUITES, delta, md_table, slim_cell   # noqa: E402  (one definition of a cell and a Δ)
from gaprune_nb.devsuite import fmt_delta   # noqa: E402
from gaprune_nb.store import write_text   # noqa: E402

PANELS = (('minilm', 'finance'), ('minilm', 'chemistry'), ('mpnet', 'finance'), ('mpnet', 'chemistry'))   # (model, domain) with their cell prefixes below
NAMES = {'minilm': 'MiniLM-L6', 'mpnet': 'mpnet-base'}
LABEL = {'hard': 'domain hard suite', 'filings': 'finance 10-K filings suite', 'user': 'user split (held-out rows)', 'general': 'general hard suite'}


def prefix(model, domain) -> str:
    "Cell names of MiniLM on finance are bare; other models and domains say which (bench/frontier.py's `prefix`)."
    return ''.join(f'{x}-' for x, d in ((model, 'minilm'), (domain, 'finance')) if x != d)


def shown(name: str) -> bool:
    "A point a user can run today: not the structure before recovery, not the recovery grid's other recoveries (shown: `mined`, the default when the frontier was made, and `distill+mined`, the default since, at 100 and 300 steps, and at 1,000: `--finetune-steps 1000`)."
    return not re.search(r'-none-s\d+$', name) and (('-none-' not in name) or bool(re.search(r'-then-(distill\+)?mined(-(300|1000)steps)?(\+int8-\w+)?$', name)))


def short(name: str, seed: int) -> str:
    "A point's label: 'slim2 mined', 'slim2 mined +int8' (per tensor; '+int8 per channel': `--int8 st`), 'dense-ft mined', 'l3-3 mined'."
    s = name.replace(f'-s{seed}', '').replace('-importance', '').replace('-none-then-', ' ').replace('+int8-eager', ' +int8').replace('+int8-st', ' +int8 per channel')
    return re.sub(r'-(mined|contrastive|distill\S*)', r' \1', s)


def speeds() -> dict:
    "The speed passes' merged entries (speed.json), or {} before any pass."
    return json.loads((SLIM_OUT/'speed.json').read_text()) if (SLIM_OUT/'speed.json').exists() else {}


def ratio_in_one_run(kind: dict, num: str, den: str) -> float|None:
    """Seconds of `num` / seconds of `den` in the latest speed pass that timed both (speed.json's `kind`; a dense point
    timed again keeps its earlier passes as '<name>@<run>'), or None: a ratio never mixes two passes."""
    runs = lambda n: {e.get('run'): e['seconds'] for k, e in kind.items() if k == n or k.startswith(n + '@')}
    a, b = runs(num), runs(den)
    both = sorted(set(a) & set(b), key=str)
    return a[both[-1]] / b[both[-1]] if both else None


def delta_columns(s, a, b) -> dict:
    "Suite `s`'s columns of a row: Δ = a − b as text and as numbers with its paired-bootstrap 95% interval."
    bt = delta(a, b)
    return {f'Δ {s}': fmt_delta(bt), f'd_{s}': round(bt['delta'], 2), f'd_{s}_ci95_lo': round(bt['lo'], 2), f'd_{s}_ci95_hi': round(bt['hi'], 2)}


def table(model, domain, seed, speed) -> pd.DataFrame:
    "Every point of one model on one domain, its Δ vs that model's dense point, and its speed-ups where timed."
    pre = prefix(model, domain)
    dense = slim_cell(domain, f"{'mpnet-' if model == 'mpnet' else ''}dense-s{seed}", seed)['scores']   # slim_cell adds the domain's prefix
    rows = []
    for p in sorted(SLIM_OUT.glob(f'{pre}*-s{seed}*.json')):
        name = p.stem[len(pre):]
        if name.split('-')[0] in ('chemistry', 'mpnet') or not re.search(rf'-s{seed}($|[-+])', name): continue
        c = slim_cell(domain, ('mpnet-' if model == 'mpnet' else '') + name, seed)['scores']
        if not c: continue
        r = dict(model=model, domain=domain, seed=seed, point=name, label=short(name, seed), shown=shown(name) and name != f'dense-s{seed}')
        for k in ('batch', 'single'):
            if p.stem in speed.get(k, {}): r[f'speed-up ({k})'] = round(speed[k][p.stem]['speedup'], 2)
        for s in SUITES:
            if s not in c: continue
            r[s] = round(100 * c[s].values.mean(), 2)
            if s in dense and name != f'dense-s{seed}': r |= delta_columns(s, c[s], dense[s])
        rows.append(r)
    if model == 'mpnet': rows += smaller_peers(domain, seed, dense, speed)
    return pd.DataFrame(rows)


SMALLER = ('dense-s{s}', 'dense+int8-eager-s{s}', 'dense+int8-st-s{s}', 'dense-ft-mined-s{s}', 'dense-ft-mined-s{s}+int8-eager', 'dense-ft-mined-s{s}+int8-st',
           'dense-ft-distill+mined-300steps-s{s}', 'dense-ft-distill+mined-300steps-s{s}+int8-st')   # the smaller sibling an mpnet user can adopt instead (issue 54 items 1 and 3)


def peer_label(name: str, model: str = 'minilm') -> str:
    "'dense-ft-mined-s1+int8-st' -> 'MiniLM-L6 fine-tuned (mined) +int8 per channel': a peer's label in the tables."
    i8 = ' +int8 per channel' if '+int8-st' in name else ' +int8' if '+int8' in name else ''
    rec = recovery_of(name)
    return f"{NAMES[model]} {'fine-tuned (' + rec + ')' if rec else 'dense'}{i8}"


def recovery_of(name: str) -> str|None:
    """The recovery (with its steps, when not 100) a point was made with, as the fine-tuned peers are named: 'slim2-importance-mined-s1' ->
    'mined', 'slim2-importance-none-s1-then-distill+mined-300steps+int8-st' -> 'distill+mined-300steps', 'dense-ft-mined-s1' -> 'mined'; None: none."""
    base = re.sub(r'\+int8-\w+', '', name)
    if '-then-' in base: return base.split('-then-')[1]
    m = re.fullmatch(r'(?:dense-ft|slim[\d.]+-(?:importance|fidelity|per-time))-(.+?)(?:-gencalib[\d.]+|-refine\d+|-layers\d+|-at-\w+|-of-\w+)*-s\d+', base)
    return m[1] if m else None


def smaller_peers(domain, seed, dense, speed) -> list[dict]:
    "MiniLM-L6's points as peers of mpnet: Δ vs dense mpnet on the same queries, speed-up = dense mpnet's seconds / theirs in the same speed pass."
    rows, pre = [], prefix('minilm', domain)
    ref = f'{prefix("mpnet", domain)}dense-s{seed}'   # dense mpnet, timed in the same pass as each MiniLM point
    for form in SMALLER:
        name = form.format(s=seed)
        c = slim_cell(domain, name, seed)['scores']
        if not c: continue
        r = dict(model='mpnet', domain=domain, seed=seed, point=f'minilm:{name}', label=peer_label(name), shown=True)
        for k in ('batch', 'single'):
            x = ratio_in_one_run(speed.get(k, {}), ref, pre + name)
            if x: r[f'speed-up ({k})'] = round(x, 2)
        for s in SUITES:
            if s in c and s in dense: r |= {s: round(100 * c[s].values.mean(), 2)} | delta_columns(s, c[s], dense[s])
        rows.append(r)
    return rows


def peers_of(name: str, seed: int, across: bool) -> list[str]:
    """The free alternatives a point is set against, fine-tuned with its recovery: the same model fine-tuned, fp32 and its
    per-channel int8 graph; `across` (an mpnet point against MiniLM-L6): MiniLM-L6 dense and fine-tuned, in the point's form (fp32 or int8)."""
    rec, i8 = recovery_of(name), '+int8' in name
    if not across: return [f'dense-ft-{rec}-s{seed}', f'dense-ft-{rec}-s{seed}+int8-st'] if rec else []
    return [f'dense+int8-st-s{seed}', f'dense-ft-{rec}-s{seed}+int8-st'] if i8 else [f'dense-s{seed}'] + ([f'dense-ft-{rec}-s{seed}'] if rec else [])


def versus(domain, seed, speed, model, across=False) -> list[str]:
    """Markdown rows (issue 54's goal "above every peer"): each package point of `model` (and, `across`, mpnet's fine-tuned
    points) minus each free alternative of `peers_of`, paired on the same queries; speed = the peer's time / the point's, from one speed pass."""
    pre, ppre = prefix(model, domain), prefix('minilm' if across else model, domain)
    pm, rows = 'mpnet-' if model == 'mpnet' else '', []
    for p in sorted(SLIM_OUT.glob(f'{pre}*-s{seed}*.json')):
        name = p.stem[len(pre):]
        if name.split('-')[0] in ('chemistry', 'mpnet') or not re.search(rf'-s{seed}($|[-+])', name) or not shown(name): continue
        if not (name.startswith('slim') or (across and name.startswith('dense-ft') and not name.endswith('-eager'))): continue
        mine = slim_cell(domain, pm + name, seed)['scores']
        for peer in peers_of(name, seed, across):
            c = slim_cell(domain, ('' if across else pm) + peer, seed)['scores']
            if not (mine and c): continue
            ratio = ['%.2f' % x if (x := ratio_in_one_run(speed.get(k, {}), ppre + peer, p.stem)) else '' for k in ('batch', 'single')]
            rows.append(f"| {pm}{name} − {peer_label(peer, 'minilm' if across else model)} | {ratio[0]} | {ratio[1]} | "
                        + ' | '.join(fmt_delta(delta(mine[k], c[k])) if k in mine and k in c else '' for k in SUITES) + ' |')
    what = 'mpnet points minus MiniLM-L6' if across else f'{NAMES[model]} compressed minus {NAMES[model]} fine-tuned with the same recovery'
    return [f'## {"Across sizes" if across else "Against the fine-tuned model"} ({NAMES[model] if not across else "mpnet-base"}, {domain}, seed {seed}): {what}, on the same queries', '',
            "speed: the peer's time / the point's (above 1: the point is faster), same speed pass; blank: not timed in one pass.", '',
            '| comparison | speed (batch) | speed (single) | ' + ' | '.join(f'Δ {k}' for k in SUITES) + ' |', '|---|---|---|' + '---|' * len(SUITES)] + rows + [''] if rows else []


def place(ax, labels):
    "Annotate (text, x, y), alternately above and below the point in the order of x (neighbours on a crowded panel keep apart)."
    for k, (text, x, y) in enumerate(sorted(labels, key=lambda l: l[1])):
        ax.annotate(text, (x, y), textcoords='offset points', xytext=(5, 3 if k % 2 == 0 else -10), fontsize=7.5)


def abbrev(label: str) -> str:
    "A label short enough for a crowded panel: 'dense-ft distill+mined-300steps +int8 per channel' -> 'dense-ft d+m300 +int8 pc' (the caption says so)."
    return re.sub(r'distill\+mined-(\d+)steps', r'd+m\1', label).replace('distill+mined', 'd+m').replace(' per channel', ' pc')


def figure(df: pd.DataFrame, path: Path):
    "One row per (model, domain), one panel per suite: Δ vs dense (with its interval) against the measured batch speed-up."
    import matplotlib; matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    groups = [(m, d) for m, d in PANELS if ((df.model == m) & (df.domain == d) & df.shown & df['speed-up (batch)'].notna()).any()]
    cols = [s for s in SUITES if f'd_{s}' in df and df[f'd_{s}'].notna().any()]   # filings: finance's points scored on it so far
    fig, axes = plt.subplots(len(groups), len(cols), figsize=(4.4 * len(cols), 4.2 * len(groups)), squeeze=False)
    for row, (m, d) in zip(axes, groups):
        g = df[(df.model == m) & (df.domain == d) & df.shown & df['speed-up (batch)'].notna()]
        g = g[~g.point.isin({p.replace('+int8-st', '+int8-eager') for p in g.point if '+int8-st' in p})]   # a per-tensor graph with a per-channel twin: the table has both, the figure the graph `--export onnx-int8` writes
        for ax, s in zip(row, cols):
            if not g[f'd_{s}'].notna().any(): ax.axis('off'); ax.text(0.5, 0.5, f'{LABEL[s]}:\nnot scored for {NAMES[m]}, {d}', ha='center', va='center', fontsize=9); continue
            labels = []
            for _, r in g.dropna(subset=[f'd_{s}']).iterrows():
                pkg = r.point.startswith(('slim', 'mag', 'l3'))   # MiniLM's points on mpnet's row: peers (blue)
                kind = 'package' if r.point.startswith('slim') else 'peer'
                ax.errorbar(r['speed-up (batch)'], r[f'd_{s}'], yerr=[[r[f'd_{s}'] - r[f'd_{s}_ci95_lo']], [r[f'd_{s}_ci95_hi'] - r[f'd_{s}']]],
                            fmt='o' if kind == 'package' else 's', color='C3' if kind == 'package' else ('C0' if not pkg else 'C2'), capsize=3, ms=6)
                labels.append((abbrev(r.label), r['speed-up (batch)'], r[f'd_{s}']))
            ax.axhline(0, color='k', lw=0.8); ax.set_xscale('log'); ax.set_xticks([1, 2, 3, 5, 10, 20, 40, 80]); ax.set_xticklabels(['1', '2', '3', '5', '10', '20', '40', '80']); ax.set_xlim(0.8, 110); ax.minorticks_off()
            place(ax, labels)
            ax.set_title(f'{NAMES[m]}, {d}: {LABEL[s]}', fontsize=10); ax.set_xlabel('speed-up, batch 32 x 128 tokens (measured)'); ax.set_ylabel('Δ nDCG@10 vs dense (points)')
            ax.grid(alpha=0.3)
    fig.text(0.5, 0.005, "red circles: gaprune slim; green squares: neuron magnitude and L3Prune with the same recovery; blue squares: the user's free\n"
             "alternatives (dense int8, the dense model fine-tuned with the same recovery, model2vec; on mpnet's row MiniLM-L6's points, timed against dense mpnet). "
             "Bars: paired-bootstrap 95% intervals.\n"
             "d+m300: distill+mined recovery, 300 steps (100 when no number follows); pc: int8 per channel.", ha='center', fontsize=9)
    fig.tight_layout(rect=(0, 0.09 / len(groups), 1, 1)); fig.savefig(path, dpi=150); plt.close(fig)


PROBES = {'fine-tuned at 256 tokens (--train-tokens 256)': 'slim2-importance-none-s{s}-then-mined-train256',
          'importance on half-general texts (--grid structure)': 'slim2-importance-mined-gencalib0.5-s{s}'}   # against the default point on the same seed (bench/frontier.py's rules)


def probes(seed=0) -> list[str]:
    "Markdown rows: each probe of why slim loses on hard finance, minus the default point (`mined` at 128 tokens) of `seed`."
    base = slim_cell('finance', f'slim2-importance-none-s{seed}-then-mined', seed)['scores']
    rows = []
    for what, form in PROBES.items():
        c = slim_cell('finance', form.format(s=seed), seed)['scores']
        if c and base: rows.append(f"| {what} | " + ' | '.join(fmt_delta(delta(c[k], base[k])) if k in c and k in base else '' for k in SUITES) + ' |')
    return [f'## Probes, seed {seed}: each minus `slim --speedup 2` + mined on the same seed', '', '| probe | ' + ' | '.join(f'Δ {k}' for k in SUITES) + ' |', '|---|' + '---|' * len(SUITES)] + rows + [''] if rows else []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args()
    sp = speeds()
    df = pd.concat([table(m, d, a.seed, sp) for m, d in PANELS], ignore_index=True)
    write_text(SLIM_OUT/'summary.csv', df.to_csv(index=False))
    show = [c for c in ['point', 'speed-up (batch)', 'speed-up (single)', 'Δ hard', 'Δ filings', 'Δ user', 'Δ general', 'hard', 'filings', 'user', 'general'] if c in df.columns]
    md = [f'# The frontier on the hard suites, seed {a.seed} (nDCG@10 × 100; Δ vs the dense model of the same seed, paired-bootstrap 95% intervals)', '',
          'Written by `bench/hard_frontier_report.py` from `bench/frontier.py --hard` (the speed passes: `speed.txt`; mpnet\'s points with MiniLM\'s peers, `speed_mpnet.txt`). hard: the domain\'s hard suite; '
          'filings: finance\'s second hard suite (10-K statement pages; the points scored on it so far); user: the held-out 10% of its bundled rows; general: the general hard suite. Recovery: 100 steps of `mined` (the default for triplets when these points were made; `distill+mined` since, in the points that say so) '
          'unless the name says otherwise; `-none-s1` is a structure before any recovery; `+int8-eager` the point\'s per-tensor int8 graph, `+int8-st` its per-channel one (`onnx_export.ST_INT8`, what `gaprune slim --export onnx-int8` writes).', '']
    for (m, d), g in df.groupby(['model', 'domain'], sort=False):
        md += [f'## {m}, {d}', '', md_table(g[show]), '']
    df2 = pd.concat([table(m, d, 2, sp) for m, d in PANELS], ignore_index=True) if a.seed == 1 else pd.DataFrame()   # issue 54's second report seed
    for (m, d), g in (df2.groupby(['model', 'domain'], sort=False) if len(df2) else []):
        if len(g) > 1: md += [f'## {m}, {d}, report seed 2 (the points made on it so far)', '', md_table(g[[c for c in show if c in g]]), '']
    s0 = table('minilm', 'finance', 0, sp) if a.seed == 1 else pd.DataFrame()   # the selection seed: the default's points (300 and 1,000 steps) and their fine-tuned peer
    if len(s0) and (s0.point.str.contains('300steps') & s0.point.str.startswith('dense-ft')).any():
        md += ['## minilm, finance, selection seed 0: the default recovery (300 steps) and its fine-tuned peer', '',
               md_table(s0[s0.point.str.contains(r'-(?:300|1000)steps')][[c for c in show if c in s0]]), ''] + versus('finance', 0, sp, 'minilm')
    for d in ('finance', 'chemistry'):
        md += versus(d, a.seed, sp, 'minilm') + versus(d, a.seed, sp, 'mpnet') + versus(d, a.seed, sp, 'mpnet', across=True)
    md += probes(0)
    write_text(SLIM_OUT/'summary.md', '\n'.join(md) + '\n')
    figure(df, SLIM_OUT/'frontier.png')
    print('\n'.join(md))


if __name__ == '__main__': main()
