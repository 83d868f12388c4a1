"""Operator syntax of ``spla.Matrix``: ``A @ B``, ``A.T``, ``A[rows, cols]``, ``A.S``, ``A.V``.

``@`` reads as in scipy, torch and python-graphblas, by its operands:

==========================  ==============================================
``A @ B`` (matrices)        ``mxm(A, B)``: a lazy product (``.new()``)
``A @ u``, ``u @ A``        ``mxv(A, u)``, ``vxm(u, A)`` for a ``Vector``
``A @ X``, ``X @ A``        ``spmm``: a dense result for a numpy or cupy
                            array ``X`` (1-D or 2-D, float32/float64)
==========================  ==============================================

The syntax needs the operators (``mxm``, ``transpose``, ``extract``) and the
operators need the ``Matrix`` type.  Binding the syntax here, in a module
above both, keeps ``spla.matrix`` free of imports from the operator modules:
the import graph of spla has no cycle.  ``import spla`` imports this module,
so the syntax is always there.

Examples
--------
>>> import numpy as np
>>> import spla
>>> A = spla.Matrix.from_dense(np.array([[1.0, 2.0], [0.0, 3.0]]))
>>> (A @ A).new().to_dense()
array([[1., 8.],
       [0., 9.]])
>>> A.T.to_dense()
array([[1., 0.],
       [2., 3.]])
>>> A[[1], :].to_dense()
array([[0., 3.]])
>>> A.S, ~A.V
(<spla.Mask S of a Matrix 2x2>, <spla.Mask ~V of a Matrix 2x2>)
>>> A @ np.array([1.0, 1.0]), np.array([1.0, 1.0]) @ A
(array([3., 3.]), array([1., 5.]))
>>> (A @ spla.Vector.from_coo([1], [2.0], size=2)).to_dense()
array([4., 6.])
"""

import numpy as np

from spla import backend
from spla import mask as _mask  # noqa: F401 - binds Matrix.S / .V and Vector.S / .V
from spla.exceptions import IndexOutOfRange
from spla.extract import extract
from spla.graphblas import mxv, vxm
from spla.matrix import Matrix
from spla.mxm import MxmExpr, mxm
from spla.spmm import spmm
from spla.structure import transpose
from spla.vector import Vector


def _dense(x):
    """Whether ``x`` is a numpy or cupy array: ``@``'s dense operand."""
    return isinstance(x, np.ndarray) or backend.device_of(x) == backend.CUDA


def _matmul(self, other):
    """``A @ B`` (plus_times): ``mxm`` of two matrices (lazy), ``mxv`` of a
    Vector, ``spmm`` of a numpy or cupy array (a dense result)."""
    if isinstance(other, Vector):
        return mxv(self, other)
    if _dense(other):
        return spmm(self, other)
    return mxm(self, other)


def _rmatmul(self, other):
    """``X @ A`` for a numpy or cupy array ``X``: ``(A^T X^T)^T`` by ``spmm``
    (a transposed view for 2-D ``X``); ``u @ A`` of a Vector is ``vxm``."""
    if isinstance(other, Vector):
        return vxm(other, self)
    if _dense(other):
        return spmm(self, other.T, transpose=True).T
    return mxm(other, self)


def _vector_matmul(self, other):
    """``u @ A``: ``vxm(u, A)`` (plus_times)."""
    return vxm(self, other)


def _transpose(self):
    """The transpose (a new matrix)."""
    return transpose(self)


def _getitem(self, key):
    """``A[rows, cols]`` with index arrays or ``:``; see ``spla.extract``."""
    if not isinstance(key, tuple) or len(key) != 2:
        raise IndexOutOfRange("Matrix.__getitem__: use A[rows, cols] with arrays or ':'")
    r, c = key

    def whole(x):  # only ':' means every row/column (arrays compare elementwise)
        return isinstance(x, slice) and x == slice(None)
    return extract(self, None if whole(r) else r, None if whole(c) else c)


Matrix.__matmul__ = MxmExpr.__matmul__ = _matmul
Matrix.__rmatmul__ = MxmExpr.__rmatmul__ = _rmatmul
# numpy defers ``X @ A`` (and its other binary operators) to these classes
# instead of treating A as an object scalar.
Matrix.__array_ufunc__ = MxmExpr.__array_ufunc__ = None
Vector.__matmul__ = _vector_matmul
Matrix.T = property(_transpose)
Matrix.__getitem__ = _getitem
