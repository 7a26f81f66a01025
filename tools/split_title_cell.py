#!/usr/bin/env python3
"""Keep only `# Title` and `> description` in a notebook's first cell, moving the rest into a new cell after it.

nbdev turns the first markdown cell into the page's front matter and drops anything else in it (from the docs and
from README.md), so prose there would be lost. Usage: python tools/split_title_cell.py nbs/*.ipynb
"""
import json, sys

for path in sys.argv[1:]:
    nb = json.load(open(path))
    first = nb['cells'][0]
    lines = ''.join(first['source']).strip('\n').splitlines()
    cut = next((i + 1 for i, l in enumerate(lines) if l.startswith('>')), None)
    if first['cell_type'] != 'markdown' or cut is None or not ''.join(lines[cut:]).strip(): continue
    first['source'] = '\n'.join(lines[:cut]).splitlines(True)
    rest = {'cell_type': 'markdown', 'metadata': {}, 'source': '\n'.join(lines[cut:]).strip('\n').splitlines(True)}
    if 'id' in first: rest['id'] = first['id'] + 'b'
    nb['cells'].insert(1, rest)
    json.dump(nb, open(path, 'w'), indent=1, ensure_ascii=False); open(path, 'a').write('\n')
    print(f'{path}: split the title cell')
