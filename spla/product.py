"""How a product over any semiring reaches the kernels (internal to spla).

``prepare`` turns the operands of a semiring product into kernel inputs:
positional operators (``firsti``, ``secondj``, ...) become ``first`` /
``second`` on operands whose values are their row or column ids, logical
ones run on operands cast to 0/1.  Semirings the compiled kernels can run
go there (masked kernels when a mask bounds the output); the others
(user-defined operators, ``lxor``, a logical monoid over a numeric
operator) expand the products as arrays and reduce each output entry's run
with the monoid's ufunc: memory O(products), the price of generality.
"""

import numpy as np

from spla import backend
from spla.arrays import narrow_indices
from spla.checks import index_dtype
from spla.mask import INSIDE_MASK
from spla.matrix import Matrix
from spla.util import row_ids


def masked_kernels(device):
    """The ``masked`` kernel module of a device, through spla's one dispatch point."""
    return backend.kernels_for(device).masked


def _ids(X, use_rows):
    """Row (or column) id of each entry; row ids are cached on the matrix, which
    is immutable, since a BFS asks for them at every step."""
    if not use_rows:
        return X.indices.astype(np.int64)
    ids = X._cache.get("row_ids")
    if ids is None:
        ids = X._cache["row_ids"] = row_ids(X.indptr, X.nnz)
    return ids


def prepare(A, B, sr):
    """(a_vals, b_vals, out_dtype, kernel_ok): operand values as the kernels need them.

    Values are None for a structural operand; ``out_dtype`` is None for a
    structural result.
    """
    b = sr.binop
    av, bv = A.values, B.values
    if b is not None and b.positional:
        ids = _ids(A if b.positional.startswith("first") else B, b.positional.endswith("i"))
        if b.positional.startswith("first"):
            av = ids
        else:
            bv = ids
    elif b is not None and b.logical:
        av = None if av is None else (av != 0).astype(np.int64)
        bv = None if bv is None else (bv != 0).astype(np.int64)
    out_dt = sr.output_dtype(None if av is None else av.dtype, None if bv is None else bv.dtype)
    numeric_into_logical = sr.monoid.logical and not (b is not None and b.logical)
    kernel_ok = sr.kernel_ready and not numeric_into_logical and not (b is not None and b.is_user)
    return av, bv, out_dt, kernel_ok


def cast(xp, vals, dt):
    """(values cast to dt or an empty array, has_values) for kernels."""
    if vals is None:
        return xp.zeros(0, dt), False
    return vals.astype(dt, copy=False), True


def product(A, B, sr, mask=None):
    """``A ⊕.⊗ B`` as a Matrix; with a (checked) mask, at least its entries.

    A mask that is not complemented bounds the work (masked kernel); the
    caller still applies the mask (``spla.mask.finish``), so any extra
    entries computed here never reach the user.
    """
    av, bv, out_dt, kernel_ok = prepare(A, B, sr)
    if not kernel_ok:
        return generic_product(A, B, sr, av, bv)
    if mask is not None and not mask.complement and isinstance(mask.parent, Matrix):
        return _masked_spgemm(A, B, sr, av, bv, out_dt, mask)
    return _kernel_product(A, B, sr, av, bv, out_dt)


def _masked_spgemm(A, B, sr, av, bv, out_dt, mask):
    xp = A.xp
    cdt = np.dtype(np.bool_) if out_dt is None else out_dt
    a_val, a_hv = cast(xp, av, cdt)
    M = mask.parent
    if mask.structural or M.values is None:
        m_ok = xp.ones(M.nnz, np.bool_)
    else:
        m_ok = M.values != 0
    K = masked_kernels(A.device)
    one = xp.ones(1, cdt)
    if _dot_is_cheaper(xp, A, B, M):
        bt_ptr, bt_idx, _ = transpose_pattern(B, order=bv is not None)
        bt_val, b_hv = transposed_values(B, bv, cdt)
        out_val, hit = K.masked_dot(A.indptr, A.indices, a_val, a_hv, bt_ptr, bt_idx, bt_val,
                                    b_hv, M.indptr, M.indices, m_ok, sr.monoid.code,
                                    sr.mul_code, one)
    else:
        b_val, b_hv = cast(xp, bv, cdt)
        out_val, hit = K.masked_spgemm(A.indptr, A.indices, a_val, a_hv, B.indptr, B.indices,
                                       b_val, b_hv, M.indptr, M.indices, m_ok, sr.monoid.code,
                                       sr.mul_code, one)
    del m_ok
    if A.device == "cpu":  # row pointer and hit positions in one pass
        ptr, pos = K.hit_positions(M.indptr, hit)
    else:
        # Row pointers from a running count of the hit slots: no per-entry row ids.
        seen = xp.zeros(M.nnz + 1, index_dtype(M.nnz))
        xp.cumsum(hit, out=seen[1:])
        ptr = seen[M.indptr].astype(np.int64)
        del seen
        pos = hit
    C = Matrix._new(ptr, narrow_indices(M.indices[pos], B.ncols),
                    None if out_dt is None else out_val[pos], (A.nrows, B.ncols))
    # Every entry lies inside the mask: ``spla.mask.finish`` may skip its
    # membership test (it pops this mark, so C keeps no reference to it).
    C._cache[INSIDE_MASK] = mask
    return C


