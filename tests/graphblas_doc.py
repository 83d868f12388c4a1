"""The algorithms of docs/graphblas.rst as functions, run as written there.

Shared by the CPU tests (``tests/spla/test_graphblas_algorithms.py``), the
simulator tests (``tests/kernels/test_masked_cuda.py``) and the MPI tests
(``tests/mpi/test_dist_vector_mpi.py``), so each runs the documented code,
not a copy of it.
"""

import pathlib
import re

DOC = pathlib.Path(__file__).resolve().parents[1] / "docs" / "graphblas.rst"


def doc_algorithms():
    """A namespace with every function of the doc's ``code-block:: python`` blocks."""
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"^\.\. code-block:: python\n\n((?:[ \t]+.*\n|\n)+)", text, re.M)
    assert blocks, "docs/graphblas.rst has no python code blocks"
    ns = {"__name__": "graphblas_doc"}
    for b in blocks:
        lines = b.splitlines()
        indent = min(len(ln) - len(ln.lstrip()) for ln in lines if ln.strip())
        exec("\n".join(ln[indent:] for ln in lines), ns)
    return ns
