"""spla.Matrix: factories, conversions, metadata, immutability, equality."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import spla
from spla import Matrix

try:
    from strategies import (ALL_PLANS, ALL_VALUE_DTYPES, INDEX_DTYPES, SETTINGS, VALUE_DTYPES,
                            assert_canonical, pattern, twins)
except ImportError:  # collected as a package
    from tests.strategies import (ALL_PLANS, ALL_VALUE_DTYPES, INDEX_DTYPES, SETTINGS, VALUE_DTYPES,
                                  assert_canonical, pattern, twins)


# ---------------------------------------------------------------------------
# from_csr and the conversions back
# ---------------------------------------------------------------------------

@SETTINGS
@given(twins(plans=ALL_PLANS))
def test_from_csr_round_trips_through_scipy_and_dense(t):
    M = t.M
    assert_canonical(M)
    assert M.shape == t.shape
    assert M.nnz == int(t.mask.sum())
    assert M.indices.dtype in INDEX_DTYPES
    assert M.dtype == t.dtype
    assert M.is_structural == (t.dtype is None)
    np.testing.assert_array_equal(pattern(M), t.mask)
    np.testing.assert_array_equal(M.row_degrees(), t.mask.sum(axis=1))
    D = M.to_dense()
    assert D.shape == t.shape
    assert D.dtype == (np.float64 if t.dtype is None else t.dtype)
    np.testing.assert_array_equal(D, t.dense)
    S = M.to_scipy()
    assert isinstance(S, sp.csr_matrix)
    assert S.shape == t.shape
    np.testing.assert_array_equal(S.indptr, t.S.indptr)
    np.testing.assert_array_equal(S.indices, t.S.indices)
    np.testing.assert_array_equal(S.data, t.S.data)  # ones for structural
    # and back again
    back = Matrix.from_scipy(S, structural=M.is_structural)
    assert back.shape == M.shape and back.nnz == M.nnz
    np.testing.assert_array_equal(back.to_dense(), D)


def test_from_csr_copies_by_default_and_shares_with_copy_false():
    indptr = np.array([0, 2, 2, 3], np.int64)
    indices = np.array([0, 2, 1], np.int32)
    values = np.array([1.5, 2.5, 3.5])
    M = Matrix.from_csr(indptr, indices, values, shape=(3, 4))
    assert M.shape == (3, 4) and M.indices.dtype == np.int32
    for mine, theirs in ((M.indptr, indptr), (M.indices, indices), (M.values, values)):
        assert not np.shares_memory(mine, theirs)
    values[0] = 0.0      # the caller edits its own array: the matrix keeps its values
    assert M.values[0] == 1.5
    owned = Matrix.from_csr(indptr, indices, values, shape=(3, 4), copy=False)
    for mine, theirs in ((owned.indptr, indptr), (owned.indices, indices),
                         (owned.values, values)):
        assert np.shares_memory(mine, theirs)
        assert not mine.flags.writeable


def test_from_csr_infers_shape_and_accepts_lists():
    M = Matrix.from_csr([0, 1, 3], [2, 0, 4], [1.0, 2.0, 3.0])
    assert M.shape == (2, 5)
    assert M.indptr.dtype == np.int64
    assert M.values.dtype == np.float64
    np.testing.assert_array_equal(M.to_dense(), [[0, 0, 1, 0, 0], [2, 0, 0, 0, 3]])
    E = Matrix.from_csr([0, 0, 0], [])
    assert E.shape == (2, 0) and E.nnz == 0 and E.is_structural


def test_from_csr_other_integer_dtypes_are_converted():
    M = Matrix.from_csr(np.array([0, 1, 2], np.int32), np.array([1, 0], np.uint16),
                        np.array([4, 5], np.int32))
    assert M.indptr.dtype == np.int64
    assert M.indices.dtype in INDEX_DTYPES
    assert M.values.dtype == np.int32
    np.testing.assert_array_equal(M.to_dense(), [[0, 4], [5, 0]])


def test_from_csr_check_false_trusts_the_arrays():
    # check=False must not reject (nor repair) arrays; it is spla's own fast path.
    M = Matrix.from_csr(np.array([0, 2]), np.array([1, 0]), np.array([1.0, 2.0]),
                        shape=(1, 2), check=False)
    np.testing.assert_array_equal(M.indices, [1, 0])


# ---------------------------------------------------------------------------
# from_coo
# ---------------------------------------------------------------------------

@st.composite
def coo_inputs(draw):
    nrows = draw(st.integers(0, 6))
    ncols = draw(st.integers(0, 6))
    n = draw(st.integers(0, 25)) if nrows and ncols else 0
    rows = draw(st.lists(st.integers(0, max(nrows - 1, 0)), min_size=n, max_size=n))
    cols = draw(st.lists(st.integers(0, max(ncols - 1, 0)), min_size=n, max_size=n))
    dtype = draw(st.sampled_from(ALL_VALUE_DTYPES))
    vals = None
    if dtype is not None:
        vals = np.array(draw(st.lists(st.integers(-9, 9), min_size=n, max_size=n)), dtype)
    return np.array(rows, np.int64), np.array(cols, np.int64), vals, (nrows, ncols)


@SETTINGS
@given(coo_inputs())
def test_from_coo_sums_duplicates_like_scipy(inp):
    rows, cols, vals, shape = inp
    M = Matrix.from_coo(rows, cols, vals, shape=shape)
    assert_canonical(M)
    assert M.shape == shape
    distinct = {(int(r), int(c)) for r, c in zip(rows, cols)}
    assert M.nnz == len(distinct)
    mask = np.zeros(shape, bool)
    mask[rows, cols] = True
    np.testing.assert_array_equal(pattern(M), mask)
    if vals is None:
        assert M.is_structural
        np.testing.assert_array_equal(M.to_dense(), mask.astype(np.float64))
    else:
        assert M.dtype == vals.dtype
        ref = sp.coo_matrix((vals.astype(np.float64), (rows, cols)), shape=shape).toarray()
        np.testing.assert_array_equal(M.to_dense(), ref)
    if len(distinct) == len(rows):
        assert Matrix.from_coo(rows, cols, vals, shape=shape, duplicates="error").isequal(M)
    else:
        with pytest.raises(spla.InvalidCSR, match=r"from_coo.*distinct coordinates"):
            Matrix.from_coo(rows, cols, vals, shape=shape, duplicates="error")


def test_from_coo_unsorted_input_and_inferred_shape():
    M = Matrix.from_coo([2, 0, 2, 0], [1, 3, 0, 0], [1.0, 2.0, 3.0, 4.0])
    assert M.shape == (3, 4)
    np.testing.assert_array_equal(M.indptr, [0, 2, 2, 4])
    np.testing.assert_array_equal(M.indices, [0, 3, 0, 1])
    np.testing.assert_array_equal(M.values, [4.0, 2.0, 3.0, 1.0])
    E = Matrix.from_coo([], [])
    assert E.shape == (0, 0) and E.nnz == 0


def test_from_coo_structural_duplicates_keep_one_entry():
    M = Matrix.from_coo([0, 0, 1, 0], [1, 1, 0, 1], shape=(2, 2))
    assert M.is_structural and M.nnz == 2
    np.testing.assert_array_equal(M.to_dense(), [[0, 1], [1, 0]])


def test_int32_narrowing_of_indices():
    # Column indices are int32 whenever the column count fits, else int64.
    small = Matrix.from_coo([0, 1], [5, 2], shape=(2, 2**31 - 1))
    assert small.indices.dtype == np.int32
    big = Matrix.from_coo([0, 1], [2**31, 2], [1.0, 2.0], shape=(2, 2**31 + 5))
    assert big.indices.dtype == np.int64
    np.testing.assert_array_equal(big.indices, [2**31, 2])
    assert big.shape == (2, 2**31 + 5)
    # int64 input indices are narrowed by from_coo
    M = Matrix.from_coo(np.array([0], np.int64), np.array([3], np.int64), shape=(1, 4))
    assert M.indices.dtype == np.int32
    # from_csr keeps int64 indices (no copy) but refuses int32 for > 2**31 - 1 columns
    K = Matrix.from_csr(np.array([0, 1]), np.array([3], np.int64), shape=(1, 4))
    assert K.indices.dtype == np.int64
    with pytest.raises(spla.DTypeError, match=r"from_csr.*'indices'.*int64"):
        Matrix.from_csr(np.array([0, 1]), np.array([3], np.int32), shape=(1, 2**31))


# ---------------------------------------------------------------------------
# from_scipy / from_dense
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil", "dok"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_from_scipy_formats(fmt, dtype):
    rng = np.random.default_rng(3)
    D = (rng.integers(-3, 4, size=(5, 7)) * (rng.random((5, 7)) < 0.4)).astype(dtype)
    S = sp.csr_matrix(D).asformat(fmt)
    M = Matrix.from_scipy(S)
    assert_canonical(M)
    assert M.dtype == dtype
    np.testing.assert_array_equal(M.to_dense(), D)
    Ms = Matrix.from_scipy(S, structural=True)
    assert Ms.is_structural
    np.testing.assert_array_equal(pattern(Ms), D != 0)


def test_from_scipy_canonicalises_duplicates_and_unsorted():
    S = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2]), np.array([0, 3])),
                      shape=(1, 3))
    assert not S.has_canonical_format
    M = Matrix.from_scipy(S)
    np.testing.assert_array_equal(M.indices, [0, 2])
    np.testing.assert_array_equal(M.values, [2.0, 4.0])
    # the caller's matrix is left as it was
    np.testing.assert_array_equal(S.indices, [2, 0, 2])
    # sparse arrays too
    M2 = Matrix.from_scipy(sp.csr_array(np.array([[0, 5], [6, 0]], np.int64)))
    np.testing.assert_array_equal(M2.to_dense(), [[0, 5], [6, 0]])


def test_from_scipy_unsupported_dtypes_are_converted():
    B = Matrix.from_scipy(sp.csr_matrix(np.array([[True, False], [False, True]])))
    assert B.is_structural and B.nnz == 2
    H = Matrix.from_scipy(sp.csr_matrix(np.array([[0.5, 0], [0, 2]], np.longdouble)))
    assert H.dtype == np.float64
    np.testing.assert_array_equal(H.to_dense(), [[0.5, 0], [0, 2]])
    I8 = Matrix.from_scipy(sp.csr_matrix(np.array([[0, -3]], np.int8)))
    assert I8.dtype == np.int64
    np.testing.assert_array_equal(I8.to_dense(), [[0, -3]])
    U = Matrix.from_scipy(sp.csr_matrix(np.array([[7, 0]], np.uint16)))
    assert U.dtype == np.int64
    np.testing.assert_array_equal(U.to_dense(), [[7, 0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_from_dense(dtype):
    D = np.array([[0, 1, 0], [0, 0, 0], [2, 0, -3]], dtype)
    M = Matrix.from_dense(D)
    assert_canonical(M)
    assert M.dtype == dtype and M.shape == (3, 3) and M.nnz == 3
    np.testing.assert_array_equal(M.to_dense(), D)
    np.testing.assert_array_equal(M.row_degrees(), [1, 0, 2])
    Ms = Matrix.from_dense(D, structural=True)
    assert Ms.is_structural and Ms.dtype is None
    np.testing.assert_array_equal(Ms.to_dense(), (D != 0).astype(np.float64))
    Mb = Matrix.from_dense(D != 0)
    assert Mb.isequal(Ms)


def test_empty_and_degenerate_shapes():
    for shape in [(0, 0), (0, 5), (5, 0), (1, 1), (1, 7), (7, 1)]:
        D = np.zeros(shape)
        M = Matrix.from_dense(D)
        assert M.shape == shape and M.nnz == 0
        assert_canonical(M)
        np.testing.assert_array_equal(M.to_dense(), D)
        assert M.to_scipy().shape == shape
        np.testing.assert_array_equal(M.row_degrees(), np.zeros(shape[0]))


# ---------------------------------------------------------------------------
# metadata, repr, immutability, device
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, None])
def test_repr_names_shape_nnz_dtype_device(dtype):
    D = np.array([[0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 0, 0]])
    M = Matrix.from_dense(D.astype(dtype or np.float64), structural=dtype is None)
    r = repr(M)
    assert "spla.Matrix" in r
    assert "3x4" in r
    assert "nnz=3" in r
    assert f"dtype={'structural' if dtype is None else np.dtype(dtype).name}" in r
    assert "device=cpu" in r
    assert M.nrows == 3 and M.ncols == 4 and M.device == "cpu" and M.xp is np


def test_constructor_is_refused():
    with pytest.raises(TypeError, match="factory"):
        Matrix()


def test_arrays_are_read_only():
    M = Matrix.from_coo([0, 1], [1, 0], [1.0, 2.0])
    for a in (M.indptr, M.indices, M.values):
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0] = 7
    np.testing.assert_array_equal(M.values, [1.0, 2.0])
    with pytest.raises(AttributeError):
        M.shape = (5, 5)
    with pytest.raises(AttributeError):
        M.values = np.zeros(2)
    with pytest.raises(AttributeError):
        M.extra = 1  # __slots__: no new attributes


def test_from_csr_result_is_read_only_even_for_writeable_input():
    indptr = np.array([0, 1], np.int64)
    indices = np.array([0], np.int64)
    values = np.array([2.0])
    M = Matrix.from_csr(indptr, indices, values)
    assert not M.values.flags.writeable
    assert values.flags.writeable  # the caller's array is not frozen


def test_to_cpu_is_identity():
    M = Matrix.from_coo([0], [0], [1.0])
    assert M.to("cpu") is M
    assert M.to("CPU") is M


@pytest.mark.parametrize("src", [np.float32, np.float64, np.int32, np.int64, None])
@pytest.mark.parametrize("dst", [np.float32, np.float64, np.int32, np.int64])
def test_astype(src, dst):
    D = np.array([[0, 2, 0], [3, 0, 5]])
    M = Matrix.from_dense(D.astype(src or np.float64), structural=src is None)
    C = M.astype(dst)
    assert C.dtype == dst
    assert C.shape == M.shape
    np.testing.assert_array_equal(C.indptr, M.indptr)
    np.testing.assert_array_equal(C.indices, M.indices)
    expected = (D != 0).astype(dst) if src is None else D.astype(dst)
    np.testing.assert_array_equal(C.to_dense(), expected)
    assert M.dtype == (None if src is None else src)  # the original is untouched


def test_with_values_and_structure():
    A = Matrix.from_coo([0, 1, 1], [1, 0, 2], shape=(2, 3))
    B = A.with_values(np.array([2, 3, 4], np.int32))
    assert B.dtype == np.int32
    np.testing.assert_array_equal(B.to_dense(), [[0, 2, 0], [3, 0, 4]])
    assert np.shares_memory(B.indices, A.indices)
    assert A.is_structural  # unchanged
    S = B.structure()
    assert S.is_structural and S.isequal(A)
    assert A.structure() is A
    C = B.with_values([1.5, 2.5, 3.5])
    assert C.dtype == np.float64
    np.testing.assert_array_equal(C.values, [1.5, 2.5, 3.5])


def test_isequal():
    A = Matrix.from_coo([0, 1], [1, 0], [1.0, 2.0], shape=(2, 2))
    assert A.isequal(A)
    assert A.isequal(Matrix.from_coo([1, 0], [0, 1], [2.0, 1.0], shape=(2, 2)))
    assert not A.isequal(Matrix.from_coo([0, 1], [1, 0], [1.0, 3.0], shape=(2, 2)))
    assert not A.isequal(Matrix.from_coo([0, 1], [1, 1], [1.0, 2.0], shape=(2, 2)))
    assert not A.isequal(Matrix.from_coo([0, 1], [1, 0], [1.0, 2.0], shape=(2, 3)))
    assert not A.isequal(A.astype(np.float32))  # same numbers, other dtype
    assert not A.isequal(A.structure())
    assert not A.structure().isequal(A)
    assert A.structure().isequal(Matrix.from_coo([0, 1], [1, 0], shape=(2, 2)))
    assert not A.isequal(A.to_scipy())
    assert not A.isequal(None)


@SETTINGS
@given(twins(plans=ALL_PLANS))
def test_isequal_is_reflexive_and_sees_value_changes(t):
    M = t.M
    assert M.isequal(M)
    copy = Matrix.from_csr(np.array(M.indptr), np.array(M.indices),
                           None if M.values is None else np.array(M.values), shape=M.shape)
    assert M.isequal(copy)
    if M.nnz and M.values is not None:
        v = np.array(M.values)
        v[-1] += 1
        assert not M.isequal(M.with_values(v))


def test_transpose_property_and_getitem_full_slices():
    A = Matrix.from_dense(np.array([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]]))
    np.testing.assert_array_equal(A.T.to_dense(), A.to_dense().T)
    assert A[:, :].isequal(A)


@pytest.mark.parametrize("dtype", VALUE_DTYPES)
def test_value_dtypes_round_trip_exactly(dtype):
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    vals = np.array([info.max, info.min, 1], dtype)
    M = Matrix.from_coo([0, 1, 2], [2, 1, 0], vals, shape=(3, 3))
    assert M.dtype == dtype
    np.testing.assert_array_equal(M.values, vals)
    np.testing.assert_array_equal(M.to_dense(), np.diag(vals)[:, ::-1])


def test_to_scipy_is_an_ordinary_writeable_copy():
    A = Matrix.from_coo([0, 0, 1], [0, 1, 1], [1.0, 0.0, 3.0], shape=(2, 2))
    S = A.to_scipy()
    S.eliminate_zeros()
    S.sum_duplicates()
    S.data *= 2
    assert S.nnz == 2 and S.toarray().tolist() == [[2.0, 0.0], [0.0, 6.0]]
    assert A.values.tolist() == [1.0, 0.0, 3.0]          # untouched
    shared = A.to_scipy(copy=False)
    assert np.shares_memory(shared.data, A.values)
    with pytest.raises(ValueError):
        shared.data *= 2                                  # documented: read-only


def test_caller_edits_cannot_make_cached_prefix_sums_stale():
    # Zero-weight edges must never be picked, even if the caller zeroes
    # weights in its own array after building the matrix.
    w = np.ones(4)
    A = Matrix.from_csr([0, 4], [0, 1, 2, 3], w, shape=(1, 4))
    Q = Matrix.from_coo([0], [0], shape=(1, 1))
    spla.sample_rows(Q @ A, 1, seed=0)                   # caches A's prefix sums
    w[:3] = 0.0                                          # the caller's own array
    for seed in range(20):
        S = spla.sample_rows(Q @ A, 2, seed=seed)
        assert S.nnz == 2 and (S.values > 0).all()       # no zero-weight pick
    assert A.values.tolist() == [1.0, 1.0, 1.0, 1.0]     # the matrix kept its weights


def test_from_csr_keeps_a_host_indptr():
    """host_indptr: a read-only host copy kept with the matrix and used for
    its row lengths (a product's longest row) instead of the device's."""
    from spla.exceptions import InvalidCSR
    from spla.matrix import HOST_INDPTR
    from spla.mxm import _max_row_nnz
    ptr = np.array([0, 1, 3])
    M = Matrix.from_csr(ptr, [1, 0, 1], [5.0, 6.0, 7.0], host_indptr=ptr)
    kept = M._cache[HOST_INDPTR]
    assert kept.tolist() == [0, 1, 3] and not kept.flags.writeable and kept is not ptr
    ptr[1] = 2                                   # the caller's array is not the matrix's
    assert _max_row_nnz(M) == 2
    with pytest.raises(InvalidCSR, match="argument 'host_indptr' must be a host copy equal "
                                         "to indptr; got 3 offsets that differ"):
        Matrix.from_csr([0, 1, 3], [1, 0, 1], host_indptr=[0, 2, 3])
    with pytest.raises(InvalidCSR, match="host_indptr"):
        Matrix.from_csr([0, 1, 3], [1, 0, 1], host_indptr=[0, 1])
