"""GraphBLAS operators on vectors and whole objects: ``mxv``, ``vxm``,
``reduce_scalar``, ``kronecker``, ``ewise_union`` and ``assign``.

Each checks its arguments at the call, computes its result T, and writes it
through ``spla.mask.finish`` (mask, ``out``, ``accum``, ``replace`` with the
GraphBLAS C API semantics).  ``mxv``/``vxm`` run masked kernels: a mask
(complemented or not) is turned into a dense per-row flag that the kernel
reads before touching a row, so a BFS step with ``mask=~visited.S`` never
computes an entry it would drop.
"""

import sys

import numpy as np

from spla import backend
from spla.checks import as_index_array, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.mask import (UNION_DTYPES, check_write, dense_flags, dense_union, entries, finish,
                       host_vector_kernels, member, merge, ones_if_none, positions, rebuild,
                       sorted_union, union_dtype)
from spla.matrix import Matrix
from spla.mxm import as_matrix
from spla.operators import as_binary
from spla.product import (cast, generic_product, masked_kernels, prepare, transpose_pattern,
                          transposed_values)
from spla.semiring import as_monoid, as_semiring, plus_times
from spla.vector import Vector, frozen
from kernels import semiring_ops as ops
from kernels.semiring_ops import ADD_ANY


def _vector(func, arg, u):
    if not isinstance(u, Vector):
        fail(DTypeError, func, arg, "a spla.Vector", describe(u))
    return u


def _dist_module(A):
    """``spla.dist`` when ``A`` is a DistMatrix (the product is then collective)."""
    # A DistMatrix can only exist once spla.dist is imported: no import here.
    dist = sys.modules.get("spla.dist")
    return dist if dist is not None and isinstance(A, dist.DistMatrix) else None


def _allow(xp, mask, n):
    """Dense per-position flags of a mask (empty: everything allowed)."""
    if mask is None:
        return xp.zeros(0, np.bool_)
    if xp is np:
        return host_vector_kernels().key_flags(frozen(mask.true_keys()), n, mask.complement)
    allow = xp.zeros(n, np.bool_)
    allow[mask.true_keys()] = True
    return ~allow if mask.complement else allow


#: ``vxm`` pushes from u's entries while their rows hold under 1 / PUSH_SHARE
#: of A's entries, and pulls along Aᵀ's rows otherwise (direction-optimising,
#: as a BFS needs: a small frontier's edges are few, a large frontier's
#: unvisited outputs stop at their first hit).
PUSH_SHARE = 16
#: ... and always while they number under PUSH_EDGES: the serial push of that
#: many edges costs less than the pull's parallel region and its dense
#: per-row arrays (a small graph's every BFS level).
PUSH_EDGES = 1 << 16


def _push_edges(A, u):
    """The edges a push from u walks, or -1 where the pull wins."""
    # Row lengths cached on the matrix (immutable): one gather per call.
    deg = A._cache.get("row_lengths")
    if deg is None:
        deg = A._cache["row_lengths"] = A.xp.diff(A.indptr)
    edges = int(deg[u.indices].sum())
    return edges if edges < PUSH_EDGES or edges * PUSH_SHARE < A.nnz else -1


#: A push searches the mask's sorted keys per edge (no flags of the mask's
#: size) while its edges number under 1 / SEARCH_SHARE of the keys: a
#: BFS's last levels, a few vertices under a mask of nearly every vertex.
SEARCH_SHARE = 16


def _product_vec(func, A, u, sr, mask, push):
    """(T, exact): T = A u (``push=False``) or u A (``push=True``) as a Vector;
    ``exact`` says T holds no entry outside the mask (a kernel path)."""
    xp = A.xp
    if push:
        L, R = u._as_row(), A
    else:
        L, R = A, u._as_col()
    lv, rv, out_dt, kernel_ok = prepare(L, R, sr)
    if not kernel_ok:
        T = generic_product(L, R, sr, lv, rv)
        return (Vector._from_row(T) if push else Vector._from_col(T)), mask is None
    cdt = np.dtype(np.bool_) if out_dt is None else out_dt
    one = xp.ones(1, cdt)
    n_out = A.ncols if push else A.nrows
    uv = lv if push else rv
    av = rv if push else lv
    edges = _push_edges(A, u) if push and xp is np else -1
    if edges >= 0:
        mul = sr.mul_code
        b = sr.binop
        if b is not None and b.positional == "secondi" and cdt == np.int64:
            # u[k] ⊗ A[k, j] is k: take it from u's own ids, not from a
            # gathered copy of A's row ids (a cache line per row pushed).
            uv, av, mul = u.indices, None, ops.MUL_FIRST
        a_val, a_hv = cast(xp, av, cdt)
        u_val, u_hv = cast(xp, uv, cdt)
        keys = np.zeros(0, np.int64) if mask is None else mask.true_keys()
        mode = 0
        if mask is not None and edges * SEARCH_SHARE < keys.size:
            mode = 2 if mask.complement else 1
        allow = _allow(xp, mask if mode == 0 else None, n_out)
        idx, w = masked_kernels(A.device).vxm_push(
            frozen(u.indices), frozen(u_val), u_hv, A.indptr, A.indices, frozen(a_val), a_hv,
            allow, frozen(keys), mode, n_out, sr.monoid.code, mul, one)
        return Vector._new(idx, None if out_dt is None else w, n_out), True
    allow = _allow(xp, mask, n_out)
    return _pull_vec(A, u, sr, uv, av, out_dt, cdt, one, allow, push), True


