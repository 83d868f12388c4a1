"""Fused operators of the layer-wise samplers' compositions.

``importance_layer(A, S, dst, dst_ptr, s, ...)`` assembles one layer of a
layer-wise sampler from its draws: each minibatch's columns, the sampled
adjacency with each column weighted by ``1 / (s p)``, rows normalised (on
the CPU in one kernel, on a GPU in a few; ``tests/layer_reference.py``
writes out the composition of the operators it stands for, which the tests
hold both to).

``normalize_scaled_rows(A, d)`` is ``normalize_rows(scale_columns(A, d))``
(LADIES and FastGCN weight each sampled column by ``1 / (s p)`` and then
normalise the rows) in two kernels and the shared row reduction, with the
same values bit for bit: each product rounds once in the result's dtype,
each row is summed by ``reduce_rowwise`` (one blocked order on every
device) and each entry divided by its row's sum.
"""

import importlib

import numpy as np

from spla import backend
from spla.checks import describe, fail
from spla.diagonal import column_scale
from spla.exceptions import DTypeError, InvalidValue
from spla.arrays import narrow_indices
from spla.matrix import HOST_INDPTR, Matrix


def _kernels(device, name="layer_ops"):
    """``kernels.<cpu|cuda>.<name>`` for ``device`` (through spla's dispatch)."""
    package = backend.kernels_for(device)
    # Once imported, a submodule is an attribute of its package: no
    # import-system lookup per call.
    return getattr(package, name, None) or importlib.import_module(package.__name__ + "." + name)


def normalize_scaled_rows(A, d):
    """``normalize_rows(scale_columns(A, d))`` in one operator: column ``j``
    scaled by ``d[j]``, then each row scaled to sum 1 (rows summing to 0
    left as they are).

    Parameters
    ----------
    A : Matrix
        A structural matrix counts its entries as ones.
    d : 1-D array of length ``A.ncols`` (or a spla.Vector), on ``A``'s device

    Returns
    -------
    Matrix
        ``A``'s structure; values in the common dtype of A's values and
        ``d`` (float64 where that is an integer dtype), equal bit for bit to
        the two operators' composition.

    Raises
    ------
    DimensionMismatch, DTypeError, DeviceMismatch
        ``d`` of another length, not real, or on another device; ``A`` not
        a matrix.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.layer_ops import normalize_scaled_rows
    >>> A = spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0], [0.0, 0.0]]))
    >>> normalize_scaled_rows(A, np.array([2.0, 0.5])).to_dense()
    array([[0.66666667, 0.33333333],
           [0.        , 1.        ],
           [0.        , 0.        ]])
    """
    from spla.diagonal import scale_columns
    from spla.elementwise import normalize_rows, reduce_rowwise
    func = "normalize_scaled_rows"
    d = column_scale(func, "A", A, d)
    dt = d.dtype if A.values is None else np.result_type(A.dtype, d.dtype)
    if dt.kind != "f":
        # Integer products are exact: the composition's float64 division is all.
        return normalize_rows(scale_columns(A, d))
    K = _kernels(A.device)
    xp = A.xp
    vals = A.values if A.values is not None else xp.empty(0, dt)
    # Overflow to inf is the product's result too (scale_columns does not warn).
    scaled = K.scale_entries(A.indices, vals, A.values is not None, d, xp.empty(A.nnz, dt))
    S = Matrix._new(A.indptr, A.indices, scaled, A.shape)
    sums = reduce_rowwise(S, "plus")
    out = Matrix._new(A.indptr, A.indices, K.divide_rows(A.indptr, scaled, sums), A.shape)
    if HOST_INDPTR in A._cache:  # the same row pointer: its host copy too
        out._cache[HOST_INDPTR] = A._cache[HOST_INDPTR]
    return out


