"""``spla.Matrix``: a local sparse matrix in canonical CSR.

Canonical means: ``indptr`` is int64, starts at 0, never decreases and ends
at ``nnz``; column indices (int32 or int64) are strictly increasing within
each row (sorted, no duplicates).  ``values`` is a 1-D array of float32,
float64, int32 or int64, or ``None`` for a *structural* matrix, whose every
stored entry counts as 1 (a graph's pattern costs no value array).

A matrix is immutable: its arrays are read-only views, and every operator
returns a new matrix.  That is what lets derived data (the per-row prefix
sums the fused sampler needs) be cached on the matrix safely.

The arrays live on one device: numpy arrays on the CPU, cupy arrays on the
GPU.  Operators run the kernels of that device.
"""

import numpy as np

from spla import backend
from spla.arrays import (as_xp_array, checked_csr, narrow_indices, readonly, values_close,
                         widen_values)
from spla.checks import as_index_array, as_shape, describe, fail, value_dtype
from spla.exceptions import DimensionMismatch, DTypeError, InvalidCSR, InvalidValue
from spla.util import row_ids


#: ``Matrix._cache`` key of a host copy of the row pointer, kept by the
#: operators that read it anyway (``extract_blockwise``): ``split_blocks``
#: cuts by it, and the longest-row test of a product reads it, instead of
#: reading the device's.
HOST_INDPTR = "host_indptr"