def _pull_vec(A, u, sr, uv, av, out_dt, cdt, one, allow, push):
    """T of ``_product_vec`` by the parallel pull (``mxv_pull``) from a dense copy of u."""
    xp = A.xp
    n_out = A.ncols if push else A.nrows
    if u.nvals == u.size and uv is not None:  # u's values are the dense copy
        dense = uv.astype(cdt, copy=False)
    else:
        dense = xp.zeros(u.size, cdt)
        dense[u.indices] = True if uv is None else uv.astype(cdt)
    if u.nvals == u.size:  # dense u: an empty ``present`` means all present
        present = xp.zeros(0, np.bool_)
    else:
        present = xp.zeros(u.size, np.bool_)
        present[u.indices] = True
    if push:
        # A pull along Aᵀ's rows, operands in u ⊗ A order.  Aᵀ's row j
        # lists k increasing, the order in which the push visits u's
        # sorted entries, so both fold the same terms in the same order:
        # the same values, whatever the thread count.
        ptr, idx, _ = transpose_pattern(A, order=av is not None)
        a_val, a_hv = transposed_values(A, av, cdt)
    else:
        ptr, idx = A.indptr, A.indices
        a_val, a_hv = cast(xp, av, cdt)
    w, has = masked_kernels(A.device).mxv_pull(ptr, idx, a_val, a_hv, dense, present, allow,
                                               sr.monoid.code, sr.mul_code, one, push)
    idx = xp.flatnonzero(has).astype(np.int64, copy=False)
    if out_dt is not None and idx.size < n_out:
        w = w[idx]  # a full result keeps the kernel's own array
    return Vector._new(idx, None if out_dt is None else w, n_out)


def mxv(A, u, semiring=plus_times, *, mask=None, out=None, accum=None, replace=False):
    """Matrix times vector ``w = A ⊕.⊗ u`` over a semiring.

    Parameters
    ----------
    A : Matrix, MxmExpr or DistMatrix, shape (m, n)
        A DistMatrix makes the call collective (``spla.dist.dist_mxv``).
    u : Vector of size n
    semiring : Semiring or str, default ``plus_times``
    mask, out, accum, replace
        As in ``spla.mxm``; the mask is a mask of a size-m Vector.

    Returns
    -------
    Vector of size m

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, Vector, mxv
    >>> A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> mxv(A, Vector.from_dense(np.array([1.0, 1.0]))).to_dense()
    array([3., 3.])
    >>> v = Vector.from_coo([0], size=2)
    >>> mxv(A, Vector.from_dense(np.array([1.0, 1.0])), mask=~v.S).to_dense()
    array([0., 3.])
    """
    dist = _dist_module(A)
    if dist is not None:
        return dist.dist_mxv(A, u, semiring, mask=mask, out=out, accum=accum, replace=replace)
    return _vector_product("mxv", A, u, semiring, mask, out, accum, replace, push=False)


