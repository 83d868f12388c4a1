"""Operators that rearrange entries: transpose, stacking, column compaction.

They are written with array-module calls (numpy or cupy), so one body
serves both devices; each is a handful of scans, gathers and a stable sort.
"""

import numpy as np

from kernels.common import KernelLimitError
from spla import backend
from spla.checks import describe, fail, index_dtype
from spla.util import indptr_from_counts, row_ids
from spla.exceptions import DimensionMismatch, InvalidValue
from spla.arrays import narrow_indices
from spla.matrix import HOST_INDPTR, Matrix
from spla.mxm import as_matrix


def transpose(A):
    """The transpose ``A.T`` as a new canonical matrix.

    On the CPU a counting sort (the kernel that ``spla.mxm`` and
    ``spla.vxm`` transpose with); a pattern of Aᵀ already cached on A is
    reused, and the pattern made is cached on A (the pattern's arrays are
    shared with the result: a structural A keeps no more than the result
    holds, a valued one its entry order too).  The result carries its own
    transpose's pattern, which is A's
    (its arrays, shared), in the cache that the masked ``mxm`` and the pull
    of ``vxm`` read: ``mxm(L, L.T, semiring.plus_pair, mask=L.S)`` transposes
    once, not twice.  For a valued matrix the cache also holds the entry
    order (4 bytes per entry, 8 past 2**31 entries), so products that need
    the transposed values do not sort again either.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, transpose
    >>> transpose(Matrix.from_dense(np.array([[0.0, 1.0], [2.0, 0.0]]))).to_dense()
    array([[0., 2.],
           [1., 0.]])
    """
    A = as_matrix("transpose", "A", A)
    xp = A.xp
    cached = A._cache.get("transpose_pattern")
    if cached is not None and (A.values is None or cached[2] is not None):
        ptr, rows, order = cached  # entry t of Aᵀ is entry order[t] of A
    elif A.device == "cpu":
        rows = np.empty(A.nnz, index_dtype(max(A.nrows - 1, 0)))
        ptr, order = backend.kernels_for("cpu").spmm.transpose_pattern(
            A.indptr, A.indices, A.ncols, rows)
        # Cached on A too (``spla.product.transpose_pattern``'s format), as
        # A is immutable: the next ``A.T`` (a loop that writes ``L.T`` in
        # every call) and a product with B = A read it without sorting again.
        A._cache["transpose_pattern"] = (ptr, rows, None if A.values is None else order)
    else:
        # A stable sort by column keeps rows ascending inside each new row.
        order = xp.argsort(A.indices, kind="stable")
        rows = row_ids(A.indptr, A.nnz)[order]
        counts = xp.bincount(A.indices, minlength=A.ncols) if A.nnz else \
            xp.zeros(A.ncols, np.int64)
        ptr = indptr_from_counts(counts)
    vals = None if A.values is None else A.values[order]
    T = Matrix._new(ptr, narrow_indices(rows, A.nrows), vals, (A.ncols, A.nrows))
    T._cache["transpose_pattern"] = _pattern_of_source(A, order)
    return T


def _pattern_of_source(A, order):
    """(indptr, indices, order) of (Aᵀ)ᵀ = A, in ``spla.product.transpose_pattern``'s
    format and dtypes: entry t of A is entry inverse(order)[t] of Aᵀ; no
    order for a structural A (no call needs one)."""
    xp = A.xp
    rows = A.indices.astype(index_dtype(max(A.ncols - 1, 0)), copy=False)
    inverse = None
    if A.values is not None:
        dt = index_dtype(max(A.nnz - 1, 0))
        inverse = xp.empty(A.nnz, dt)
        inverse[order] = xp.arange(A.nnz, dtype=dt)
    return A.indptr.astype(np.int64, copy=False), rows, inverse