def reduce_row_groups(A, rows, row_ptr, *, check=True):
    """Sum groups of A's rows: row ``g`` of the result is the sum of
    ``A[i, :]`` over ``i`` in ``rows[row_ptr[g]:row_ptr[g+1]]``.

    That is ``mxm(Q, A)`` for the structural group selection ``Q`` (row g
    holding the group's rows), with the product's values bit for bit on
    every device: each column's terms are added in ascending row order.  On
    a GPU it runs in nine launches and two reads (``kernels.cuda.layer_sums``)
    where the general product takes several dozen.  LADIES' probability rows
    are these sums over each minibatch's destinations of ``Â ∘ Â``.

    Parameters
    ----------
    A : Matrix
    rows : 1-D array of int
        Row ids, distinct within each group, in any order.  Given on the
        host for a GPU matrix that keeps a host copy of its row pointer
        (``Matrix.from_csr(..., host_indptr=...)``), the products are
        counted on the host: a read fewer.
    row_ptr : 1-D array of int, shape (n_groups + 1,)
        Group offsets into ``rows`` (host arrays cost no read).
    check : bool, default True
        Check ``rows`` (in range, distinct within each group).  Callers whose
        rows spla made (a sampler's frontiers) pass False: on a GPU each
        check is a blocking read.

    Returns
    -------
    Matrix
        Shape ``(n_groups, A.ncols)``, A's value dtype (structural and
        integer matrices: the product's).

    Raises
    ------
    IndexOutOfRange, InvalidValue, InvalidCSR, DTypeError
        A row out of range or repeated in its group, a bad pointer, ``A``
        not a matrix.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.layer_ops import reduce_row_groups
    >>> A = spla.Matrix.from_dense(np.array([[1.0, 0.0], [2.0, 3.0], [0.0, 4.0]]))
    >>> reduce_row_groups(A, [2, 0, 1], [0, 2, 3]).to_dense()
    array([[1., 4.],
           [2., 3.]])
    """
    from spla.checks import as_index_array
    from spla.exceptions import InvalidValue
    from spla.structure import _group_ptr
    func = "reduce_row_groups"
    if not isinstance(A, Matrix):
        fail(DTypeError, func, "A", "a spla.Matrix", describe(A))
    xp = A.xp
    given = as_index_array(func, "rows", rows, A.nrows) if check else rows
    rows = xp.asarray(given).astype(np.int64, copy=False)
    ptr = _group_ptr(func, "row_ptr", row_ptr, rows.size)
    G = ptr.size - 1
    general = A.values is None or A.dtype.kind != "f"
    if general or (check and rows.size):
        group = np.repeat(np.arange(G, dtype=np.int64), np.diff(ptr))
    if check and rows.size:
        _distinct_in_groups(func, "rows", rows, group, A.nrows)
    if general:
        Q = Matrix.from_coo(group, backend.to_host(rows), None, (G, A.nrows))
        return (Q.to(A.device) @ A).new()
    K = _kernels(A.device, "layer_sums")
    out_ptr, idx, vals = K.group_row_sums(A.indptr, A.indices, A.values, rows, ptr, A.ncols,
                                          total=_products(A, given))
    return Matrix._new(out_ptr, narrow_indices(idx, A.ncols), vals, (G, A.ncols))


def _products(A, rows):
    """The entries of A's rows ``rows``, summed on the host from A's host
    row pointer when both are there (a GPU matrix's kept copy), else None."""
    host_ptr = A._cache.get(HOST_INDPTR)
    if host_ptr is None or A.device == backend.CPU or backend.device_of(rows) != backend.CPU:
        return None
    r = np.asarray(rows, np.int64)
    return int((host_ptr[r + 1] - host_ptr[r]).sum())


def _distinct_in_groups(func, arg, ids, group, n):
    """InvalidValue unless ``ids`` (on any device, in ``[0, n)``) are
    distinct within each group (``group``: each id's, on the host)."""
    xp = backend.xp_of_array(ids)
    key = xp.sort(xp.asarray(group * max(n, 1)) + ids)
    if bool((key[1:] == key[:-1]).any()):
        fail(InvalidValue, func, arg, f"{arg} distinct within each group",
             "one repeated in its group")