def vxm(u, A, semiring=plus_times, *, mask=None, out=None, accum=None, replace=False):
    """Vector times matrix ``w = u ⊕.⊗ A`` over a semiring.

    On the CPU the product is pushed from u's entries while their rows
    hold a small share of A's entries (the work is then those edges, what a
    small BFS frontier needs), and pulled along A's cached transpose
    otherwise, in parallel, each output checking its mask first and an
    ``any`` monoid stopping at the first term.  Both fold the terms of an
    output in increasing row order: the same values either way.

    Parameters
    ----------
    u : Vector of size m
    A : Matrix, MxmExpr or DistMatrix, shape (m, n)
        A DistMatrix makes the call collective (``spla.dist.dist_vxm``).
    semiring : Semiring or str, default ``plus_times``
    mask, out, accum, replace
        As in ``spla.mxm``; the mask is a mask of a size-n Vector.

    Returns
    -------
    Vector of size n

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, Vector, semiring, vxm
    >>> A = Matrix.from_coo([0, 0, 1], [1, 2, 2], shape=(3, 3))
    >>> vxm(Vector.from_coo([0], size=3), A, semiring.any_secondi).to_dense()
    array([0, 0, 0])
    >>> vxm(Vector.from_coo([0, 1], size=3), A, semiring.any_secondi).indices
    array([1, 2])
    """
    dist = _dist_module(A)
    if dist is not None:
        return dist.dist_vxm(u, A, semiring, mask=mask, out=out, accum=accum, replace=replace)
    return _vector_product("vxm", A, u, semiring, mask, out, accum, replace, push=True)


def _vector_product(func, A, u, semiring, mask, out, accum, replace, push):
    """``mxv`` (``push=False``: u along A's columns) or ``vxm`` (u along its rows), checked."""
    sr = as_semiring(func, semiring)
    A = as_matrix(func, "A", A)
    u = _vector(func, "u", u)
    inner, outer = (A.nrows, A.ncols) if push else (A.ncols, A.nrows)
    if inner != u.size:
        fail(DimensionMismatch, func, "u", f"a vector of size {inner} "
             f"(A.{'nrows' if push else 'ncols'})", f"size {u.size}")
    backend.same_device(func, A, u)
    mask, out, accum = check_write(func, (outer,), Vector, mask, out, accum, replace)
    T, exact = _product_vec(func, A, u, sr, mask, push)
    if exact and out is None:
        return T  # the kernel computed only what the mask lets through
    return finish(func, T, mask, out, accum, replace)


def reduce_scalar(X, monoid="plus"):
    """All stored values of a Matrix or Vector folded with a monoid.

    Parameters
    ----------
    X : Matrix, MxmExpr or Vector
    monoid : Monoid or str, default 'plus'
        Also ``'count'`` (the number of stored entries), or a monoid made
        by ``Monoid.from_binary`` (entries folded row after row, each row by
        increasing column; a Vector's by increasing index; on the host).
        No entries give the monoid's identity.

    Returns
    -------
    int or float (a structural object's entries count as 1)

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, reduce_scalar
    >>> A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 4.0]]))
    >>> reduce_scalar(A), reduce_scalar(A, "max"), reduce_scalar(A, "count")
    (7.0, 4.0, 3)
    """
    func = "reduce_scalar"
    if not isinstance(X, Vector):
        X = as_matrix(func, "X", X)
    n = X.nvals if isinstance(X, Vector) else X.nnz
    if isinstance(monoid, str) and monoid == "count":
        return int(n)
    m = as_monoid(func, monoid)
    vals = X.xp.ones(n, np.int64) if X.values is None else X.values
    if n == 0:
        if m.logical:
            return int(m.identity)
        return m.identity_for(np.int64 if X.dtype is None else X.dtype).item()
    v = m.reduceat(backend.to_host(vals), np.zeros(1, np.int64), func=func)[0]
    return int(v) if m.logical else v.item()


def kronecker(A, B, op="times", *, mask=None, out=None, accum=None, replace=False):
    """The Kronecker product: ``C[i*p + k, j*q + l] = op(A[i, j], B[k, l])``.

    Parameters
    ----------
    A : Matrix (m, n); B : Matrix (p, q)
    op : BinaryOp, Monoid or str, default 'times'
    mask, out, accum, replace
        As in ``spla.mxm``, for an (m p, n q) result.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, kronecker
    >>> A = Matrix.from_dense(np.array([[1.0, 2.0]]))
    >>> kronecker(A, Matrix.from_dense(np.eye(2))).to_dense()
    array([[1., 0., 2., 0.],
           [0., 1., 0., 2.]])
    """
    func = "kronecker"
    A, B = as_matrix(func, "A", A), as_matrix(func, "B", B)
    op = as_binary(func, "op", op)
    backend.same_device(func, A, B)
    xp = A.xp
    p, q = B.shape
    shape = (A.nrows * p, A.ncols * q)
    mask, out, accum = check_write(func, shape, Matrix, mask, out, accum, replace)
    ka, va = entries(A)
    kb, vb = entries(B)
    ai, aj = positions(A, ka)
    bi, bj = positions(B, kb)
    ai, aj = xp.repeat(ai, kb.size), xp.repeat(aj, kb.size)
    bi, bj = xp.tile(bi, ka.size), xp.tile(bj, ka.size)
    rows, cols = ai * p + bi, aj * q + bj
    keys = rows * np.int64(max(shape[1], 1)) + cols
    if va is None and vb is None and op.name in ("pair", "any", "first", "second", "min", "max"):
        vals = None
    else:
        x = xp.repeat(xp.ones(ka.size, np.int64) if va is None else va, kb.size)
        y = xp.tile(xp.ones(kb.size, np.int64) if vb is None else vb, ka.size)
        vals = op(x, y, rows, cols, func=func)
    order = xp.argsort(keys, kind="stable")
    like = Matrix._new(xp.zeros(shape[0] + 1, np.int64), xp.zeros(0, np.int64), None, shape)
    T = rebuild(like, keys[order], None if vals is None else vals[order])
    return finish(func, T, mask, out, accum, replace)


