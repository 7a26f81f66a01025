"""Any domain, any source (issue 32): a domain the package has never heard of, its data in three shapes built in a
temporary folder from the bundled finance data (a .txt of texts, a .csv of pairs, a .parquet of triplets), through the
real `gaprune` command offline; the bundled preset and the same file given as --domain-data give the same mask; every
bad input is one line and leaves the file tree as it was."""
import hashlib, json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sentence_transformers import SentenceTransformer

from conftest import full_tree, gaprune, one_line_error, tree
from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import tiny_model
from gaprune_nb.options import RunConfig
from gaprune_nb.sources import MIN_HELD, holdout, load_domain

REAL_DATA = Path(__file__).resolve().parents[2] / 'shared' / 'data'
TEXTS = ['What was the operating margin in 2022?', 'Revenue grew 8% year over year.']
N = 600  # rows of each shape: 10% held out is comfortably more than MIN_HELD


@pytest.fixture(scope='module')
def legal(tmp_path_factory):
    "Three files of one new domain, one per shape, under the names a user's files might have."
    src = REAL_DATA / 'triplets' / 'finance' / 'fin_qa10k.jsonl'
    if not src.is_file(): pytest.skip('bundled finance triplets not found')
    rows = pd.read_json(src, lines=True).head(N)
    one = lambda s: ' '.join(str(s).split())  # one text per line
    d = tmp_path_factory.mktemp('legal')
    (d / 'texts.txt').write_text(''.join(one(t) + '\n' for t in rows.positive), encoding='utf-8')
    rows.rename(columns=dict(query='question', positive='answer'))[['question', 'answer']].to_csv(d / 'pairs.csv', index=False)
    rows[['query', 'positive', 'negative']].to_parquet(d / 'triplets.parquet')
    return d


FILES = dict(texts='texts.txt', pairs='pairs.csv', triplets='triplets.parquet')


def prune(bert, data, src, out, *extra, method='gaprune'):
    return gaprune('prune', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', src, '--method', method,
                   '--n-calib', 8, '--pool', 0, '--batch-size', 4, '--out', out, *extra)


def same_embeddings(out):
    "The saved folder gives the same embeddings in sentence-transformers as in the package's Encoder."
    ref = Encoder.from_pretrained(out).encode(TEXTS, normalize=True)
    st = SentenceTransformer(str(out), device='cpu', trust_remote_code=True)  # a slimmed model's narrower MLPs: its own code
    np.testing.assert_allclose(st.encode(TEXTS), ref, atol=1e-5)


@pytest.mark.parametrize('shape,method', [('texts', 'gaprune'), ('pairs', 'fisher-dom'), ('triplets', 'fisher-dom')])
def test_prune_a_new_domain_from_each_shape(tmp_path, bert, data, legal, shape, method):
    "Texts get an activation method, pairs and triplets the gradient statistics; the report records what was read and held out."
    src, before = legal / FILES[shape], tree(legal)
    r = prune(bert, data, src, tmp_path / 'run', method=method)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.loads((tmp_path / 'run' / 'gaprune_report.json').read_text())
    dom = rep['data']['domain']
    assert (dom['name'], dom['shape'], dom['rows']) == ('legal', shape, N)
    assert [(s['path'], s['sha256']) for s in dom['sources']] == [(str(src.resolve()), hashlib.sha256(src.read_bytes()).hexdigest())]
    held = holdout(load_domain('legal', [src]), 0.1, 0)[1]
    assert dom['holdout']['rows'] == len(held) >= MIN_HELD and dom['holdout']['frac'] == 0.1
    key = 'text' if shape == 'texts' else 'query'
    calib = [json.loads(l) for l in (tmp_path / 'run' / 'calibration' / 'legal.jsonl').read_text().splitlines()]
    assert len(calib) == 8 and not {c[key] for c in calib} & set(held.data[key])  # never a held-out row
    same_embeddings(tmp_path / 'run')
    assert RunConfig.from_run(tmp_path / 'run').domain_data == [str(src.resolve())]
    assert tree(legal) == before


def test_from_run_refuses_changed_data(tmp_path, bert, data, legal):
    src = tmp_path / 'mine.csv'
    src.write_bytes((legal / 'pairs.csv').read_bytes())
    r = prune(bert, data, src, tmp_path / 'run', '--update', 'obs', method='magnitude')
    assert r.returncode == 0, r.stderr[-3000:]
    assert RunConfig.from_run(tmp_path / 'run').domain == 'legal'
    src.write_text(src.read_text().replace('NVIDIA', 'Nvidia'))
    with pytest.raises(ValueError, match='the data changed since'): RunConfig.from_run(tmp_path / 'run')


