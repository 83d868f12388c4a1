"""Entry-wise operators: apply, select, ewise_add, ewise_mult, normalize_rows,
and the row-wise reduction they build on."""

import sys

import numpy as np

from spla import backend
from spla.checks import describe, fail
from spla.util import row_ids
from spla.exceptions import DimensionMismatch, InvalidValue
from spla.matrix import Matrix
from spla.mxm import as_matrix, kernel_values
from spla.operators import BINARY as _BINARY
from spla.semiring import MONOIDS as _MONOID_NAMES, Monoid, as_monoid
from spla.vector import Vector
from kernels import semiring_ops as ops

_UNARY = {
    "identity": lambda xp, v: v,
    "square": lambda xp, v: v * v,
    "reciprocal": lambda xp, v: 1.0 / v.astype(np.float64) if v.dtype.kind in "iu" else 1 / v,
    "abs": lambda xp, v: xp.abs(v),
    "neg": lambda xp, v: -v,
    "sqrt": lambda xp, v: xp.sqrt(v),
    "exp": lambda xp, v: xp.exp(v),
    "log": lambda xp, v: xp.log(v),
    "one": lambda xp, v: xp.ones_like(v),
}

_MUL_OPS = {"times": ops.MUL_TIMES, "plus": ops.MUL_PLUS, "min": ops.MUL_MIN,
            "max": ops.MUL_MAX, "first": ops.MUL_FIRST, "second": ops.MUL_SECOND,
            "pair": ops.MUL_PAIR}


def _distributed(*objs):
    """``spla.dist`` when an operand, a mask's matrix or ``out`` is a DistMatrix.

    A DistMatrix can only exist once spla.dist is imported: no import here.
    A distributed mask or ``out`` with local operands goes there too, to be
    refused on every rank (the local path cannot read a DistMatrix).
    """
    dist = sys.modules.get("spla.dist")
    if dist is None:
        return None
    if any(isinstance(getattr(X, "parent", X), dist.DistMatrix) for X in objs):
        return dist
    return None


def _values_or_ones(A):
    return A.xp.ones(A.nnz, np.float64) if A.values is None else A.values


def apply(A, op, *, mask=None, out=None, accum=None, replace=False):
    """Apply a unary operator to every stored value.

    Parameters
    ----------
    A : Matrix or MxmExpr
    op : str or callable
        One of ``identity, square, reciprocal, abs, neg, sqrt, exp, log,
        one``, or a function of one scalar (a ``numba.njit`` function, or a
        plain Python function that numba can compile).  A structural matrix's
        values are taken as 1.
    mask, out, accum, replace
        As in ``spla.mxm`` (see ``spla.mask``).  ``A`` may be a Vector.

    Returns
    -------
    Matrix
        Same pattern; values as ``op`` returns them.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, apply
    >>> A = Matrix.from_dense(np.array([[2.0, 0.0], [0.0, -3.0]]))
    >>> apply(A, "square").values
    array([4., 9.])
    >>> apply(A, lambda x: x + 1).values
    array([ 3., -2.])
    """
    func = "apply"
    dist = _distributed(A, mask, out)
    if dist is not None:
        return dist.dist_apply(A, op, mask=mask, out=out, accum=accum, replace=replace)
    if isinstance(A, Vector):
        T = Vector._from_row(apply(A._as_row(), op))
        return _written(func, T, mask, out, accum, replace)
    A = as_matrix(func, "A", A)
    v = _values_or_ones(A)
    if isinstance(op, str):
        if op not in _UNARY:
            fail(InvalidValue, func, "op", f"a callable or one of {sorted(_UNARY)}", repr(op))
        vals = _UNARY[op](A.xp, v)
    elif callable(op):
        K = backend.kernels_for(A.device)
        vals = K.ewise.map_values(v, _jit(op))
    else:
        fail(InvalidValue, func, "op", "a callable or an operator name", describe(op))
    if vals.dtype not in (np.float32, np.float64, np.int32, np.int64):
        vals = vals.astype(np.float64 if vals.dtype.kind in "fb" else np.int64)
    return _written(func, Matrix._new(A.indptr, A.indices, vals, A.shape), mask, out, accum,
                    replace)


