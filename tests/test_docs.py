"""The documentation cannot rot: README snippets and docs examples are run.

* every ```python block of README.md is executed (in order, one namespace);
* every ``>>>`` example of docs/*.rst is run as a doctest, and every
  ``.. code-block:: python`` of docs/*.rst is executed;
* the README's Quick start holds exactly the two promised commands, and
  .ci/run ends by running the README's test command;
* docs/api.rst documents every name of ``spla.__all__`` and every named
  semiring and monoid.
"""

import doctest
import re
import textwrap
from pathlib import Path

import pytest

import spla
from spla import semiring

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RST_FILES = sorted(DOCS.glob("*.rst"))

TEST_COMMAND = ". .venv/bin/activate && python -m pytest"
MAIN_COMMAND = ('python3 -m venv .venv && . .venv/bin/activate && '
                'pip install -e ".[train,test]" && python -m sampling.train')


def fenced_blocks(text, lang):
    """The bodies of the ```lang fenced blocks of a Markdown text."""
    return re.findall(rf"^```{lang}[ \t]*\n(.*?)^```[ \t]*$", text, re.S | re.M)


def rst_code_blocks(text, lang):
    """The bodies of the ``.. code-block:: lang`` directives of an rst text."""
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == f".. code-block:: {lang}":
            i += 1
            body = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                body.append(lines[i])
                i += 1
            blocks.append(body)
        else:
            i += 1
    return [textwrap.dedent("\n".join(b)).strip("\n") + "\n" for b in blocks]


def test_readme_python_snippets_run():
    blocks = fenced_blocks(README.read_text(encoding="utf-8"), "python")
    assert blocks, "README.md has no ```python block to run"
    namespace = {"__name__": "__readme__"}
    for n, block in enumerate(blocks):
        exec(compile(block, f"README.md[python block {n}]", "exec"), namespace)


def test_readme_quick_start_commands():
    text = README.read_text(encoding="utf-8")
    m = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.S | re.M)
    assert m, "README.md has no '## Quick start' section"
    commands = [b.strip() for b in fenced_blocks(m.group(1), r"\w*")]
    assert commands == [MAIN_COMMAND, TEST_COMMAND]


def test_ci_runs_the_readme_test_command_last():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in script.splitlines()]
    assert TEST_COMMAND in lines, ".ci/run must run the README's test command as is"
    after = lines[lines.index(TEST_COMMAND) + 1:]
    # Only exit-status bookkeeping may follow the test suite, so the run ends
    # on pytest's summary line.
    for ln in after:
        assert not re.match(r"(\. |source |python|pip|pytest|sphinx-build|mpiexec|bash)", ln), ln


@pytest.mark.parametrize("path", RST_FILES, ids=lambda p: p.name)
def test_docs_examples_run(path):
    text = path.read_text(encoding="utf-8")
    for n, block in enumerate(rst_code_blocks(text, "python")):
        exec(compile(block, f"{path.name}[code-block {n}]", "exec"), {"__name__": "__docs__"})
    parser = doctest.DocTestParser()
    test = parser.get_doctest(text, {}, path.name, str(path), 0)
    if not test.examples:
        return
    runner = doctest.DocTestRunner(
        optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    out = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


def test_docs_have_runnable_examples():
    # The operators tour is the page whose examples are checked most; make
    # sure the doctest parser still finds them (a broken prompt would make
    # the test above pass vacuously).
    text = (DOCS / "operators.rst").read_text(encoding="utf-8")
    assert len(doctest.DocTestParser().get_examples(text)) >= 30


def test_api_page_documents_every_public_name():
    api = (DOCS / "api.rst").read_text(encoding="utf-8")
    documented = set(re.findall(
        r"^\.\. (?:autoclass|autofunction|autoexception|py:data|automodule)::\s+([\w.]+)",
        api, re.M))
    missing = [name for name in spla.__all__
               if name not in documented and f"spla.{name}" not in documented]
    assert not missing, f"docs/api.rst does not document {missing}"
    named = list(semiring.SEMIRINGS) + list(semiring.MONOIDS) + [
        "Monoid", "Semiring", "as_semiring", "as_monoid", "SEMIRINGS", "MONOIDS"]
    missing = [name for name in named if name not in documented]
    assert not missing, f"docs/api.rst does not document spla.semiring.{missing}"


@pytest.mark.slow
def test_notebook_runs_on_cpu():
    """docs/notebooks/explore.ipynb runs top to bottom on the CPU (nbmake)."""
    pytest.importorskip("nbmake", reason="the notebook is run by nbmake (pip install -e '.[test]')")
    pytest.importorskip("torch", reason="the notebook trains a model (pip install -e '.[train]')")
    pytest.importorskip("matplotlib", reason="the notebook plots (pip install -e '.[test]')")
    import os
    import subprocess
    import sys
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # the CPU fallback, even beside a GPU
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
         "--nbmake", "--nbmake-timeout=600", str(DOCS / "notebooks" / "explore.ipynb")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "1 passed" in proc.stdout, proc.stdout[-3000:]