@pytest.mark.parametrize('shape', ['texts', 'pairs', 'triplets'])
def test_slim_a_new_domain_from_each_shape(tmp_path, bert, data, legal, shape):
    "Texts: an activation scorer and no fine-tuning; pairs and triplets: trained gates and contrastive fine-tuning."
    extra = (['--scorer', 'wanda', '--finetune', 'none'] if shape == 'texts' else
             ['--gate-steps', 2, '--finetune-steps', 2, '--batch-size', 4])
    r = gaprune('slim', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', legal / FILES[shape],
                '--keep', 0.5, '--n-calib', 8, '--no-eval', '--out', tmp_path / 'slim', *extra)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.loads((tmp_path / 'slim' / 'slim_report.json').read_text())
    assert rep['data']['domain']['shape'] == shape and rep['data']['domain']['holdout']['rows'] >= MIN_HELD
    assert 0.4 < rep['mlp_params_kept'] < 0.6
    same_embeddings(tmp_path / 'slim')


def test_bundled_finance_as_domain_data_gives_the_same_mask(tmp_path, bert, data):
    "The preset `--domain finance` and its triplet file as parquet under another name: the same calibration and mask, bit for bit."
    pd.read_json(data / 'triplets' / 'finance' / 'finance_tiny.jsonl', lines=True).to_parquet(tmp_path / 'fin.parquet')
    a = gaprune('prune', '--model', bert, '--data', data, '--domain', 'finance', '--method', 'fisher-dom', '--n-calib', 8,
                '--pool', 0, '--batch-size', 4, '--out', tmp_path / 'a')
    b = prune(bert, data, tmp_path / 'fin.parquet', tmp_path / 'b', '--holdout', 0, method='fisher-dom')
    assert a.returncode == 0 and b.returncode == 0, (a.stderr[-2000:], b.stderr[-2000:])
    assert (tmp_path / 'a' / 'mask.safetensors').read_bytes() == (tmp_path / 'b' / 'mask.safetensors').read_bytes()
    assert (tmp_path / 'a' / 'calibration' / 'finance.jsonl').read_bytes() == (tmp_path / 'b' / 'calibration' / 'legal.jsonl').read_bytes()
    ra, rb = (json.loads((tmp_path / x / 'gaprune_report.json').read_text()) for x in 'ab')
    assert ra['calibration']['finance'] == rb['calibration']['legal'] and ra['zero_weights'] == rb['zero_weights']


def _bad(d: Path, case: str, legal: Path):
    "The arguments of one bad input (its files made under `d`) and a phrase its one line must hold."
    pairs = legal / 'pairs.csv'
    if case == 'empty file': (d / 'empty.jsonl').write_text(''); return [d / 'empty.jsonl'], [], 'empty file'
    if case == 'no usable column':
        (d / 'cols.csv').write_text('title,body\na,b\n'); return [d / 'cols.csv'], [], 'no usable column'
    if case == 'mixed shapes':
        (d / 'mix').mkdir(); (d / 'mix' / 'a.txt').write_text('a text\n'); (d / 'mix' / 'b.csv').write_text('query,positive\nq,p\n')
        return [d / 'mix'], [], 'mix shapes'
    if case == 'fewer than n_calib':
        (d / 'few.csv').write_text('query,positive\n' + ''.join(f'q{i},p{i}\n' for i in range(20)))
        return [d / 'few.csv'], ['--holdout', 0, '--n-calib', 30], 'fewer than the 30 the calibration needs'
    if case == 'hub id offline': return ['someone/legal-corpus@train'], [], "hub dataset 'someone/legal-corpus@train' could not be loaded"
    if case == 'not UTF-8': (d / 'latin.txt').write_bytes('a text\ncaf\xe9\n'.encode('latin-1')); return [d / 'latin.txt'], [], 'line 2: not UTF-8'
    if case == 'unknown extension': (d / 'brief.docx').write_text('x'); return [d / 'brief.docx'], [], "unknown extension '.docx'"
    if case == 'missing path': return [d / 'nope.csv'], [], 'missing file or folder'
    if case == 'held-out split too small':
        (d / 'small.csv').write_text('query,positive\n' + ''.join(f'q{i},p{i}\n' for i in range(100)))
        return [d / 'small.csv'], [], f'fewer than the {MIN_HELD} needed to measure; give at least 500 rows'
    if case == 'method needs more': return [legal / 'texts.txt'], ['--method', 'fisher-dom'], "method 'fisher-dom' needs pairs (query, positive) but the legal data are texts"
    if case == 'out inside the data folder':
        (d / 'docs').mkdir(); (d / 'docs' / 'pairs.csv').write_bytes(pairs.read_bytes())
        return [d / 'docs'], ['--out', d / 'docs' / 'run'], 'domain data folder'
    if case == 'in_batch off with pairs': return [pairs], ['--method', 'fisher-dom', '--no-in-batch'], 'in_batch=False contrasts each query with its hard negative only'
    raise KeyError(case)