def _jit(f):
    import numba
    from numba.core.registry import CPUDispatcher
    return f if isinstance(f, CPUDispatcher) else numba.njit(f)


_SELECT = ("tril", "triu", "diag", "offdiag", "row<", "row>=", "col<", "col>=",
           "value>", "value>=", "value<", "value<=", "value==", "value!=", "nonzero")


def select(A, predicate, thunk=0, *, mask=None, out=None, accum=None, replace=False):
    """Keep the entries for which a predicate holds.

    Parameters
    ----------
    A : Matrix or MxmExpr
    predicate : str or callable
        By index: ``tril`` (``j <= i + thunk``), ``triu`` (``j >= i + thunk``),
        ``diag`` (``j == i + thunk``), ``offdiag``, ``row<``, ``row>=``,
        ``col<``, ``col>=`` (compared with ``thunk``).  By value: ``value>``,
        ``value>=``, ``value<``, ``value<=``, ``value==``, ``value!=``
        (compared with ``thunk``), ``nonzero``.  Or a function
        ``f(i, j, v) -> bool`` compiled with numba.
    thunk : scalar, default 0
    mask, out, accum, replace
        As in ``spla.mxm`` (see ``spla.mask``).  ``A`` may be a Vector
        (its entries are row 0 of a 1 x n matrix).

    Returns
    -------
    Matrix

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, select
    >>> A = Matrix.from_dense(np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> select(A, "tril").to_dense()
    array([[1., 0.],
           [3., 4.]])
    >>> select(A, "value>", 2.5).values
    array([3., 4.])
    """
    func = "select"
    dist = _distributed(A, mask, out)
    if dist is not None:
        return dist.dist_select(A, predicate, thunk, mask=mask, out=out, accum=accum,
                                replace=replace)
    if isinstance(A, Vector):
        T = Vector._from_row(select(A._as_row(), predicate, thunk))
        return _written(func, T, mask, out, accum, replace)
    A = as_matrix(func, "A", A)
    xp = A.xp
    if callable(predicate):
        K = backend.kernels_for(A.device)
        vals, _ = kernel_values(A, A.dtype or np.float64)
        if A.values is None:
            vals = xp.ones(A.nnz, np.float64)
        keep = K.ewise.select_mask(A.indptr, A.indices, vals, _jit(predicate))
    elif predicate in _SELECT:
        keep = _select_mask(xp, A, predicate, thunk)
    else:
        fail(InvalidValue, func, "predicate", f"a callable or one of {list(_SELECT)}",
             repr(predicate))
    return _written(func, _filter(A, keep), mask, out, accum, replace)


def _select_mask(xp, A, pred, thunk):
    i = row_ids(A.indptr, A.nnz)
    j = A.indices.astype(np.int64)
    v = _values_or_ones(A)
    table = {
        "tril": lambda: j <= i + thunk, "triu": lambda: j >= i + thunk,
        "diag": lambda: j == i + thunk, "offdiag": lambda: j != i + thunk,
        "row<": lambda: i < thunk, "row>=": lambda: i >= thunk,
        "col<": lambda: j < thunk, "col>=": lambda: j >= thunk,
        "value>": lambda: v > thunk, "value>=": lambda: v >= thunk,
        "value<": lambda: v < thunk, "value<=": lambda: v <= thunk,
        "value==": lambda: v == thunk, "value!=": lambda: v != thunk,
        "nonzero": lambda: v != 0,
    }
    return table[pred]()


def _filter(A, keep):
    xp = A.xp
    counts = xp.zeros(A.nrows + 1, np.int64)
    if A.nnz:
        kept_rows = row_ids(A.indptr, A.nnz)[keep]
        counts[1:] = xp.bincount(kept_rows, minlength=A.nrows)
    ptr = xp.cumsum(counts)
    vals = None if A.values is None else A.values[keep]
    return Matrix._new(ptr, A.indices[keep], vals, A.shape)