def importance_layer(A, S, dst, dst_ptr, s, *, W=None, w_rows=None, p=None, check=True,
                     host_src=False):
    """One layer of layer-wise importance sampling, assembled from its draws.

    For each group ``g`` (a minibatch: row ``g`` of ``S`` holds its drawn
    columns, ``dst[dst_ptr[g]:dst_ptr[g+1]]`` its destinations) this is the
    composition::

        _, src, src_ptr = compact_columns_blockwise(S, arange(G + 1), first=dst, first_ptr=dst_ptr)
        adj = extract_blockwise(A, dst, dst_ptr, src, src_ptr)
        c_j = 1 / (s p_j) where p_j > 0, else 0        # in p's dtype, then A's
        adj = normalize_scaled_rows(adj, c)

    with ``p_j`` the normalised weight of column ``j`` in its group's row
    of ``W`` (``W[w_rows[g], j]`` over that row's sum, as
    ``normalize_rows`` divides) or, given ``p``, ``p[j]``.  LADIES and
    FastGCN weight each sampled column so by its probability; their layer is
    ``sample_rows`` and then this.  The result equals the composition bit
    for bit on every device; on the CPU it runs as one kernel (one pass
    over each group's columns and rows instead of five operators' passes,
    arrays and calls), on a GPU in about fifteen device operations and two
    blocking reads (the composition took about thirty).

    Parameters
    ----------
    A : Matrix
        The graph's rows (float values), ``A.nrows`` covering ``dst``.
    S : Matrix
        The draws: one row per group, shape ``(G, A.ncols)``.
    dst : 1-D int array
        The groups' destinations (rows of ``A``), distinct within a group.
    dst_ptr : 1-D int array, shape (G + 1,)
        Group offsets into ``dst`` (host arrays cost no read on a GPU).
    s : int
        The layer size the columns were drawn with.
    W : Matrix, optional
        Weights: row ``w_rows[g]`` holds group g's (not yet normalised).
    w_rows : 1-D int array of length G, optional
        With ``W``: each group's row of it.
    p : 1-D float array of length ``A.ncols``, optional
        Each column's probability, shared by the groups (instead of ``W``).
    check : bool, default True
        Check the arguments' shapes, ranges and the destinations' ids.
        Callers whose arrays spla made (a sampler's frontiers) pass False:
        on a GPU each check is a blocking read.
    host_src : bool, default False
        Also return ``src`` on the host when that costs no read: on a GPU,
        when ``S`` keeps a host copy of its row pointer (``sample_rows`` of
        a few rows does), ``src`` comes back in the read that sizes the
        block.  A sampler's next layer then counts its work on the host.

    Returns
    -------
    adj : Matrix
        Shape ``(len(dst), src_ptr[-1])``: group g's block in its rows and
        columns ``src_ptr[g]:src_ptr[g+1]`` (``split_blocks`` cuts them).
    src : 1-D int64 array, on A's device
        Each group's columns: its destinations, then its drawn columns not
        among them, ascending.
    src_ptr : 1-D int64 numpy array, shape (G + 1,)
    src_host : 1-D int64 numpy array or None
        With ``host_src`` only: ``src`` on the host, or None where it would
        cost a read.

    Raises
    ------
    DimensionMismatch, IndexOutOfRange, InvalidValue, DTypeError, DeviceMismatch
        Shapes that do not agree, ids out of range, neither or both of
        ``W`` and ``p``, non-float values of ``A``, matrices on different
        devices.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from spla.layer_ops import importance_layer
    >>> A = spla.Matrix.from_dense(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]))
    >>> S = spla.Matrix.from_dense(np.array([[0.0, 0.0, 1.0]]))      # one group drew column 2
    >>> adj, src, src_ptr = importance_layer(A, S, [0], [0, 1], 1, p=np.array([0.5, 0.25, 0.25]))
    >>> src.tolist(), src_ptr.tolist(), adj.to_dense().tolist()
    ([0, 2], [0, 2], [[1.0, 0.0]])
    """
    func = "importance_layer"
    dst, ptr, W, w_rows, p = _layer_args(func, A, S, dst, dst_ptr, s, W, w_rows, p, check)
    from kernels.common import KernelLimitError
    xp = A.xp
    # Without W its arrays are empty, of the dtypes a W of this graph has
    # (its values of p's): numba then compiles one kernel for both kinds of
    # probabilities.
    w = ((xp.empty(0, np.int64), xp.empty(0, A.indices.dtype), xp.empty(0, p.dtype),
          xp.empty(0, np.int64)) if W is None else (W.indptr, W.indices, W.values,
                                                    xp.asarray(w_rows)))
    try:
        out_ptr, idx, vals, src, src_ptr, host_ptr, src_host = _kernels(
            A.device, "layer_blocks").importance_layer(
            A.indptr, A.indices, A.values, S.indptr, S.indices, dst, ptr, *w,
            xp.empty(0, W.dtype) if p is None else p, s, A.ncols,
            s_host_ptr=S._cache.get(HOST_INDPTR))
    except KernelLimitError as e:
        fail(InvalidValue, func, e.arg, e.expected, e.got)
    adj = Matrix._new(out_ptr, narrow_indices(idx, src.size), vals, (dst.size, src.size))
    adj._cache[HOST_INDPTR] = host_ptr
    return (adj, src, src_ptr, src_host) if host_src else (adj, src, src_ptr)