def _same_kind(func, A, B):
    if isinstance(A, Vector) or isinstance(B, Vector):
        for X, arg in ((A, "A"), (B, "B")):
            _vector(func, arg, X)
        if A.size != B.size:
            fail(DimensionMismatch, func, "B", f"size {A.size} (A's size)", f"size {B.size}")
        return A, B
    A, B = as_matrix(func, "A", A), as_matrix(func, "B", B)
    if A.shape != B.shape:
        fail(DimensionMismatch, func, "B", f"shape {A.shape} (A's shape)", f"shape {B.shape}")
    return A, B


def ewise_generic(func, A, B, op, union, mask, out, accum, replace, defaults=(None, None)):
    """Element-wise union or intersection with any binary operator."""
    A, B = _same_kind(func, A, B)
    op = as_binary(func, "op", op)
    backend.same_device(func, A, B)
    mask, out, accum = check_write(func, A.shape, type(A), mask, out, accum, replace)
    T = merge(func, A, B, op, union, *defaults)
    return finish(func, T, mask, out, accum, replace)


def ewise_union(A, B, op, left_default, right_default, *, mask=None, out=None, accum=None,
                replace=False):
    """Union of two patterns where one-sided entries meet the other side's default.

    ``C[i, j] = op(A[i, j], B[i, j])`` where both are present,
    ``op(A[i, j], right_default)`` where only A is, ``op(left_default,
    B[i, j])`` where only B is (GxB_eWiseUnion).

    Parameters
    ----------
    A, B : Matrix or Vector, same shape
    op : BinaryOp, Monoid or str
    left_default, right_default : scalar
    mask, out, accum, replace
        As in ``spla.mxm``.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Vector, ewise_union, binary
    >>> u = Vector.from_dense(np.array([5.0, 0.0, 1.0]))
    >>> v = Vector.from_dense(np.array([1.0, 2.0, 0.0]))
    >>> ewise_union(u, v, binary.minus, 0.0, 0.0).to_dense()
    array([ 4., -2.,  1.])
    """
    for arg, d in (("left_default", left_default), ("right_default", right_default)):
        if not isinstance(d, (int, float, np.integer, np.floating)) or isinstance(d, bool):
            fail(InvalidValue, "ewise_union", arg, "a real scalar", describe(d))
    return ewise_generic("ewise_union", A, B, op, True, mask, out, accum, replace,
                         (left_default, right_default))


def _assign_targets(func, C, rows, cols):
    if isinstance(C, Vector):
        idx = as_index_array(func, "rows", rows, C.size) if rows is not None else None
        return C.xp.asarray(np.arange(C.size) if idx is None else idx).astype(np.int64), None
    r = np.arange(C.nrows) if rows is None else as_index_array(func, "rows", rows, C.nrows)
    c = np.arange(C.ncols) if cols is None else as_index_array(func, "cols", cols, C.ncols)
    return C.xp.asarray(r).astype(np.int64), C.xp.asarray(c).astype(np.int64)


def _is_scalar(value):
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _assign_scalar_masked(C, value, mask, replace):
    """``C<mask> = value`` over a whole Vector (a BFS's level update): the
    scalar at the mask's keys, C's other entries kept (dropped with
    ``replace``); one membership test and one sort."""
    xp = C.xp
    mk = mask.true_keys()
    kc, vc = entries(C)
    dt = union_dtype(np.full(0, value), vc)
    if xp is np and dt in UNION_DTYPES:
        # The mask's keys take the scalar, C's others keep theirs: one merge
        # with the scalar's side first (``any`` keeps the first operand's).
        tv = np.full(mk.size, value).astype(dt)
        if replace:
            return Vector._new(mk, tv, C.size)
        return sorted_union(C.size, mk, tv, kc, vc, ADD_ANY, dt)
    flags = None if replace else dense_flags(C, (mk, kc))
    if flags is not None:
        outside = ~flags[0][kc]
    else:
        outside = xp.zeros(kc.size, np.bool_) if replace else ~member(mk, kc)
    # the values' dtype as in the general path: the scalar's and C's promoted
    parts = ((mk, xp.full(mk.size, value)), (kc[outside], ones_if_none(xp, vc, kc.size)[outside]))
    if flags is not None:
        return dense_union(C, flags[0] | flags[1], parts)
    keys = xp.concatenate([k for k, _ in parts])
    vals = xp.concatenate([v for _, v in parts])
    order = xp.argsort(keys, kind="stable")
    return rebuild(C, keys[order], vals[order])