def _ewise(func, A, B, union, code, structural_result):
    A = as_matrix(func, "A", A)
    B = as_matrix(func, "B", B)
    if A.shape != B.shape:
        fail(DimensionMismatch, func, "B", f"shape {A.shape} (A's shape)", f"shape {B.shape}")
    backend.same_device(func, A, B)
    given = [d for d in (A.dtype, B.dtype) if d is not None]
    dt = np.result_type(*given) if given else np.dtype(np.float64)
    a_val, a_hv = kernel_values(A, dt)
    b_val, b_hv = kernel_values(B, dt)
    K = backend.kernels_for(A.device)
    ptr, idx, val = K.ewise.ewise(A.indptr, A.indices, a_val, a_hv, B.indptr, B.indices,
                                  b_val, b_hv, union, code, A.xp.ones(1, dt))
    from spla.arrays import narrow_indices
    structural = structural_result or (not given)
    return Matrix._new(ptr, narrow_indices(idx, A.ncols), None if structural else val, A.shape)


def ewise_add(A, B, monoid="plus", *, mask=None, out=None, accum=None, replace=False):
    """Union of two patterns; entries present in both are combined by ``monoid``.

    Parameters
    ----------
    A, B : Matrix, MxmExpr or Vector, same shape
    monoid : Monoid, BinaryOp or str, default 'plus'
        Any ``spla.monoid`` or ``spla.binary`` object (``spla.binary.minus``,
        a user-defined ``BinaryOp``), or a monoid's name; entries of one
        operand only are kept as they are.
    mask, out, accum, replace
        As in ``spla.mxm`` (see ``spla.mask``).

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, ewise_add
    >>> A = Matrix.from_dense(np.array([[1.0, 0.0]]))
    >>> B = Matrix.from_dense(np.array([[2.0, 5.0]]))
    >>> ewise_add(A, B).to_dense()
    array([[3., 5.]])
    """
    func = "ewise_add"
    dist = _distributed(A, B, mask, out)
    if dist is not None:
        return dist.dist_ewise_add(A, B, monoid, mask=mask, out=out, accum=accum,
                                   replace=replace)
    if isinstance(monoid, str) and monoid not in _MONOID_NAMES:
        # A name stays a monoid name here; any binary operator goes as an object.
        fail(InvalidValue, func, "monoid", f"a Monoid, a BinaryOp (spla.binary.<name>) or one "
             f"of {sorted(_MONOID_NAMES)}", repr(monoid))
    if isinstance(monoid, str) or isinstance(monoid, Monoid):
        m = as_monoid(func, monoid)
        if _kernel_ready(A, B) and m.code is not None and not m.logical:
            return _written(func, _ewise(func, A, B, True, m.code, False), mask, out, accum,
                            replace)
    from spla.graphblas import ewise_generic
    return ewise_generic(func, A, B, monoid, True, mask, out, accum, replace)


def ewise_mult(A, B, op="times", *, mask=None, out=None, accum=None, replace=False):
    """Intersection of two patterns, values combined by ``op``.

    Parameters
    ----------
    A, B : Matrix, MxmExpr or Vector, same shape
    op : BinaryOp, Monoid or str, default 'times'
        Any ``spla.binary`` object, user-defined ones too, or one of the
        names ``times``, ``plus``, ``min``, ``max``, ``first``, ``second``,
        ``pair``.
    mask, out, accum, replace
        As in ``spla.mxm`` (see ``spla.mask``).

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, ewise_mult
    >>> A = Matrix.from_dense(np.array([[1.0, 3.0]]))
    >>> B = Matrix.from_dense(np.array([[2.0, 0.0]]))
    >>> ewise_mult(A, B).to_dense()
    array([[2., 0.]])
    """
    func = "ewise_mult"
    dist = _distributed(A, B, mask, out)
    if dist is not None:
        return dist.dist_ewise_mult(A, B, op, mask=mask, out=out, accum=accum, replace=replace)
    if isinstance(op, str) and op not in _MUL_OPS:
        # Names are the operators of the kernels; any other operator goes as an object.
        fail(InvalidValue, func, "op", f"a BinaryOp (spla.binary.<name>) or one of "
             f"{sorted(_MUL_OPS)}", repr(op))
    name = op if isinstance(op, str) else getattr(op, "name", None)
    builtin = isinstance(op, str) or op is _BINARY.get(name) or getattr(op, "binop", None) \
        is _BINARY.get(name)
    if builtin and name in _MUL_OPS and _kernel_ready(A, B):
        return _written(func, _ewise(func, A, B, False, _MUL_OPS[name], name == "pair"),
                        mask, out, accum, replace)
    from spla.graphblas import ewise_generic
    return ewise_generic(func, A, B, op, False, mask, out, accum, replace)


