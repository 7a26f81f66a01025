"Issue 53: output for people: a line per stage, one bar per long stage, the results; the libraries' bars kept out; the whole log in the run folder."
import io, json

import pytest

from conftest import gaprune
from test_worst import pairs_file
from gaprune_nb.cli import build_parser
from gaprune_nb.console import LOG, console, finished, heading, progress


@pytest.fixture(scope='module')
def runs(tmp_path_factory, bert, data):
    "The main job on the tiny model, quiet and with --verbose: (folder, quiet result, verbose result)."
    tmp = tmp_path_factory.mktemp('console')
    src = tmp / 'legal' / 'legal.jsonl'
    pairs_file(src, slice=False)
    args = lambda out, *x: ('run', '--model', bert, '--data', data, '--domain', 'legal', '--domain-data', src, '--holdout', 0.2,
                            '--method', 'wanda-row', '--n-calib', 8, '--pool', 0, '--batch-size', 4, '--out', tmp / out, *x)
    return tmp, gaprune(*args('quiet')), gaprune(*args('verbose', '--verbose'))


def test_not_a_terminal_a_line_per_stage_no_carriage_returns(runs):
    _, r, _ = runs
    assert r.returncode == 0, r.stderr[-3000:]
    assert '\r' not in r.stdout + r.stderr and '\x1b[' not in r.stderr
    lines = (r.stdout + r.stderr).splitlines()
    assert len(lines) <= 45, '\n'.join(lines)
    for s in ('load model', 'calibration sample (k-means)', 'scores and mask', 'save'):
        assert f'== {s}\n' in r.stderr and f'   {s}: ' in r.stderr, s
    assert 'saved: ' in r.stdout


def test_the_log_in_the_run_folder_has_the_detail(runs):
    tmp, r, _ = runs
    log = (tmp / 'quiet' / LOG).read_text()
    assert log.startswith('$ gaprune run ') and '\r' not in log
    printed = [l.rstrip() for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    assert all(l in log for l in printed), [l for l in printed if l not in log][:3]
    assert len(log.splitlines()) > len(printed)  # the bars' last states too
    assert json.loads((tmp / 'quiet' / 'gaprune_files.json').read_text())[LOG] == 'prune'  # one of the run's own files: --overwrite replaces it


def test_verbose_prints_more(runs):
    tmp, r, v = runs
    assert v.returncode == 0, v.stderr[-3000:]
    assert len((v.stdout + v.stderr).splitlines()) > len((r.stdout + r.stderr).splitlines())
    assert '\r' not in v.stderr  # not a terminal: each bar's last state, as a line
    assert (tmp / 'verbose' / LOG).is_file()
    assert build_parser().parse_args(['--verbose', 'run', '--out', 'x']).verbose and build_parser().parse_args(['run', '--verbose', '--out', 'x']).verbose


class Terminal(io.StringIO):
    def isatty(self): return True


def test_on_a_terminal_a_stage_is_one_line_with_its_bar(monkeypatch):
    out, err = Terminal(), Terminal()
    monkeypatch.setattr('sys.stdout', out); monkeypatch.setattr('sys.stderr', err)
    with console() as con:
        heading('encode')
        for _ in progress(range(3), desc='outer'):
            for _ in progress(range(2), desc='inner'): pass  # a bar inside the stage's bar: the log only
        finished('encode', 1.25)
        print('the table')
    screen = err.getvalue()
    assert screen.startswith('== encode ...') and screen.endswith('\r\x1b[K== encode: 1.2s\n') and 'inner' not in screen
    assert '\r== encode:   0%|' in screen and screen.count('\n') == 1  # the bar is drawn on the stage's line
    assert out.getvalue() == 'the table\n' and con.log[0] == '== encode' and con.log[-1] == 'the table'
