"""P3's feature store: every vertex's features split by columns over the ranks.

``column_range(f, p, r)`` gives the columns rank ``r`` of ``p`` holds;
``ColumnFeatureStore`` keeps them (dense numpy or scipy CSR) with the
replicated labels and splits.

Why a separate store and not a mode of ``sampling.loading.features.FeatureStore``:
that class's job is to answer ``fetch(ids) -> rows`` with whole rows, and
its modes (replicated, 1.5D rows, hot-row cache) all keep that contract.
A column store cannot answer it (no rank holds a whole row); what it
offers is a local gather of a column slice, consumed by the push-pull
layer only.  Folding it into ``FeatureStore`` would give that class a
mode in which its main method must refuse to work.
"""

import numpy as np

from spla import comm as C
from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError

from sampling.datasets.validation import as_features, check_targets, host_array, is_sparse


def column_range(num_features, p, r):
    """Columns ``[f*r//p, f*(r+1)//p)`` that rank ``r`` of ``p`` holds.

    Examples
    --------
    >>> [column_range(10, 4, r) for r in range(4)]
    [(0, 2), (2, 5), (5, 7), (7, 10)]
    """
    f = as_int("column_range", "num_features", num_features, minimum=0)
    p = as_int("column_range", "p", p, minimum=1)
    r = as_int("column_range", "r", r, minimum=0)
    if r >= p:
        fail(LayoutError, "column_range", "r", f"a rank below p = {p}", r)
    return f * r // p, f * (r + 1) // p


def _comm_of(comm):
    """(comm or None, p, rank): ``None`` stays local (one rank, no MPI)."""
    if comm is None:
        return None, 1, 0
    comm = C.as_comm(comm, "ColumnFeatureStore")
    return comm, comm.Get_size(), comm.Get_rank()


def _dense_or_csr(func, arg, x, dtype):
    """Checked features: a C-contiguous dense array or a scipy CSR matrix of ``dtype``."""
    if is_sparse(x):
        M = as_features(func, arg, x)  # checks shape and finiteness
        csr = M.to("cpu").to_scipy().tocsr()
        if dtype is None:  # a structural matrix (no dtype) becomes float32 ones
            dtype = np.float64 if M.dtype == np.float64 else np.float32
        return csr.astype(dtype)
    a = host_array(func, arg, x)
    if a.ndim != 2:
        fail(DimensionMismatch, func, arg, "a 2-D (n, f) matrix", describe(a))
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool) or \
            np.issubdtype(a.dtype, np.complexfloating):
        fail(DTypeError, func, arg, "real numbers", describe(a))
    if dtype is None:
        dtype = np.float64 if a.dtype == np.float64 else np.float32
    out = np.ascontiguousarray(a, dtype=dtype)
    bad = np.flatnonzero(~np.isfinite(out.reshape(-1)))
    if bad.size:
        fail(InvalidValue, func, arg, "finite values", f"{out.reshape(-1)[bad[0]]} at entry "
             f"{int(bad[0])}")
    return out


def _as_dtype(func, dtype):
    if dtype is None:
        return None
    try:
        d = np.dtype(dtype)
    except TypeError:
        d = None
    if d not in (np.dtype(np.float32), np.dtype(np.float64)):
        # A numpy scalar type is a class: describe() would read its dtype
        # attribute as an array's, so name it.
        got = dtype.__name__ if isinstance(dtype, type) else describe(dtype)
        fail(DTypeError, func, "dtype", "float32 or float64 (or None)", got)
    return d