def _kernel_ready(A, B):
    return not isinstance(A, Vector) and not isinstance(B, Vector)


def _written(func, T, mask, out, accum, replace):
    """T written through the shared mask/accum step (spla.mask.finish)."""
    if mask is None and out is None and accum is None:
        return T
    from spla.mask import check_write, finish
    mask, out, accum = check_write(func, T.shape, type(T), mask, out, accum, replace)
    return finish(func, T, mask, out, accum, replace)


def reduce_rowwise(A, monoid="plus"):
    """Reduce each row to one value: a dense 1-D array of length ``nrows``.

    Parameters
    ----------
    A : Matrix or MxmExpr
    monoid : Monoid or str, default 'plus'
        ``plus``, ``times``, ``min``, ``max``, ``any``, the logical ``lor``,
        ``land``, ``lxor`` (0/1 results), ``count`` (entries per row,
        int64), or a monoid made by ``Monoid.from_binary`` (a row's entries
        folded in increasing column order, on the host; see there).  An
        empty row gives the monoid's identity (0 for plus, +inf for min,
        -inf for max; the integer extremes for integer values).

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, reduce_rowwise
    >>> A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 0.0]]))
    >>> reduce_rowwise(A)
    array([3., 0.])
    >>> reduce_rowwise(A, "count")
    array([2, 0])
    """
    func = "reduce_rowwise"
    A = as_matrix(func, "A", A)
    if isinstance(monoid, str) and monoid == "count":
        return A.row_degrees()
    m = as_monoid(func, monoid)
    dt = A.dtype or np.dtype(np.int64)
    if m.code is None:
        return _fold_rows(func, A, m, dt)
    vals, hv = kernel_values(A, dt)
    if m.logical and hv:  # lor / land are max / min of 0/1 operands
        vals = (vals != 0).astype(dt)
    K = backend.kernels_for(A.device)
    ident = A.xp.asarray([m.identity_for(dt)], dtype=dt)
    return K.reduce.reduce_rows(A.indptr, vals, hv, m.code, ident, A.xp.ones(1, dt))


def _fold_rows(func, A, m, dt):
    """Each row folded by a monoid without a kernel code (``lxor``, user
    monoids) in increasing column order, on the host: a dense array of dt."""
    ptr = backend.to_host(A.indptr)
    vals = np.ones(A.nnz, dt) if A.values is None else backend.to_host(A.values)
    rows = np.flatnonzero(np.diff(ptr))
    out = np.full(A.nrows, m.identity_for(dt), dt)
    out[rows] = m.reduceat(vals, ptr[rows], func=func)
    return A.xp.asarray(out)


def normalize_rows(A):
    """Scale each row to sum 1 (rows summing to 0 are left as they are).

    Integer and structural matrices give float64 values; float32 stays float32.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, normalize_rows
    >>> normalize_rows(Matrix.from_dense(np.array([[1.0, 3.0], [0.0, 0.0]]))).to_dense()
    array([[0.25, 0.75],
           [0.  , 0.  ]])
    """
    A = as_matrix("normalize_rows", "A", A)
    xp = A.xp
    if A.values is None or A.dtype.kind in "iu":
        A = A.astype(np.float64)
    sums = reduce_rowwise(A, "plus")
    safe = xp.where(sums == 0, 1, sums).astype(A.dtype)
    return Matrix._new(A.indptr, A.indices, A.values / safe[row_ids(A.indptr, A.nnz)], A.shape)


