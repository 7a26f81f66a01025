"""Bad input through the real `gaprune` command (a subprocess, as a user runs it), on a tiny model and tiny data.

Each case asserts the message, the exit code, and that no user file was touched or left half-written. One test per
item of the issue "No data loss, resumable runs, checked statistics, errors before the expensive work"."""
import hashlib, json, os, signal, subprocess, sys, time
from pathlib import Path

import pytest
from transformers import AutoConfig, AutoModel, AutoTokenizer

from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import minilm_path

from conftest import ENV, WORDS, gaprune, tree, _triplets, prune_args, one_line_error


# 1. --out never deletes what the package did not write

def test_existing_user_folder_is_refused_and_untouched(tmp_path, bert, data):
    user = tmp_path / 'thesis'
    (user / 'figs').mkdir(parents=True)
    (user / 'main.tex').write_text('years of work'); (user / 'figs' / 'a.png').write_bytes(b'\x89PNG')
    before = tree(user)
    r = gaprune(*prune_args(bert, data, user, method='magnitude'))
    assert 'exists and is not empty' in one_line_error(r) and '--overwrite' in r.stderr
    r = gaprune(*prune_args(bert, data, user, '--overwrite', method='magnitude'))
    assert 'did not write' in one_line_error(r)
    assert tree(user) == before and sorted(p.name for p in tmp_path.iterdir()) == ['thesis']


@pytest.mark.parametrize('where,msg', [('.', 'is the working folder'), ('..', 'is a parent of the working folder'),
                                       ('/', 'file-system root'), ('~', 'home folder'), ('DATA', 'data folder')])
def test_dangerous_out_paths_are_refused(tmp_path, bert, data, where, msg):
    work = tmp_path / 'project' / 'sub'
    work.mkdir(parents=True); (work / 'notes.md').write_text('mine'); (tmp_path / 'project' / 'keep.txt').write_text('x')
    before, data_before = tree(tmp_path), tree(data)
    r = gaprune(*prune_args(bert, data, data if where == 'DATA' else where, '--overwrite', method='magnitude'), cwd=work)
    assert msg in one_line_error(r)
    assert tree(tmp_path) == before and tree(data) == data_before


def test_overwrite_replaces_a_previous_run_only(tmp_path, bert, data):
    out = tmp_path / 'run'
    assert gaprune(*prune_args(bert, data, out, '--sparsity', '0.3', method='magnitude')).returncode == 0
    first = tree(out)
    assert 'pass --overwrite' in one_line_error(gaprune(*prune_args(bert, data, out, method='magnitude')))
    assert tree(out) == first  # refused: untouched
    r = gaprune(*prune_args(bert, data, out, '--overwrite', '--sparsity', '0.6', method='magnitude'))
    assert r.returncode == 0, r.stderr
    assert json.loads((out / 'gaprune_report.json').read_text())['config']['sparsity'] == 0.6
    assert sorted(p.name for p in tmp_path.iterdir()) == ['run']  # no backup or temporary folder left


# 2. The CLI resumes: kill -9 during the statistics, rerun, same mask byte for byte

