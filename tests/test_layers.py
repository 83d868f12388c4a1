"""The package boundaries, checked on the source (no imports executed).

* layers: ``kernels`` imports nothing from ``spla`` or ``sampling``; ``spla``
  nothing from ``sampling``;
* no import cycle inside a package, counting imports inside functions too;
* ``sampling``, ``benchmarks``, the docs and the notebook use only spla's
  public names: no ``spla._module``, no ``from spla.x import _name``, no
  private attributes of spla objects (``Matrix._new``, ``._cache``, ...).
"""

import ast
import json
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("kernels", "spla", "sampling")


def _modules(package):
    """{dotted module name: path} of a package's source files."""
    out = {}
    base = os.path.join(ROOT, package)
    for dirpath, _, files in os.walk(base):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].split(os.sep)
                if rel[-1] == "__init__":
                    rel = rel[:-1]
                out[".".join(rel)] = os.path.join(dirpath, f)
    return out


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


ALL = {name: path for p in PACKAGES for name, path in _modules(p).items()}


def _imports(path, module):
    """Every module a file imports (module level or inside functions)."""
    tree = ast.parse(_read(path))
    is_pkg = path.endswith("__init__.py")
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                base = parts if is_pkg else parts[:-1]
                base = base[:len(base) - node.level + 1]
                src = ".".join(base + ([node.module] if node.module else []))
            else:
                src = node.module
            for a in node.names:
                sub = f"{src}.{a.name}"
                # ``from pkg import mod`` imports the submodule, not pkg/__init__
                found.add(sub if sub in ALL else src)
    return found


GRAPH = {m: {i for i in _imports(p, m) if i in ALL} for m, p in ALL.items()}


@pytest.mark.parametrize("lower, upper", [("kernels", "spla"), ("kernels", "sampling"),
                                          ("spla", "sampling")])
def test_lower_layers_do_not_import_upper_ones(lower, upper):
    bad = sorted(f"{m} imports {i}" for m, deps in GRAPH.items() if m.split(".")[0] == lower
                 for i in deps if i.split(".")[0] == upper)
    assert not bad, "\n".join(bad)


def _cycle(package):
    """One import cycle among the modules of ``package`` (a list), or None.

    Edges into the package's own ``__init__`` are left out: it imports the
    package's modules to re-export them, and a module importing the package
    name is how Python resolves ``from spla import backend`` anyway.
    """
    nodes = [m for m in GRAPH if m.split(".")[0] == package]
    edges = {m: [i for i in GRAPH[m] if i in nodes and i != package and i != m]
             for m in nodes}
    colour, stack = {}, []

    def visit(m):
        colour[m] = 1
        stack.append(m)
        for n in edges[m]:
            if colour.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in colour:
                found = visit(n)
                if found:
                    return found
        colour[m] = 2
        stack.pop()
        return None

    for m in nodes:
        if m not in colour and m != package:
            found = visit(m)
            if found:
                return found
    return None


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package):
    cycle = _cycle(package)
    assert cycle is None, " -> ".join(cycle)


def test_cycle_finder_finds_a_planted_cycle():
    GRAPH["spla.matrix"].add("spla.mxm")
    try:
        assert _cycle("spla") is not None
    finally:
        GRAPH["spla.matrix"].discard("spla.mxm")


PRIVATE = [
    (re.compile(r"\bspla\.(?!__)_\w+"), "a private spla module or name"),
    (re.compile(r"from spla(\.\w+)* import [^\n]*\b_\w+"), "a private name imported from spla"),
    (re.compile(r"\.(_new|_cache|_counters|_indptr|_indices|_values)\b"),
     "a private attribute of a spla object"),
]


def _client_files():
    for package in ("sampling", "benchmarks", os.path.join("docs", "examples")):
        for dirpath, _, files in os.walk(os.path.join(ROOT, package)):
            for f in files:
                if f.endswith(".py"):
                    yield os.path.join(dirpath, f)
    for dirpath, _, files in os.walk(os.path.join(ROOT, "docs")):
        for f in files:
            if f.endswith((".rst", ".ipynb")):
                yield os.path.join(dirpath, f)