def _matrices(func, mats):
    if isinstance(mats, Matrix) or not hasattr(mats, "__len__") or len(mats) == 0:
        fail(InvalidValue, func, "mats", "a non-empty sequence of matrices", describe(mats))
    mats = [as_matrix(func, f"mats[{i}]", m) for i, m in enumerate(mats)]
    backend.same_device(func, *mats)
    structural = [m.values is None for m in mats]
    if any(structural) and not all(structural):
        fail(InvalidValue, func, "mats", "all structural or all valued matrices",
             "a mix (use .astype(dtype) on the structural ones)")
    return mats


def _concat(mats, col_offsets, shape):
    xp = mats[0].xp
    nnz_off = np.cumsum([0] + [m.nnz for m in mats])
    ptr = xp.concatenate([mats[0].indptr[:1]] + [m.indptr[1:] + int(o)
                                                 for m, o in zip(mats, nnz_off)])
    idx = xp.concatenate([m.indices.astype(np.int64) + int(c) for m, c in zip(mats, col_offsets)])
    vals = None
    if mats[0].values is not None:
        dt = np.result_type(*[m.dtype for m in mats])
        vals = xp.concatenate([m.values.astype(dt, copy=False) for m in mats])
    return Matrix._new(ptr.astype(np.int64), narrow_indices(idx, shape[1]), vals, shape)


def vstack(mats):
    """Stack matrices with equal column counts on top of each other.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, vstack
    >>> vstack([Matrix.from_dense(np.eye(2)), Matrix.from_dense(np.ones((1, 2)))]).shape
    (3, 2)
    """
    func = "vstack"
    mats = _matrices(func, mats)
    ncols = mats[0].ncols
    for i, m in enumerate(mats):
        if m.ncols != ncols:
            fail(DimensionMismatch, func, f"mats[{i}]", f"{ncols} columns", f"shape {m.shape}")
    return _concat(mats, [0] * len(mats), (sum(m.nrows for m in mats), ncols))


def block_diag(mats):
    """The block-diagonal matrix with ``mats`` on its diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, block_diag
    >>> block_diag([Matrix.from_dense(np.ones((1, 2))), Matrix.from_dense(np.ones((1, 1)))]).to_dense()
    array([[1., 1., 0.],
           [0., 0., 1.]])
    """
    mats = _matrices("block_diag", mats)
    offs = np.cumsum([0] + [m.ncols for m in mats])
    shape = (sum(m.nrows for m in mats), int(offs[-1]))
    return _concat(mats, offs[:-1], shape)


def compact_columns(A):
    """Drop empty columns: ``(matrix, kept column ids)``.

    Column ``t`` of the result is column ``kept[t]`` of ``A``; ``kept`` is
    ascending.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, compact_columns
    >>> M, kept = compact_columns(Matrix.from_dense(np.array([[0.0, 5.0, 0.0, 6.0]])))
    >>> M.to_dense(), kept
    (array([[5., 6.]]), array([1, 3]))
    """
    A = as_matrix("compact_columns", "A", A)
    xp = A.xp
    if A.ncols <= 4 * A.nnz:
        # Few empty columns: a mask over the columns is cheaper than a sort.
        used = xp.zeros(A.ncols, bool)
        used[A.indices] = True
        kept = xp.flatnonzero(used).astype(np.int64)
        new_id = xp.cumsum(used, dtype=np.int64) - 1
        idx = new_id[A.indices] if A.nnz else xp.zeros(0, np.int64)
    else:
        # Mostly empty columns (2**40 of them, say): sort the entries'
        # columns instead of allocating anything of the column count.
        kept, idx = xp.unique(A.indices.astype(np.int64), return_inverse=True)
        idx = idx.reshape(-1).astype(np.int64)
    return (Matrix._new(A.indptr, narrow_indices(idx, kept.size), A.values,
                        (A.nrows, int(kept.size))), kept)


