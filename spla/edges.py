"""Questions about a matrix's stored entries: where they sit, and whether the pattern is symmetric.

A graph's edges are the stored entries of its adjacency matrix, in storage
order: entry ``(v, u)`` of a canonical CSR matrix sits at position
``indptr[v] + (rank of u among row v's columns)``.  These positions are the
edge ids that PyG calls ``e_id`` (an index into per-edge feature arrays laid
out in the same order).

Both functions run the ``positions`` kernels of the matrix's backend
(``spla.backend.kernels_for``: ``kernels.cpu.positions`` or its CUDA twin).
"""

import numpy as np

from spla import backend
from spla.checks import as_index_array, describe, fail
from spla.exceptions import DeviceMismatch, DimensionMismatch, DTypeError
from spla.matrix import Matrix


def _as_matrix(func, A):
    if not isinstance(A, Matrix):
        fail(DTypeError, func, "A", "a spla.Matrix", describe(A))
    return A


def entry_positions(A, rows, cols):
    """Positions of the entries ``(rows[t], cols[t])`` among A's stored entries.

    Parameters
    ----------
    A : Matrix
    rows, cols : 1-D int arrays of equal length
        Coordinates to look up, in ``[0, nrows)`` and ``[0, ncols)``; on A's
        device (numpy for a CPU matrix, cupy for a GPU one).

    Returns
    -------
    int64 array
        ``pos[t]`` is the position of entry ``(rows[t], cols[t])`` in
        ``A.indices`` (and ``A.values``), or -1 where A stores no such entry.

    Notes
    -----
    One binary search per query, bounded to the query's row: the cost is
    ``O(len(rows) * log(max degree))``, whatever the size of A.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, entry_positions
    >>> A = Matrix.from_coo([0, 0, 2], [1, 2, 0], shape=(3, 3))
    >>> entry_positions(A, np.array([2, 0, 1]), np.array([0, 2, 1]))
    array([ 2,  1, -1])
    """
    func = "entry_positions"
    A = _as_matrix(func, A)
    rows = as_index_array(func, "rows", rows, A.nrows)
    cols = as_index_array(func, "cols", cols, A.ncols)
    if rows.size != cols.size:
        fail(DimensionMismatch, func, "cols", f"an array of length {rows.size} (as rows)",
             describe(cols))
    for arg, a in (("rows", rows), ("cols", cols)):
        if backend.device_of(a) != A.device:
            fail(DeviceMismatch, func, arg, f"an array on A's device ({A.device})",
                 f"an array on {backend.device_of(a)}")
    return backend.kernels_for(A.device).positions.find_entries(A.indptr, A.indices, rows, cols)


def find_entries_xp(indptr, indices, rows, cols):
    """``entry_positions`` in array-module code, without a kernel (numpy or cupy arrays).

    A reference for the kernels, written with whole-array operations only.

    All queries advance one bisection step together; the number of steps is
    fixed by the largest queried row, so nothing waits on the device between
    steps.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.edges import find_entries_xp
    >>> find_entries_xp(np.array([0, 2, 2, 3]), np.array([1, 2, 0]),
    ...                 np.array([0, 2, 1]), np.array([2, 0, 1]))
    array([ 1,  2, -1])
    """
    xp = backend.xp_of(backend.device_of(indptr))
    if rows.size == 0:
        return xp.zeros(0, np.int64)
    lo = indptr[rows].astype(np.int64)
    end = indptr[rows + 1].astype(np.int64)
    hi = end.copy()
    width = int((hi - lo).max())
    steps = int(width).bit_length()
    cols = cols.astype(np.int64)
    last = max(int(indices.size) - 1, 0)
    for _ in range(steps):
        mid = (lo + hi) >> 1
        active = lo < hi
        below = active & (indices[xp.minimum(mid, last)].astype(np.int64) < cols)
        lo = xp.where(below, mid + 1, lo)
        hi = xp.where(active & ~below, mid, hi)
    if indices.size == 0:
        return xp.full(rows.size, -1, np.int64)
    found = (lo < end) & (indices[xp.minimum(lo, last)].astype(np.int64) == cols)
    return xp.where(found, lo, -1).astype(np.int64)


def is_symmetric_pattern(A):
    """Whether A's pattern equals its transpose's (values are not compared).

    The answer is cached on A (matrices are immutable), so asking again is
    free.

    Parameters
    ----------
    A : Matrix

    Returns
    -------
    bool
        False for a non-square matrix.

    Notes
    -----
    On the CPU the two patterns are compared through two independent 64-bit
    fingerprints (sums of hashed coordinates, taken in one sequential pass
    over the indices): a symmetric pattern always passes, and a
    non-symmetric one passes only if both 64-bit sums of its unmatched
    entries' hashes cancel, about one chance in 2**128.  The fingerprints
    read the indices once, in order, where an exact comparison walks the
    transpose and touches a random row per entry (several times slower on
    a large graph, see docs/design.rst).  The GPU computes the same
    fingerprints.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, is_symmetric_pattern
    >>> is_symmetric_pattern(Matrix.from_coo([0, 1], [1, 0], [1.0, 5.0]))
    True
    >>> is_symmetric_pattern(Matrix.from_coo([0], [1], shape=(2, 2)))
    False
    """
    A = _as_matrix("is_symmetric_pattern", A)
    # Matrices are immutable: a cached answer can never go stale.  Two
    # threads asking at once may both compute it; they store the same bool.
    cached = A._cache.get("symmetric_pattern")
    if cached is None:
        cached = _symmetric(A)
        A._cache["symmetric_pattern"] = cached
    return cached


def _symmetric(A):
    if A.nrows != A.ncols:
        return False
    if A.nnz == 0:
        return True
    K = backend.kernels_for(A.device).positions
    s1, t1, s2, t2 = K.pattern_fingerprints(A.indptr, A.indices)
    return bool(s1 == t1 and s2 == t2)


__all__ = ["entry_positions", "is_symmetric_pattern"]
