"""``spla.Vector``: a sparse vector (sorted indices and values, or a pattern).

A vector of size n is stored as its sorted, distinct int64 ``indices`` and
``values`` (float32/64, int32/64), or ``values=None`` for a structural
vector whose entries count as 1.  Like ``Matrix`` it is immutable and lives
on the CPU (numpy) or a GPU (cupy).  Operators view it as a 1 x n matrix.
"""

import numpy as np

from spla import backend
from spla.checks import as_index_array, as_int, describe, fail, value_dtype
from spla.exceptions import DimensionMismatch
from spla.arrays import as_xp_array, readonly, values_close, widen_values
from spla.matrix import Matrix


def frozen(a):
    """``spla.arrays.readonly`` with the host test first: operators make many
    small vectors (a BFS, three per level), and the generic device lookup
    per array showed in their per-call cost.  Host kernels also get their
    array arguments through it: numba compiles a kernel once per
    combination of read-only and writable arguments, so one kind keeps the
    compiled signatures few.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.vector import frozen
    >>> frozen(np.arange(3)).flags.writeable
    False
    """
    if type(a) is np.ndarray:
        if a.flags.writeable:
            a = a.view()
            a.flags.writeable = False
        return a
    return readonly(a)


class Vector:
    """A sparse vector on the CPU or a GPU.

    Build one with ``Vector.from_coo`` or ``Vector.from_dense``.

    Attributes
    ----------
    indices : int64 array, sorted, distinct
    values : array or None
    size : int
    nvals : int
    dtype : numpy.dtype or None
    device : {'cpu', 'cuda'}

    Examples
    --------
    >>> from spla import Vector
    >>> u = Vector.from_coo([3, 0], [2.0, 1.0], size=5)
    >>> u
    <spla.Vector size=5, nvals=2, dtype=float64, device=cpu>
    >>> u.to_dense()
    array([1., 0., 0., 2., 0.])
    """

    __slots__ = ("_indices", "_values", "_size", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError("Vector: use a factory (Vector.from_coo, Vector.from_dense)")

    @classmethod
    def _new(cls, indices, values, size):
        self = object.__new__(cls)
        self._indices = frozen(indices)
        self._values = None if values is None else frozen(values)
        self._size = int(size)
        return self

    @classmethod
    def from_coo(cls, indices, values=None, size=None, *, duplicates="sum"):
        """A vector from indices in any order (and values; omit for a pattern).

        Parameters
        ----------
        indices : array_like of int
        values : array_like, optional
        size : int, optional
            Defaults to one past the largest index.
        duplicates : {'sum', 'error'}, default 'sum'

        Examples
        --------
        >>> from spla import Vector
        >>> Vector.from_coo([1, 1, 0], [1.0, 2.0, 5.0]).to_dense()
        array([5., 3.])
        """
        func = "Vector.from_coo"
        xp, idx = as_xp_array(indices)
        if idx.ndim != 1:
            fail(DimensionMismatch, func, "indices", "a 1-D array", describe(idx))
        n = (int(idx.max()) + 1 if idx.size else 0) if size is None else \
            as_int(func, "size", size, minimum=0)
        if values is not None:
            _, v = as_xp_array(values, like=xp)
            if v.ndim != 1 or v.size != idx.size:
                fail(DimensionMismatch, func, "values", f"a 1-D array of length {idx.size}",
                     describe(v))
            value_dtype(func, "values", v.dtype)
            values = v
        M = Matrix.from_coo(xp.zeros(idx.size, np.int64),
                            as_index_array(func, "indices", idx, n), values, (1, n),
                            duplicates=duplicates)
        return cls._from_row(M)

    @classmethod
    def from_dense(cls, d, *, structural=False):
        """The nonzeros of a 1-D array (booleans give a structural vector).

        Examples
        --------
        >>> import numpy as np
        >>> from spla import Vector
        >>> Vector.from_dense(np.array([0.0, 2.0, 0.0])).indices
        array([1])
        """
        xp, d = as_xp_array(d)
        if d.ndim != 1:
            fail(DimensionMismatch, "Vector.from_dense", "d", "a 1-D array", describe(d))
        idx = xp.flatnonzero(d).astype(np.int64)
        vals = None if structural else widen_values("Vector.from_dense", "d", d[idx])
        return cls._new(idx, vals, d.size)

    @classmethod
    def _from_row(cls, M):
        """The only row of a 1 x n matrix."""
        return cls._new(M.indices.astype(np.int64), M.values, M.ncols)

    @classmethod
    def _from_col(cls, M):
        """The only column of an n x 1 matrix."""
        xp = M.xp
        idx = xp.flatnonzero(xp.diff(M.indptr)).astype(np.int64)
        return cls._new(idx, M.values, M.nrows)

    def _as_row(self):
        """This vector as a 1 x size matrix (shares the arrays)."""
        xp = self.xp
        ptr = xp.asarray([0, self.nvals], dtype=np.int64)
        from spla.arrays import narrow_indices
        return Matrix._new(ptr, narrow_indices(self._indices, self._size), self._values,
                           (1, self._size))

    def _as_col(self):
        """This vector as a size x 1 matrix."""
        xp = self.xp
        ptr = xp.zeros(self._size + 1, np.int64)
        ptr[self._indices + 1] = 1
        return Matrix._new(xp.cumsum(ptr), xp.zeros(self.nvals, np.int32), self._values,
                           (self._size, 1))

    @property
    def indices(self):
        return self._indices

    @property
    def values(self):
        return self._values

    @property
    def size(self):
        return self._size

    @property
    def shape(self):
        return (self._size,)

    @property
    def nvals(self):
        """Stored entries."""
        return int(self._indices.size)

    @property
    def dtype(self):
        return None if self._values is None else self._values.dtype

    @property
    def device(self):
        if type(self._indices) is np.ndarray:  # exactly numpy's: on the host
            return backend.CPU
        return backend.device_of(self._indices)

    @property
    def xp(self):
        return backend.xp_of(self.device)

    def __repr__(self):
        dt = "structural" if self._values is None else str(self._values.dtype)
        return (f"<spla.Vector size={self._size}, nvals={self.nvals}, dtype={dt}, "
                f"device={self.device}>")

    def to_coo(self):
        """The stored entries as ``(indices, values)``: int64 ids, ascending,
        and a copy of the values (None for a structural vector), on this
        vector's device; the inverse of ``from_coo``.

        Examples
        --------
        >>> from spla import Vector
        >>> Vector.from_coo([3, 1], [2.0, 5.0], size=4).to_coo()
        (array([1, 3]), array([5., 2.]))
        """
        values = None if self._values is None else self._values.copy()
        return self._indices.astype(np.int64), values

    def to_dense(self, fill=0):
        """A dense 1-D array (ones for a structural vector; ``fill`` elsewhere).

        Examples
        --------
        >>> from spla import Vector
        >>> Vector.from_coo([1], size=3).to_dense(fill=-1)
        array([-1.,  1., -1.])
        """
        xp = self.xp
        dt = np.float64 if self._values is None else self._values.dtype
        d = xp.full(self._size, fill, dt)
        d[self._indices] = 1 if self._values is None else self._values
        return d

    def to(self, device):
        """This vector on ``device`` ('cpu' or 'cuda'); itself if already there.

        Examples
        --------
        >>> from spla import Vector
        >>> u = Vector.from_coo([0], [1.0])
        >>> u.to("cpu") is u
        True
        """
        device = backend.normalize_device("Vector.to", device)
        if device == self.device:
            return self
        conv = backend.to_host if device == "cpu" else backend.require_cupy("Vector.to").asarray
        vals = None if self._values is None else conv(self._values)
        return Vector._new(conv(self._indices), vals, self._size)

    def isclose(self, other, *, rel_tol=1e-7, abs_tol=0.0):
        """Same size, device and pattern, and values close as ``math.isclose``
        says (see ``Matrix.isclose``).

        Examples
        --------
        >>> from spla import Vector
        >>> Vector.from_coo([0], [1.0]).isclose(Vector.from_coo([0], [1.0 + 1e-9]))
        True
        """
        return self._same_pattern(other) and values_close(
            "Vector.isclose", self._values, other._values, rel_tol, abs_tol)

    def _same_pattern(self, other):
        """Whether ``other`` is a vector of this size, device and pattern."""
        if not isinstance(other, Vector) or other.size != self.size:
            return False
        if other.device != self.device or other.nvals != self.nvals:
            return False
        return bool(self.xp.array_equal(self._indices, other._indices))

    def isequal(self, other):
        """Same size, pattern, dtype and values (exact).

        Examples
        --------
        >>> from spla import Vector
        >>> Vector.from_coo([0], [1.0]).isequal(Vector.from_coo([0], [1.0]))
        True
        """
        if not self._same_pattern(other) or (self._values is None) != (other._values is None):
            return False
        return self._values is None or (self.dtype == other.dtype and bool(
            self.xp.array_equal(self._values, other._values)))