def _dot_is_cheaper(xp, A, B, M):
    """Dot products (merge A's row i with Bᵀ's row j per mask entry) versus push.

    Push costs a search of the mask row per product (B's row length per
    entry of A, times the log of the mask's mean row length); dot costs at
    most both rows' lengths per mask entry, plus a transpose of B (none
    when B's transpose is already cached).
    """
    if A.nnz == 0 or M.nnz == 0:
        return False
    # Sums over entries as dot products of per-id counts: O(n) scratch,
    # where gathering a degree per entry would take 8 bytes per entry.
    search = max(1.0, float(np.log2(1.0 + M.nnz / max(M.nrows, 1))))
    push = int(xp.dot(_col_counts(A), _row_lengths(B))) * search
    cached = B._cache.get("transpose_pattern")
    deg_bt = xp.diff(cached[0]) if cached is not None else _col_counts(B)
    dot = int(xp.dot(_row_lengths(A), _row_lengths(M)) + xp.dot(deg_bt, _col_counts(M)))
    transpose = 0 if cached is not None else 2 * B.nnz
    return dot + transpose < push


def _row_lengths(X):
    """Entries per row, cached on the matrix (immutable): a repeated product
    (a triangle count, an iterative method) pays for it once."""
    deg = X._cache.get("row_lengths")
    if deg is None:
        deg = X._cache["row_lengths"] = X.xp.diff(X.indptr)
    return deg


def _col_counts(X):
    """Entries per column (``bincount``), cached on the matrix as row lengths
    are; counted a slice at a time: bincount widens its input to int64, 8
    bytes per entry at once otherwise."""
    out = X._cache.get("col_counts")
    if out is None:
        xp, idx, n = X.xp, X.indices, X.ncols
        out = xp.zeros(n, np.int64)
        step = 1 << 20
        for s in range(0, idx.size, step):
            out += xp.bincount(idx[s:s + step], minlength=n)
        X._cache["col_counts"] = out
    return out


def transpose_pattern(A, order=True):
    """(indptr, indices, order) of Aᵀ, where entry t of Aᵀ is entry order[t] of A.

    A counting sort (``transpose_pattern`` of the device's spmm kernels),
    cached on the matrix, which is immutable: a BFS, an iterative method or
    a repeated masked product reads it at every call, with whatever values
    the call needs (``transposed_values``).  ``order=False``: the caller
    needs no values, and a pattern made for such a call caches no order
    (8 bytes per entry); ``order`` is then None.
    """
    t = A._cache.get("transpose_pattern")
    if t is None or (order and t[2] is None):
        trows = A.xp.empty(A.nnz, index_dtype(max(A.nrows - 1, 0)))
        tptr, perm = backend.kernels_for(A.device).spmm.transpose_pattern(
            A.indptr, A.indices, A.ncols, trows)
        t = A._cache["transpose_pattern"] = (tptr, trows, perm if order else None)
    return t


def transposed_values(A, vals, dt):
    """(``vals`` in Aᵀ's entry order cast to ``dt``, has_values); ``vals`` has
    one entry per entry of A, None for a structural operand.

    One slot cached on the matrix, keyed by the identity of the source
    array (which the slot holds, so the identity cannot be reused): A's
    own values and its cached row ids are the same objects at every call,
    so an iterative method gathers them once, not per step.
    """
    xp = A.xp
    if vals is None:
        return xp.zeros(0, dt), False
    hit = A._cache.get("transpose_values")
    if hit is not None and hit[0] is vals and hit[1] == dt:
        return hit[2], True
    out = vals[transpose_pattern(A)[2]].astype(dt, copy=False)
    A._cache["transpose_values"] = (vals, dt, out)
    return out, True