def _layer_args(func, A, S, dst, dst_ptr, s, W, w_rows, p, check):
    """``importance_layer``'s arguments checked (cheap checks always, the
    ids' with ``check``) and converted: ``(dst, dst_ptr on the host, W,
    w_rows on the host, p)``."""
    from spla.checks import as_index_array, as_int
    from spla.exceptions import DeviceMismatch, DimensionMismatch
    from spla.structure import _group_ptr
    for arg, M in (("A", A), ("S", S)):
        if not isinstance(M, Matrix):
            fail(DTypeError, func, arg, "a spla.Matrix", describe(M))
    if A.values is None or A.dtype.kind != "f":
        fail(DTypeError, func, "A", "float values", describe(A))
    backend.same_device(func, A, S)
    s = as_int(func, "s", s, minimum=1)
    xp = A.xp
    dst = (xp.asarray(as_index_array(func, "dst", dst, A.nrows)) if check
           else xp.asarray(dst).astype(np.int64, copy=False))
    ptr = _group_ptr(func, "dst_ptr", dst_ptr, dst.size)
    G = ptr.size - 1
    if check and dst.size:
        _distinct_in_groups(func, "dst", dst, np.repeat(np.arange(G, dtype=np.int64),
                                                         np.diff(ptr)), A.nrows)
    if S.shape != (G, A.ncols):
        fail(DimensionMismatch, func, "S", f"shape ({G}, {A.ncols}): a row per group",
             f"shape {S.shape}")
    if (W is None) == (p is None):
        fail(InvalidValue, func, "W", "either W (with w_rows) or p", "both" if W is not None
             else "neither")
    if p is not None:
        if backend.device_of(p) != A.device and hasattr(p, "dtype"):
            raise DeviceMismatch(f"{func}: argument 'p' is on {backend.device_of(p)}, A on "
                                 f"{A.device}; move one of them")
        p = xp.asarray(p)
        if p.shape != (A.ncols,):
            fail(DimensionMismatch, func, "p", f"an array of length {A.ncols}", describe(p))
        if p.dtype not in (np.float32, np.float64):
            fail(DTypeError, func, "p", "float32 or float64 probabilities", describe(p))
        return dst, ptr, None, None, p
    if not isinstance(W, Matrix) or W.ncols != A.ncols:
        fail(DimensionMismatch, func, "W", f"a spla.Matrix of {A.ncols} columns", describe(W))
    backend.same_device(func, A, W)
    rows = np.asarray(backend.to_host(w_rows if w_rows is not None else np.zeros(0)))
    if rows.shape != (G,) or rows.dtype.kind not in "iu" or (
            G and (int(rows.min()) < 0 or int(rows.max()) >= W.nrows)):
        fail(InvalidValue, func, "w_rows", f"{G} row ids of W (below {W.nrows})", describe(rows))
    if W.values is None or W.dtype.kind != "f":
        # Integer weights are divided in float64, as normalize_rows divides them.
        W = W.astype(np.float64)
    return dst, ptr, W, rows.astype(np.int64), p


__all__ = ["importance_layer", "normalize_scaled_rows", "reduce_row_groups"]