def test_kill_and_rerun_resumes_with_identical_mask(tmp_path):
    data = os.environ.get('GAPRUNE_DATA') or str(Path(__file__).resolve().parents[2] / 'shared' / 'data')
    if not Path(data, 'triplets').is_dir(): pytest.skip('real data folder not found (set GAPRUNE_DATA)')
    args = lambda out: ('prune', '--method', 'fisher-dom', '--n-calib', 12, '--pool', 48, '--batch-size', 1,
                        '--checkpoint-every', 1, '--data', data, '--out', out)
    out = tmp_path / 'run'
    ckpt_manifests = lambda: list((tmp_path / 'run.partial').glob('statistics-*/checkpoint/manifest.json'))
    proc = subprocess.Popen([sys.executable, '-c', 'from gaprune_nb.cli import main; main()', *map(str, args(out))],
                            env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        t0, step = time.time(), 0
        while step < 3:
            assert proc.poll() is None, f"finished before it could be killed: {proc.stderr.read()[-1000:]}"
            assert time.time() - t0 < 600
            for m in ckpt_manifests():
                try: step = json.loads(m.read_text())['step']
                except (ValueError, OSError): pass
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill(); proc.wait()
    assert [f.name for f in out.iterdir()] == ['.gaprune.lock']  # nothing half-written where the user looks: only the killed run's lock
    r = gaprune(*args(out))
    assert r.returncode == 0, r.stderr[-2000:]
    assert f'--out {out}: took over the lock of gaprune process {proc.pid}, which is no longer running' in r.stderr
    report = json.loads((out / 'gaprune_report.json').read_text())
    done = int(report['resumed']['statistics'].split('resumed from step ')[1].split()[0])
    assert done >= 3 and 'resumed from step' in r.stderr and 'of 12' in report['resumed']['statistics']
    assert not (tmp_path / 'run.partial').exists()
    r2 = gaprune(*args(tmp_path / 'straight'))
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert (out / 'mask.safetensors').read_bytes() == (tmp_path / 'straight' / 'mask.safetensors').read_bytes()
    assert json.loads((tmp_path / 'straight' / 'gaprune_report.json').read_text())['resumed'] == {}


# 3. Statistics are checked: checksum, readable manifest, domain named

@pytest.fixture(scope='module')
def stats_run(tmp_path_factory, bert, data):
    out = tmp_path_factory.mktemp('statsrun') / 'run'
    r = gaprune(*prune_args(bert, data, out))
    assert r.returncode == 0, r.stderr[-2000:]
    return out


@pytest.mark.parametrize('damage,msg', [
    ('truncate', 'stats.safetensors does not match the sha256 in its manifest'),
    ('edit', 'stats.safetensors does not match the sha256 in its manifest'),
    ('manifest', 'manifest.json is damaged (not valid JSON'),
])
def test_damaged_statistics_are_refused_with_the_file_named(tmp_path, stats_run, bert, data, damage, msg):
    import shutil
    st = tmp_path / 'stats'; shutil.copytree(stats_run / 'stats', st)
    f = st / 'stats.safetensors'; b = f.read_bytes()
    if damage == 'truncate': f.write_bytes(b[:len(b) // 2])
    elif damage == 'edit': f.write_bytes(b[:-8] + bytes(8))  # same size, last values zeroed
    else: (st / 'manifest.json').write_text('')
    r = gaprune(*prune_args(bert, data, tmp_path / 'out', '--stats', st))
    line = one_line_error(r)
    assert msg in line and str(st) in line
    assert not (tmp_path / 'out').exists()


def test_statistics_of_another_domain_are_refused_by_name(tmp_path, stats_run, bert, data):
    r = gaprune(*prune_args(bert, data, tmp_path / 'out', '--stats', stats_run / 'stats', '--domain', 'chemistry'))
    assert 'computed on finance, asked for chemistry' in one_line_error(r)
    assert list(tmp_path.iterdir()) == []


# 4. Every argument is checked before any model is loaded

@pytest.mark.parametrize('cmd,flag,value,msg', [('prune', '--scope', 'glbal', "Unknown scope 'glbal'"),
                                                ('run', '--limit', 'lots', "--limit must be 'tiny'"),
                                                ('prune', '--sparsity', '1.5', '--sparsity must be in (0, 1)'),
                                                ('prune', '--n-calib', '0', 'must be an integer >= 1')])
def test_bad_arguments_fail_before_any_work(tmp_path, cmd, flag, value, msg):
    r = gaprune(cmd, flag, value, '--out', tmp_path / 'out')
    assert r.returncode == 2 and msg in r.stderr and 'Traceback' not in r.stderr
    assert list(tmp_path.iterdir()) == []  # exit 2 comes from the parser: nothing was loaded or written


def test_bad_arguments_import_no_torch():
    "Argument parsing (and --help) needs neither torch nor transformers: it answers at once."
    code = ("import argparse, sys; from gaprune_nb.cli import build_parser\n"
            "for a in (['prune', '--out', 'x'], ['run', '--out', 'x', '--limit', 'tiny'], ['eval', '--max-length', '64'], ['demo'],\n"
            "          ['slim', '--out', 'x', '--max-length', '64']):\n"
            "    build_parser().parse_args(a)\n"
            "for p in next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices.values():\n"
            "    p.format_help()  # every subcommand's --help (RunConfig's flags are read from its source, not imported)\n"
            "print(sorted(m for m in ('torch', 'transformers', 'datasets', 'pandas') if m in sys.modules))")
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=ENV)
    assert r.returncode == 0 and r.stdout.strip() == '[]', r.stdout + r.stderr


# 5. Errors say what is wrong in the package's words

def test_missing_model_folder(tmp_path, data):
    r = gaprune('prune', '--model', tmp_path / 'no-such-model', '--data', data, '--n-calib', 8, '--out', tmp_path / 'out')
    assert 'no such model folder' in one_line_error(r) and not (tmp_path / 'out').exists()


def _save_tiny(kind, d):
    tok = AutoTokenizer.from_pretrained(minilm_path())
    cfg = AutoConfig.for_model(kind, vocab_size=len(tok), d_model=32, d_ff=64, num_layers=1, num_heads=2, d_kv=8,
                               n_embd=32, n_layer=1, n_head=2, n_positions=64)
    AutoModel.from_config(cfg).save_pretrained(d); tok.save_pretrained(d)
    return d


def test_encoder_decoder_model_is_named(tmp_path, data):
    m = _save_tiny('t5', tmp_path / 'tiny-t5')
    r = gaprune('prune', '--model', m, '--data', data, '--method', 'magnitude', '--out', tmp_path / 'out')
    line = one_line_error(r)
    assert "'t5' is an encoder-decoder model" in line and 'input_ids' not in line


def test_unsupported_architecture_names_its_model_type(tmp_path, data):
    m = _save_tiny('gpt2', tmp_path / 'tiny-gpt2')
    r = gaprune('prune', '--model', m, '--data', data, '--method', 'fisher-dom', '--n-calib', 8, '--out', tmp_path / 'out')
    line = one_line_error(r)
    assert "model_type='gpt2'" in line and "'Encoder'" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ['tiny-gpt2']  # no output, no work folder left


def test_non_utf8_data_names_file_and_line(tmp_path, bert):
    root = tmp_path / 'data'
    for dom in ('general', 'finance'):
        (root / 'triplets' / dom).mkdir(parents=True)
        (root / 'triplets' / dom / 'x.jsonl').write_text(''.join(json.dumps(r) + '\n' for r in _triplets(1)))
    bad = root / 'triplets' / 'finance' / 'x.jsonl'
    bad.write_bytes(bad.read_bytes() + '{"query": "café", "positive": "b", "negative": "c"}\n'.encode('latin-1'))
    r = gaprune('prune', '--model', bert, '--data', root, '--method', 'wanda', '--out', tmp_path / 'out')
    line = one_line_error(r)
    assert f'{bad}, line 25: not UTF-8 text' in line and 'codec' not in line


def test_demo_without_data_names_the_flag(tmp_path):
    r = gaprune('demo', '-n', '4')
    line = one_line_error(r)
    assert '--data' in line and 'GAPRUNE_DATA' in line


def test_debug_keeps_the_traceback(tmp_path):
    r = gaprune('--debug', 'prune', '--method', 'magnitude', '--model', tmp_path / 'nope', '--out', tmp_path / 'out')
    assert r.returncode == 1 and 'Traceback' in r.stderr and 'ModelLoadError' in r.stderr


# 6. Same inputs, same bytes

def test_identical_runs_write_identical_bytes(tmp_path, stats_run, bert, data):
    again = tmp_path / 'again'
    r = gaprune(*prune_args(bert, data, again))
    assert r.returncode == 0, r.stderr[-2000:]
    a, b = ({k: v for k, v in tree(d).items() if k != "gaprune.log"} for d in (stats_run, again))  # the log has times
    assert a == b, {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
    assert {'mask.safetensors', 'model.safetensors', 'stats/stats.safetensors', 'stats/manifest.json',
            'gaprune_report.json'} <= set(a)


# 7. Stage headings and times

def test_stages_are_announced_with_their_time(stats_run, tmp_path, bert, data):
    r = gaprune(*prune_args(bert, data, tmp_path / 'out'))
    assert r.returncode == 0
    for s in ('load model', 'calibration sample (k-means)', 'gradient statistics', 'scores and mask', 'save'):
        assert f'== {s}' in r.stderr and f'   {s}: ' in r.stderr, s


def test_cache_keeps_statistics_for_later_runs_and_refuses_user_folders(tmp_path, bert, data):
    cache = tmp_path / 'cache'
    r = gaprune(*prune_args(bert, data, tmp_path / 'a', '--cache', cache))
    assert r.returncode == 0, r.stderr[-2000:]
    assert (cache / 'gaprune_cache.json').is_file() and len(list(cache.glob('statistics-*/stats/manifest.json'))) == 1
    r = gaprune(*prune_args(bert, data, tmp_path / 'b', '--cache', cache, '--sparsity', '0.3', '--no-softplus'))
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'loaded from' in json.loads((tmp_path / 'b' / 'gaprune_report.json').read_text())['resumed']['statistics']
    r = gaprune(*prune_args(bert, data, tmp_path / 'd', '--stats', tmp_path / 'a' / 'stats'))  # a model whose limit > 256
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / 'd' / 'mask.safetensors').read_bytes() == (tmp_path / 'a' / 'mask.safetensors').read_bytes()
    mine = tmp_path / 'mine'; mine.mkdir(); (mine / 'notes.txt').write_text('mine')
    r = gaprune(*prune_args(bert, data, tmp_path / 'c', '--cache', mine))
    assert 'did not write' in one_line_error(r) and tree(mine) == {'notes.txt': tree(mine)['notes.txt']}
    assert not (tmp_path / 'c').exists()
