"""Row-wise inverse-transform sampling: ``sample_rows``.

Given a lazy ``Q @ A`` whose Q selects at most one row of A per output row
(GraphSAGE's case), ``sample_rows`` samples straight from A's rows (*fused*):
uniform rows by direct index, weighted rows by a search in A's per-row prefix
sums, computed once per matrix and cached on it with a guide table that
starts each search about one entry from its answer (on the CPU; the GPU
bisects).  Any other input is
materialised and sampled row by row.  Both paths return the same picks for
the same seed (exactly, when Q's values are 1 or powers of two; a general
scale changes floating-point rounding of the prefix sums).

Cached prefix sums and guides cost 12 bytes per entry of A (8 on the GPU)
plus 9 bytes per row; they are kept in ``A._cache`` and die with A (matrices
are immutable).
"""

import numpy as np

from spla import backend
from spla.checks import as_index_array, as_int, as_u64, check_weights, describe, fail
from spla.util import row_ids as _row_of_entry
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.matrix import HOST_INDPTR, Matrix
from spla.mxm import MxmExpr, as_matrix
from kernels import semiring_ops as ops



def _as_u64(func, arg, x):
    return np.uint64(as_u64(func, arg, x))


#: picks per row at or above this mean "all entries" (no row holds 2**62)
K_ALL = 2 ** 62
#: A sample of at most this many rows brings its whole row pointer back in
#: the one read that sizes it (a few KB), kept on the result
#: (``HOST_INDPTR``): a layer-wise sampler's next step reads it from there.
HOST_PTR_ROWS = 4096


def _as_k(func, k, nrows, xp):
    """(k_scalar, k_array): a scalar k >= 1, or one k >= 0 per row."""
    if np.ndim(k) == 0 and not hasattr(k, "shape") or (hasattr(k, "shape") and k.shape == ()):
        if isinstance(k, (float, np.floating)) and float(k).is_integer():
            fail(InvalidValue, func, "k", "an integer >= 1 (not a float)", repr(k))
        return min(as_int(func, "k", k, minimum=1), K_ALL), xp.empty(0, np.int64)
    _, arr = (xp, xp.asarray(k))
    if arr.ndim != 1 or arr.size != nrows:
        fail(DimensionMismatch, func, "k", f"a scalar or a 1-D array of length {nrows}",
             describe(arr))
    if arr.dtype.kind not in "iu":
        fail(DTypeError, func, "k", "integers", describe(arr))
    if arr.size and int(arr.min()) < 0:
        fail(InvalidValue, func, "k", "per-row counts >= 0", int(arr.min()))
    # A count above any row's size means "every entry" (or is refused with
    # replacement by _check_pick_budget): clip before the int64 kernels see it.
    return 0, xp.minimum(arr, K_ALL).astype(np.int64)


def _prefix_cache(A):
    """A's per-row prefix sums, search guides, positive counts and modes (cached on A)."""
    cached = A._cache.get("its_prefix")
    if cached is None:
        check_weights("sample_rows", "P (the values of A in Q @ A)", A.values)
        K = backend.kernels_for(A.device)
        prefix, positives, modes = K.sample.row_prefix(A.indptr, A.values)
        guide = K.sample.row_guide(A.indptr, prefix, positives, modes)
        cached = (prefix, guide, positives, modes)
        A._cache["its_prefix"] = cached
    return cached


def draw_arrays(A, weighted):
    """What a fused sampler reads of A: ``(values, prefix, guide, positives, modes)``.

    For weighted draws, A's values and its cached per-row prefix sums,
    guides, positive counts and modes (``_prefix_cache``); for uniform
    draws, empty arrays (the kernels then read only A's row pointer and
    indices).
    """
    if weighted:
        prefix, guide, positives, modes = _prefix_cache(A)
        return A.values, prefix, guide, positives, modes
    xp = A.xp
    return (xp.empty(0, np.float64), xp.empty(0, np.float64), xp.empty(0, np.uint32),
            xp.empty(0, np.int64), xp.empty(0, np.uint8))


