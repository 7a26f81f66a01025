"""The package's import graph: every module imports alone, no cycles (imports inside functions, `from . import x`,
and `importlib.import_module` / `__import__` of a named module included), no module named only at run time (a dynamic
import the graph cannot see), no module imports another module's private names, and none imports a later notebook's
module at its top level."""
import ast, re, subprocess, sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / 'gaprune_nb'
MODULES = sorted(p.stem for p in PKG.glob('*.py') if p.stem not in ('__init__', '_modidx'))


def _dynamic(n) -> bool:
    "`n` is a call of `importlib.import_module(...)` or `__import__(...)`."
    return isinstance(n, ast.Call) and getattr(n.func, 'attr', getattr(n.func, 'id', None)) in ('import_module', '__import__')


def parse(src: str, top: bool = False) -> tuple[list[tuple[str, list[str]]], list[int]]:
    """(imported package module, names) for every import of a sibling module in the source `src`: anywhere (inside
    functions and classes too), or only at its `top` level; and the lines of dynamic imports whose module is not a
    constant string (the graph cannot see them)."""
    out, unseen, tree = [], [], ast.parse(src)
    nodes = [n for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
             for n in ast.walk(s)] if top else ast.walk(tree)
    for n in nodes:
        if isinstance(n, ast.ImportFrom):
            src_ = n.module or ''
            if n.level == 1 and not src_: out += [(a.name, []) for a in n.names]  # from . import dai, saliency
            elif n.level == 1: out.append((src_, [a.name for a in n.names]))
            elif src_ == 'gaprune_nb': out += [(a.name, []) for a in n.names]
            elif src_.startswith('gaprune_nb.'): out.append((src_[len('gaprune_nb.'):], [a.name for a in n.names]))
        elif isinstance(n, ast.Import):
            out += [(a.name[len('gaprune_nb.'):], []) for a in n.names if a.name.startswith('gaprune_nb.')]
        elif _dynamic(n):
            arg = n.args[0] if n.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                if arg.value.startswith('gaprune_nb.'): out.append((arg.value[len('gaprune_nb.'):], []))
                elif arg.value.startswith('.'): out.append((arg.value.lstrip('.'), []))
            else: unseen.append(n.lineno)
    return out, unseen


def imports(mod: str, top: bool = False) -> list[tuple[str, list[str]]]:
    "(imported package module, names) for every import of a sibling module in `mod` (see `parse`), itself left out."
    return [(t, names) for t, names in parse((PKG / f'{mod}.py').read_text(), top)[0] if t != mod]


def cycle(graph: dict) -> list[str] | None:
    "The first import cycle of `graph` ({module: imported modules}) as a path, or None."
    state = {}
    def visit(m, path):
        if state.get(m) == 'done': return None
        if state.get(m) == 'open': return path[path.index(m):] + [m]
        state[m] = 'open'
        for t in sorted(graph.get(m, ())):
            if (c := visit(t, path + [m])): return c
        state[m] = 'done'
    for m in sorted(graph):
        if (c := visit(m, [])): return c
    return None


def test_the_scan_sees_lazy_and_dynamic_imports():
    "The scan itself: imports inside functions, `from . import x`, constant `import_module` / `__import__` calls; a module named at run time is reported."
    src = ("from . import dai, saliency\nimport importlib\n"
           "def f():\n    from .masks import PerMatrix\n    importlib.import_module('gaprune_nb.fisher')\n    __import__('gaprune_nb.core')\n"
           "class C:\n    def g(self, name): return importlib.import_module(name)\n")
    got, unseen = parse(src)
    assert {t for t, _ in got} == {'dai', 'saliency', 'masks', 'fisher', 'core'} and unseen == [8]
    assert {t for t, _ in parse(src, top=True)[0]} == {'dai', 'saliency'}
    assert cycle({'a': {'b'}, 'b': {'c'}, 'c': {'a'}}) == ['a', 'b', 'c', 'a'] and cycle({'a': {'b'}, 'b': set()}) is None
    lazy = {'methods': {'dai'}, 'dai': set()}
    lazy['dai'] = {t for t, _ in parse("def f():\n    import importlib\n    importlib.import_module('gaprune_nb.methods')\n")[0]}
    assert cycle(lazy) == ['dai', 'methods', 'dai']  # a circle closed by a dynamic import inside a function fails


def test_no_cycles_no_dynamic_imports_and_no_private_imports():
    graph = {m: {t for t, _ in imports(m) if t in MODULES} for m in MODULES}
    private = [(m, t, x) for m in MODULES for t, names in imports(m) for x in names if x.startswith('_')]
    assert private == []
    unseen = {m: lines for m in MODULES if (lines := parse((PKG / f'{m}.py').read_text())[1])}
    assert unseen == {}, f"modules imported by a name known only at run time (the import graph cannot see them): {unseen}"
    c = cycle(graph)
    assert c is None, f"import cycle: {' -> '.join(c)}"
    assert 'core' in graph['layer_drop'] and 'layer_drop' not in graph['core']  # the old cycle is gone
    assert {'dai', 'saliency', 'sparsegpt'} <= graph['methods'] and 'methods' not in graph['dai'] | graph['saliency']  # dispatch above the scorers


def notebook(mod: str) -> str:
    "The notebook `mod` is exported from (its AUTOGENERATED header)."
    return re.search(r'File to edit: \.\./nbs/(\S+?)\.ipynb', (PKG / f'{mod}.py').read_text()).group(1)


def test_no_top_level_import_of_a_later_notebook():
    "Notebooks run in file order: a module may import a later notebook's module only inside a function."
    later = [(m, notebook(m), t, notebook(t)) for m in MODULES for t, _ in imports(m, top=True)
             if t in MODULES and notebook(t) > notebook(m)]
    assert later == []


ALONE = """
import importlib, sys, traceback
failed = []
for mod in sys.argv[1:]:
    for k in [k for k in sys.modules if k == 'gaprune_nb' or k.startswith('gaprune_nb.')]: del sys.modules[k]
    try: importlib.import_module('gaprune_nb.' + mod)
    except Exception: failed.append(mod + ': ' + traceback.format_exc(limit=3))
print('\\n'.join(failed)); sys.exit(bool(failed))
"""


def test_every_module_imports_alone():
    "Each module imported with no other module of the package loaded before it (one process; the package is forgotten between\
 modules, third-party libraries stay loaded: what is checked is the order inside the package)."
    r = subprocess.run([sys.executable, '-c', ALONE, *MODULES], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1500:]
