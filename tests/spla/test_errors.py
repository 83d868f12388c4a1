"""Bad input: every public operator raises the right spla exception.

Each case checks three things: the spla class, the built-in class it must
also be (``except ValueError`` keeps working, see ``spla/exceptions.py``),
and a message that names the function and the offending argument.
"""

import re

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from spla import Matrix

BUILTIN = {
    spla.DimensionMismatch: ValueError,
    spla.InvalidValue: ValueError,
    spla.InvalidCSR: ValueError,
    spla.DeviceMismatch: ValueError,
    spla.LayoutError: ValueError,
    spla.IndexOutOfRange: IndexError,
    spla.DTypeError: TypeError,
    spla.MissingDependency: ImportError,
}


def test_exception_hierarchy():
    for cls, builtin in BUILTIN.items():
        assert issubclass(cls, spla.SplaError)
        assert issubclass(cls, builtin)
    assert issubclass(spla.SplaError, Exception)


def _A():
    return Matrix.from_dense(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))   # 2x3


def _sq():
    return Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))             # 2x2


def _Q():
    return Matrix.from_coo([0, 1, 2], [1, 0, 1], shape=(3, 2))               # row selection


def _neg():
    return Matrix.from_dense(np.array([[1.0, -2.0], [0.0, 3.0]]))


def _with(value):
    return Matrix.from_coo([0, 0, 1], [0, 1, 1], np.array([1.0, value, 2.0]), shape=(2, 2))


D = spla.DimensionMismatch
V = spla.InvalidValue
I = spla.IndexOutOfRange  # noqa: E741
T = spla.DTypeError
C = spla.InvalidCSR