def _group_ptr(func, arg, ptr, total):
    """A CSR-like group pointer, as a host int64 array: starts at 0,
    non-decreasing, ends at total.

    Checked on the host (a pointer has one entry per group): a device
    pointer costs one read instead of one per test, a host one none.  The
    kernels take the host copy (its ends without a read) and upload it.
    """
    from spla.exceptions import InvalidCSR
    if not hasattr(ptr, "dtype"):
        ptr = np.asarray(ptr)
    if ptr.ndim != 1 or ptr.size < 1 or ptr.dtype.kind not in "iu":
        fail(InvalidValue, func, arg, "a 1-D integer array of group offsets", describe(ptr))
    host = np.asarray(backend.to_host(ptr), np.int64)
    if host.size <= _SHORT_POINTER:
        # A few groups (one minibatch per call): Python's comparisons on a
        # list cost less than numpy's per-call overhead of three operations.
        offsets = host.tolist()
        lo, hi = offsets[0], offsets[-1]
        decreasing = any(a > b for a, b in zip(offsets, offsets[1:]))
    else:
        lo, hi = int(host[0]), int(host[-1])
        decreasing = bool((host[1:] < host[:-1]).any())
    if lo != 0 or hi != total:
        fail(InvalidCSR, func, arg, f"offsets from 0 to {total}", f"from {lo} to {hi}")
    if decreasing:
        fail(InvalidCSR, func, arg, "non-decreasing offsets", "a decreasing step")
    return host


#: Group pointers up to this length are checked in plain Python.
_SHORT_POINTER = 32


def compact_columns_blockwise(A, row_ptr, first=None, first_ptr=None, *, check=True):
    """Give each group of rows its own compacted columns, block-diagonally.

    Rows ``row_ptr[g]:row_ptr[g+1]`` form group ``g`` (a minibatch of a
    bulk).  Each group keeps the columns its rows use, led by its ``first``
    columns (in the order given, kept even if unused), then the others in
    order of first appearance.  This is the frontier deduplication and
    relabelling of node-wise samplers, done by one parallel kernel.

    Parameters
    ----------
    A : Matrix or MxmExpr
    row_ptr : array of int, shape (n_groups + 1,)
    first, first_ptr : array of int, optional
        Leading columns of each group: ``first[first_ptr[g]:first_ptr[g+1]]``,
        distinct within a group.
    check : bool, default True
        Check ``first`` (in range, distinct within each group).  Callers
        whose leading columns are a frontier that spla made pass False: on
        a GPU each check is a blocking read.  Host pointers (numpy) cost no
        read either way.

    Returns
    -------
    M : Matrix
        Shape ``(A.nrows, kept_ptr[-1])``; block ``g`` occupies rows of group
        ``g`` and columns ``kept_ptr[g]:kept_ptr[g+1]``.  Values are A's.
    kept : int64 array
        Original column id of every column of M.
    kept_ptr : int64 numpy array, shape (n_groups + 1,)
        On the host whatever the device: its sizes are read back anyway,
        and every caller needs them there.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, compact_columns_blockwise
    >>> S = Matrix.from_coo([0, 0, 1, 2], [7, 3, 3, 9], shape=(3, 10))
    >>> M, kept, kept_ptr = compact_columns_blockwise(S, [0, 2, 3], first=[5, 3, 1], first_ptr=[0, 2, 3])
    >>> kept.tolist(), kept_ptr.tolist()
    ([5, 3, 7, 1, 9], [0, 3, 5])
    >>> M.to_dense().astype(int)
    array([[0, 1, 1, 0, 0],
           [0, 1, 0, 0, 0],
           [0, 0, 0, 0, 1]])
    """
    from spla.checks import as_index_array
    from spla.exceptions import InvalidCSR
    func = "compact_columns_blockwise"
    A = as_matrix(func, "A", A)
    xp = A.xp
    row_ptr = _group_ptr(func, "row_ptr", row_ptr, A.nrows)
    n_groups = row_ptr.size - 1
    if first is None:
        first = xp.zeros(0, np.int64)
        first_ptr = np.zeros(n_groups + 1, np.int64)
    else:
        first = (xp.asarray(as_index_array(func, "first", first, A.ncols)) if check
                 else xp.asarray(first).astype(np.int64, copy=False))
        if first_ptr is None:
            fail(InvalidValue, func, "first_ptr", "group offsets when 'first' is given", None)
        first_ptr = _group_ptr(func, "first_ptr", first_ptr, first.size)
        if first_ptr.size != row_ptr.size:
            fail(DimensionMismatch, func, "first_ptr", f"{n_groups + 1} offsets",
                 f"{first_ptr.size}")
    K = backend.kernels_for(A.device)
    try:
        out_idx, perm, kept, kept_ptr, first_dup = K.groups.compact_groups(
            A.indptr, A.indices, row_ptr, first, first_ptr, A.ncols,
            with_perm=A.values is not None, check=check)
    except KernelLimitError as e:
        fail(InvalidValue, func, e.arg, e.expected, e.got)
    if first_dup >= 0:
        fail(InvalidCSR, func, "first", "distinct leading columns within each group",
             f"column {int(first[first_dup])} repeated at position {first_dup}")
    vals = None if A.values is None else K.extract.take(A.values, perm)
    ncols = int(kept_ptr[-1])
    return (Matrix._new(A.indptr, narrow_indices(out_idx, ncols), vals, (A.nrows, ncols)),
            kept, kept_ptr)


