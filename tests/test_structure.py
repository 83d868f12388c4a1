"""The shape of the code: modules of one job stay short, functions stay readable.

Checked on the source, so a module that grows past the limits fails here
rather than in a review: no module of ``spla``, ``sampling`` or ``kernels``
over 600 lines, no function over 60 lines of code (docstring, blank and
comment lines not counted).
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("spla", "sampling", "kernels")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def _modules():
    for pkg in PACKAGES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, pkg)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in sorted(filenames):
                if f.endswith(".py"):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


def code_lines(source, node):
    """Lines of ``node``'s code: its docstring, blank lines and comment lines left out."""
    first, last = node.lineno, node.end_lineno
    skip = set()
    body = getattr(node, "body", [])
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        skip = set(range(body[0].lineno, body[0].end_lineno + 1))
    lines = source.splitlines()
    return sum(1 for i in range(first, last + 1) if i not in skip
               and lines[i - 1].strip() and not lines[i - 1].strip().startswith("#"))


def test_code_lines_counts_what_it_says():
    src = 'def f(x):\n    """Doc.\n\n    More.\n    """\n    # why\n\n    return x\n'
    assert code_lines(src, ast.parse(src).body[0]) == 2


@pytest.mark.parametrize("path", list(_modules()))
def test_module_and_function_sizes(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        source = fh.read()
    n = len(source.splitlines())
    assert n <= MAX_MODULE_LINES, f"{path}: {n} lines (split it by job)"
    long = [f"{node.name} ({code_lines(source, node)} lines, line {node.lineno})"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and code_lines(source, node) > MAX_FUNCTION_LINES]
    assert not long, f"{path}: functions over {MAX_FUNCTION_LINES} lines of code: {long}"
