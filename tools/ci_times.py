#!/usr/bin/env python3
"""Wall time of the test command per notebook and per test file, against the CI budget.

    python tools/ci_times.py FOLDER     (FOLDER: where tools/test.sh wrote notebooks.log and pytest.xml)

Writes FOLDER/times.md and prints it. CI (`.ci/run`: install, export check, `tools/test.sh`) must stay within
BUDGET_S on this two-core machine; the install takes about INSTALL_S of it, so the test command gets the rest.
Notebooks run two at a time, so their own times add up to about twice the notebooks' wall time.
"""
import re, sys, xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

BUDGET_S, INSTALL_S = 20 * 60, 180


def main(folder: Path):
    log = (folder / 'notebooks.log').read_text()
    nbs = {m[1]: float(m[2]) for m in re.finditer(r'^(\S+\.ipynb): (\d+(?:\.\d+)?) secs', log, re.M)}
    walls = {m[1]: int(m[2]) for m in re.finditer(r'^(notebooks|tests|test command) wall: (\d+) s', log, re.M)}
    files = defaultdict(float)
    if (folder / 'pytest.xml').exists():
        for tc in ET.parse(folder / 'pytest.xml').iter('testcase'):
            files[tc.get('file') or tc.get('classname', '?').replace('.', '/') + '.py'] += float(tc.get('time') or 0)
    total = walls.get('test command', 0)
    lines = ['# Test command wall time (two cores, OMP_NUM_THREADS=1)', '',
             f"- test command: {total} s (notebooks {walls.get('notebooks', '?')} s, two at a time; tests/ {walls.get('tests', '?')} s)",
             f"- CI budget: {BUDGET_S} s end to end; install ~{INSTALL_S} s; left for the test command: {BUDGET_S - INSTALL_S} s "
             f"-> {'within' if total + INSTALL_S <= BUDGET_S else 'OVER'} budget", '',
             '| notebook | s |', '|---|---|'] + [f'| {k} | {v:.0f} |' for k, v in sorted(nbs.items(), key=lambda x: -x[1])]
    lines += ['', '| test file | s |', '|---|---|'] + [f'| {k} | {v:.0f} |' for k, v in sorted(files.items(), key=lambda x: -x[1])]
    text = '\n'.join(lines) + '\n'
    (folder / 'times.md').write_text(text)
    print(text)


if __name__ == '__main__': main(Path(sys.argv[1]))