# (id, thunk, exception class, regex the message must match)
CASES = [
    # ---- Matrix.from_csr: dtypes ------------------------------------------
    ("from_csr-float16-values", lambda: Matrix.from_csr([0, 1], [0], np.array([1], np.float16)),
     T, r"Matrix\.from_csr: argument 'values'.*float16"),
    ("from_csr-complex-values", lambda: Matrix.from_csr([0, 1], [0], np.array([1j])),
     T, r"Matrix\.from_csr: argument 'values'.*complex"),
    ("from_csr-bool-values", lambda: Matrix.from_csr([0, 1], [0], np.array([True])),
     T, r"Matrix\.from_csr: argument 'values'.*bool"),
    ("from_csr-float-indices", lambda: Matrix.from_csr([0, 1], np.array([0.0])),
     T, r"Matrix\.from_csr: argument 'indices'"),
    ("from_csr-float-indptr", lambda: Matrix.from_csr(np.array([0.0, 1.0]), [0]),
     T, r"Matrix\.from_csr: argument 'indptr'"),
    # ---- Matrix.from_csr: non-canonical -------------------------------------
    ("from_csr-unsorted-columns", lambda: Matrix.from_csr([0, 3], [0, 2, 1], shape=(1, 3)),
     C, r"Matrix\.from_csr: argument 'indices'.*strictly increasing"),
    ("from_csr-duplicate-columns", lambda: Matrix.from_csr([0, 2], [1, 1], [1.0, 2.0]),
     C, r"Matrix\.from_csr: argument 'indices'.*strictly increasing"),
    ("from_csr-decreasing-indptr", lambda: Matrix.from_csr([0, 2, 1, 2], [0, 1], shape=(3, 2)),
     C, r"Matrix\.from_csr: argument 'indptr'.*non-decreasing"),
    ("from_csr-indptr-end", lambda: Matrix.from_csr([0, 1, 3], [0, 1], shape=(2, 2)),
     C, r"Matrix\.from_csr: argument 'indices'.*indptr\[-1\]"),
    ("from_csr-indptr-start", lambda: Matrix.from_csr([1, 2], [0], shape=(1, 2)),
     C, r"Matrix\.from_csr: argument 'indptr'.*start"),
    ("from_csr-empty-indptr", lambda: Matrix.from_csr(np.zeros(0, np.int64), []),
     C, r"Matrix\.from_csr: argument 'indptr'"),
    ("from_csr-values-length", lambda: Matrix.from_csr([0, 2], [0, 1], [1.0]),
     C, r"Matrix\.from_csr: argument 'values'"),
    ("from_csr-column-out-of-range", lambda: Matrix.from_csr([0, 1], [5], shape=(1, 3)),
     I, r"Matrix\.from_csr: argument 'indices'.*below 3"),
    ("from_csr-negative-column", lambda: Matrix.from_csr([0, 1], [-1], shape=(1, 3)),
     I, r"Matrix\.from_csr: argument 'indices'.*non-negative"),
    ("from_csr-shape-rows", lambda: Matrix.from_csr([0, 1], [0], shape=(2, 2)),
     D, r"Matrix\.from_csr: argument 'indptr'"),
    ("from_csr-negative-shape", lambda: Matrix.from_csr([0, 0], [], shape=(1, -1)),
     V, r"Matrix\.from_csr: argument 'shape\[1\]'"),
    ("from_csr-bad-shape", lambda: Matrix.from_csr([0, 0], [], shape=3),
     V, r"Matrix\.from_csr: argument 'shape'"),
    # ---- Matrix.from_coo ----------------------------------------------------
    ("from_coo-negative-row", lambda: Matrix.from_coo([0, -1], [0, 0]),
     I, r"Matrix\.from_coo: argument 'rows'.*non-negative"),
    ("from_coo-negative-col", lambda: Matrix.from_coo([0, 1], [0, -2], shape=(2, 2)),
     I, r"Matrix\.from_coo: argument 'cols'.*non-negative"),
    ("from_coo-row-out-of-range", lambda: Matrix.from_coo([0, 3], [0, 0], shape=(2, 2)),
     I, r"Matrix\.from_coo: argument 'rows'.*below 2"),
    ("from_coo-col-out-of-range", lambda: Matrix.from_coo([0, 1], [0, 2], shape=(2, 2)),
     I, r"Matrix\.from_coo: argument 'cols'.*below 2"),
    ("from_coo-length-mismatch", lambda: Matrix.from_coo([0, 1], [0]),
     D, r"Matrix\.from_coo: argument 'rows/cols'"),
    ("from_coo-values-length", lambda: Matrix.from_coo([0, 1], [0, 1], [1.0]),
     D, r"Matrix\.from_coo: argument 'values'"),
    ("from_coo-float-rows", lambda: Matrix.from_coo([0.0, 1.0], [0, 1], shape=(2, 2)),
     T, r"Matrix\.from_coo: argument 'rows'"),
    ("from_coo-float16-values", lambda: Matrix.from_coo([0], [0], np.array([1], np.float16)),
     T, r"Matrix\.from_coo: argument 'values'.*float16"),
    ("from_coo-bool-values", lambda: Matrix.from_coo([0], [0], np.array([True])),
     T, r"Matrix\.from_coo: argument 'values'.*bool"),
    ("from_coo-duplicates-name", lambda: Matrix.from_coo([0], [0], duplicates="max"),
     V, r"Matrix\.from_coo: argument 'duplicates'"),
    ("from_coo-duplicates-error", lambda: Matrix.from_coo([0, 1, 0], [1, 0, 1], duplicates="error"),
     C, r"Matrix\.from_coo: argument 'rows/cols'.*\(0, 1\)"),
    # ---- other factories and conversions ---------------------------------------
    ("from_scipy-dense", lambda: Matrix.from_scipy(np.eye(2)),
     T, r"Matrix\.from_scipy: argument 'S'"),
    ("from_dense-1d", lambda: Matrix.from_dense(np.ones(3)),
     D, r"Matrix\.from_dense: argument 'D'"),
    ("with_values-length", lambda: _A().with_values(np.ones(2)),
     D, r"Matrix\.with_values: argument 'values'.*length 3"),
    ("with_values-dtype", lambda: _A().with_values(np.ones(3, np.float16)),
     T, r"Matrix\.with_values: argument 'values'.*float16"),
    ("astype-float16", lambda: _A().astype(np.float16),
     T, r"Matrix\.astype: argument 'dtype'.*float16"),
    ("astype-complex", lambda: _A().astype(np.complex128),
     T, r"Matrix\.astype: argument 'dtype'.*complex"),
    ("astype-bool", lambda: _A().astype(bool),
     T, r"Matrix\.astype: argument 'dtype'.*bool"),
    ("to-unknown-device", lambda: _A().to("tpu"),
     V, r"Matrix\.to: argument 'device'"),
    # ---- mxm ------------------------------------------------------------------
    ("mxm-shape", lambda: spla.mxm(_A(), _A()),
     D, r"mxm: argument 'B'.*3 rows"),
    ("matmul-shape", lambda: _A() @ _A(),
     D, r"mxm: argument 'B'"),
    ("mxm-shape-lazy", lambda: spla.mxm(_sq() @ _sq(), _A().T @ _sq()),
     D, r"mxm: argument 'B'"),
    ("mxm-not-matrix-A", lambda: spla.mxm(np.eye(2), _sq()),
     T, r"mxm: argument 'A'"),
    ("mxm-not-matrix-B", lambda: spla.mxm(_sq(), sp.eye(2)),
     T, r"mxm: argument 'B'"),
    # A numpy or cupy array is spmm's operand (tests/spla/test_matmul_syntax.py).
    ("matmul-not-matrix", lambda: _sq() @ [[1.0, 0.0], [0.0, 1.0]],
     T, r"mxm: argument 'B'"),
    ("mxm-semiring-name", lambda: spla.mxm(_sq(), _sq(), "plus_plus"),
     V, r"mxm: argument 'semiring'.*plus_plus"),
    ("mxm-semiring-type", lambda: spla.mxm(_sq(), _sq(), spla.semiring.plus),
     V, r"mxm: argument 'semiring'"),
    # ---- extract ----------------------------------------------------------------
    ("extract-row-out-of-range", lambda: spla.extract(_A(), rows=[0, 2]),
     I, r"extract: argument 'rows'.*below 2"),
    ("extract-negative-row", lambda: spla.extract(_A(), rows=[-1]),
     I, r"extract: argument 'rows'.*non-negative"),
    ("extract-col-out-of-range", lambda: spla.extract(_A(), cols=[3]),
     I, r"extract: argument 'cols'.*below 3"),
    ("extract-negative-col", lambda: spla.extract(_A(), rows=[1], cols=[0, -3]),
     I, r"extract: argument 'cols'.*non-negative"),
    ("extract-float-rows", lambda: spla.extract(_A(), rows=[0.0]),
     T, r"extract: argument 'rows'"),
    ("extract-2d-rows", lambda: spla.extract(_A(), rows=[[0]]),
     V, r"extract: argument 'rows'"),
    ("extract-not-matrix", lambda: spla.extract(np.eye(2), rows=[0]),
     T, r"extract: argument 'A'"),
    ("extract_rows-out-of-range", lambda: spla.extract_rows(_A(), [5]),
     I, r"argument 'rows'"),
    ("extract_cols-negative", lambda: spla.extract_cols(_A(), [-1]),
     I, r"argument 'cols'"),
    # ---- element-wise and reductions --------------------------------------------
    ("reduce-monoid", lambda: spla.reduce_rowwise(_A(), "mean"),
     V, r"reduce_rowwise: argument 'monoid'.*mean"),
    ("reduce-not-matrix", lambda: spla.reduce_rowwise([[1.0]]),
     T, r"reduce_rowwise: argument 'A'"),
    ("apply-op-name", lambda: spla.apply(_A(), "cube"),
     V, r"apply: argument 'op'.*cube"),
    ("apply-op-type", lambda: spla.apply(_A(), 3),
     V, r"apply: argument 'op'"),
    ("apply-not-matrix", lambda: spla.apply(np.eye(2), "abs"),
     T, r"apply: argument 'A'"),
    ("select-predicate", lambda: spla.select(_A(), "upper"),
     V, r"select: argument 'predicate'.*upper"),
    ("select-predicate-type", lambda: spla.select(_A(), 5),
     V, r"select: argument 'predicate'"),
    ("select-not-matrix", lambda: spla.select(np.eye(2), "tril"),
     T, r"select: argument 'A'"),
    ("ewise_add-shape", lambda: spla.ewise_add(_A(), _sq()),
     D, r"ewise_add: argument 'B'"),
    ("ewise_add-monoid", lambda: spla.ewise_add(_A(), _A(), "minus"),
     V, r"ewise_add: argument 'monoid'.*minus"),
    ("ewise_add-not-matrix", lambda: spla.ewise_add(_A(), np.ones((2, 3))),
     T, r"ewise_add: argument 'B'"),
    ("ewise_mult-shape", lambda: spla.ewise_mult(_sq(), _A()),
     D, r"ewise_mult: argument 'B'"),
    ("ewise_mult-op", lambda: spla.ewise_mult(_A(), _A(), "div"),
     V, r"ewise_mult: argument 'op'.*div"),
    ("ewise_mult-not-matrix", lambda: spla.ewise_mult(None, _A()),
     T, r"ewise_mult: argument 'A'"),
    ("normalize-not-matrix", lambda: spla.normalize_rows(sp.eye(2)),
     T, r"normalize_rows: argument 'A'"),
    # ---- structure --------------------------------------------------------------
    ("transpose-not-matrix", lambda: spla.transpose(np.eye(2)),
     T, r"transpose: argument 'A'"),
    ("compact-not-matrix", lambda: spla.compact_columns("A"),
     T, r"compact_columns: argument 'A'"),
    ("vstack-ncols", lambda: spla.vstack([_A(), _sq()]),
     D, r"vstack: argument 'mats\[1\]'"),
    ("vstack-empty", lambda: spla.vstack([]),
     V, r"vstack: argument 'mats'"),
    ("vstack-single-matrix", lambda: spla.vstack(_A()),
     V, r"vstack: argument 'mats'"),
    ("vstack-mixed-structural", lambda: spla.vstack([_A(), _A().structure()]),
     V, r"vstack: argument 'mats'.*structural"),
    ("vstack-not-matrix", lambda: spla.vstack([_A(), np.ones((1, 3))]),
     T, r"vstack: argument 'mats\[1\]'"),
    ("block_diag-empty", lambda: spla.block_diag([]),
     V, r"block_diag: argument 'mats'"),
    ("block_diag-mixed", lambda: spla.block_diag([_A().structure(), _sq()]),
     V, r"block_diag: argument 'mats'"),
    ("block_diag-not-matrix", lambda: spla.block_diag([np.eye(2)]),
     T, r"block_diag: argument 'mats\[0\]'"),
    # ---- sample_rows: arguments ---------------------------------------------------
    ("sample-not-matrix", lambda: spla.sample_rows(np.eye(2), 1, seed=0),
     T, r"sample_rows: argument 'P'"),
    ("sample-scipy", lambda: spla.sample_rows(sp.eye(2, format="csr"), 1, seed=0),
     T, r"sample_rows: argument 'P'"),
    ("sample-k-zero", lambda: spla.sample_rows(_A(), 0, seed=0),
     V, r"sample_rows: argument 'k'.*>= 1"),
    ("sample-k-negative", lambda: spla.sample_rows(_A(), -2, seed=0),
     V, r"sample_rows: argument 'k'"),
    ("sample-k-float", lambda: spla.sample_rows(_A(), 2.0, seed=0),
     V, r"sample_rows: argument 'k'.*float"),
    ("sample-k-fraction", lambda: spla.sample_rows(_A(), 1.5, seed=0),
     V, r"sample_rows: argument 'k'"),
    ("sample-k-numpy-float", lambda: spla.sample_rows(_A(), np.float64(2.0), seed=0),
     V, r"sample_rows: argument 'k'"),
    ("sample-k-bool", lambda: spla.sample_rows(_A(), True, seed=0),
     V, r"sample_rows: argument 'k'"),
    ("sample-k-none", lambda: spla.sample_rows(_A(), None, seed=0),
     V, r"sample_rows: argument 'k'"),
    ("sample-k-length", lambda: spla.sample_rows(_A(), [1, 2, 3], seed=0),
     D, r"sample_rows: argument 'k'.*length 2"),
    ("sample-k-2d", lambda: spla.sample_rows(_A(), np.ones((2, 1), np.int64), seed=0),
     D, r"sample_rows: argument 'k'"),
    ("sample-k-per-row-negative", lambda: spla.sample_rows(_A(), [1, -1], seed=0),
     V, r"sample_rows: argument 'k'.*>= 0"),
    ("sample-k-per-row-float", lambda: spla.sample_rows(_A(), np.array([1.0, 2.0]), seed=0),
     T, r"sample_rows: argument 'k'"),
    ("sample-k-lazy-length", lambda: spla.sample_rows(_Q() @ _sq(), [1, 1], seed=0),
     D, r"sample_rows: argument 'k'.*length 3"),
    ("sample-seed-negative", lambda: spla.sample_rows(_A(), 1, seed=-1),
     V, r"sample_rows: argument 'seed'"),
    ("sample-seed-too-big", lambda: spla.sample_rows(_A(), 1, seed=2**64),
     V, r"sample_rows: argument 'seed'.*2\*\*64"),
    ("sample-seed-float", lambda: spla.sample_rows(_A(), 1, seed=1.5),
     V, r"sample_rows: argument 'seed'"),
    ("sample-seed-none", lambda: spla.sample_rows(_A(), 1, seed=None),
     V, r"sample_rows: argument 'seed'"),
    ("sample-stream-negative", lambda: spla.sample_rows(_A(), 1, seed=0, stream=-5),
     V, r"sample_rows: argument 'stream'"),
    ("sample-stream-too-big", lambda: spla.sample_rows(_A(), 1, seed=0, stream=2**70),
     V, r"sample_rows: argument 'stream'"),
    ("sample-row_ids-length", lambda: spla.sample_rows(_A(), 1, seed=0, row_ids=[0, 1, 2]),
     D, r"sample_rows: argument 'row_ids'.*length 2"),
    ("sample-row_ids-lazy-length", lambda: spla.sample_rows(_Q() @ _sq(), 1, seed=0, row_ids=[4]),
     D, r"sample_rows: argument 'row_ids'.*length 3"),
    ("sample-row_ids-negative", lambda: spla.sample_rows(_A(), 1, seed=0, row_ids=[0, -1]),
     I, r"sample_rows: argument 'row_ids'"),
    ("sample-row_ids-float", lambda: spla.sample_rows(_A(), 1, seed=0, row_ids=[0.0, 1.0]),
     T, r"sample_rows: argument 'row_ids'"),
    # ---- sample_rows: weights ---------------------------------------------------------
    ("sample-negative-weight", lambda: spla.sample_rows(_with(-1.0), 1, seed=0),
     V, r"sample_rows: argument 'P'.*non-negative.*-1"),
    ("sample-nan-weight", lambda: spla.sample_rows(_with(np.nan), 1, seed=0),
     V, r"sample_rows: argument 'P'.*finite.*nan"),
    ("sample-inf-weight", lambda: spla.sample_rows(_with(np.inf), 1, seed=0),
     V, r"sample_rows: argument 'P'.*finite.*inf"),
    ("sample-negative-int-weight",
     lambda: spla.sample_rows(_with(-3.0).astype(np.int32), 1, seed=0),
     V, r"sample_rows: argument 'P'.*non-negative"),
    ("sample-negative-weight-float32",
     lambda: spla.sample_rows(_with(-0.5).astype(np.float32), 2, seed=0, replace=True),
     V, r"sample_rows: argument 'P'.*non-negative"),
    ("sample-lazy-negative-in-A", lambda: spla.sample_rows(_Q() @ _with(-1.0), 1, seed=0),
     V, r"sample_rows: argument 'P.*non-negative"),
    ("sample-lazy-nan-in-A", lambda: spla.sample_rows(_Q() @ _with(np.nan), 1, seed=0),
     V, r"sample_rows: argument 'P.*finite"),
    ("sample-lazy-inf-in-A", lambda: spla.sample_rows(_Q() @ _with(np.inf), 2, seed=0, replace=True),
     V, r"sample_rows: argument 'P.*finite"),
    ("sample-lazy-negative-in-Q",
     lambda: spla.sample_rows(_Q().with_values([1.0, -1.0, 1.0]) @ _sq(), 1, seed=0),
     V, r"sample_rows: argument 'P.*non-negative"),
    ("sample-lazy-nan-in-Q",
     lambda: spla.sample_rows(_Q().with_values([1.0, np.nan, 1.0]) @ _sq(), 1, seed=0),
     V, r"sample_rows: argument 'P.*finite"),
    ("sample-lazy-inf-in-Q",
     lambda: spla.sample_rows(_Q().with_values([np.inf, 1.0, 1.0]) @ _sq().structure(), 1, seed=0),
     V, r"sample_rows: argument 'P.*finite"),
    ("sample-lazy-general-negative",   # Q with two entries in a row: materialised path
     lambda: spla.sample_rows(Matrix.from_dense(np.ones((1, 2))) @ _with(-5.0), 1, seed=0),
     V, r"sample_rows: argument 'P'.*non-negative"),
]