BAD = ['empty file', 'no usable column', 'mixed shapes', 'fewer than n_calib', 'hub id offline', 'not UTF-8', 'unknown extension',
       'missing path', 'held-out split too small', 'method needs more', 'in_batch off with pairs', 'out inside the data folder']


def in_process(capsys, *args):
    "`gaprune ARGS` run by the command's entry point in this process (no interpreter start per case): its exit message and stderr."
    from gaprune_nb.cli import main
    with pytest.raises(SystemExit) as e: main([str(a) for a in args])
    return str(e.value.code), capsys.readouterr().err


@pytest.mark.parametrize('case', BAD)
def test_bad_domain_data_is_one_line_before_any_work(tmp_path, bert, data, legal, case, capsys):
    srcs, extra, phrase = _bad(tmp_path, case, legal)
    before, data_before = full_tree(tmp_path), tree(data)
    args = ('prune', '--model', bert, '--data', data, '--domain', 'legal', *[a for s in srcs for a in ('--domain-data', s)],
            '--n-calib', 8, '--pool', 0, '--out', tmp_path / 'run', *extra)
    if case in ('hub id offline', 'not UTF-8'):  # these two through the installed command itself, offline
        r = gaprune(*args)
        line, err = one_line_error(r), r.stderr
    else: line, err = in_process(capsys, *args)
    assert '\n' not in line and line.startswith('gaprune prune: error:') and phrase in line, line
    assert '== load model' not in err  # refused before the model loads
    assert full_tree(tmp_path) == before and tree(data) == data_before  # nothing written


@pytest.mark.parametrize('extra,phrase', [([], 'slim --scorer gates (trained on query, positive) needs pairs'),
                                          (['--scorer', 'wanda', '--recovery', 'contrastive'], 'slim --finetune full --recovery contrastive (with texts only use --recovery distill or tsdae) needs pairs')])
def test_slim_with_texts_only_refuses_what_needs_pairs(tmp_path, bert, data, legal, extra, phrase, capsys):
    before = full_tree(tmp_path)
    line, _ = in_process(capsys, 'slim', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', legal / 'texts.txt',
                         '--no-eval', '--out', tmp_path / 'slim', *extra)
    assert phrase in line and 'the legal data are texts' in line, line
    assert full_tree(tmp_path) == before


def test_domain_names_and_columns_are_checked_as_arguments():
    r = gaprune('prune', '--domain', 'my legal', '--out', 'x')
    assert r.returncode == 2 and "letters, digits, '-' and '_'" in r.stderr
    r = gaprune('prune', '--domain', 'legal', '--columns', 'question=q', '--out', 'x')
    assert r.returncode == 2 and 'unknown canonical column' in r.stderr


METRICS = dict(texts={'cosine', '10-NN overlap'}, pairs={'nDCG@10', 'MRR@10'}, triplets={'nDCG@10', 'MRR@10'})