def expand(A, B):
    """(a_pos, b_pos, i, k, j): every product term A[i, k] B[k, j] as arrays."""
    xp = A.xp
    deg = xp.diff(B.indptr)[A.indices]
    total = int(deg.sum())
    a_pos = xp.repeat(xp.arange(A.nnz, dtype=np.int64), deg)
    first = xp.cumsum(deg) - deg
    b_pos = B.indptr[A.indices.astype(np.int64)][a_pos] + (
        xp.arange(total, dtype=np.int64) - first[a_pos])
    i = row_ids(A.indptr, A.nnz)[a_pos]
    k = A.indices.astype(np.int64)[a_pos]
    return a_pos, b_pos, i, k, B.indices.astype(np.int64)[b_pos]


def reduce_runs(xp, keys, vals, monoid):
    """(run keys, run values): the values of each run of equal sorted keys folded."""
    if keys.size == 0:
        return keys, vals
    starts = xp.flatnonzero(xp.concatenate([xp.ones(1, bool), keys[1:] != keys[:-1]]))
    # Each run folded in order by the monoid (a ufunc's reduceat for the
    # built-in ones, the user's operator otherwise).
    out = monoid.reduceat(backend.to_host(vals), backend.to_host(starts), func="mxm")
    return keys[starts], xp.asarray(out)


def generic_product(A, B, sr, av, bv):
    """The product by expansion of its terms (any operator, any monoid)."""
    on_gpu = A.device == "cuda"
    if on_gpu:  # ufunc.reduceat and user operators run on the host
        A, B = A.to("cpu"), B.to("cpu")
        av, bv = (None if v is None else backend.to_host(v) for v in (av, bv))
    xp = np
    a_pos, b_pos, i, k, j = expand(A, B)
    x = xp.ones(a_pos.size, np.int64) if av is None else av[a_pos]
    y = xp.ones(b_pos.size, np.int64) if bv is None else bv[b_pos]
    b = sr.binop
    if b.positional:  # ids already substituted by prepare
        t = x if b.positional.startswith("first") else y
    else:
        t = b(x, y, i, j, func="mxm")
    keys = i * np.int64(max(B.ncols, 1)) + j
    order = xp.argsort(keys, kind="stable")
    rk, rv = reduce_runs(xp, keys[order], t[order], sr.monoid)
    from spla.operators import _as_value_dtype
    rv = _as_value_dtype(rv)
    n = np.int64(max(B.ncols, 1))
    ptr = xp.searchsorted(rk // n, xp.arange(A.nrows + 1, dtype=np.int64)).astype(np.int64)
    C = Matrix._new(ptr, narrow_indices(rk % n, B.ncols),
                    None if sr.structural else rv, (A.nrows, B.ncols))
    return C.to("cuda") if on_gpu else C


def _kernel_product(A, B, sr, av, bv, out_dt):
    """The product by the compiled semiring kernels (operand values prepared)."""
    xp = A.xp
    K = backend.kernels_for(A.device)
    # A structural result still flows through the kernels' value arrays:
    # make them 1 byte wide, since they are dropped.
    cdt = np.dtype(np.bool_) if out_dt is None else out_dt
    a_val, a_hv = (xp.zeros(0, cdt), False) if av is None else (av.astype(cdt, copy=False), True)
    b_val, b_hv = (xp.zeros(0, cdt), False) if bv is None else (bv.astype(cdt, copy=False), True)
    one = xp.ones(1, cdt)
    if A.nrows == 0 or int(xp.diff(A.indptr).max()) <= 1:
        ptr, idx, val = K.spgemm.spgemm_gather(A.indptr, A.indices, a_val, a_hv,
                                               B.indptr, B.indices, b_val, b_hv,
                                               sr.mul_code, one)
    else:
        ptr, idx, val = K.spgemm.spgemm(A.indptr, A.indices, a_val, a_hv, B.indptr,
                                        B.indices, b_val, b_hv, B.ncols, sr.monoid.code,
                                        sr.mul_code, one)
    return Matrix._new(ptr, narrow_indices(idx, B.ncols),
                       None if out_dt is None else val, (A.nrows, B.ncols))
