"""Operator syntax of ``spla.Matrix``: ``A @ B``, ``A.T``, ``A[rows, cols]``, ``A.S``, ``A.V``.

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
"""

from spla import mask as _mask  # noqa: F401 - binds Matrix.S / .V and Vector.S / .V
from spla.exceptions import IndexOutOfRange
from spla.extract import extract
from spla.matrix import Matrix
from spla.mxm import mxm
from spla.structure import transpose


def _matmul(self, other):
    """``A @ B``: the lazy product ``spla.mxm(A, B)`` (plus_times)."""
    return mxm(self, other)


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


Matrix.__matmul__ = _matmul
Matrix.T = property(_transpose)
Matrix.__getitem__ = _getitem
