#!/usr/bin/env python3
"""Every formula of the rendered docs is typeset: for each page with maths, headless Chromium runs the page's KaTeX and
this counts the typeset formulas, KaTeX errors and TeX left raw in the visible text (outside code).

    python3 tools/check_math.py _docs        (run by tools/docs.sh when chromium is installed; exit 1 on a problem)
"""
import html, re, shutil, subprocess, sys, tempfile
from pathlib import Path

RAW = r'\$[^$\s][^$\n]{0,40}\$|\\\[|\\\(|\\frac|\\sum|\\mathrm|\\theta'

def check(page:Path) -> tuple[int, int, list]:
    with tempfile.TemporaryDirectory() as prof:
        dom = subprocess.run(['chromium', '--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', f'--user-data-dir={prof}',
                              '--virtual-time-budget=5000', '--dump-dom', page.resolve().as_uri()],
                             capture_output=True, text=True, timeout=120).stdout
    typeset, errors = len(re.findall(r'class="katex"', dom)), len(re.findall(r'katex-error', dom))
    text = re.sub(r'<span class="katex.*?</span></span></span>', '', dom, flags=re.S)
    text = re.sub(r'<(pre|code|script|style)[^>]*>.*?</\1>', '', text, flags=re.S)
    return typeset, errors, re.findall(RAW, html.unescape(re.sub(r'<[^>]+>', ' ', text)))

def main(site='_docs'):
    if not shutil.which('chromium'): print('check_math: chromium not installed, skipped'); return 0
    bad = 0
    for page in sorted(Path(site).glob('*.html')):
        if 'katex' not in page.read_text(errors='ignore'): continue
        typeset, errors, raw = check(page)
        bad += bool(errors or raw or not typeset)
        print(f'{page.name:32s} formulas {typeset:3d}  KaTeX errors {errors}  raw TeX {len(raw)} {raw[:2] if raw else ""}')
    print('check_math: ' + ('every formula typeset' if not bad else f'{bad} page(s) with problems'))
    return int(bad > 0)

if __name__ == '__main__': sys.exit(main(*sys.argv[1:]))