_COLUMN_UFUNCS = {"plus": np.add, "times": np.multiply, "min": np.minimum, "max": np.maximum}


def reduce_columnwise(A, monoid="plus", init=None):
    """Reduce each column to one value, visiting rows in ascending order.

    Parameters
    ----------
    A : Matrix or MxmExpr
    monoid : Monoid or str, default 'plus'
        ``plus``, ``times``, ``min``, ``max``, or a monoid made by
        ``Monoid.from_binary`` (a column's entries folded in increasing row
        order after ``init``, on the host; exact continuation then holds up
        to the operator's rounding, see there).
    init : 1-D array of length ``ncols``, optional
        Running values to continue from (e.g. the result over the rows
        above, computed elsewhere); default: the monoid's identity.  Because
        rows are visited in order, reducing rows ``0:k`` and then continuing
        with rows ``k:n`` from that result gives exactly the values of one
        pass over all rows (on the CPU) — what the distributed column norms
        of FastGCN rely on.

    Returns
    -------
    1-D array of length ``ncols`` (the values' dtype; float64 for a
    structural matrix).

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, reduce_columnwise
    >>> A = Matrix.from_dense(np.array([[1.0, 2.0], [3.0, 0.0]]))
    >>> reduce_columnwise(A)
    array([4., 2.])
    >>> reduce_columnwise(A[[1], :], init=reduce_columnwise(A[[0], :]))
    array([4., 2.])
    """
    func = "reduce_columnwise"
    A = as_matrix(func, "A", A)
    user = isinstance(monoid, Monoid) and monoid.op is not None
    if isinstance(monoid, Monoid) and not user:
        monoid = monoid.name
    if not user and (not isinstance(monoid, str) or monoid not in _COLUMN_UFUNCS):
        fail(InvalidValue, func, "monoid", f"a user Monoid (Monoid.from_binary) or one of "
             f"{sorted(_COLUMN_UFUNCS)}", describe(monoid))
    xp = A.xp
    vals = _values_or_ones(A)
    m = monoid if user else as_monoid(func, monoid)
    if init is None:
        acc = xp.full(A.ncols, m.identity_for(vals.dtype), vals.dtype)
    else:
        acc = xp.array(init, dtype=vals.dtype)
        if acc.shape != (A.ncols,):
            fail(DimensionMismatch, func, "init", f"a 1-D array of length {A.ncols}", describe(acc))
    if user:
        return xp.asarray(_fold_columns(func, A, m, backend.to_host(vals),
                                        None if init is None else backend.to_host(acc)))
    if xp is np:
        # ufunc.at applies the entries in array order: rows ascending per column.
        _COLUMN_UFUNCS[monoid].at(acc, A.indices, vals)
    else:  # GPU: order of atomics is not fixed; use a transpose and a row reduction.
        from spla.structure import transpose
        part = reduce_rowwise(transpose(A), monoid)
        acc = _COLUMN_UFUNCS[monoid](acc, part)
    return acc


def _fold_columns(func, A, m, vals, init):
    """Each column folded by a user monoid in increasing row order (after
    ``init`` where given), on the host."""
    idx = backend.to_host(A.indices)
    order = np.argsort(idx, kind="stable")  # rows stay ascending within a column
    counts = np.bincount(idx, minlength=A.ncols)
    cols = np.flatnonzero(counts)
    part = m.reduceat(vals[order], (np.cumsum(counts) - counts)[cols], func=func)
    acc = np.full(A.ncols, m.identity_for(vals.dtype), vals.dtype) if init is None else init
    if init is not None and cols.size:
        with np.errstate(all="ignore"):  # the operator's arithmetic, as the user wrote it
            part = m.binop(init[cols], part.astype(vals.dtype, copy=False), func=func)
    with np.errstate(all="ignore"):
        acc[cols] = part
    return acc
