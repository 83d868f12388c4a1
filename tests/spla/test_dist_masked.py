"""Masks, out, accum and replace on the distributed mxm, mxv and vxm, on one rank.

``spla.distribute`` works without mpiexec (the world is one rank), so the
distributed path runs here whole: the per-rank row slicing of the mask and
``out``, the local masked product, the checks.  Each result is compared with
the local operator on the gathered matrices and with a plain-Python model of
the GraphBLAS C API (values are small integers stored as float64, so every
sum is exact).  The same comparisons on 1 to 4 ranks, 1D and 1.5D, are in
``tests/mpi/test_dist_masked_mpi.py``.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spla
from spla import Matrix, Vector, semiring
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError
from spla.partition import Partition
from graphblas_model import (MASK_KINDS, as_dict, mask_of, matrices, ref_mxm, ref_mxv,
                             ref_write, vectors)

SET = settings(max_examples=25, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def dist_write(T, C, kind, M, accum, replace):
    """``ref_write`` with accum given by name ("plus") or None, as the tests draw it."""
    return ref_write(T, C, kind, M, None if accum is None else (lambda x, y: x + y), replace)


def dims():
    return st.tuples(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5))


def placed(X, how, like):
    """X as a mask source: distributed like ``like``, replicated, or local."""
    if how == "local":
        return X
    if how == "replicated":
        return spla.distribute(X, replicate_graph=True)
    return spla.distribute(X, replicate_graph=like.layout.replicated, partition=like.partition)


# ---- mxm ---------------------------------------------------------------------------
@SET
@given(dims(), st.data())
def test_dist_masked_mxm_equals_local_and_model(d, data):
    m, k, n = d
    A, B = data.draw(matrices((m, k))), data.draw(matrices((k, n)))
    M, C = data.draw(matrices((m, n))), data.draw(matrices((m, n)))
    kind = data.draw(st.sampled_from(MASK_KINDS))
    use_out = data.draw(st.booleans())
    accum = data.draw(st.sampled_from([None, "plus"])) if use_out else None
    replace = data.draw(st.booleans())
    rep = data.draw(st.booleans())
    part = None if rep or not data.draw(st.booleans()) else Partition(np.zeros(m, np.int64), 1)
    DA = spla.distribute(A, replicate_graph=rep, partition=part)
    DB = spla.distribute(B, replicate_graph=rep)
    source = placed(M, data.draw(st.sampled_from(["placed", "replicated", "local"])), DA)
    DC = spla.distribute(C, replicate_graph=rep, partition=part) if use_out else None
    got = spla.mxm(DA, DB, semiring.plus_times, mask=mask_of(kind, source), out=DC,
                   accum=accum, replace=replace)
    assert isinstance(got, spla.DistMatrix) and got.layout == DA.layout
    local = spla.mxm(A, B, semiring.plus_times, mask=mask_of(kind, M),
                     out=C if use_out else None, accum=accum, replace=replace)
    local = local.new() if isinstance(local, spla.MxmExpr) else local
    G = got.gather()
    assert G.isequal(local) and got.nnz == local.nnz
    assert as_dict(G) == dist_write(ref_mxm(A, B), as_dict(C) if use_out else None,
                                     kind, M, accum, replace)


def test_masked_mxm_never_runs_the_unmasked_kernel(monkeypatch):
    """The triangle count's mask reaches the local masked kernels: the
    unmasked product (which would form L·Lᵀ) is never called."""
    import spla.product
    rs = np.random.RandomState(5)
    dense = np.triu(rs.rand(30, 30) < 0.3, 1)
    A = Matrix.from_dense((dense | dense.T).astype(np.float64))
    L = spla.select(A, "tril", -1)
    ref = spla.mxm(L, L.T, semiring.plus_pair, mask=L.S)

    def refuse(*args, **kw):
        raise AssertionError("the unmasked product ran")
    monkeypatch.setattr(spla.product, "_kernel_product", refuse)
    DL, DLt = spla.distribute(L), spla.distribute(spla.transpose(L))
    got = spla.mxm(DL, DLt, semiring.plus_pair, mask=DL.S).gather()
    assert got.isequal(ref)
    tri = sum(len(set(np.flatnonzero(dense[i] | dense[:, i])) &
                  set(np.flatnonzero(dense[j] | dense[:, j])))
              for i in range(30) for j in range(i) if dense[j, i]) // 3
    assert spla.reduce_scalar(got) == tri


def test_complemented_mask_computes_then_filters():
    A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    D = spla.distribute(A)
    got = spla.mxm(D, D, mask=~spla.Matrix.from_coo([0], [1], shape=(2, 2)).S).gather()
    assert got.to_dense().tolist() == [[1.0, 0.0], [0.0, 9.0]]


# ---- mxv / vxm ---------------------------------------------------------------------
@SET
@given(st.tuples(st.integers(1, 6), st.integers(1, 6)), st.data())
def test_dist_masked_mxv_vxm_equal_local_and_model(d, data):
    m, n = d
    A = data.draw(matrices((m, n)))
    left = data.draw(st.booleans())  # vxm
    size_in, size_out = (m, n) if left else (n, m)
    u, M, C = (data.draw(vectors(s)) for s in (size_in, size_out, size_out))
    kind = data.draw(st.sampled_from(MASK_KINDS))
    use_out = data.draw(st.booleans())
    accum = data.draw(st.sampled_from([None, "plus"])) if use_out else None
    replace = data.draw(st.booleans())
    rep = data.draw(st.booleans())
    part = None if rep or not data.draw(st.booleans()) else Partition(np.zeros(m, np.int64), 1)
    D = spla.distribute(A, replicate_graph=rep, partition=part)
    kw = dict(mask=mask_of(kind, M), out=C if use_out else None, accum=accum, replace=replace)
    if left:
        got, local = spla.vxm(u, D, **kw), spla.vxm(u, A, **kw)
        T = ref_mxv(spla.transpose(A), u)
    else:
        got, local = spla.mxv(D, u, **kw), spla.mxv(A, u, **kw)
        T = ref_mxv(A, u)
    assert got.isequal(local)
    assert as_dict(got) == dist_write(T, as_dict(C) if use_out else None, kind, M, accum,
                                       replace)


@pytest.mark.parametrize("kind", MASK_KINDS[1:])
def test_dist_masked_mxv_first_and_last_rows(kind):
    """The edges of a rank's rows: mask entries on row 0 and on the last row."""
    A = Matrix.from_dense(np.arange(1.0, 21.0).reshape(5, 4))
    M = Vector.from_coo([0, 2, 4], [1.0, 0.0, 2.0], size=5)
    u = Vector.from_coo([1, 3], [1.0, 2.0], size=4)
    for part in (None, Partition(np.zeros(5, np.int64), 1)):
        D = spla.distribute(A, partition=part)
        got = spla.mxv(D, u, mask=mask_of(kind, M))
        assert got.isequal(spla.mxv(A, u, mask=mask_of(kind, M))), (kind, part)
        assert as_dict(got) == dist_write(ref_mxv(A, u), None, kind, M, None, False)


