"""``spla.Matrix`` to and from scipy.sparse and cupyx.scipy.sparse.

``Matrix.from_scipy``, ``Matrix.from_cupyx`` (class methods),
``Matrix.to_scipy`` and ``Matrix.to_cupyx``: the conversions to the two
sparse libraries a user already has matrices in.  They are written here
and bound to ``Matrix`` when spla is imported (``import spla`` imports this
module), which keeps ``spla.matrix`` to the type itself.

Examples
--------
>>> import scipy.sparse as sp
>>> from spla import Matrix
>>> A = Matrix.from_scipy(sp.csr_matrix([[0.0, 2.0], [3.0, 0.0]]))
>>> A.to_scipy().toarray()
array([[0., 2.],
       [3., 0.]])
"""

import numpy as np

from spla import backend
from spla.arrays import widen_values
from spla.checks import describe, fail
from spla.exceptions import DTypeError
from spla.matrix import Matrix
from spla.optional import require


def from_scipy(cls, S, *, structural=False):
    """A matrix from any scipy.sparse matrix or array (canonicalised).

    Parameters
    ----------
    S : scipy.sparse matrix or array
    structural : bool, default False
        Drop the values and keep the pattern.

    Returns
    -------
    Matrix
        On the CPU; integer and float values widened as ``from_dense`` does.

    Raises
    ------
    DTypeError
        ``S`` is not a scipy.sparse matrix, or its values are not real.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from spla import Matrix
    >>> Matrix.from_scipy(sp.eye(3, format="csr"))
    <spla.Matrix 3x3, nnz=3, dtype=float64, device=cpu>
    """
    import scipy.sparse as sp
    if not sp.issparse(S):
        fail(DTypeError, "Matrix.from_scipy", "S", "a scipy.sparse matrix", describe(S))
    S = S.tocsr()
    if not S.has_canonical_format:
        S = S.copy()
        S.sum_duplicates()
    values = None if structural else widen_values("Matrix.from_scipy", "S", S.data)
    return cls.from_csr(S.indptr.astype(np.int64), S.indices, values, S.shape)


def from_cupyx(cls, S, *, structural=False):
    """A GPU matrix from a ``cupyx.scipy.sparse`` matrix (canonicalised).

    Parameters
    ----------
    S : cupyx.scipy.sparse matrix
    structural : bool, default False
        Drop the values and keep the pattern.

    Returns
    -------
    Matrix
        On the GPU.

    Raises
    ------
    MissingDependency
        cupy is not installed or sees no GPU.

    Examples
    --------
    >>> import cupyx.scipy.sparse as csp                    # doctest: +SKIP
    >>> from spla import Matrix
    >>> Matrix.from_cupyx(csp.identity(3, format="csr"))    # doctest: +SKIP
    <spla.Matrix 3x3, nnz=3, dtype=float64, device=cuda>
    """
    S = S.tocsr()
    S.sum_duplicates()
    cp = backend.require_cupy("Matrix.from_cupyx")
    values = None if structural else S.data
    return cls.from_csr(S.indptr.astype(cp.int64), S.indices, values, S.shape)


def to_scipy(self, *, copy=True):
    """A ``scipy.sparse.csr_matrix`` on the host (ones for a structural matrix).

    Parameters
    ----------
    copy : bool, default True
        Return an ordinary scipy matrix that owns writeable copies of the
        arrays: every scipy operation works on it, in place ones included
        (``eliminate_zeros``, ``data *= 2``), and nothing done to it
        reaches this matrix.  ``copy=False`` shares this matrix's
        (read-only) host arrays instead: cheaper for large matrices, but
        scipy's in-place operations on the result then raise
        ``ValueError`` (read-only buffers), and a structural matrix still
        gets a fresh array of ones.

    Examples
    --------
    >>> from spla import Matrix
    >>> S = Matrix.from_coo([0], [1], [2.0]).to_scipy()
    >>> S.data *= 2          # an ordinary, writeable scipy matrix
    >>> S.toarray()
    array([[0., 4.]])
    """
    import scipy.sparse as sp
    h = backend.to_host

    def host(a):
        out = h(a)  # a GPU array comes back as a fresh host copy already
        return out.copy() if copy and out is a else out
    vals = np.ones(self.nnz, np.float64) if self.values is None else host(self.values)
    return sp.csr_matrix((vals, host(self.indices), host(self.indptr)),
                         shape=self.shape, copy=False)


def to_cupyx(self):
    """A ``cupyx.scipy.sparse.csr_matrix`` on the GPU (float64 ones for a
    structural matrix, float64 for integer values: cuSPARSE takes floating
    types only).

    Raises
    ------
    MissingDependency
        cupy is not installed or sees no GPU.

    Examples
    --------
    >>> from spla import Matrix
    >>> Matrix.from_coo([0], [1], [2.0]).to_cupyx().toarray()   # doctest: +SKIP
    array([[0., 2.]])
    """
    backend.require_cupy("Matrix.to_cupyx")
    csp = require("cupyx.scipy.sparse", what="Matrix.to_cupyx", extra="gpu")
    m = self.to("cuda")
    vals = m.xp.ones(m.nnz, np.float64) if m.values is None else m.values
    if vals.dtype.kind in "iu":
        vals = vals.astype(np.float64)
    return csp.csr_matrix((vals, m.indices, m.indptr), shape=m.shape)


Matrix.from_scipy = classmethod(from_scipy)
Matrix.from_cupyx = classmethod(from_cupyx)
Matrix.to_scipy = to_scipy
Matrix.to_cupyx = to_cupyx
