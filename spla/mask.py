"""Masks, output operands and accumulators (GraphBLAS C API semantics).

``M.S`` (structure: every stored entry of M lets a result through) and
``M.V`` (values: the stored entries whose value is nonzero) make a ``Mask``
of a Matrix or Vector; ``~mask`` is its complement.  Every operator that
produces a Matrix or Vector takes ``mask=``, ``out=``, ``accum=`` and
``replace=`` and ends with one shared step, ``finish``: with T the
operator's result and C the ``out`` operand,

* Z = accum(C, T) on the union of their patterns (C's entries alone and T's
  entries alone are kept as they are), or Z = T without ``accum``;
* inside the mask the result holds Z's entries; outside it C's entries
  (dropped with ``replace=True``).

No ``out``: C is empty, so the result is T restricted to the mask.  spla's
objects stay immutable: the result is a new object and C is untouched.

Entries are addressed by one int64 key (``row * ncols + col`` for a matrix,
the index for a vector), sorted in the canonical order, so every step is a
sorted search or a merge of key arrays, on numpy or cupy alike.

Examples
--------
>>> import numpy as np
>>> from spla import Vector, binary
>>> from spla.mask import finish
>>> C = Vector.from_coo([0, 1], [10.0, 20.0], size=4)
>>> T = Vector.from_coo([1, 2, 3], [1.0, 2.0, 3.0], size=4)
>>> M = Vector.from_coo([1, 3], size=4)
>>> finish("demo", T, M.S, C, binary.plus).to_dense()
array([10., 21.,  0.,  3.])
>>> finish("demo", T, ~M.S, C, None, True).to_dense()
array([0., 0., 2., 0.])
"""

import functools

import numpy as np

from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.arrays import narrow_indices
from spla.matrix import Matrix
from spla.util import row_ids
from spla.vector import Vector, frozen
from kernels import semiring_ops as ops

#: Cache key of a product computed only inside its mask (``spla.product``):
#: ``finish`` then skips the membership test, and pops the mark.
INSIDE_MASK = "inside_mask"

#: Operators whose result on two structural operands is structural again.
_PATTERN_OPS = ("pair", "any", "first", "second", "min", "max", "lor", "land")


class Mask:
    """A structural or value mask of a Matrix or Vector, maybe complemented.

    Made by ``M.S``, ``M.V`` and ``~``; never built directly.

    Examples
    --------
    >>> from spla import Vector
    >>> m = ~Vector.from_coo([0, 2], [1.0, 0.0], size=3).V
    >>> m
    <spla.Mask ~V of a Vector of size 3>
    >>> m.allows([0, 1, 2]).tolist()
    [False, True, True]
    """

    __slots__ = ("parent", "structural", "complement", "_keys")

    def __init__(self, parent, structural, complement=False):
        self.parent = parent
        self.structural = structural
        self.complement = complement
        self._keys = None

    def __invert__(self):
        return Mask(self.parent, self.structural, not self.complement)

    def __repr__(self):
        kind = ("~" if self.complement else "") + ("S" if self.structural else "V")
        p = self.parent
        what = (f"a Vector of size {p.size}" if isinstance(p, Vector)
                else f"a Matrix {p.nrows}x{p.ncols}")
        return f"<spla.Mask {kind} of {what}>"

    @property
    def shape(self):
        return self.parent.shape

    def true_keys(self):
        """Sorted keys of the positions the uncomplemented mask lets through."""
        if self._keys is None:
            keys, vals = entries(self.parent)
            if not self.structural and vals is not None:
                keys = keys[vals != 0]
            self._keys = keys
        return self._keys

    def allows(self, keys):
        """Boolean array: which of ``keys`` the mask lets through."""
        xp = self.parent.xp
        keys = xp.asarray(keys, dtype=np.int64)
        return member(self.true_keys(), keys) ^ self.complement


def _mask_property(structural):
    def prop(self):
        return Mask(self, structural)
    prop.__doc__ = ("The structural mask of this object (every stored entry)." if structural
                    else "The value mask of this object (stored entries that are nonzero).")
    return property(prop)


for _cls in (Matrix, Vector):
    _cls.S = _mask_property(True)
    _cls.V = _mask_property(False)