@pytest.mark.parametrize('shape', ['texts', 'pairs', 'triplets'])
def test_run_and_eval_measure_the_new_domain_on_its_held_out_rows(tmp_path, bert, data, legal, shape):
    "`gaprune run` on a domain with no bundled suite reports its held-out rows with intervals; `gaprune eval --domain-data`"
    " --dense measures the saved model the same way, number for number (the same split, the same two models)."
    src = legal / FILES[shape]
    r = gaprune('run', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', src, '--method', 'magnitude',
                '--out', tmp_path / 'run')
    assert r.returncode == 0, r.stderr[-3000:]
    ev = json.loads((tmp_path / 'run' / 'gaprune_report.json').read_text())['evaluation']
    assert set(ev) == {'domain_suite'}  # no bundled suite for 'legal', no general suite asked for
    dom = ev['domain_suite']
    held = holdout(load_domain('legal', [src]), 0.1, 0)[1]
    assert set(dom['metrics']) == METRICS[shape] and dom['items'] == len(set(held.data[held.key]))
    for m in dom['metrics'].values(): assert m['lo'] <= m['delta'] <= m['hi']
    r = gaprune('eval', '--model', tmp_path / 'run', '--dense', bert, '--data', data, '--domain-data', src, '--json', tmp_path / 'e.json')
    assert r.returncode == 0, r.stderr[-3000:]
    again = json.loads((tmp_path / 'e.json').read_text())
    assert again['metrics'].keys() == dom['metrics'].keys()
    for t, m in dom['metrics'].items():
        assert again['metrics'][t]['dense'] == pytest.approx(m['dense'], abs=1e-9) and again['metrics'][t]['delta'] == pytest.approx(m['delta'], abs=1e-9)
    assert 'Δ [95% CI]' in r.stdout
    alone = gaprune('eval', '--model', tmp_path / 'run', '--data', data, '--domain-data', src)
    if shape == 'texts': assert '--dense' in one_line_error(alone)
    else: assert alone.returncode == 0 and '95% CI' in alone.stdout, alone.stderr[-2000:]


def test_slim_with_evaluation_on_texts_reports_agreement(tmp_path, bert, data, legal):
    r = gaprune('slim', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', legal / FILES['texts'],
                '--keep', 0.5, '--n-calib', 8, '--scorer', 'wanda', '--finetune', 'none', '--out', tmp_path / 'slim')
    assert r.returncode == 0, r.stderr[-3000:]
    dom = json.loads((tmp_path / 'slim' / 'slim_report.json').read_text())['evaluation']['domain_suite']
    assert set(dom['metrics']) == METRICS['texts'] and dom['metrics']['cosine']['hi'] < 0  # half the neurons: every embedding moved
    for m in dom['metrics'].values(): assert m['lo'] <= m['delta'] <= m['hi'] <= 0


def test_texts_only_recover_by_distillation(tmp_path, bert, data, legal):
    "Texts only: prune and slim recover by learning the dense model's embeddings (the only recovery texts allow, and their default)."
    src = legal / FILES['texts']
    r = prune(bert, data, src, tmp_path / 'run', '--retrain-steps', 2)  # no --recovery: chosen by the data's shape
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((tmp_path / 'run' / 'gaprune_report.json').read_text())['config']['recovery'] == 'distill'
    same_embeddings(tmp_path / 'run')
    r = gaprune('slim', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', src, '--keep', 0.5, '--n-calib', 8,
                '--scorer', 'wanda', '--finetune-steps', 2, '--batch-size', 4, '--no-eval', '--out', tmp_path / 'slim')
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads((tmp_path / 'slim' / 'slim_report.json').read_text())['config']['recovery'] == 'distill'
    same_embeddings(tmp_path / 'slim')
    refused = gaprune(*prune_args_texts(bert, data, src, tmp_path / 'no'), '--retrain-steps', 2, '--recovery', 'contrastive')  # pairs needed
    assert 'needs pairs' in one_line_error(refused) and not (tmp_path / 'no').exists()


