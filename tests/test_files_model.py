"""Model files through the real `gaprune` command (a subprocess, as a user runs it), offline, on the tiny fixtures.

Issue 30 ("No lost files anywhere"): a damaged model folder (7a, 7b) and a device this torch cannot use (7c) are
refused in one line that says which file or option and what to do; every saved file and folder follows the umask (10);
a saved model carries the tokenizer settings it was loaded with, whatever the method (11). Each test compares the file
trees (sha256 and mode of every entry, hidden ones included) before and after."""
import json, os, shutil
from contextlib import contextmanager

import pytest
import torch
from tokenizers import Tokenizer

from gaprune_nb.fixtures import FixtureMissing, minilm_path

from conftest import gaprune, full_tree, prune_args, one_line_error


def _refused(tmp_path, data, args):
    "Run `gaprune args`; its one-line error, after checking that nothing under `tmp_path` or in `data` changed."
    before, data_before = full_tree(tmp_path), full_tree(data)
    r = gaprune(*args)
    last = one_line_error(r)
    assert full_tree(tmp_path) == before and full_tree(data) == data_before  # nothing new, nothing changed
    return last, r


# 7a. A corrupt JSON file of the model folder is named, with what to do

@pytest.mark.parametrize('name', ['config.json', 'modules.json'])
def test_corrupt_json_in_model_folder_is_named(tmp_path, bert, data, name):
    model = shutil.copytree(bert, tmp_path / 'model')
    (model / name).write_text('{not json')
    last, _ = _refused(tmp_path, data, prune_args(model, data, tmp_path / 'out', method='magnitude'))
    assert last.startswith(f"gaprune prune: error: model folder {model}: {name} is not valid JSON (line 1, column 2): "), last
    assert last.endswith("; restore it from the model's source"), last


# 7b. Truncated weights are named, before transformers reads them

def test_truncated_weights_are_named(tmp_path, bert, data):
    model = shutil.copytree(bert, tmp_path / 'model')
    w = model / 'model.safetensors'
    os.truncate(w, w.stat().st_size // 2)
    last, _ = _refused(tmp_path, data, prune_args(model, data, tmp_path / 'out', method='magnitude'))
    assert last.startswith(f"gaprune prune: error: {w} is damaged or truncated ("), last
    assert last.endswith("; re-download or re-save the model"), last


# 7c. A device this torch cannot use is refused before the model is loaded

@pytest.mark.parametrize('device', ['cuda', 'mps'])
def test_unavailable_device_is_refused_before_loading(tmp_path, bert, data, device):
    if (torch.cuda.is_available() if device == 'cuda' else torch.backends.mps.is_available()):
        pytest.skip(f'{device} is available here')
    last, r = _refused(tmp_path, data, prune_args(bert, data, tmp_path / 'out', '--device', device, method='magnitude'))
    assert last.startswith(f"gaprune prune: error: --device {device}: "), last
    assert '--device cpu' in last, last
    if device == 'cuda' and torch.version.cuda is None:
        assert f'this torch ({torch.__version__}) has no CUDA' in last and 'CUDA build of torch' in last, last
    assert 'Loading weights' not in r.stderr  # refused before transformers reads the weights


# 10. Every saved file and folder follows the umask

@contextmanager
def umask(m):
    old = os.umask(m)
    try: yield
    finally: os.umask(old)


@pytest.mark.parametrize('mask,method', [(0o022, 'magnitude'), (0o027, 'fisher-dom')])
def test_saved_files_follow_the_umask(tmp_path, bert, data, mask, method):
    out, model_before, data_before = tmp_path / 'run', full_tree(bert), full_tree(data)
    with umask(mask): r = gaprune(*prune_args(bert, data, out, method=method))
    assert r.returncode == 0, r.stderr[-2000:]
    want = {'dir': oct(0o777 & ~mask), 'file': oct(0o666 & ~mask)}
    got = {k: (v[0] if v[0] == 'dir' else 'file', v[1]) for k, v in full_tree(out).items()}
    assert 'model.safetensors' in got and (method == 'magnitude' or 'stats' in got)
    assert {k: m for k, (kind, m) in got.items() if m != want[kind]} == {}
    assert oct(out.stat().st_mode & 0o777) == want['dir']
    assert sorted(p.name for p in tmp_path.iterdir()) == ['run']  # no temporary or work folder left
    assert full_tree(bert) == model_before and full_tree(data) == data_before


# 11. A saved model carries the dense model's tokenizer settings, whatever the method

def _settings(folder):
    "The truncation and padding of a folder's tokenizer.json, as the tokenizers library reads them."
    t = Tokenizer.from_file(str(folder / 'tokenizer.json'))
    return t.truncation, t.padding


def _same_tokenizer(out, src):
    assert _settings(out) == _settings(src)
    for f in ('tokenizer.json', 'tokenizer_config.json'): assert (out / f).read_bytes() == (src / f).read_bytes(), f


def test_saved_tokenizer_is_the_source_one_whatever_the_method(tmp_path, bert, data):
    before = full_tree(bert)
    for m in ('magnitude', 'fisher-dom'):  # fisher-dom encodes (k-means, statistics at 256 tokens); magnitude does not
        r = gaprune(*prune_args(bert, data, tmp_path / m, method=m))
        assert r.returncode == 0, r.stderr[-2000:]
        _same_tokenizer(tmp_path / m, bert)
    assert full_tree(bert) == before and sorted(p.name for p in tmp_path.iterdir()) == ['fisher-dom', 'magnitude']


def test_source_tokenizer_without_truncation_or_padding(tmp_path, bert, data):
    model = shutil.copytree(bert, tmp_path / 'model')
    t = Tokenizer.from_file(str(model / 'tokenizer.json'))
    t.no_truncation(); t.no_padding(); t.save(str(model / 'tokenizer.json'))
    assert json.loads((model / 'tokenizer.json').read_text())['truncation'] is None
    before = full_tree(model)
    r = gaprune(*prune_args(model, data, tmp_path / 'run'))
    assert r.returncode == 0, r.stderr[-2000:]
    assert _settings(tmp_path / 'run') == (None, None)
    _same_tokenizer(tmp_path / 'run', model)
    assert full_tree(model) == before


def test_minilm_tokenizer_settings_are_kept(tmp_path, data):
    try: src = minilm_path()
    except FixtureMissing as e: pytest.skip(str(e))
    model = shutil.copytree(src, tmp_path / 'minilm')
    before = full_tree(model)
    r = gaprune(*prune_args(model, data, tmp_path / 'run', method='wanda'))  # wanda encodes the calibration triplets
    assert r.returncode == 0, r.stderr[-2000:]
    assert _settings(tmp_path / 'run') == _settings(model)
    assert _settings(model)[0]['max_length'] == 128 and _settings(model)[1]['length'] == 128
    assert full_tree(model) == before