@pytest.mark.parametrize("thunk, cls, pattern", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_raises(thunk, cls, pattern):
    with pytest.raises(cls, match=pattern) as info:
        thunk()
    err = info.value
    assert isinstance(err, spla.SplaError)
    assert isinstance(err, BUILTIN[cls])


def test_case_ids_are_unique():
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))


def test_errors_are_caught_by_the_builtin_class():
    with pytest.raises(ValueError):
        spla.mxm(_A(), _A())
    with pytest.raises(IndexError):
        spla.extract(_A(), rows=[9])
    with pytest.raises(TypeError):
        Matrix.from_csr([0, 1], [0], np.array([1], np.float16))


def test_failed_weight_check_leaves_no_cache():
    A = _with(-1.0)
    with pytest.raises(spla.InvalidValue):
        spla.sample_rows(_Q() @ A, 1, seed=0)
    assert "its_prefix" not in A._cache


def test_seed_bounds_are_inclusive_below_2_64():
    A = _A()
    for seed in (0, 2**64 - 1, np.uint64(2**64 - 1)):
        S = spla.sample_rows(A, 1, seed=seed, stream=2**64 - 1)
        np.testing.assert_array_equal(S.row_degrees(), [1, 1])


def test_mxm_checks_shapes_before_computing():
    # The error comes at the call (not at .new()), so a lazy product never
    # exists with inconsistent operands.
    with pytest.raises(spla.DimensionMismatch):
        _ = _A() @ _A()