def assign(C, value, rows=None, cols=None, *, mask=None, accum=None, replace=False):
    """``C(rows, cols)<mask> accum= value`` (GrB_assign): a new object.

    Parameters
    ----------
    C : Matrix or Vector
        The output operand (not modified).
    value : scalar, Matrix (len(rows) x len(cols)) or Vector (len(rows))
        A scalar is written to every position of the submatrix.
    rows, cols : array_like of int, optional
        Distinct positions; None means all (``cols`` is ignored for a Vector).
    mask : Mask, optional
        A mask of C's shape.
    accum : BinaryOp, Monoid or str, optional
    replace : bool, default False

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Vector, assign
    >>> w = Vector.from_coo([0], [1.0], size=4)
    >>> assign(w, 7.0, [1, 3]).to_dense()
    array([1., 7., 0., 7.])
    >>> assign(w, 7.0, mask=~w.S).to_dense()
    array([1., 7., 7., 7.])
    """
    func = "assign"
    if not isinstance(C, (Matrix, Vector)):
        fail(DTypeError, func, "C", "a spla.Matrix or spla.Vector", describe(C))
    mask, _, accum = check_write(func, C.shape, type(C), mask, C, accum, replace)
    if (isinstance(C, Vector) and rows is None and accum is None and mask is not None
            and not mask.complement and _is_scalar(value)):
        return _assign_scalar_masked(C, value, mask, replace)
    r, c = _assign_targets(func, C, rows, cols)
    xp = C.xp
    for ids, arg, given in ((r, "rows", rows), (c, "cols", cols)):
        if given is not None and ids is not None and xp.unique(ids).size != ids.size:
            fail(InvalidValue, func, arg, "distinct positions", "repeated indices")
    region = r if c is None else (r[:, None] * np.int64(max(C.ncols, 1)) + c[None, :]).ravel()
    if rows is not None or cols is not None:
        region = xp.sort(region)
    if isinstance(value, (Matrix, Vector)):
        want = (r.size,) if c is None else (r.size, c.size)
        if type(value) is not type(C) or tuple(value.shape) != want:
            fail(DimensionMismatch, func, "value", f"a {type(C).__name__} of shape {want}",
                 describe(value))
        kv, vv = entries(value)
        sr_, sc_ = positions(value, kv)
        keys = r[sr_] if c is None else r[sr_] * np.int64(max(C.ncols, 1)) + c[sc_]
    elif _is_scalar(value):
        if mask is not None and not mask.complement:
            # A scalar reaches only the positions the mask lets through: the
            # rest of the region ends as C has it (or cleared) either way.
            if rows is None and cols is None:
                region = mask.true_keys()  # the whole object: the mask's own keys
            else:
                region = region[member(mask.true_keys(), region)]
        keys, vv = region, xp.full(region.size, value)
    else:
        fail(DTypeError, func, "value", "a scalar, Matrix or Vector", describe(value))
    order = xp.argsort(keys, kind="stable")
    T = rebuild(C, keys[order], None if vv is None else vv[order])
    # Z: C with its region replaced by T (or accum(C's region, T)); then the
    # mask decides, over all of C, where Z is written (C_API's GrB_assign).
    kc, vc = entries(C)
    inside = member(region, kc)
    Cin = rebuild(C, kc[inside], None if vc is None else vc[inside])
    Zr = T if accum is None else merge(func, Cin, T, accum, True)
    kr, vr = entries(Zr)
    ko, vo = kc[~inside], (None if vc is None else vc[~inside])
    keys = xp.concatenate([kr, ko])
    vals = None
    if vr is not None or vo is not None:
        vals = xp.concatenate([ones_if_none(xp, vr, kr.size), ones_if_none(xp, vo, ko.size)])
    order = xp.argsort(keys, kind="stable")
    Z = rebuild(C, keys[order], None if vals is None else vals[order])
    return finish(func, Z, mask, C, None, replace) if mask is not None else Z
