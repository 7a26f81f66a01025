#!/usr/bin/env python3
"""List notebook cells that mix top-level imports with other work.

`nbdev_docs` executes every cell holding an import (to render docs), so such a cell would run its computation
during the docs build, where the names it needs from other cells are not defined. Keep imports in import-only cells.

    python tools/check_import_cells.py nbs/*.ipynb     # exit 1 if any cell mixes them
"""
import ast, json, sys


def _is_export_call(n):
    "`nbdev.nbdev_export()` at the end of a notebook is harmless."
    return isinstance(n, ast.Expr) and 'nbdev_export' in ast.unparse(n)


def offending(path):
    nb = json.load(open(path))
    for i, c in enumerate(nb['cells']):
        if c['cell_type'] != 'code': continue
        src = ''.join(c['source'])
        body = '\n'.join(l for l in src.splitlines() if not l.lstrip().startswith(('#|', '%', '!')))
        try: tree = ast.parse(body)
        except SyntaxError: continue
        imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        others = [n for n in tree.body if not (isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef,
                                                               ast.AsyncFunctionDef)) or _is_export_call(n))]
        if imports and others: yield i, src.splitlines()[0][:80]


if __name__ == '__main__':
    bad = [(p, i, s) for p in sys.argv[1:] for i, s in offending(p)]
    for p, i, s in bad: print(f'{p}: cell {i} mixes imports with code: {s}')
    sys.exit(1 if bad else 0)
