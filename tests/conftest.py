"""Shared fixtures of the command-line tests: the real `gaprune` command as a subprocess, a tiny BERT model folder and a
tiny data folder in the package's layout, and a file-tree snapshot (what a user would check with sha256sum and ls -l)."""
import contextlib, hashlib, io, json, os, subprocess, sys, traceback, warnings
from pathlib import Path

import pytest

from gaprune_nb.cli import main
from gaprune_nb.core import Encoder
from gaprune_nb.fixtures import tiny_model

ENV = {k: v for k, v in os.environ.items() if k != 'GAPRUNE_DATA'}
ENV.update(OMP_NUM_THREADS='1', HF_HUB_OFFLINE='1', TOKENIZERS_PARALLELISM='false')
WORDS = ('revenue margin bond equity dividend cash asset yield loss profit debt audit tax stock fund price rate '
         'acid ester ketone enzyme protein ligand reagent solvent polymer catalyst').split()


def gaprune(*args, cwd=None, env=None, isolated=False):
    """The `gaprune` command on `args`, as a `CompletedProcess`: by default run by `main` in this process with its own
    environment, working folder, stdout, stderr and exit code (torch and transformers are imported once per test worker,
    not once per call: ~10 s each); `isolated` runs it as a new process (what needs a process of its own: imports, signals)."""
    args = [str(a) for a in args]
    if isolated:
        return subprocess.run([sys.executable, '-c', 'from gaprune_nb.cli import main; main()', *args],
                              capture_output=True, text=True, env=env or ENV, cwd=cwd, timeout=900)
    out, err, code = io.StringIO(), io.StringIO(), 0
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear(); os.environ.update(env or ENV)
    try:
        if cwd: os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter('default')  # a new filter list: each call shows its warnings, as a new process would
            try: main(args)
            except SystemExit as e:  # what the interpreter does with sys.exit(...) at the end of a process
                if isinstance(e.code, int) or e.code is None: code = e.code or 0
                else: print(e.code, file=sys.stderr); code = 1
            except BaseException:
                traceback.print_exc(); code = 1
    finally:
        os.chdir(saved_cwd); os.environ.clear(); os.environ.update(saved_env)
    return subprocess.CompletedProcess(['gaprune', *args], code, out.getvalue(), err.getvalue())


def tree(d: Path) -> dict:
    "Every file under `d` with its sha256 (what a user would check with sha256sum)."
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.rglob('*')) if p.is_file()}


def full_tree(d: Path) -> dict:
    "Every entry under `d` (hidden ones included): files with sha256 and mode, folders and links marked."
    out = {}
    for p in sorted(d.rglob('*')):
        k = str(p.relative_to(d))
        if p.is_symlink(): out[k] = ('link', os.readlink(p))
        elif p.is_dir(): out[k] = ('dir', oct(p.stat().st_mode & 0o777))
        else: out[k] = (hashlib.sha256(p.read_bytes()).hexdigest(), oct(p.stat().st_mode & 0o777))
    return out


def _triplets(seed, n=24):
    rows = []
    for i in range(n):
        w = [WORDS[(seed * 7 + i * 3 + k) % len(WORDS)] for k in range(6)]
        rows.append(dict(query=f'what is the {w[0]} of {w[1]}', positive=f'the {w[0]} of {w[1]} is {w[2]} {w[3]}',
                         negative=f'{w[4]} and {w[5]} are unrelated'))
    return rows


@pytest.fixture(scope='module')
def data(tmp_path_factory):
    "A data folder in the package's layout with a few triplets per domain."
    root = tmp_path_factory.mktemp('data')
    for s, dom in enumerate(('general', 'finance', 'chemistry')):
        p = root / 'triplets' / dom / f'{dom}_tiny.jsonl'
        p.parent.mkdir(parents=True)
        p.write_text(''.join(json.dumps(r) + '\n' for r in _triplets(s)))
    return root


@pytest.fixture(scope='module')
def bert(tmp_path_factory):
    "A tiny random BERT saved as a model folder."
    d = tmp_path_factory.mktemp('models') / 'tiny-bert'
    Encoder(*tiny_model('bert')).save_pretrained(d)
    return d


def prune_args(bert, data, out, *extra, method='fisher-dom'):
    return ('prune', '--model', bert, '--data', data, '--method', method, '--n-calib', 8, '--pool', 0,
            '--batch-size', 4, '--out', out, *extra)


def one_line_error(r, code=1):
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    last = r.stderr.strip().splitlines()[-1]
    assert 'Traceback' not in r.stderr, r.stderr[-2000:]
    return last
