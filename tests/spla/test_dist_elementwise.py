"""apply, select, ewise_add and ewise_mult on DistMatrix operands, on one rank.

The distributed path runs whole on one rank (the checks, the mask's and
``out``'s rows, the global-row view of ``select``); each result is compared
with the local operator on the gathered matrices.  Several ranks, 1D and
1.5D, block-, partition- and replica-placed: ``tests/mpi/test_dist_masked_mpi.py``.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spla
from spla.exceptions import DimensionMismatch, DTypeError
from spla.partition import Partition
from graphblas_model import MASK_KINDS, mask_of, matrices

SET = settings(max_examples=30, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _odd_sum(i, j, v):
    return (i + j) % 2 == 1


#: name -> (call on (X, Y), the same on local matrices): X, Y placed alike.
OPS = {
    "apply": lambda X, Y, **kw: spla.apply(X, "neg", **kw),
    "select tril": lambda X, Y, **kw: spla.select(X, "tril", -1, **kw),
    "select row<": lambda X, Y, **kw: spla.select(X, "row<", 2, **kw),
    "select value>": lambda X, Y, **kw: spla.select(X, "value>", 1, **kw),
    "select callable": lambda X, Y, **kw: spla.select(X, _odd_sum, **kw),
    "ewise_add": lambda X, Y, **kw: spla.ewise_add(X, Y, "min", **kw),
    "ewise_mult": lambda X, Y, **kw: spla.ewise_mult(X, Y, "plus", **kw),
}


@SET
@given(st.tuples(st.integers(1, 6), st.integers(1, 6)), st.sampled_from(sorted(OPS)),
       st.data())
def test_dist_elementwise_equals_local(shape, op, data):
    A, B, M, C = (data.draw(matrices(shape)) for _ in range(4))
    kw = {}
    if data.draw(st.booleans()):
        kw["mask"] = data.draw(st.sampled_from(MASK_KINDS))
    if data.draw(st.booleans()):
        kw.update(out=C, accum=data.draw(st.sampled_from([None, "plus"])),
                  replace=data.draw(st.booleans()))
    rep = data.draw(st.booleans())
    part = None if rep or not data.draw(st.booleans()) else Partition(
        np.zeros(shape[0], np.int64), 1)
    how = dict(replicate_graph=rep, partition=part)
    DA, DB, DM, DC = (spla.distribute(X, **how) for X in (A, B, M, C))
    source = data.draw(st.sampled_from([DM, M, spla.distribute(M, replicate_graph=True)]))
    local_kw = dict(kw, **({"mask": mask_of(kw["mask"], M)} if "mask" in kw else {}))
    dist_kw = dict(kw, **({"mask": mask_of(kw["mask"], source)} if "mask" in kw else {}),
                   **({"out": DC} if "out" in kw else {}))
    got = OPS[op](DA, DB, **dist_kw)
    want = OPS[op](A, B, **local_kw)
    assert isinstance(got, spla.DistMatrix) and got.layout == DA.layout
    assert got.gather().isequal(want) and got.nnz == want.nnz, (op, kw)


def test_dist_select_reads_global_rows():
    """select's index predicates see global rows: a block starting at row r
    (as on rank > 0) is read through the view, not as rows 0, 1, ..."""
    from spla.dist.core import DistMatrix
    A = spla.Matrix.from_dense(np.arange(1.0, 17.0).reshape(4, 4))
    whole = spla.distribute(A)
    low = spla.extract(A, rows=[2, 3])
    D = DistMatrix(low, A.shape, low.nnz, whole.layout, whole.comm, 2)
    got = spla.select(D, "tril", 0)
    assert got.local.to_dense().tolist() == [[9.0, 10.0, 11.0, 0.0],
                                             [13.0, 14.0, 15.0, 16.0]]
    got = spla.select(D, lambda i, j, v: i == 3, 0)
    assert got.local.to_dense().tolist() == [[0.0] * 4, [13.0, 14.0, 15.0, 16.0]]


def test_dist_elementwise_errors():
    A = spla.Matrix.from_dense(np.eye(3))
    D = spla.distribute(A)
    with pytest.raises(DTypeError, match="ewise_add: argument 'B' must be a spla.DistMatrix "
                                         r"\(distribute both operands, or neither\)"):
        spla.ewise_add(D, A)
    with pytest.raises(DTypeError, match="ewise_mult: argument 'A' must be a spla.DistMatrix"):
        spla.ewise_mult(A, D)
    with pytest.raises(DTypeError, match="apply: argument 'A' must be a spla.DistMatrix "
                                         r"\(the mask or out is a DistMatrix's"):
        spla.apply(A, "abs", mask=D.S)
    with pytest.raises(DimensionMismatch, match="select: argument 'mask' must be a mask of "
                                                r"shape \(3, 3\)"):
        spla.select(D, "tril", mask=spla.Matrix.from_dense(np.eye(2)).S)
    with pytest.raises(DimensionMismatch, match="ewise_add: argument 'B' must be shape"):
        spla.ewise_add(D, spla.distribute(spla.Matrix.from_dense(np.eye(2))))
    with pytest.raises(DTypeError, match="apply: argument 'out' must be a spla.DistMatrix "
                                         "placed as A"):
        spla.apply(D, "abs", mask=D.S, out=A)