def sample_rows(P, k, *, seed, stream=0, replace=False, row_ids=None,
                return_counts=False, check=True, values=True):
    """Draw ``k`` entries from each row of ``P`` with probability ∝ value.

    Parameters
    ----------
    P : Matrix or MxmExpr
        Non-negative, finite weights (need not be normalised); a structural
        matrix samples uniformly.  A lazy ``Q @ A`` whose Q has at most one
        entry per row is sampled without forming the product.
    k : int or array of int
        Picks per row: a scalar >= 1, or one count >= 0 per row.
    seed : int
        User seed, ``0 <= seed < 2**64``.
    stream : int, default 0
        A second key (epoch, layer, ...), ``0 <= stream < 2**64``.
    replace : bool, default False
        Without replacement, picks in a row are distinct, a row with at most
        ``k`` positive entries keeps them all, and the law is that of
        sequential sampling without replacement.  With replacement, each
        pick is ``j`` with probability ``w_j / sum(w)``; repeats are folded
        into one entry (see ``return_counts``).
    row_ids : array of int, optional
        Global id of every row (default: its position).  A row's picks depend
        only on ``(seed, stream, row id)`` and its weights: never on the
        other rows, the thread count or the backend.
    return_counts : bool, default False
        Also return, per output entry, how many draws picked it (all ones
        without replacement).
    check : bool, default True
        Check that a materialised P's weights are finite and non-negative.
        Callers whose P spla computed from checked weights, and cannot have
        overflowed, pass False: on a GPU the check is a blocking read.
        ``row_ids`` on the host (numpy) are checked without a read.
    values : bool, default True
        False returns the picks' structure only (a structural matrix): for
        callers that need which entries were drawn, not their weights, it
        saves gathering them.

    Returns
    -------
    Matrix or (Matrix, ndarray)
        Same shape as P, holding the picked entries with their values
        (structural if P is).

    Raises
    ------
    InvalidValue
        ``k`` < 1 (or a per-row count < 0), a negative, NaN or infinite
        weight, a seed or stream out of range.
    DimensionMismatch
        ``k`` or ``row_ids`` of the wrong length.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, sample_rows
    >>> A = Matrix.from_dense(np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 5.0, 0.0]]))
    >>> S = sample_rows(A, 2, seed=7)
    >>> S.row_degrees()
    array([2, 1])
    >>> S.isequal(sample_rows(A, 2, seed=7))
    True
    """
    func = "sample_rows"
    if not isinstance(P, (Matrix, MxmExpr)):
        fail(DTypeError, func, "P", "a spla.Matrix or a lazy Q @ A", describe(P))
    nrows = P.shape[0]
    xp = backend.xp_of(P.device)
    seed = _as_u64(func, "seed", seed)
    stream = _as_u64(func, "stream", stream)
    k_scalar, k_arr = _as_k(func, k, nrows, xp)
    if row_ids is None:
        rid = xp.empty(0, np.int64)
    else:
        rid = as_index_array(func, "row_ids", row_ids)
        if rid.size != nrows:
            fail(DimensionMismatch, func, "row_ids", f"a 1-D array of length {nrows}",
                 describe(rid))
        rid = xp.asarray(rid)
    replace = bool(replace)
    K = backend.kernels_for(P.device)
    fused = isinstance(P, MxmExpr) and P.semiring.scales_rows and P.is_row_selection()
    _check_pick_budget(func, P, fused, k_scalar, k_arr, replace, k)
    host_ptr = None
    if fused:
        ptr, pos, indices, values_of, host_ptr = _sample_fused(P, K, k_scalar, k_arr, rid,
                                                               seed, stream, replace)
    else:
        M = as_matrix(func, "P", P)
        if check:
            check_weights(func, "P", M.values)
        vals = M.values if M.values is not None else xp.empty(0, np.float64)
        args = (M.indptr, vals, M.values is not None, k_scalar, k_arr, rid, seed, stream,
                replace)
        if nrows <= HOST_PTR_ROWS and not replace:
            ptr, pos, host_ptr = K.sample.sample_csr_with_host_ptr(*args)
        else:
            ptr, pos = K.sample.sample_csr(*args)
        indices = M.indices

        def values_of(ptr, pos):
            return None if M.values is None else K.extract.take(M.values, pos)
    counts = None
    if replace:
        ptr, pos, counts = K.sample.dedup_sorted_rows(ptr, pos)
    S = Matrix._new(ptr, K.extract.take(indices, pos),
                    values_of(ptr, pos) if values else None, P.shape)
    if host_ptr is not None and S.device != backend.CPU:
        S._cache[HOST_INDPTR] = host_ptr
    if return_counts:
        return S, counts if counts is not None else xp.ones(S.nnz, np.int64)
    return S