def split_blocks(M, row_ptr, col_ptr, *, check=True):
    """The diagonal blocks of a block-diagonal matrix, as a list of matrices.

    Block ``g`` is ``M[row_ptr[g]:row_ptr[g+1], col_ptr[g]:col_ptr[g+1]]``;
    entries outside the diagonal blocks are not allowed (they would be lost).
    The blocks share M's index and value arrays where they can (views).
    ``check=False`` skips the O(nnz) check that M is block-diagonal, for
    matrices built block-diagonal by ``compact_columns_blockwise`` or
    ``extract_blockwise``.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, block_diag, split_blocks
    >>> M = block_diag([Matrix.from_dense(np.ones((1, 2))), Matrix.from_dense(np.eye(2))])
    >>> [b.shape for b in split_blocks(M, [0, 1, 3], [0, 2, 4])]
    [(1, 2), (2, 2)]
    """
    func = "split_blocks"
    M = as_matrix(func, "M", M)
    xp = M.xp
    rp = _group_ptr(func, "row_ptr", row_ptr, M.nrows)
    cp = _group_ptr(func, "col_ptr", col_ptr, M.ncols)
    if rp.size != cp.size:
        fail(DimensionMismatch, func, "col_ptr", f"{rp.size} offsets", f"{cp.size}")
    if check and M.nnz:
        row_ptr, col_ptr = xp.asarray(rp), xp.asarray(cp)
        group_of_row = xp.searchsorted(row_ptr, xp.arange(M.nrows), side="right") - 1
        g = group_of_row[row_ids(M.indptr, M.nnz)]
        j = M.indices.astype(np.int64)
        if bool(((j < col_ptr[g]) | (j >= col_ptr[g + 1])).any()):
            fail(InvalidValue, func, "M", "a block-diagonal matrix for these offsets",
                 "entries outside the diagonal blocks")
    rp, cp = rp.tolist(), cp.tolist()
    ptr_h = M._cache.get(HOST_INDPTR)
    if ptr_h is None:
        ptr_h = backend.to_host(M.indptr)
    blocks = []
    for gi in range(len(rp) - 1):
        r0, r1, c0, c1 = rp[gi], rp[gi + 1], cp[gi], cp[gi + 1]
        e0, e1 = int(ptr_h[r0]), int(ptr_h[r1])
        ptr = M.indptr[r0:r1 + 1] - e0
        idx = M.indices[e0:e1] - c0 if c0 else M.indices[e0:e1]
        vals = None if M.values is None else M.values[e0:e1]
        blocks.append(Matrix._new(ptr, idx, vals, (r1 - r0, c1 - c0)))
    return blocks