def test_row_share_of_a_partitioned_matrix():
    """mxv's share of the mask follows the rows a partition placed here."""
    from spla.dist.vector_ops import _row_share
    A = Matrix.from_dense(np.arange(12.0).reshape(4, 3))
    D = spla.distribute(A, partition=Partition(np.zeros(4, np.int64), 1))
    share = _row_share(~Vector.from_coo([1, 3], [1.0, 0.0], size=4).V, D)
    assert share.complement and not share.structural
    assert share.parent.indices.tolist() == [1, 3] and share.parent.size == 4
    u = Vector.from_dense(np.ones(3))
    assert spla.mxv(D, u, mask=share.__invert__()).to_dense().tolist() == [0, 12, 0, 0]


# ---- errors --------------------------------------------------------------------------
def test_write_argument_errors():
    A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    D = spla.distribute(A)
    R = spla.distribute(A, replicate_graph=True)
    small = Matrix.from_dense(np.eye(3))
    cases = [
        (lambda: spla.mxm(D, D, mask=small.S), DimensionMismatch, "mask of shape (2, 2)"),
        (lambda: spla.mxm(D, D, mask=spla.distribute(small).S), DimensionMismatch,
         "got shape (3, 3)"),
        (lambda: spla.mxm(D, D, mask=D), DTypeError, "write M.S or M.V"),
        (lambda: spla.mxm(D, D, mask=Vector.from_coo([0], size=2).S), DimensionMismatch,
         "'mask'"),
        (lambda: spla.mxm(D, D, out=A), DTypeError, "argument 'out' must be a spla.DistMatrix"),
        (lambda: spla.mxm(D, D, out=R), LayoutError, "argument 'out' must be a DistMatrix "
         "placed as the product"),
        (lambda: spla.mxm(D, D, mask=D.dup().S), LayoutError, "argument 'mask' must be a "
         "DistMatrix on the communicator of A"),
        (lambda: spla.mxm(D, D, mask=D.S, out=D.dup()), LayoutError, "argument 'out' must be "
         "a DistMatrix on the communicator of A"),
        (lambda: spla.mxm(D, D, accum="plus"), InvalidValue, "'accum'"),
        (lambda: spla.mxm(D, D, mask=D.S, replace=1), InvalidValue, "'replace'"),
        (lambda: spla.mxm(A, A, mask=D.S), DTypeError, "argument 'A' must be a spla.DistMatrix"),
        (lambda: spla.mxm(A, A, out=D), DTypeError, "argument 'A' must be a spla.DistMatrix"),
        (lambda: spla.ewise_add(A, A, mask=D.S), DTypeError,
             "argument 'A' must be a spla.DistMatrix"),
            (lambda: spla.extract(A, mask=D.S), DTypeError, "mask of a local Matrix"),
        (lambda: spla.mxv(D, Vector.from_coo([0], size=2), mask=D.S), DimensionMismatch,
         "'mask'"),
    ]
    for call, cls, text in cases:
        with pytest.raises(cls) as e:
            call()
        assert text in str(e.value), (text, str(e.value))
    # A replicated mask serves a partitioned product: every rank reads its rows.
    assert spla.mxm(D, D, mask=R.S).gather().isequal(spla.mxm(A, A, mask=A.S))