@pytest.mark.parametrize("dtype", [np.complex128, np.float16, np.int8])
def test_from_dense_unsupported_dtype_names_from_dense(dtype):
    D = np.array([[0, 3]], dtype)
    try:
        M = Matrix.from_dense(D)
    except spla.DTypeError as err:
        assert re.search(r"Matrix\.from_dense: argument 'D'", str(err)), str(err)
        return
    # converting (as from_scipy does for float16 and int8) is fine too
    assert np.dtype(dtype).kind != "c", "complex values cannot be kept"
    np.testing.assert_array_equal(M.to_dense(), D.astype(M.dtype))


@pytest.mark.parametrize("factory", ["from_dense", "from_scipy"])
def test_complex_values_are_rejected_not_truncated(factory):
    D = np.array([[0, 1 + 2j]])
    arg = {"from_dense": "D", "from_scipy": "S"}[factory]
    src = D if factory == "from_dense" else sp.csr_matrix(D)
    with pytest.raises(spla.DTypeError, match=rf"Matrix\.{factory}: argument '{arg}'"):
        getattr(Matrix, factory)(src)


@pytest.mark.parametrize("dtype, kept", [(np.float16, np.float64), (np.int8, np.int64),
                                         (np.uint16, np.int64), (np.uint32, np.int64),
                                         (np.uint64, np.int64)])
def test_other_dtypes_are_widened_exactly(dtype, kept):
    D = np.array([[0, 3], [7, 0]], dtype)
    sources = [Matrix.from_dense(D)]
    if dtype != np.float16:  # scipy.sparse has no float16 matrices
        sources.append(Matrix.from_scipy(sp.csr_matrix(D)))
    for M in sources:
        assert M.dtype == kept
        np.testing.assert_array_equal(M.to_dense(), D.astype(kept))


def test_uint64_beyond_int64_is_rejected():
    D = np.array([[0, 2 ** 63]], np.uint64)
    with pytest.raises(spla.DTypeError, match=r"Matrix\.from_dense: argument 'D'"):
        Matrix.from_dense(D)