class ColumnFeatureStore:
    """Node features split by columns: rank ``r`` holds columns ``column_range(f, p, r)``.

    Parameters
    ----------
    features : array or sparse matrix of shape (n, f)
        The whole feature matrix, on every rank (each keeps its columns
        only): numpy or torch (dense), or scipy.sparse / spla.Matrix (kept
        as scipy CSR).  Use ``from_local`` when each rank has only its
        columns.
    comm : MPI communicator, optional
        ``None``: one rank, no MPI.
    labels : 1-D int array of length n, optional
        Kept replicated (``store.labels``, int64).
    splits : dict of name -> 1-D int array, optional
        Vertex ids of each split, kept replicated.
    num_classes : int, optional
    dtype : {None, float32, float64}
        ``None``: float64 input stays float64, anything else becomes
        float32.

    Attributes
    ----------
    local : numpy array or scipy CSR, shape (n, col_stop - col_start)
    col_start, col_stop : int
        This rank's columns.
    num_nodes, num_features, p, rank, comm, labels, splits

    Raises
    ------
    LayoutError
        More ranks than columns (a rank would hold none), on every rank.
    DimensionMismatch
        Not 2-D, or ranks disagreeing on ``(n, f)``.
    DTypeError, InvalidValue
        Non-numeric or non-finite features, bad labels or splits.

    Collective when ``comm`` has several ranks: every check raises on every
    rank.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(12.0).reshape(3, 4)
    >>> store = ColumnFeatureStore(x)            # one rank: every column
    >>> store.columns, store.shape
    ((0, 4), (3, 4))
    >>> store.gather(np.array([2, 0])).tolist()
    [[8.0, 9.0, 10.0, 11.0], [0.0, 1.0, 2.0, 3.0]]
    """

    def __init__(self, features, *, comm=None, labels=None, splits=None, num_classes=None,
                 dtype=None, _local=None, _shape=None):
        func = type(self).__name__ if _local is None else "ColumnFeatureStore.from_local"
        comm, p, rank = _comm_of(comm)
        with C.collective_checks(comm):
            dtype = _as_dtype(func, dtype)
            if _local is None:
                x = _dense_or_csr(func, "features", features, dtype)
                n, f = (int(s) for s in x.shape)
            else:
                x = None
                n, f = _shape
            if p > f:
                fail(LayoutError, func, "features", f"at least as many columns as ranks "
                     f"(p = {p}; a rank would hold no column)", f"{f} column(s)")
            start, stop = column_range(f, p, rank)
            if x is not None:
                local = x[:, start:stop]
                local = local.tocsr() if hasattr(local, "tocsr") else np.ascontiguousarray(local)
            else:
                local = _local
            num_classes, labels, splits = check_targets(func, labels, splits, n, num_classes)
        if comm is not None and p > 1:
            C.check_same(comm, func, "features", [n, f], cls=DimensionMismatch,
                         expected="of the same shape (n, f) on every rank",
                         show=lambda v: f"shape {tuple(v.tolist())}")
        self.comm, self.p, self.rank = comm, p, rank
        self.num_nodes, self.num_features = n, f
        self.col_start, self.col_stop = start, stop
        self.local = local
        self.dtype = np.dtype(local.dtype)
        self.labels, self.splits, self.num_classes = labels, splits, num_classes

    @classmethod
    def from_local(cls, local, num_features, *, comm=None, labels=None, splits=None,
                   num_classes=None, dtype=None):
        """Collective: a store from this rank's own columns ``column_range(f, p, rank)``.

        Examples
        --------
        >>> import numpy as np
        >>> ColumnFeatureStore.from_local(np.ones((5, 3)), 3).shape   # one rank
        (5, 3)
        """
        func = "ColumnFeatureStore.from_local"
        comm, p, rank = _comm_of(comm)
        with C.collective_checks(comm):
            f = as_int(func, "num_features", num_features, minimum=0)
            block = _dense_or_csr(func, "local", local, _as_dtype(func, dtype))
            if p > f:
                fail(LayoutError, func, "num_features", f"at least as many columns as ranks "
                     f"(p = {p}; a rank would hold no column)", f)
            s, e = column_range(f, p, rank)
            if block.shape[1] != e - s:
                fail(DimensionMismatch, func, "local", f"{e - s} columns (columns {s}:{e} "
                     f"of {f})", f"shape {tuple(block.shape)}")
        return cls(None, comm=comm, labels=labels, splits=splits, num_classes=num_classes,
                   dtype=dtype, _local=block, _shape=(int(block.shape[0]), f))

    @property
    def shape(self):
        """``(n, f)`` of the whole matrix."""
        return (self.num_nodes, self.num_features)

    @property
    def columns(self):
        """``(col_start, col_stop)``: the columns this rank holds."""
        return (self.col_start, self.col_stop)

    @property
    def sparse(self):
        """Whether the local columns are a scipy CSR matrix."""
        return not isinstance(self.local, np.ndarray)

    def __repr__(self):
        return (f"<ColumnFeatureStore {self.num_nodes}x{self.num_features}, columns "
                f"{self.col_start}:{self.col_stop} on rank {self.rank} of {self.p}, "
                f"{'sparse' if self.sparse else 'dense'} {self.dtype}>")

    def rows(self, ids):
        """This rank's columns of rows ``ids``, as stored (dense array or CSR); local.

        Examples
        --------
        >>> import numpy as np, scipy.sparse as sp
        >>> s = ColumnFeatureStore(sp.csr_matrix(np.eye(3)))
        >>> s.rows([1]).toarray().tolist()
        [[0.0, 1.0, 0.0]]
        """
        ids = as_index_array("ColumnFeatureStore.rows", "ids",
                             host_array("ColumnFeatureStore.rows", "ids", ids), self.num_nodes)
        return self.local[np.asarray(ids)]

    def gather(self, ids):
        """This rank's columns of rows ``ids`` as a dense array (len(ids), col_stop - col_start).

        Local: no communication.

        Examples
        --------
        >>> import numpy as np
        >>> ColumnFeatureStore(np.eye(2)).gather([1, 1]).tolist()
        [[0.0, 1.0], [0.0, 1.0]]
        """
        r = self.rows(ids)
        return np.ascontiguousarray(r.toarray()) if hasattr(r, "toarray") else r

    def mask(self, name):
        """Boolean mask of split ``name`` (length n)."""
        m = np.zeros(self.num_nodes, bool)
        m[self.splits[name]] = True
        return m


__all__ = ["column_range", "ColumnFeatureStore"]
