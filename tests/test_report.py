"Issue 53, item 5: each `run` and `slim` folder gets a one-page `report.html` (what was run, Δ with its interval as an inline figure, the worst items, size, speed, seconds per stage), tracked among the run's own files."
import base64, json, re, shutil, subprocess, tempfile
from html.parser import HTMLParser

import pytest

from conftest import gaprune
from test_worst import pairs_file
from gaprune_nb.report import HTML


class _Page(HTMLParser):
    "The tags and text of a page, read by the standard library's parser (an error on what it cannot read)."
    def __init__(self):
        super().__init__(); self.tags, self.text, self.img = [], [], []
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == 'img': self.img.append(dict(attrs)['src'])
    def handle_data(self, data): self.text.append(data)


def parse(path):
    p = _Page(); p.feed(path.read_text(encoding='utf-8')); p.close()
    return p


@pytest.fixture(scope='module')
def folders(tmp_path_factory, bert, data):
    "`gaprune run` and `gaprune slim` on the tiny model with a held-out split of a user's pairs (Δ with intervals, worst items): (run folder, slim folder, run result, slim result)."
    tmp = tmp_path_factory.mktemp('report')
    src = tmp / 'legal' / 'legal.jsonl'
    pairs_file(src, slice=False)
    common = ('--model', bert, '--data', data, '--domain', 'legal', '--domain-data', src, '--holdout', 0.2, '--n-calib', 8)
    r = gaprune('run', *common, '--method', 'wanda-row', '--pool', 0, '--batch-size', 4, '--out', tmp / 'run')
    s = gaprune('slim', *common, '--keep', 0.5, '--scorer', 'wanda', '--finetune', 'none', '--speed-tokens', 16, '--speed-batch', 4,
                '--threads', 1, '--out', tmp / 'slim')
    return tmp / 'run', tmp / 'slim', r, s


def _numbers_on_page(folder, report_file):
    "The page parses, embeds one PNG, is listed in the folder's manifest, and shows the report's Δ and interval of each metric."
    page = parse(folder / HTML)
    assert page.tags[:1] == ['html'] and {'h1', 'table', 'img'} <= set(page.tags)
    [src] = page.img
    assert src.startswith('data:image/png;base64,') and base64.b64decode(src.split(',', 1)[1])[:8] == b'\x89PNG\r\n\x1a\n'
    text = ' '.join(page.text)
    ev = json.loads((folder / report_file).read_text())['evaluation']['domain_suite']
    for m, v in ev['metrics'].items():
        assert m in text and f"{v['delta']:.3f}" in text and f"[{v['lo']:.3f}, {v['hi']:.3f}]" in text, m
    assert 'What was lost' in text and 'Where the time went' in text and 'total' in text
    return text


def test_run_writes_a_report_page_with_its_numbers(folders):
    run, _, r, _ = folders
    assert r.returncode == 0, r.stderr[-3000:]
    text = _numbers_on_page(run, 'gaprune_report.json')
    rep = json.loads((run / 'gaprune_report.json').read_text())
    assert f"{rep['scored_weights']:,}" in text and f"{rep['zero_weights']:,}" in text and 'wanda-row at 50% (row)' in text
    assert json.loads((run / 'gaprune_files.json').read_text())[HTML] == 'prune'  # one of the run's own files


def test_slim_writes_a_report_page_with_size_and_speed(folders):
    _, slim, _, s = folders
    assert s.returncode == 0, s.stderr[-3000:]
    text = _numbers_on_page(slim, 'slim_report.json')
    rep = json.loads((slim / 'slim_report.json').read_text())
    assert f"{rep['params_kept']:.1%}" in text and f"{rep['speed']['batch_speedup']:.2f}x" in text
    assert 'quiet machine' in text or 'cores busy' in text  # whether the machine was quiet when timed
    assert json.loads((slim / 'gaprune_files.json').read_text())[HTML] == 'slim'


def test_overwrite_replaces_the_page_and_a_users_page_is_refused(folders, bert, data, tmp_path):
    import shutil
    run = tmp_path / 'run'; shutil.copytree(folders[0], run)   # a copy: the module's folders stay as made for the other tests (the browser's)
    before = (run / HTML).read_text()
    r = gaprune('prune', '--model', bert, '--data', data, '--method', 'magnitude', '--n-calib', 8, '--pool', 0, '--batch-size', 4,
                '--out', run, '--overwrite')
    assert r.returncode == 0, r.stderr[-3000:]
    assert not (run / HTML).exists() and before  # the run's page went with the run it described (prune writes none)
    mine = tmp_path / 'mine'; mine.mkdir(); (mine / HTML).write_text('my notes')
    r = gaprune('run', '--model', bert, '--data', data, '--method', 'magnitude', '--n-calib', 8, '--pool', 0, '--batch-size', 4, '--out', mine)
    assert r.returncode != 0 and (mine / HTML).read_text() == 'my notes'


@pytest.mark.skipif(not shutil.which('chromium'), reason='chromium not installed')
def test_the_page_renders_in_a_headless_browser(folders):
    "As tools/check_math.py checks the docs: headless Chromium loads the page and its DOM has the figure and the tables."
    run, slim, *_ = folders
    for f in (run / HTML, slim / HTML):
        with tempfile.TemporaryDirectory() as prof:
            dom = subprocess.run(['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', f'--user-data-dir={prof}',
                                  '--virtual-time-budget=3000', '--dump-dom', f.resolve().as_uri()], capture_output=True, text=True, timeout=120).stdout
        assert re.search(r'<img[^>]+src="data:image/png;base64,', dom) and dom.count('<table') >= 3 and 'Where the time went' in dom, f