class Matrix:
    """A sparse matrix in canonical CSR form, on the CPU or a GPU.

    Build one with a factory (``from_csr``, ``from_coo``, ``from_scipy``,
    ``from_dense``, ``from_cupyx``), never with the constructor.

    Attributes
    ----------
    indptr : int64 array, shape (nrows + 1,)
    indices : int32 or int64 array, shape (nnz,)
    values : array of shape (nnz,) or None
        None for a structural (pattern) matrix.
    shape : tuple of int
    nnz : int
    dtype : numpy.dtype or None
        None for a structural matrix.
    device : {'cpu', 'cuda'}

    Examples
    --------
    >>> import numpy as np
    >>> from spla import Matrix
    >>> A = Matrix.from_coo([0, 0, 2], [1, 2, 0], [1.0, 2.0, 3.0], shape=(3, 3))
    >>> A
    <spla.Matrix 3x3, nnz=3, dtype=float64, device=cpu>
    >>> A.indptr
    array([0, 2, 2, 3])
    """

    __slots__ = ("_indptr", "_indices", "_values", "_shape", "_cache",
                 "__weakref__")

    def __init__(self, *args, **kwargs):
        raise TypeError(
            "Matrix: use a factory (Matrix.from_csr, from_coo, from_scipy, "
            "from_dense, from_cupyx) to build a matrix")

    # ---- construction -------------------------------------------------
    @classmethod
    def _new(cls, indptr, indices, values, shape):
        """Unchecked constructor for internal use: arrays must be canonical."""
        self = object.__new__(cls)
        self._indptr = readonly(indptr)
        self._indices = readonly(indices)
        self._values = None if values is None else readonly(values)
        self._shape = (int(shape[0]), int(shape[1]))
        self._cache = {}
        return self

    @classmethod
    def _new_device(cls, indptr, indices, values, shape):
        """``_new`` for device arrays and Python int sizes (no read-only views to make)."""
        self = object.__new__(cls)
        self._indptr = indptr
        self._indices = indices
        self._values = values
        self._shape = shape
        self._cache = {}
        return self

    @classmethod
    def from_csr(cls, indptr, indices, values=None, shape=None, *, check=True, copy=True,
                 host_indptr=None):
        """A matrix from CSR arrays.

        Parameters
        ----------
        indptr : array_like of int, shape (nrows + 1,)
        indices : array_like of int, shape (nnz,)
            Column indices, strictly increasing within each row.
        values : array_like, shape (nnz,), optional
            Omit for a structural matrix.
        shape : (int, int), optional
            Defaults to ``(len(indptr) - 1, max(indices) + 1)``.
        check : bool, default True
            Verify the arrays (lengths, monotone ``indptr``, indices in range,
            sorted rows without duplicates).  ``check=False`` trusts them:
            only for arrays produced by spla itself.
        copy : bool, default True
            Copy the arrays, so later changes to the caller's arrays cannot
            reach the matrix (or the prefix sums and other data it caches).
            ``copy=False`` takes ownership instead: the matrix keeps
            read-only views of the arrays given, and the caller promises
            never to modify them afterwards (a modified array leaves the
            matrix and its caches in disagreement).
        host_indptr : numpy array, optional
            A host copy of ``indptr`` for arrays on a GPU, kept with the
            matrix: operators that need its row lengths on the host (a
            product's longest row, ``split_blocks``) read it instead of the
            device's, where each read is a blocking copy.  Compared with
            ``indptr`` when ``check`` is True.

        Returns
        -------
        Matrix

        Raises
        ------
        InvalidCSR
            Inconsistent or non-canonical arrays (use ``from_coo`` to
            canonicalise unsorted or duplicated entries), or a
            ``host_indptr`` that differs from ``indptr``.

        Examples
        --------
        >>> from spla import Matrix
        >>> Matrix.from_csr([0, 1, 2], [1, 0], [5.0, 6.0]).to_dense()
        array([[0., 5.],
               [6., 0.]])
        """
        func = "Matrix.from_csr"
        xp, indptr = as_xp_array(indptr)
        _, indices = as_xp_array(indices, like=xp)
        if values is not None:
            _, values = as_xp_array(values, like=xp)
        if copy:
            indptr, indices = indptr.copy(), indices.copy()
            values = None if values is None else values.copy()
        if check:
            M = cls._new(*checked_csr(func, xp, indptr, indices, values, shape))
        else:
            if shape is None:
                shape = (indptr.size - 1, int(indices.max()) + 1 if indices.size else 0)
            M = cls._new(indptr, indices, values, shape)
        if host_indptr is not None:
            host = np.array(host_indptr, np.int64)
            if check and not np.array_equal(host, backend.to_host(M.indptr)):
                fail(InvalidCSR, func, "host_indptr", "a host copy equal to indptr",
                     f"{host.size} offsets that differ")
            host.flags.writeable = False
            M._cache[HOST_INDPTR] = host
        return M

    @classmethod
    def from_coo(cls, rows, cols, values=None, shape=None, *, duplicates="sum"):
        """A matrix from coordinates, in any order.

        Parameters
        ----------
        rows, cols : array_like of int, shape (nnz,)
        values : array_like, shape (nnz,), optional
            Omit for a structural matrix.
        shape : (int, int), optional
            Defaults to one past the largest row and column index.
        duplicates : {'sum', 'error'}, default 'sum'
            Repeated coordinates are summed (a structural matrix keeps one),
            or rejected with ``InvalidCSR``.

        Returns
        -------
        Matrix

        Examples
        --------
        >>> from spla import Matrix
        >>> Matrix.from_coo([1, 0, 1], [0, 1, 0], [1.0, 2.0, 3.0]).to_dense()
        array([[0., 2.],
               [4., 0.]])
        """
        func = "Matrix.from_coo"
        if duplicates not in ("sum", "error"):
            fail(InvalidValue, func, "duplicates", "'sum' or 'error'", repr(duplicates))
        xp, r = as_xp_array(rows)
        _, c = as_xp_array(cols, like=xp)
        if r.ndim != 1 or c.ndim != 1 or r.size != c.size:
            fail(DimensionMismatch, func, "rows/cols", "1-D arrays of equal length",
                 f"{describe(r)} and {describe(c)}")
        if shape is None:
            shape = (int(r.max()) + 1 if r.size else 0, int(c.max()) + 1 if c.size else 0)
        nrows, ncols = as_shape(func, shape)
        r = as_index_array(func, "rows", r, nrows)
        c = as_index_array(func, "cols", c, ncols)
        hv = values is not None
        if hv:
            _, values = as_xp_array(values, like=xp)
            if values.ndim != 1 or values.size != r.size:
                fail(DimensionMismatch, func, "values", f"a 1-D array of length {r.size}",
                     describe(values))
            value_dtype(func, "values", values.dtype)
        K = backend.kernels_for(backend.device_of(r))
        vals = values if hv else xp.zeros(0, np.float64)
        ptr, idx, val, first_dup = K.csr.coo_to_csr(r, c, vals, hv, nrows,
                                                   duplicates == "sum")
        if first_dup >= 0 and duplicates == "error":
            fail(InvalidCSR, func, "rows/cols", "distinct coordinates",
                 f"a repeat of ({int(r[first_dup])}, {int(c[first_dup])}) at position {first_dup}")
        return cls._new(ptr, narrow_indices(idx, ncols), val if hv else None,
                        (nrows, ncols))

    @classmethod
    def from_edge_index(cls, edge_index, num_nodes=None, *, values=None,
                        flow="source_to_target", duplicates="error"):
        """The sampler-oriented adjacency of a PyG-style ``[2, E]`` edge list.

        Samplers aggregate over a row's columns: row ``v`` of the adjacency
        lists the vertices whose messages ``v`` receives.  This builds that
        orientation from PyG's convention, where ``edge_index[0]`` holds the
        sources and ``edge_index[1]`` the targets of messages (``flow=
        "source_to_target"``, PyG's default): edge ``j -> i`` becomes entry
        ``A[i, j]``, so a sampler draws a vertex's *in*-neighbours, as PyG's
        ``MessagePassing`` aggregates them.

        Parameters
        ----------
        edge_index : array of int, shape (2, E)
            A numpy array, a torch tensor (CPU, or CUDA: then the matrix is
            on the GPU, which needs cupy), a cupy array, or nested lists.
        num_nodes : int, optional
            Vertex count (the matrix is ``num_nodes x num_nodes``); defaults
            to the largest id plus one (0 without edges).
        values : array, shape (E,), optional
            Per-edge values (edge weights; ``edge_weight`` in PyG): real
            numbers, finite; booleans give a structural matrix.  Omit for a
            structural matrix.
        flow : {'source_to_target', 'target_to_source'}, default 'source_to_target'
            As PyG's ``MessagePassing(flow=...)``: with
            ``'target_to_source'`` messages go from ``edge_index[1]`` to
            ``edge_index[0]``, and edge ``(i, j)`` becomes ``A[i, j]``.
        duplicates : {'error', 'sum', 'keep-first'}, default 'error'
            What to do with an edge listed more than once: raise
            ``InvalidValue`` naming the first repeat; sum the values (a
            structural matrix then gets int64 values counting each edge's
            copies); or keep the value of its first occurrence.

        Returns
        -------
        Matrix
            ``num_nodes x num_nodes``; self loops are kept.

        Raises
        ------
        DimensionMismatch
            ``edge_index`` not of shape ``(2, E)``; ``values`` not of length E.
        DTypeError
            Non-integer ids; values that are not real numbers.
        IndexOutOfRange
            A negative id, or an id not below ``num_nodes``.
        InvalidValue
            Non-finite values, a repeated edge with ``duplicates="error"``,
            an unknown ``flow`` or ``duplicates``.

        Notes
        -----
        The trap this avoids: ``Matrix.from_coo(edge_index[0],
        edge_index[1])`` builds ``A[j, i]`` for edge ``j -> i``, the
        *transpose*: a sampler given it aggregates over out-neighbours, the
        opposite of PyG's default.  On an undirected (symmetric) graph both
        are the same; on a directed one the samplers warn once
        (``sampling.DirectedGraphWarning``) since either may be meant.

        Entry positions follow the canonical order (by target, then by
        source), not the order of the edge list; ``spla.entry_positions``
        maps an edge to its position.

        Examples
        --------
        >>> import numpy as np
        >>> from spla import Matrix
        >>> edge_index = np.array([[0, 0, 2],     # sources
        ...                        [1, 2, 1]])    # targets
        >>> A = Matrix.from_edge_index(edge_index)
        >>> A.to_dense()                          # row i: the sources of edges into i
        array([[0., 0., 0.],
               [1., 0., 1.],
               [1., 0., 0.]])
        >>> Matrix.from_edge_index([[0, 0], [1, 1]], duplicates="sum").values
        array([2])
        """
        from spla.edge_index import edge_index_csr
        ptr, idx, val, n = edge_index_csr(edge_index, num_nodes, values, flow, duplicates)
        return cls._new(ptr, narrow_indices(idx, n), val, (n, n))

    def to_edge_index(self, *, flow="source_to_target"):
        """The PyG-style ``[2, E]`` edge list of this adjacency, the inverse
        of ``from_edge_index``: entry ``A[i, j]`` is edge ``j -> i``
        (``flow="source_to_target"``) or ``i -> j`` (``"target_to_source"``).

        Returns an int64 array on this matrix's device, its edges in the
        matrix's entry order, so ``A.values`` are their weights.

        Examples
        --------
        >>> from spla import Matrix
        >>> A = Matrix.from_edge_index([[0, 0, 2], [1, 2, 1]])
        >>> A.to_edge_index()
        array([[0, 2, 0],
               [1, 1, 2]])
        >>> Matrix.from_edge_index(A.to_edge_index()).isequal(A)
        True
        """
        if flow not in ("source_to_target", "target_to_source"):
            fail(InvalidValue, "Matrix.to_edge_index", "flow",
                 "'source_to_target' or 'target_to_source'", repr(flow))
        rows, cols, _ = self.to_coo()
        return self.xp.stack((cols, rows) if flow == "source_to_target" else (rows, cols))

    @classmethod
    def from_dense(cls, D, *, structural=False):
        """A matrix holding the nonzeros of a 2-D numpy/cupy array.

        Boolean arrays give a structural matrix; other float dtypes become
        float64 and other integer dtypes int64 (as in ``from_scipy``);
        complex arrays are rejected (``DTypeError``).

        Examples
        --------
        >>> import numpy as np
        >>> from spla import Matrix
        >>> Matrix.from_dense(np.eye(2)).nnz
        2
        """
        xp, D = as_xp_array(D)
        if D.ndim != 2:
            fail(DimensionMismatch, "Matrix.from_dense", "D", "a 2-D array", describe(D))
        r, c = xp.nonzero(D)
        vals = None if structural else widen_values("Matrix.from_dense", "D", D[r, c])
        return cls.from_coo(r, c, vals, D.shape)

    # ---- metadata -----------------------------------------------------
    @property
    def indptr(self):
        return self._indptr

    @property
    def indices(self):
        return self._indices

    @property
    def values(self):
        return self._values

    @property
    def shape(self):
        return self._shape

    @property
    def nrows(self):
        return self._shape[0]

    @property
    def ncols(self):
        return self._shape[1]

    @property
    def nnz(self):
        return int(self._indices.size)

    @property
    def nvals(self):
        """Stored entries: ``nnz`` by its GraphBLAS name (``Vector.nvals``)."""
        return self.nnz

    @property
    def dtype(self):
        return None if self._values is None else self._values.dtype

    @property
    def is_structural(self):
        """True for a matrix without values (every entry counts as 1)."""
        return self._values is None

    @property
    def device(self):
        return backend.device_of(self._indptr)

    @property
    def xp(self):
        """numpy or cupy: the array module of this matrix's arrays."""
        return backend.xp_of(self.device)

    def row_degrees(self):
        """Entries per row (int64 array).

        Examples
        --------
        >>> from spla import Matrix
        >>> Matrix.from_coo([0, 0, 2], [0, 1, 1], shape=(3, 2)).row_degrees()
        array([2, 0, 1])
        """
        return self.xp.diff(self._indptr)

    def __repr__(self):
        dt = "structural" if self._values is None else str(self._values.dtype)
        return (f"<spla.Matrix {self.nrows}x{self.ncols}, nnz={self.nnz}, "
                f"dtype={dt}, device={self.device}>")

    # ---- conversions ------------------------------------------------------
    def structure(self):
        """The same pattern without values (shares the index arrays).

        Examples
        --------
        >>> from spla import Matrix
        >>> Matrix.from_coo([0], [1], [2.5]).structure()
        <spla.Matrix 1x2, nnz=1, dtype=structural, device=cpu>
        """
        if self._values is None:
            return self
        return Matrix._new(self._indptr, self._indices, None, self._shape)

    def with_values(self, values):
        """The same pattern with new values (checked for length and dtype).

        Examples
        --------
        >>> import numpy as np
        >>> from spla import Matrix
        >>> A = Matrix.from_coo([0, 1], [1, 0], shape=(2, 2))
        >>> A.with_values(np.array([2.0, 3.0])).values
        array([2., 3.])
        """
        func = "Matrix.with_values"
        _, values = as_xp_array(values, like=self.xp)
        if values.ndim != 1 or values.size != self.nnz:
            fail(DimensionMismatch, func, "values", f"a 1-D array of length {self.nnz}",
                 describe(values))
        value_dtype(func, "values", values.dtype)
        return Matrix._new(self._indptr, self._indices, values, self._shape)

    def astype(self, dtype):
        """A copy with values cast to ``dtype`` (a structural matrix gets ones)."""
        dtype = value_dtype("Matrix.astype", "dtype", dtype)
        if self._values is None:
            vals = self.xp.ones(self.nnz, dtype)
        else:
            vals = self._values.astype(dtype)
        return Matrix._new(self._indptr, self._indices, vals, self._shape)

    def to_coo(self):
        """The stored entries as coordinates: ``(rows, cols, values)``.

        The inverse of ``from_coo``: int64 row and column ids, row by row
        and by column within a row, and a copy of the values (None for a
        structural matrix), on this matrix's device.

        Examples
        --------
        >>> from spla import Matrix
        >>> A = Matrix.from_coo([2, 0, 0], [1, 2, 0], [5.0, 7.0, 1.0], shape=(3, 3))
        >>> A.to_coo()
        (array([0, 0, 2]), array([0, 2, 1]), array([1., 7., 5.]))
        >>> Matrix.from_coo(*A.to_coo(), shape=A.shape).isequal(A)
        True
        """
        values = None if self._values is None else self._values.copy()
        return (row_ids(self._indptr, self.nnz), self._indices.astype(np.int64), values)

    def to_dense(self):
        """A dense 2-D array on this matrix's device (ones for a structural matrix)."""
        xp = self.xp
        dtype = np.float64 if self._values is None else self._values.dtype
        D = xp.zeros(self._shape, dtype)
        D[row_ids(self._indptr, self.nnz), self._indices] = 1 if self._values is None else self._values
        return D

    def to(self, device, *, memory="device"):
        """This matrix on ``device`` ('cpu' or 'cuda'); itself if already there.

        Parameters
        ----------
        device : {'cpu', 'cuda'}
        memory : {'device', 'host'}, default 'device'
            For 'cuda': the GPU's own memory, or pinned host memory mapped
            into the GPU's address space (``spla.backend.to_mapped_host``):
            the GPU kernels then read the matrix's column indices and
            values (its nnz-sized arrays) over the host-device link, so a
            graph larger than the GPU's memory can still be sampled there,
            more slowly.  The row pointer (``nrows + 1`` integers) goes to
            device memory either way: every row a kernel visits reads it,
            and over the link those reads would cost as much as the
            sampled entries themselves.  Every operator gives the same
            results either way.

        Examples
        --------
        >>> from spla import Matrix
        >>> A = Matrix.from_coo([0], [0], [1.0])
        >>> A.to("cpu") is A
        True
        """
        func = "Matrix.to"
        device = backend.normalize_device(func, device)
        if memory not in ("device", "host"):
            fail(InvalidValue, func, "memory", "'device' or 'host'", repr(memory))
        if memory == "host" and device != "cuda":
            fail(InvalidValue, func, "memory",
                 "'device' for device='cpu' ('host' maps host memory for a GPU)", repr(memory))
        if device == self.device and memory == "device":
            return self
        if device == "cpu":
            conv = to_ptr = backend.to_host
        else:
            # The row pointer goes to device memory either way (see above).
            to_ptr = backend.require_cupy(func).asarray
            conv = backend.to_mapped_host if memory == "host" else to_ptr
        vals = None if self._values is None else conv(self._values)
        return Matrix._new(to_ptr(self._indptr), conv(self._indices), vals, self._shape)

    def isequal(self, other):
        """Same shape, pattern, dtype and values (exact comparison).

        Examples
        --------
        >>> from spla import Matrix
        >>> A = Matrix.from_coo([0], [0], [1.0])
        >>> A.isequal(Matrix.from_coo([0], [0], [1.0]))
        True
        """
        if not self._same_pattern(other) or (self._values is None) != (other._values is None):
            return False
        if self._values is None:
            return True
        return self.dtype == other.dtype and bool(self.xp.array_equal(self._values,
                                                                     other._values))

    def isclose(self, other, *, rel_tol=1e-7, abs_tol=0.0):
        """Same shape, device and pattern, and values close as ``math.isclose``
        says (``|a - b| <= max(rel_tol * max(|a|, |b|), abs_tol)``; a
        structural matrix's entries count as 1, NaN is close to nothing).

        Examples
        --------
        >>> from spla import Matrix
        >>> A = Matrix.from_coo([0], [0], [1.0])
        >>> B = Matrix.from_coo([0], [0], [1.0 + 1e-9])
        >>> A.isclose(B), A.isequal(B)
        (True, False)
        """
        return self._same_pattern(other) and values_close(
            "Matrix.isclose", self._values, other._values, rel_tol, abs_tol)

    def _same_pattern(self, other):
        """Whether ``other`` is a matrix of this shape, device and pattern."""
        if not isinstance(other, Matrix) or other.shape != self.shape:
            return False
        if other.device != self.device or other.nnz != self.nnz:
            return False
        xp = self.xp
        return (bool(xp.array_equal(self._indptr, other._indptr))
                and bool(xp.array_equal(self._indices, other._indices)))

    # Operator syntax (``A @ B``, ``A.T``, ``A[rows, cols]``) is bound by
    # spla.sugar, above the operator modules, so this module imports none
    # of them (no import cycle: matrix <- mxm/structure/extract <- sugar).