def test_texts_only_recover_by_denoising(tmp_path, bert, data, legal):
    "Texts only, `--recovery tsdae`: prune and slim rebuild the user's texts from damaged copies with TSDAE's decoder (made from the dense model, dropped after: the saved model is the encoder alone); a family with no such decoder is refused in one line, nothing written."
    src = legal / FILES['texts']
    r = prune(bert, data, src, tmp_path / 'run', '--retrain-steps', 2, '--recovery', 'tsdae')
    assert r.returncode == 0, r.stderr[-3000:]
    assert "TSDAE's decoder, from the dense model" in r.stderr and 'recovery (lora, tsdae, 2 steps)' in r.stderr
    assert json.loads((tmp_path / 'run' / 'gaprune_report.json').read_text())['config']['recovery'] == 'tsdae'
    same_embeddings(tmp_path / 'run')
    from safetensors.torch import load_file
    keys = lambda d: set(load_file(Path(d) / 'model.safetensors'))
    assert keys(tmp_path / 'run') == keys(bert)   # the encoder's weights only: no decoder, no adapter
    r = gaprune('slim', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', src, '--keep', 0.5, '--n-calib', 8,
                '--scorer', 'wanda', '--finetune-steps', 2, '--batch-size', 4, '--recovery', 'distill+tsdae', '--no-eval', '--out', tmp_path / 'slim')
    assert r.returncode == 0, r.stderr[-3000:]
    assert "TSDAE's decoder, from the dense model" in r.stderr and 'teacher embeddings for the recovery (distill+tsdae)' in r.stderr
    same_embeddings(tmp_path / 'slim')
    mp = tmp_path / 'tiny-mpnet'; Encoder(*tiny_model('mpnet')).save_pretrained(mp)
    refused = gaprune(*prune_args_texts(mp, data, src, tmp_path / 'no'), '--retrain-steps', 2, '--recovery', 'tsdae')
    line = one_line_error(refused)
    assert "recovery 'tsdae' needs a decoder" in line and "none for 'mpnet'" in line and '--recovery distill' in line, line
    assert not (tmp_path / 'no').exists() and '== calibration' not in refused.stderr


def prune_args_texts(bert, data, src, out):
    return ('prune', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', src, '--n-calib', 8, '--pool', 0, '--out', out)


def test_a_job_reads_the_domain_files_once(tmp_path, bert, data, legal, monkeypatch):
    "`gaprune run` and `gaprune slim` read the user's files once: the pruning and the evaluation of its held-out rows share them."
    import gaprune_nb.sources as sources
    from gaprune_nb.jobs import run, slim_job
    from gaprune_nb.options import SlimConfig
    reads, real = [], sources.load_domain
    monkeypatch.setattr(sources, 'load_domain', lambda name, *a, **k: reads.append(name) or real(name, *a, **k))
    src = [str(legal / FILES['triplets'])]
    run(RunConfig(model=str(bert), data=str(data), domain='legal', domain_data=src, method='wanda', n_calib=8, pool=0), tmp_path / 'run', show_progress=False)
    assert reads.count('legal') == 1 and (tmp_path / 'run' / 'gaprune_report.json').exists()
    reads.clear()
    slim_job(SlimConfig(model=str(bert), data=str(data), domain='legal', domain_data=src, keep=0.5, n_calib=8, scorer='wanda', finetune='none'),
             tmp_path / 'slim', show_progress=False)
    assert reads.count('legal') == 1 and 'domain_suite' in json.loads((tmp_path / 'slim' / 'slim_report.json').read_text())['evaluation']


def test_pairs_recover_with_negatives_mined_from_the_users_documents(tmp_path, bert, data, legal):
    "Pairs have no negatives: `--recovery mined` ranks the user's own documents with the dense model and trains on the ones just below the top, in prune and slim; the stage says how many documents it mined from (the distinct answers outside the held-out rows)."
    src = legal / FILES['pairs']
    docs = len(set(' '.join(str(t).split()) for t in pd.read_csv(src).answer))
    r = prune(bert, data, src, tmp_path / 'run', '--retrain-steps', 2, '--recovery', 'mined')
    assert r.returncode == 0, r.stderr[-3000:]
    mined = [l for l in r.stderr.splitlines() if 'mine hard negatives among' in l]
    n = int(mined[0].split('among ')[1].split()[0].replace(',', ''))
    assert len(mined) >= 1 and docs * 0.8 <= n < docs, (mined, docs)   # the training rows' documents, not the held-out 10%
    assert json.loads((tmp_path / 'run' / 'gaprune_report.json').read_text())['config']['recovery'] == 'mined'
    same_embeddings(tmp_path / 'run')
    r = gaprune('slim', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', src, '--keep', 0.5, '--n-calib', 8,
                '--scorer', 'wanda', '--finetune-steps', 2, '--batch-size', 4, '--recovery', 'distill+mined', '--no-eval', '--out', tmp_path / 'slim')
    assert r.returncode == 0, r.stderr[-3000:]
    assert 'mine hard negatives among' in r.stderr and 'teacher embeddings for the recovery (distill+mined)' in r.stderr
    assert json.loads((tmp_path / 'slim' / 'slim_report.json').read_text())['config']['recovery'] == 'distill+mined'
    same_embeddings(tmp_path / 'slim')
