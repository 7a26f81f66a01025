"""The user's own frontier (issue 54, item 4): `gaprune eval --model A B C` times every model against the first on this
machine, scores each on the held-out rows of the user's data with Δ vs the first and its paired-bootstrap 95% interval,
prints one row per model in the order given and writes the numbers (JSON) and a speed-vs-quality plot (PNG); models with
different tokenizers and ONNX graphs of a folder take part; a missing model is one line before any work."""
import json

import pytest

from conftest import WORDS, gaprune, one_line_error, tree
from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import tiny_model

FAST = ('--speed-wait', 0, '--speed-batch', 8, '--speed-tokens', 64, '--holdout', 0)  # no waiting for a quiet machine in a test


@pytest.fixture(scope='module')
def mine(tmp_path_factory):
    "The user's pairs, 40 distinct queries, all held out (--holdout 0), in a folder of their own."
    d = tmp_path_factory.mktemp('mine')
    rows = [dict(query=f'what is the {WORDS[i % len(WORDS)]} of {WORDS[(3 * i + 1) % len(WORDS)]} in {2000 + i}',
                 positive=f'the {WORDS[i % len(WORDS)]} of {WORDS[(3 * i + 1) % len(WORDS)]} was {i} in {2000 + i}') for i in range(40)]
    (d / 'held.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in rows))
    return d / 'held.jsonl'


@pytest.fixture(scope='module')
def models(bert, tmp_path_factory):
    "Beside the tiny BERT: another seed, a BERT of ~60x its FLOPs (the same tokenizer), and a tiny Llama (another tokenizer, last-token pooling)."
    d = tmp_path_factory.mktemp('frontier')
    Encoder(*tiny_model('bert', seed=1)).save_pretrained(d / 'other')
    m, tok = tiny_model('bert')
    cfg = m.config.__class__(**{**m.config.to_dict(), 'hidden_size': 256, 'intermediate_size': 1024, 'num_hidden_layers': 4})
    Encoder(type(m)(cfg).eval(), tok).save_pretrained(d / 'big')
    Encoder(*tiny_model('llama'), pooling='last').save_pretrained(d / 'llama')
    return dict(tiny=bert, other=d / 'other', big=d / 'big', llama=d / 'llama')


def rows(stdout):
    "The table's model names, speed-ups and Δ texts, in printed order (`frontier_table`: a title row, an index row, then one per model)."
    lines = stdout[stdout.index('speed-up vs first'):].splitlines()[2:]
    return [l.split()[0] for l in lines if l.strip() and not l.startswith('saved:')], lines


def test_three_models_one_row_each_in_order_and_every_number_written(tmp_path, models, mine, data):
    order = [models['big'], models['tiny'], models['other']]
    out = tmp_path / 'out'
    r = gaprune('eval', '--model', *order, '--data', data, '--domain-data', mine, *FAST, '--json', out / 'frontier.json')
    assert r.returncode == 0, r.stderr[-3000:]
    names, lines = rows(r.stdout)
    assert names == [str(m) for m in order]
    assert lines[0].split()[1] == '1.00x' and '+0.00 [+0.00, +0.00]' in lines[0]
    assert 'timed here against the first' in r.stdout and 'thread' in r.stdout and ('quiet machine' in r.stdout or 'busy' in r.stdout)
    res = json.loads((out / 'frontier.json').read_text())
    assert [m['name'] for m in res['models']] == [str(m) for m in order] and res['metric'] == 'nDCG@10'
    first = res['models'][0]
    assert first['speedup'] == 1.0 and (first['delta'], first['lo'], first['hi']) == (0.0, 0.0, 0.0)
    for m in res['models']:
        assert m['lo'] <= m['delta'] <= m['hi'] and set(m['metrics']) == {'nDCG@10', 'MRR@10'} and m['seconds'] > 0
        assert m['delta'] == pytest.approx(m['score'] - first['score'], abs=1e-9)
        assert f"{m['speedup']:.2f}x" in r.stdout
    t = res['timing']
    assert t['threads'] >= 1 and isinstance(t['quiet'], bool) and t['batch'] == 8 and t['tokens'] == 64
    assert res['data']['holdout']['rows'] == 40 and res['data']['shape'] == 'pairs'
    assert (out / 'frontier.png').read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'  # beside the JSON
    assert f"saved: {out / 'frontier.png'}" in r.stdout


def test_the_smaller_model_is_timed_faster(models, mine):
    "The tiny BERT against one of ~60x its FLOPs: its speed-up is large, however busy the machine (no absolute time is asserted)."
    r = gaprune('eval', '--model', models['big'], '--model', models['tiny'], '--domain-data', mine, *FAST)  # the flag repeated
    assert r.returncode == 0, r.stderr[-3000:]
    names, lines = rows(r.stdout)
    assert names == [str(models['big']), str(models['tiny'])]
    big, tiny = (float(l.split()[1].rstrip('x')) for l in lines[:2])
    assert big == 1.0 and tiny > 2, r.stdout


def test_a_missing_model_is_one_line_before_any_work(tmp_path, models, mine):
    before = tree(tmp_path)
    for missing in (tmp_path / 'no-such-model', models['tiny'] / 'onnx' / 'model.onnx'):
        r = gaprune('eval', '--model', models['tiny'], missing, '--domain-data', mine, *FAST, '--json', tmp_path / 'f.json', '--plot', tmp_path / 'f.png')
        line = one_line_error(r)
        assert str(missing) in line and len(r.stderr.strip().splitlines()) == 1 and '==' not in r.stderr, r.stderr  # no stage began
        assert tree(tmp_path) == before and not (tmp_path / 'f.json').exists() and not (tmp_path / 'f.png').exists()
    line = one_line_error(gaprune('eval', '--model', models['tiny'], '--domain-data', mine, '--plot', tmp_path / 'f.png'))
    assert '--plot' in line and 'two or more' in line and tree(tmp_path) == before


def test_models_with_different_tokenizers(tmp_path, models, mine):
    r = gaprune('eval', '--model', models['tiny'], models['llama'], '--domain-data', mine, *FAST, '--json', tmp_path / 'f.json')
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((tmp_path / 'f.json').read_text())
    assert [m['name'] for m in res['models']] == [str(models['tiny']), str(models['llama'])]
    assert Encoder.from_pretrained(models['llama']).tokenizer.vocab_size != Encoder.from_pretrained(models['tiny']).tokenizer.vocab_size
    llama = res['models'][1]
    assert llama['speedup'] > 0 and llama['lo'] <= llama['delta'] <= llama['hi']


def test_an_onnx_graph_of_a_folder_is_a_model(tmp_path, models, mine):
    "The fp32 graph sentence-transformers' ONNX backend loads: the same embeddings, so Δ vs its own folder is ~0."
    pytest.importorskip('onnxruntime'); pytest.importorskip('onnxscript')
    from gaprune_nb.onnx_export import export_st_onnx
    import shutil
    shutil.copytree(models['tiny'], tmp_path / 'tiny')
    export_st_onnx(tmp_path / 'tiny', ('onnx',), card=False)
    r = gaprune('eval', '--model', tmp_path / 'tiny', tmp_path / 'tiny' / 'onnx', '--domain-data', mine, *FAST, '--json', tmp_path / 'out' / 'f.json')
    assert r.returncode == 0, r.stderr[-3000:]
    graph = json.loads((tmp_path / 'out' / 'f.json').read_text())['models'][1]
    assert graph['onnx'] == str(tmp_path / 'tiny' / 'onnx' / 'model.onnx') and graph['source'] == str(tmp_path / 'tiny')
    assert abs(graph['delta']) < 0.5 and graph['speedup'] > 0


def test_without_domain_data_a_suite_scores_them(tmp_path, models):
    "No --domain-data: the suite's per-item tasks (here the hard finance slice), the headline its Avg., Δ vs the first with intervals."
    r = gaprune('eval', '--model', models['tiny'], models['other'], '--suite', 'hard-finance', '--limit', 'tiny', *FAST, '--json', tmp_path / 'f.json')
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((tmp_path / 'f.json').read_text())
    assert res['metric'] == 'Avg.' and res['data'] == dict(suite='hard-finance', limit='tiny')
    first, other = res['models']
    assert (first['speedup'], first['delta']) == (1.0, 0.0) and other['lo'] <= other['delta'] <= other['hi'] and 'Avg.' in other['metrics']