def _entries_upper_bound(P, fused):
    """Entries of P (of the product, for a fused row selection) without forming it."""
    if not fused:
        return as_matrix("sample_rows", "P", P).nnz if isinstance(P, Matrix) else None
    Q, A = P.a, P.b
    return int((A.indptr[Q.indices + 1] - A.indptr[Q.indices]).sum()) if Q.nnz else 0


def _memory_limit(device):
    """Bytes this device can hold at most (physical memory, or the GPU's)."""
    if device == "cuda":
        return int(backend.xp_of(device).cuda.Device().mem_info[1])
    import os
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # no sysconf: only the index bound
        return 2 ** 62


#: bytes per drawn pick held at once by the kernels (position, column, value,
#: and with replacement the draw counts); a bound, not an exact figure
_BYTES_PER_PICK = 32


def _check_pick_budget(func, P, fused, k_scalar, k_arr, replace, k_given):
    """Refuse, naming ``k``, a request whose picks cannot be indexed or held.

    Without replacement a row yields at most its entry count, so huge ``k``
    (all neighbours) is fine; with replacement every non-empty row draws
    ``k`` picks before repeats are folded, whatever its degree.
    """
    nrows = P.shape[0]
    shown = "per row" if k_arr.size else k_given
    if k_arr.size:
        total = int(k_arr.astype(np.float64).sum())
        if total < 2 ** 53:
            total = int(k_arr.sum())
    else:
        total = k_scalar * nrows
    limit = _memory_limit(P.device)
    if total < 2 ** 62 and total * _BYTES_PER_PICK <= limit:
        return  # the common case: no need for the (O(rows)) entry count
    if not replace:
        bound = _entries_upper_bound(P, fused)
        if bound is not None:
            total = min(total, bound)
    if total >= 2 ** 62:
        fail(InvalidValue, func, "k", "at most 2**62 picks in total (64-bit positions)",
             f"k = {shown} for {nrows} rows ({total} picks)")
    if total * _BYTES_PER_PICK > limit:
        fail(InvalidValue, func, "k",
             f"picks that fit in this device's memory ({limit / 2**30:.1f} GiB)",
             f"k = {shown} for {nrows} rows: {total} picks, about "
             f"{total * _BYTES_PER_PICK / 2**30:.1f} GiB"
             + (" (with replacement every row draws k picks)" if replace else ""))


def _sample_fused(expr, K, k_scalar, k_arr, rid, seed, stream, replace):
    """Sample ``Q @ A`` from A's rows: (ptr, positions in A, A.indices, values_of,
    a host copy of ptr or None)."""
    Q, A = expr.a, expr.b
    xp = A.xp
    func = "sample_rows"
    q_scale = xp.empty(0, np.float64)
    if Q.values is not None:
        check_weights(func, "P (the values of Q in Q @ A)", Q.values)
        if expr.semiring.mul_code == ops.MUL_TIMES:
            q_scale = Q.values.astype(np.float64)
    weighted = A.values is not None and expr.semiring.mul_code == ops.MUL_TIMES
    a_vals, prefix, guide, positives, modes = draw_arrays(A, weighted)
    args = (Q.indptr, Q.indices, q_scale, A.indptr, a_vals, weighted, prefix, guide,
            positives, modes, k_scalar, k_arr, rid, seed, stream, replace)
    host_ptr = None
    if Q.nrows <= HOST_PTR_ROWS and not replace:
        ptr, pos, host_ptr = K.sample.sample_gather_with_host_ptr(*args)
    else:
        ptr, pos = K.sample.sample_gather(*args)
    out_dt = expr.dtype

    def values_of(ptr, pos):
        # The values the materialised product holds: mul(q, a) in the output
        # dtype, computed as the SpGEMM kernel computes them.
        if out_dt is None:
            return None
        if expr.semiring.mul_code == ops.MUL_PAIR:
            return xp.ones(pos.size, out_dt)
        q = (xp.ones(pos.size, out_dt) if Q.values is None
             else Q.values[Q.indptr[_row_of_entry(ptr)]].astype(out_dt))
        a = (xp.ones(pos.size, out_dt) if A.values is None
             else K.extract.take(A.values, pos).astype(out_dt, copy=False))
        return q * a

    return ptr, pos, A.indices, values_of, host_ptr