def _text(path):
    text = _read(path)
    if path.endswith(".ipynb"):
        cells = json.loads(text)["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return text


def test_clients_use_only_public_spla_names():
    bad = []
    for path in _client_files():
        for lineno, line in enumerate(_text(path).splitlines(), 1):
            for pattern, what in PRIVATE:
                if pattern.search(line):
                    bad.append(f"{os.path.relpath(path, ROOT)}:{lineno}: {what}: "
                               f"{line.strip()}")
    assert not bad, "\n".join(bad)


def test_private_name_patterns_catch_what_they_should():
    for line in ("from spla._checks import fail", "spla._backend.to_host(x)",
                 "M = Matrix._new(p, i, v, s)", "A._cache['x']",
                 "from spla.dist import _DTYPES"):
        assert any(p.search(line) for p, _ in PRIVATE), line
    for line in ("from spla.checks import fail", "spla.__version__", "self._sample(x)"):
        assert not any(p.search(line) for p, _ in PRIVATE), line


def test_former_flat_module_names_still_import_with_a_warning():
    """``import sampling.graphsage`` (the flat layout) gives the moved module and says where it went."""
    import importlib

    from sampling import _moved
    for old, new in _moved.MOVED.items():
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=f"{old} has moved to {new}"):
            mod = importlib.import_module(old)
        assert mod is importlib.import_module(new)


# -- kernels: what both backends share, what each owns ----------------------------------

def _from_imports(path):
    """``(module, name)`` of every ``from module import name`` in a file."""
    for node in ast.walk(ast.parse(_read(path))):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                yield node.module, a.name


def _backend_leaks(modules):
    """Imports that cross between ``kernels.cpu`` and ``kernels.cuda``, or take a
    private name from a module outside the importing backend's own package."""
    bad = []
    for m, path in modules.items():
        own = ".".join(m.split(".")[:2])          # kernels.cpu, kernels.cuda or kernels.x
        other = {"kernels.cpu": "kernels.cuda", "kernels.cuda": "kernels.cpu"}.get(own)
        for src, name in _from_imports(path):
            target = f"{src}.{name}"
            if other and (src == other or src.startswith(other + ".")
                          or target.startswith(other + ".")):
                bad.append(f"{m} imports {target}: the other backend's module")
            elif (src.startswith("kernels") and not src.startswith(own)
                  and name.startswith("_") and target not in ALL):
                bad.append(f"{m} imports the private name {target}")
    return bad


def test_kernel_backends_share_only_the_public_shared_level():
    """``kernels.cpu`` and ``kernels.cuda`` import nothing from each other, and only
    public names of the shared level (``kernels/*.py``): what both use lives there."""
    mods = {m: p for m, p in ALL.items() if m.startswith(("kernels.cpu.", "kernels.cuda."))}
    assert _backend_leaks(mods) == []


def test_backend_leak_finder_finds_planted_leaks(tmp_path):
    planted = tmp_path / "leak.py"
    planted.write_text("from kernels.cpu.sample import _search_block\n"
                       "from kernels.its import _private_helper\n"
                       "from kernels.common import lower_bound as _lb\n"
                       "from kernels.cuda._util import launch\n")
    bad = _backend_leaks({"kernels.cuda.leak": str(planted)})
    assert len(bad) == 2 and "_search_block" in bad[0] and "_private_helper" in bad[1], bad


# -- optional dependencies: one module imports them --------------------------------------

#: Modules that import an optional dependency themselves: ``spla.optional`` (the
#: home), and files of other work in progress that still do (to move to it).
OPTIONAL_IMPORT_ALLOWED = {"spla.optional"}
OPTIONAL_MODULES = ("cupy", "cupyx", "torch", "mpi4py", "pymetis")


def _optional_imports(path):
    tree = ast.parse(_read(path))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "__import__"):
            names = ["__import__"]
        for n in names:
            if n == "__import__" or n.split(".")[0] in OPTIONAL_MODULES:
                yield node.lineno, n


def test_optional_dependencies_are_imported_through_spla_optional():
    """No ``__import__(...)`` and no ``import cupy/torch/mpi4py/pymetis`` in spla or
    kernels outside ``spla.optional`` (kernels get cupy from ``sys.modules``, where
    whoever handed them cupy arrays put it)."""
    bad = [f"{m}:{line}: {n}" for m, path in ALL.items()
           if m.split(".")[0] in ("spla", "kernels") and m not in OPTIONAL_IMPORT_ALLOWED
           for line, n in _optional_imports(path)]
    assert bad == [], "\n".join(bad)


def test_optional_import_finder_finds_planted_imports(tmp_path):
    planted = tmp_path / "p.py"
    planted.write_text("def f():\n    import cupy\n    from mpi4py import MPI\n"
                       "    __import__('torch')\n    import numpy\n")
    assert [n for _, n in _optional_imports(str(planted))] == ["cupy", "mpi4py", "__import__"]
