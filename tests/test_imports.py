"""The package's import graph: every module imports alone, no cycles (lazy imports inside functions included),
and no module imports another module's private names."""
import ast, subprocess, sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / 'gaprune_nb'
MODULES = sorted(p.stem for p in PKG.glob('*.py') if p.stem not in ('__init__', '_modidx'))


def imports(mod: str) -> list[tuple[str, list[str]]]:
    "(imported package module, names) for every import of a sibling module anywhere in `mod`, lazy ones included."
    out = []
    for n in ast.walk(ast.parse((PKG / f'{mod}.py').read_text())):
        if isinstance(n, ast.ImportFrom):
            src = n.module or ''
            if n.level == 1: target = src
            elif src.startswith('gaprune_nb.'): target = src[len('gaprune_nb.'):]
            else: continue
            if target: out.append((target, [a.name for a in n.names]))
        elif isinstance(n, ast.Import):
            out += [(a.name[len('gaprune_nb.'):], []) for a in n.names if a.name.startswith('gaprune_nb.')]
    return out


def test_no_cycles_and_no_private_imports():
    graph = {m: {t for t, _ in imports(m) if t in MODULES} for m in MODULES}
    private = [(m, t, x) for m in MODULES for t, names in imports(m) for x in names if x.startswith('_')]
    assert private == []
    state = {}
    def visit(m, path):
        if state.get(m) == 'done': return
        assert state.get(m) != 'open', f"import cycle: {' -> '.join(path + [m])}"
        state[m] = 'open'
        for t in sorted(graph[m]): visit(t, path + [m])
        state[m] = 'done'
    for m in MODULES: visit(m, [])
    assert 'core' in graph['layer_drop'] and 'layer_drop' not in graph['core']  # the old cycle is gone


@pytest.mark.parametrize('mod', MODULES)
def test_every_module_imports_alone(mod):
    r = subprocess.run([sys.executable, '-c', f'import gaprune_nb.{mod}'], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-1500:]
