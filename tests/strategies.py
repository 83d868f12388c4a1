"""Shared hypothesis strategies and reference helpers for the spla core tests.

A drawn matrix comes as a ``Twin``: the ``spla.Matrix`` under test and the
independent descriptions of the same matrix the tests compare against (a
``scipy.sparse.csr_matrix``, the boolean pattern and the dense values).  The
twins are built from a boolean mask and a value array, never from spla
itself, so a bug in spla cannot leak into the reference.

Covered: int32 and int64 column indices; float32, float64, int32, int64
values or none (structural); empty matrices (0 rows and/or 0 columns), empty
rows, single rows and columns (the dimension draws include 0 and 1).
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import spla

INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
VALUE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64),
                np.dtype(np.int32), np.dtype(np.int64))
#: value dtypes plus ``None``, which stands for a structural matrix
ALL_VALUE_DTYPES = VALUE_DTYPES + (None,)
FLOAT_DTYPES = VALUE_DTYPES[:2]
#: every (index dtype, value dtype) combination (cheap for tests that run no
#: parallel kernel)
ALL_PLANS = tuple((i, v) for i in INDEX_DTYPES for v in ALL_VALUE_DTYPES)

#: (index dtype, value dtype) of the matrices the operator tests draw.
#: numba compiles a kernel once per combination of argument types (dtype and
#: writability), which costs seconds per parallel kernel; drawing every
#: matrix from these few plans bounds the compilations while covering every
#: value dtype, structural matrices and both index dtypes.
PLANS = ((np.dtype(np.int32), np.dtype(np.float32)),
         (np.dtype(np.int32), np.dtype(np.float64)),  # what from_coo/from_dense give
         (np.dtype(np.int32), np.dtype(np.int32)),
         (np.dtype(np.int64), np.dtype(np.int64)),
         (np.dtype(np.int32), None))
#: plan pairs of two-operand operators (mxm, ewise): every value dtype,
#: structural on either side and on both, mixed value dtypes (int32 with
#: float64) and mixed index dtypes (int64 with int32).  Chosen so that the
#: products the sampling tests form (structural or float64 Q times
#: structural, float32 or float64 A) need no other kernel signature.
PAIR_PLANS = tuple((PLANS[i], PLANS[j]) for i, j in
                   [(1, 1), (4, 0), (1, 4), (4, 1), (2, 2), (3, 3), (4, 4), (2, 1), (3, 4)])

#: hypothesis settings of every property test: numba compiles each dtype
#: combination once, so examples are cheap after the first few.
SETTINGS = settings(max_examples=40, deadline=None,
                    # the only function-scoped fixture these tests take is the
                    # immutable ``backend``: sharing it between examples is safe
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


class Twin(NamedTuple):
    """A spla matrix and its independent references."""

    M: spla.Matrix          # the matrix under test
    S: sp.csr_matrix        # scipy twin (float64 or int64 values; ones if structural)
    mask: np.ndarray        # bool (nrows, ncols): the stored pattern
    dense: np.ndarray       # values at stored entries, 0 elsewhere (float64 ones if structural)
    dtype: object           # value dtype, or None for structural

    @property
    def shape(self):
        return self.mask.shape

    def vals(self):
        """The stored values in CSR order (ones for a structural matrix)."""
        return self.dense[self.mask]


def csr_from_mask(mask, values, index_dtype):
    """Canonical (indptr, indices, values) of the entries of ``mask`` (row-major)."""
    r, c = np.nonzero(mask)
    indptr = np.zeros(mask.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=mask.shape[0]), out=indptr[1:])
    return indptr, c.astype(index_dtype), values


def make_twin(mask, values, value_dtype, index_dtype=np.int64):
    """A Twin from a pattern and the stored values in row-major order.

    ``values`` is ignored when ``value_dtype`` is None (structural).
    """
    mask = np.asarray(mask, dtype=bool)
    nnz = int(mask.sum())
    if value_dtype is None:
        vals = None
        dense = mask.astype(np.float64)
        svals = np.ones(nnz, np.float64)
    else:
        vals = np.asarray(values, dtype=value_dtype)
        assert vals.shape == (nnz,)
        dense = np.zeros(mask.shape, value_dtype)
        dense[mask] = vals
        svals = vals.astype(np.float64 if np.dtype(value_dtype).kind == "f" else np.int64)
    indptr, indices, _ = csr_from_mask(mask, vals, index_dtype)
    M = spla.Matrix.from_csr(indptr, indices, vals, shape=mask.shape)
    S = sp.csr_matrix((svals, indices.astype(np.int64), indptr), shape=mask.shape)
    return Twin(M, S, mask, dense, None if value_dtype is None else np.dtype(value_dtype))


def values_strategy(dtype, n, *, min_value=-8, max_value=8, elements=None):
    """``n`` values of ``dtype`` (floats representable in float32, no NaN/inf)."""
    dtype = np.dtype(dtype)
    if elements is None:
        if dtype.kind == "f":
            elements = st.floats(min_value, max_value, allow_nan=False,
                                 allow_infinity=False, allow_subnormal=False, width=32)
        else:
            elements = st.integers(min_value, max_value)
    return hnp.arrays(dtype, n, elements=elements)


@st.composite
def masks(draw, shape, *, max_row_nnz=None):
    """A boolean pattern of ``shape``; at most ``max_row_nnz`` entries per row."""
    nrows, ncols = shape
    if max_row_nnz == 1:
        m = np.zeros(shape, bool)
        if ncols:
            for i in range(nrows):
                j = draw(st.one_of(st.none(), st.integers(0, ncols - 1)))
                if j is not None:
                    m[i, j] = True
        return m
    m = draw(hnp.arrays(np.bool_, shape))
    if max_row_nnz is not None:
        for i in range(nrows):
            extra = np.flatnonzero(m[i])[max_row_nnz:]
            m[i, extra] = False
    return m


@st.composite
def twins(draw, shape=None, *, max_dim=7, plans=PLANS, plan=None, min_value=-8,
          max_value=8, elements=None, max_row_nnz=None):
    """A random canonical CSR matrix with its references (a ``Twin``).

    ``plan`` fixes (index dtype, value dtype); otherwise one of ``plans`` is
    drawn (see ``PLANS``; ``ALL_PLANS`` has every combination).
    """
    if shape is None:
        shape = (draw(st.integers(0, max_dim)), draw(st.integers(0, max_dim)))
    mask = draw(masks(shape, max_row_nnz=max_row_nnz))
    idt, vdt = plan if plan is not None else draw(st.sampled_from(plans))
    vals = None
    if vdt is not None:
        vals = draw(values_strategy(vdt, int(mask.sum()), min_value=min_value,
                                    max_value=max_value, elements=elements))
    return make_twin(mask, vals, vdt, idt)


@st.composite
def twin_pairs_mxm(draw, *, max_dim=6, min_k=0, a_max_row_nnz=None, min_value=-6,
                   max_value=6):
    """(A, B) with A.ncols == B.nrows, dtypes from ``PAIR_PLANS``."""
    m, n = draw(st.integers(0, max_dim)), draw(st.integers(0, max_dim))
    k = draw(st.integers(min_k, max(min_k, max_dim)))
    pa, pb = draw(st.sampled_from(PAIR_PLANS))
    a = draw(twins((m, k), plan=pa, max_row_nnz=a_max_row_nnz,
                   min_value=min_value, max_value=max_value))
    b = draw(twins((k, n), plan=pb, min_value=min_value, max_value=max_value))
    return a, b


@st.composite
def twin_pairs_same_shape(draw, *, max_dim=7):
    """(A, B) of one shape, dtypes from ``PAIR_PLANS``."""
    shape = (draw(st.integers(0, max_dim)), draw(st.integers(0, max_dim)))
    pa, pb = draw(st.sampled_from(PAIR_PLANS))
    return draw(twins(shape, plan=pa)), draw(twins(shape, plan=pb))


# ---------------------------------------------------------------------------
# Reference helpers
# ---------------------------------------------------------------------------

def assert_canonical(M):
    """``M`` is canonical CSR: int64 indptr, int32/int64 indices, sorted rows.

    Re-validates the arrays through the checked factory (which rejects any
    non-canonical input) and compares the two matrices.
    """
    assert isinstance(M, spla.Matrix)
    assert M.indptr.dtype == np.int64
    assert M.indices.dtype in INDEX_DTYPES
    assert M.indptr.shape == (M.nrows + 1,)
    assert int(M.indptr[0]) == 0 and int(M.indptr[-1]) == M.nnz
    if M.values is not None:
        assert M.values.dtype in VALUE_DTYPES
        assert M.values.shape == (M.nnz,)
    host = spla.backend.to_host  # a GPU result is checked on host copies
    again = spla.Matrix.from_csr(host(M.indptr).copy(), host(M.indices).copy(),
                                 None if M.values is None else host(M.values).copy(),
                                 shape=M.shape, check=True)
    assert again.shape == M.shape and again.nnz == M.nnz


def pattern(M):
    """The boolean pattern of a spla matrix (from its CSR arrays, not to_dense)."""
    mask = np.zeros(M.shape, bool)
    host = spla.backend.to_host
    rows = np.repeat(np.arange(M.nrows), np.diff(host(M.indptr)))
    mask[rows, host(M.indices)] = True
    assert mask.sum() == M.nnz, "repeated (row, column) in a CSR matrix"
    return mask


def rows_dict(M):
    """``{i: {j: value}}`` of a spla matrix (value 1 for structural)."""
    out = {}
    for i in range(M.nrows):
        lo, hi = int(M.indptr[i]), int(M.indptr[i + 1])
        out[i] = {int(M.indices[t]): (1 if M.values is None else M.values[t].item())
                  for t in range(lo, hi)}
    return out


def twin_rows(t, dtype=None):
    """``{i: [(j, value)]}`` of a Twin in column order, values cast to ``dtype``.

    Structural entries have value 1 (of ``dtype`` when given).
    """
    out = {}
    for i in range(t.shape[0]):
        cols = np.flatnonzero(t.mask[i])
        vals = t.dense[i, cols]
        if dtype is not None:
            vals = np.ones(cols.size, dtype) if t.dtype is None else vals.astype(dtype)
        out[i] = list(zip(cols.tolist(), list(vals)))
    return out


def uniform_rows_matrix(weights, n, *, dtype=np.float64, structural=False):
    """``n`` identical rows holding ``weights`` in columns ``0..d-1``."""
    w = np.asarray(weights)
    d = w.size
    indptr = np.arange(n + 1, dtype=np.int64) * d
    indices = np.tile(np.arange(d, dtype=np.int32), n)
    vals = None if structural else np.tile(w.astype(dtype), n)
    return spla.Matrix.from_csr(indptr, indices, vals, shape=(n, d))


def assert_same_blocks(new, old):
    """Two lists of minibatches hold the same blocks, entry for entry and
    bit for bit (values compared as bytes), none of them empty."""
    for a, b in zip(new, old, strict=True):
        for x, y in zip(a.blocks, b.blocks, strict=True):
            assert np.array_equal(x.src_nodes, y.src_nodes)
            assert np.array_equal(np.asarray(x.adj.indptr), np.asarray(y.adj.indptr))
            assert np.array_equal(np.asarray(x.adj.indices), np.asarray(y.adj.indices))
            assert np.asarray(x.adj.values).tobytes() == np.asarray(y.adj.values).tobytes()
            assert x.adj.nnz > 0