def locate(sorted_keys, keys):
    """Position of each of ``keys`` in ``sorted_keys`` (distinct), or -1 where absent.

    On the host, when the keys span a range not much wider than the two
    arrays (a Vector's positions, a BFS's frontier and visited set), a
    dense table of that range answers each key in one read: linear work
    where a binary search costs a logarithm per key.  Otherwise (a sparse
    matrix's keys spread over rows x cols, or a device array, where reading
    the ends would block) a binary search.
    """
    xp = _xp(keys)
    if sorted_keys.size == 0 or keys.size == 0:
        return xp.full(keys.size, -1, np.int64)
    if xp is np:
        lo, hi = int(sorted_keys[0]), int(sorted_keys[-1])
        if hi - lo < 4 * (sorted_keys.size + keys.size) + 4096:
            table = np.full(hi - lo + 1, -1, np.int64)
            table[sorted_keys - lo] = np.arange(sorted_keys.size, dtype=np.int64)
            inside = (keys >= lo) & (keys <= hi)
            pos = np.full(keys.size, -1, np.int64)
            pos[inside] = table[keys[inside] - lo]
            return pos
    pos = xp.minimum(xp.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return xp.where(sorted_keys[pos] == keys, pos, -1)


def member(sorted_keys, keys):
    """Boolean array: which ``keys`` occur in ``sorted_keys``."""
    return locate(sorted_keys, keys) >= 0


def _xp(a):
    from spla.backend import xp_of_array
    return xp_of_array(a)


def entries(X):
    """(keys, values or None) of a Matrix or Vector, keys sorted."""
    if isinstance(X, Vector):
        return X.indices, X.values
    return row_ids(X.indptr, X.nnz) * np.int64(X.ncols) + X.indices.astype(np.int64), X.values


def positions(X, keys):
    """(i, j) ids of the entries at ``keys`` of an object shaped like X."""
    if isinstance(X, Vector) or len(X.shape) == 1:
        return keys, keys * 0
    n = np.int64(max(X.shape[1], 1))
    return keys // n, keys % n


def rebuild(like, keys, vals):
    """A Matrix or Vector shaped like ``like`` from sorted keys and values."""
    if isinstance(like, Vector):
        return Vector._new(keys, vals, like.size)
    xp = _xp(keys)
    nrows, ncols = like.shape
    n = np.int64(max(ncols, 1))
    rows = keys // n
    ptr = xp.searchsorted(rows, xp.arange(nrows + 1, dtype=np.int64)).astype(np.int64)
    return Matrix._new(ptr, narrow_indices(keys % n, ncols), vals, (nrows, ncols))


def ones_if_none(xp, vals, n):
    return xp.ones(n, np.int64) if vals is None else vals


def dense_flags(X, keys_list):
    """Host flag arrays of a Vector's size marking each of ``keys_list``, or
    None where sorted-key work is the better choice (a device array, or
    keys much sparser than the vector: flags cost its size)."""
    if not isinstance(X, Vector) or X.xp is not np:
        return None
    if X.size > 8 * sum(k.size for k in keys_list) + 4096:
        return None
    flags = []
    for keys in keys_list:
        f = np.zeros(X.size, np.bool_)
        f[keys] = True
        flags.append(f)
    return flags


def dense_union(like, present, parts):
    """A Vector shaped like ``like`` from disjoint (keys, values) parts, its
    keys the positions set in ``present``: a scatter and a gather, no sort
    (values promoted as ``concatenate`` promotes them)."""
    dv = np.empty(like.size, np.result_type(*[v.dtype for _, v in parts]))
    for k, v in parts:
        dv[k] = v
    keys = np.flatnonzero(present)
    return Vector._new(keys, dv[keys], like.size)


#: Built-in operators whose union of two host vectors runs as one sorted
#: merge (``kernels.cpu.vector.union_sorted``): name -> (additive code, swap).
#: ``second`` is ``any`` with the operands swapped.  min and max stay out:
#: the kernel's comparisons and numpy's treat a NaN differently.
_UNION_CODES = {"plus": (ops.ADD_PLUS, False), "times": (ops.ADD_TIMES, False),
                "first": (ops.ADD_ANY, False), "any": (ops.ADD_ANY, False),
                "second": (ops.ADD_ANY, True)}
#: Value dtypes of that merge (each one a compiled signature).
UNION_DTYPES = (np.dtype(np.int64), np.dtype(np.float64))


def union_dtype(*vals):
    """The dtype of a union of these value arrays (None: a pattern's ones,
    int64), as ``merge``'s concatenation promotes them."""
    return np.result_type(*[np.int64 if v is None else v.dtype for v in vals])


@functools.lru_cache(maxsize=1)
def host_vector_kernels():
    """``kernels.cpu.vector`` through spla's dispatch point, looked up once
    (a vector operator's per-call cost is a few microseconds)."""
    from spla import backend
    return backend.kernels_for("cpu").vector


def sorted_union(size, ka, va, kb, vb, code, dt):
    """A host Vector of the union of two sorted key sets, values cast to
    ``dt``; a key of both sides gets ``add_op(code, a, b)``."""
    K = host_vector_kernels()
    a_val = np.zeros(0, dt) if va is None else va.astype(dt, copy=False)
    b_val = np.zeros(0, dt) if vb is None else vb.astype(dt, copy=False)
    keys, vals = K.union_sorted(frozen(ka), frozen(a_val), va is not None, frozen(kb),
                                frozen(b_val), vb is not None, code, np.ones(1, dt))
    return Vector._new(keys, vals, size)


def _vector_union(A, B, op):
    """``merge``'s union of two host Vectors by one sorted merge, or None
    where the operator or the dtypes are not the merge's."""
    from spla.operators import BINARY
    entry = _UNION_CODES.get(op.name)
    if (entry is None or BINARY.get(op.name) is not op or not isinstance(A, Vector)
            or A.xp is not np):
        return None
    va, vb = A.values, B.values
    dt = union_dtype(va, vb)
    if dt not in UNION_DTYPES:
        return None
    code, swap = entry
    if swap:
        A, va, B, vb = B, vb, A, va
    out = sorted_union(A.size, A.indices, va, B.indices, vb, code, dt)
    if va is None and vb is None and op.name in _PATTERN_OPS:
        return Vector._new(out.indices, None, out.size)
    return out


def merge(func, A, B, op, union, left_default=None, right_default=None):
    """A ⊕ B on matched entries (``union``: also the entries of one side).

    Entries of one side only are kept as they are, or, given the defaults
    (``ewise_union``), combined with the other side's default value.
    """
    if union and left_default is None:
        out = _vector_union(A, B, op)
        if out is not None:
            return out
    xp = A.xp
    ka, va = entries(A)
    kb, vb = entries(B)
    pattern = va is None and vb is None and op.name in _PATTERN_OPS
    va, vb = ones_if_none(xp, va, ka.size), ones_if_none(xp, vb, kb.size)
    flags = dense_flags(A, (ka, kb))
    if flags is not None:  # a vector's membership by flags: both key sets sorted
        hit_a, hit_b = flags[1][ka], flags[0][kb]
        vb_both = vb[hit_b]
    else:
        pos = locate(kb, ka)
        hit_a = pos >= 0
        vb_both = vb[pos[hit_a]]
    k_both = ka[hit_a]
    i, j = positions(A, k_both)
    v_both = op(va[hit_a], vb_both, i, j, func=func)
    if not union:
        return rebuild(A, k_both, None if pattern else v_both)
    if flags is None:
        hit_b = member(ka, kb)
    ka1, va1 = ka[~hit_a], va[~hit_a]
    kb1, vb1 = kb[~hit_b], vb[~hit_b]
    if left_default is not None:
        i, j = positions(A, ka1)
        va1 = op(va1, xp.full(ka1.size, right_default, vb.dtype), i, j, func=func)
        i, j = positions(A, kb1)
        vb1 = op(xp.full(kb1.size, left_default, va.dtype), vb1, i, j, func=func)
    if flags is not None:
        out = dense_union(A, flags[0] | flags[1], ((k_both, v_both), (ka1, va1), (kb1, vb1)))
        return Vector._new(out.indices, None, A.size) if pattern else out
    keys = xp.concatenate([k_both, ka1, kb1])
    vals = xp.concatenate([v_both, va1, vb1])
    order = xp.argsort(keys, kind="stable")
    return rebuild(A, keys[order], None if pattern else vals[order])


def check_mask(func, mask, shape):
    """The mask (or None) after checking its type and shape."""
    if mask is None:
        return None
    if isinstance(mask, (Matrix, Vector)):
        fail(DTypeError, func, "mask", "a mask: M.S (structure), M.V (values) or ~M.S / ~M.V",
             f"a {type(mask).__name__} (write M.S or M.V)")
    if not isinstance(mask, Mask):
        fail(DTypeError, func, "mask", "a mask (M.S, M.V, ~M.S, ~M.V)", describe(mask))
    if tuple(mask.shape) != tuple(shape):
        fail(DimensionMismatch, func, "mask", f"a mask of shape {tuple(shape)}",
             f"shape {tuple(mask.shape)}")
    return mask


def check_out(func, out, T_like_shape, kind):
    """``out`` after checking its type and shape."""
    if out is None:
        return None
    if not isinstance(out, kind):
        fail(DTypeError, func, "out", f"a spla.{kind.__name__}", describe(out))
    if tuple(out.shape) != tuple(T_like_shape):
        fail(DimensionMismatch, func, "out", f"shape {tuple(T_like_shape)}",
             f"shape {tuple(out.shape)}")
    return out


def check_accum(func, accum):
    """The accumulator as a BinaryOp (None stays None)."""
    if accum is None:
        return None
    from spla.operators import BinaryOp, as_binary
    from spla.semiring import Semiring
    if isinstance(accum, Semiring) or not (isinstance(accum, (BinaryOp, str))
                                           or hasattr(accum, "binop")):
        fail(DTypeError, func, "accum", "a binary operator or monoid (e.g. spla.binary.plus)",
             describe(accum))
    op = as_binary(func, "accum", accum)
    if op.positional is not None:
        fail(DTypeError, func, "accum", "an operator of the values (not a positional one)",
             repr(op))
    return op


def check_write(func, shape, kind, mask, out, accum, replace):
    """Check the write arguments of an operator, before it computes anything."""
    mask = check_mask(func, mask, shape)
    if mask is not None and kind in (Matrix, Vector) and not isinstance(mask.parent,
                                                                       (Matrix, Vector)):
        # A DistMatrix's mask serves the distributed mxm only: refuse it here,
        # before any work, rather than when the result is written.
        fail(DTypeError, func, "mask", "the mask of a local Matrix or Vector",
             f"{mask!r} (a DistMatrix's mask serves spla.mxm on DistMatrix operands)")
    out = check_out(func, out, shape, kind)
    accum = check_accum(func, accum)
    if not isinstance(replace, (bool, np.bool_)):
        fail(InvalidValue, func, "replace", "True or False", describe(replace))
    if accum is not None and out is None:
        fail(InvalidValue, func, "accum", "None when no out= is given (nothing to accumulate into)",
             repr(accum))
    from spla import backend
    objs = [o for o in (mask and mask.parent, out) if o is not None]
    if objs:
        backend.same_device(func, *objs)
    return mask, out, accum


def finish(func, T, mask=None, out=None, accum=None, replace=False):
    """The result of writing T into ``out`` under ``mask`` with ``accum``.

    Arguments are assumed checked (``check_write``); see the module notes.
    """
    inside = (mask is not None and isinstance(T, Matrix)
              and T._cache.pop(INSIDE_MASK, None) is mask)
    if out is None and (mask is None or inside):
        return T  # nothing to merge, and nothing outside the mask to drop
    Z = T if accum is None else merge(func, out, T, accum, True)
    if mask is None:
        return Z
    xp = T.xp
    kz, vz = entries(Z)
    keep = mask.allows(kz)
    kz, vz = kz[keep], (None if vz is None else vz[keep])
    if out is None or replace:
        return rebuild(T, kz, vz)
    kc, vc = entries(out)
    outside = ~mask.allows(kc)
    kc = kc[outside]
    vals = None
    if vz is not None or vc is not None:
        vc = None if vc is None else vc[outside]
        vals = xp.concatenate([ones_if_none(xp, vz, kz.size), ones_if_none(xp, vc, kc.size)])
    keys = xp.concatenate([kz, kc])
    order = xp.argsort(keys, kind="stable")
    return rebuild(T, keys[order], None if vals is None else vals[order])
