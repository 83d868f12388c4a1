"""Sparse matrix times sparse matrix over a semiring, evaluated lazily.

``mxm(A, B)`` (and ``A @ B``) checks its operands at once and returns an
``MxmExpr``: nothing is computed until the product is *materialised*, by
``expr.new()`` or by an operator that needs every entry (any operator given
an expression where it expects a matrix materialises it).  Operators that can
do better consume the expression directly: ``sample_rows(Q @ A, k)`` with a
row-selection ``Q`` samples straight from A's rows and never forms ``Q @ A``.
"""

import sys

import numpy as np

from spla import backend
from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError
from spla.matrix import HOST_INDPTR, Matrix
from spla.semiring import as_semiring, plus_times


class MxmExpr:
    """A lazy product ``A ⊕.⊗ B``; call ``.new()`` to compute it.

    Attributes
    ----------
    a, b : Matrix
        The operands (already checked).
    semiring : Semiring

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix
    >>> A = Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> P = A @ A
    >>> P
    <spla.MxmExpr (lazy) 2x2 = A(2x2, nnz=3) plus_times B(2x2, nnz=3); .new() computes it>
    >>> P.new().to_dense()
    array([[1., 8.],
           [0., 9.]])
    """

    __slots__ = ("a", "b", "semiring")

    def __init__(self, a, b, semiring):
        self.a = a
        self.b = b
        self.semiring = semiring

    @property
    def shape(self):
        return (self.a.nrows, self.b.ncols)

    @property
    def device(self):
        return self.a.device

    @property
    def dtype(self):
        return self.semiring.output_dtype(self.a.dtype, self.b.dtype)

    def is_row_selection(self):
        """True when every row of A has at most one entry (a scaled row gather)."""
        return _max_row_nnz(self.a) <= 1

    def new(self):
        """Compute the product: a new ``Matrix``."""
        return _compute(self.a, self.b, self.semiring)

    def __repr__(self):
        a, b = self.a, self.b
        return (f"<spla.MxmExpr (lazy) {self.shape[0]}x{self.shape[1]} = "
                f"A({a.nrows}x{a.ncols}, nnz={a.nnz}) {self.semiring.name} "
                f"B({b.nrows}x{b.ncols}, nnz={b.nnz}); .new() computes it>")


def as_matrix(func, arg, x):
    """A Matrix from a Matrix or a lazy expression (materialised)."""
    if isinstance(x, Matrix):
        return x
    if isinstance(x, MxmExpr):
        return x.new()
    fail(DTypeError, func, arg, "a spla.Matrix (or a lazy expression)", describe(x))


def mxm(A, B, semiring=plus_times, *, mask=None, out=None, accum=None, replace=False):
    """Sparse matrix product ``A ⊕.⊗ B`` over a semiring (lazy).

    Parameters
    ----------
    A : Matrix or MxmExpr, shape (m, k)
    B : Matrix or MxmExpr, shape (k, n)
    semiring : Semiring or str, default ``plus_times``
        See ``spla.semiring``; a structural operand counts its entries as 1.
    mask : Mask, optional
        ``M.S``, ``M.V``, ``~M.S`` or ``~M.V`` of an (m, n) matrix: only
        the entries it lets through are written (see ``spla.mask``).  A
        mask that is not complemented bounds the work: only the mask's
        entries are computed, so ``mxm(L, L.T, mask=L.S)`` never forms L·Lᵀ.
        With ``DistMatrix`` operands it may be a DistMatrix's mask
        (``D.S``), a replicated one's, or a local Matrix's (see
        ``spla.dist.spgemm.dist_mxm``).
    out : Matrix, optional
        The output operand C, shape (m, n): entries outside the mask are
        kept (dropped with ``replace=True``).  C itself is not modified.
        With ``DistMatrix`` operands, a DistMatrix placed as ``A``.
    accum : BinaryOp, Monoid or str, optional
        Combine C's entries with the product's (needs ``out``).
    replace : bool, default False

    Returns
    -------
    MxmExpr or Matrix
        Without ``mask``/``out``/``accum``: a lazy ``MxmExpr`` (call
        ``.new()`` for the ``Matrix``; operators accept it as is).  With
        any of them, the ``Matrix`` at once.  When ``A`` or ``B`` is a
        ``DistMatrix``, the distributed product (a ``DistMatrix``).

    Raises
    ------
    DimensionMismatch
        ``A.ncols != B.nrows``.
    DeviceMismatch
        Operands on different devices.

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix, mxm, semiring
    >>> A = Matrix.from_dense(np.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> mxm(A, A, semiring.plus_pair).new().to_dense()
    array([[1, 0],
           [0, 1]])
    >>> mxm(A, A, mask=A.S).nnz        # A·A is diagonal: nothing inside A's pattern
    0
    """
    func = "mxm"
    # Distributed operands (or a distributed mask or out) first: dist_mxm
    # checks every argument collectively, so a bad one on one rank raises
    # on every rank instead of here.
    dist = _dist_dispatch(A, B, semiring, mask, out, accum, replace)
    if dist is not None:
        return dist
    sr = as_semiring(func, semiring)
    A = as_matrix(func, "A", A)
    B = as_matrix(func, "B", B)
    if A.ncols != B.nrows:
        fail(DimensionMismatch, func, "B", f"a matrix with {A.ncols} rows (A.ncols)",
             f"shape {B.shape}")
    backend.same_device(func, A, B)
    if mask is None and out is None and accum is None:
        return MxmExpr(A, B, sr)
    from spla.mask import check_write, finish
    from spla.product import product
    mask, out, accum = check_write(func, (A.nrows, B.ncols), Matrix, mask, out, accum, replace)
    if mask is not None:
        backend.same_device(func, A, mask.parent)
    return finish(func, product(A, B, sr, mask), mask, out, accum, replace)


def _dist_dispatch(A, B, sr, mask, out, accum, replace):
    # A DistMatrix can only exist once spla.dist is imported: no import here.
    dist = sys.modules.get("spla.dist")
    if dist is None:
        return None
    # A distributed mask or out with local operands goes there too, to be
    # refused on every rank (the local path cannot read a DistMatrix).
    if any(isinstance(X, dist.DistMatrix) for X in (A, B, getattr(mask, "parent", None), out)):
        return dist.dist_mxm(A, B, sr, mask=mask, out=out, accum=accum, replace=replace)
    return None


def _max_row_nnz(M):
    """The longest row's entry count, cached on the (immutable) matrix.

    Read from the host copy of the row pointer when the matrix keeps one
    (``spla.matrix.HOST_INDPTR``): on a GPU the device's is a blocking read.
    """
    if M.nrows == 0:
        return 0
    got = M._cache.get("max_row_nnz")
    if got is None:
        host = M._cache.get(HOST_INDPTR)
        got = int((np.diff(host) if host is not None else M.xp.diff(M.indptr)).max())
        M._cache["max_row_nnz"] = got
    return got


def kernel_values(M, dtype):
    """(values cast to dtype or an empty array, has_values) for kernels."""
    if M.values is None:
        return M.xp.zeros(0, dtype), False
    return M.values.astype(dtype, copy=False), True


def _compute(A, B, sr):
    from spla.product import product
    return product(A, B, sr)
