"""A vertex partition: which part each vertex is in, the renumbering it induces, its costs.

``Partition`` (the parts and the renumbering, ``permute``, ``edge_cut``,
``balance``) and ``Balance`` (what ``balance`` reports).  The functions that
compute a partition (``block``, ``hashed``, ``metis``) live in
``spla.partition``, whose module docstring describes the whole; both
classes are importable from there too.
"""

import hashlib
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from spla.backend import to_host
from spla.checks import as_index_array, as_int, describe, fail, xp_array
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.extract import extract
from spla.matrix import Matrix


def _readonly(a):
    """A read-only int64 copy (never a view of the caller's array)."""
    a = np.array(a, dtype=np.int64, copy=True)
    a.flags.writeable = False
    return a


class Partition:
    """A partition of ``n`` vertices into ``parts`` parts, and its renumbering.

    Build one with ``block`` or ``metis``, or from any membership array with
    ``Partition(part, parts)``.  A partition is immutable (its arrays are
    read-only) and safe to share between threads.

    Parameters
    ----------
    part : array_like of int, shape (n,)
        The part of each vertex (user ids), each in ``[0, parts)``.  Parts
        may be empty.
    parts : int
        The number of parts, ``>= 1``.
    method : str, default 'given'
        How the partition was made, for reports ('block', 'metis', ...).

    Attributes
    ----------
    n, parts : int
    part : numpy.ndarray of int64, shape (n,)
        The part of each user vertex id.
    perm : numpy.ndarray of int64, shape (n,)
        The new order: ``perm[new] = user``; the vertices of part 0 first,
        then part 1, ...; within a part, ascending user id.
    inverse : numpy.ndarray of int64, shape (n,)
        ``inverse[user] = new`` (the inverse permutation of ``perm``).
    bounds : numpy.ndarray of int64, shape (parts + 1,)
        Part ``i`` holds the new ids ``[bounds[i], bounds[i + 1])``.
    sizes : numpy.ndarray of int64, shape (parts,)
        Vertices per part.
    method : str

    Raises
    ------
    InvalidValue
        ``parts`` is not an integer >= 1, or ``part`` is not 1-D.
    DTypeError
        ``part`` is not an integer array.
    IndexOutOfRange
        A part id outside ``[0, parts)``.

    Examples
    --------
    >>> from spla.partition import Partition
    >>> P = Partition([2, 0, 2, 1, 0], 3)
    >>> P.perm.tolist(), P.inverse.tolist(), P.bounds.tolist()
    ([1, 4, 3, 0, 2], [3, 0, 4, 2, 1], [0, 2, 3, 5])
    >>> P.to_new([0, 1]).tolist(), P.to_user([0, 1]).tolist()
    ([3, 0], [1, 4])
    """

    __slots__ = ("_part", "_parts", "_perm", "_inverse", "_bounds", "_method")

    def __init__(self, part, parts, *, method="given"):
        func = "Partition"
        parts = as_int(func, "parts", parts, minimum=1)
        if not isinstance(method, str):
            fail(InvalidValue, func, "method", "a str", describe(method))
        _, a = xp_array(part)
        if a.dtype == object:
            fail(DTypeError, func, "part", "an integer array", describe(part))
        part = to_host(as_index_array(func, "part", a, bound=parts))
        n = part.size
        sizes = np.bincount(part, minlength=parts)
        bounds = np.zeros(parts + 1, np.int64)
        np.cumsum(sizes, out=bounds[1:])
        # A stable sort by part keeps ascending user ids inside each part.
        perm = np.argsort(part, kind="stable")
        inverse = np.empty(n, np.int64)
        inverse[perm] = np.arange(n, dtype=np.int64)
        set_ = object.__setattr__
        set_(self, "_part", _readonly(part))
        set_(self, "_parts", parts)
        set_(self, "_perm", _readonly(perm))
        set_(self, "_inverse", _readonly(inverse))
        set_(self, "_bounds", _readonly(bounds))
        set_(self, "_method", method)

    def __setattr__(self, name, value):
        raise AttributeError(f"Partition is immutable (cannot set {name!r})")

    @property
    def n(self):
        return int(self._part.size)

    @property
    def parts(self):
        return self._parts

    @property
    def part(self):
        return self._part

    @property
    def perm(self):
        return self._perm

    @property
    def inverse(self):
        return self._inverse

    @property
    def bounds(self):
        return self._bounds

    @property
    def sizes(self):
        return np.diff(self._bounds)

    @property
    def method(self):
        return self._method

    def __repr__(self):
        s = self.sizes
        return (f"<spla.Partition {self._method}: {self.n} vertices in {self.parts} parts "
                f"of {int(s.min())}..{int(s.max())}>")

    def __eq__(self, other):
        """Equal when the same vertices fall in the same parts (``method`` aside)."""
        if not isinstance(other, Partition):
            return NotImplemented
        return self.parts == other.parts and np.array_equal(self._part, other._part)

    __hash__ = None

    def fingerprint(self):
        """An int64 digest of ``(n, parts, part)``: ranks compare it to agree on a partition.

        Examples
        --------
        >>> from spla.partition import Partition
        >>> Partition([0, 1], 2).fingerprint() == Partition([0, 1], 2).fingerprint()
        True
        >>> Partition([0, 1], 2).fingerprint() == Partition([1, 0], 2).fingerprint()
        False
        """
        h = hashlib.blake2b(digest_size=8)
        h.update(np.array([self.n, self.parts], np.int64).tobytes())
        h.update(self._part.tobytes())
        return int.from_bytes(h.digest(), "little", signed=True)

    # -- renumbering ------------------------------------------------------
    def to_new(self, ids):
        """The new ids of user vertex ids (``inverse[ids]``).

        Parameters
        ----------
        ids : array_like of int
            User vertex ids in ``[0, n)``, any order, repeats allowed (a
            numpy or cupy array, or a sequence).

        Returns
        -------
        numpy.ndarray (or cupy.ndarray) of int64

        Raises
        ------
        DTypeError, IndexOutOfRange, InvalidValue
            Ids that are not integers, out of range, or not 1-D.

        Examples
        --------
        >>> from spla.partition import Partition
        >>> Partition([1, 0, 1], 2).to_new([0, 1, 2]).tolist()
        [1, 0, 2]
        """
        return self._lookup("Partition.to_new", ids, self._inverse)

    def to_user(self, ids):
        """The user ids of new vertex ids (``perm[ids]``); the inverse of ``to_new``.

        Examples
        --------
        >>> from spla.partition import Partition
        >>> P = Partition([1, 0, 1], 2)
        >>> P.to_user(P.to_new([2, 0])).tolist()
        [2, 0]
        """
        return self._lookup("Partition.to_user", ids, self._perm)

    def _lookup(self, func, ids, table):
        xp, a = xp_array(ids)
        if a.dtype == object:
            fail(DTypeError, func, "ids", "integer vertex ids", describe(ids))
        a = as_index_array(func, "ids", a, bound=self.n)
        return xp.asarray(table)[a]

    def permute(self, A, rows=None):
        """The renumbered matrix ``P A P^T``: entry (i, j) moves to (inverse[i], inverse[j]).

        Equal to ``A[perm][:, perm]``, computed by one ``spla.extract``
        (rows ``perm``, columns ``perm``), on A's device.

        Parameters
        ----------
        A : spla.Matrix or scipy.sparse matrix, shape (n, n)
        rows : (int, int), optional
            Only the new rows ``[start, stop)``: a ``(stop - start) x n``
            matrix, that block of ``P A P^T`` (what one rank of a
            partitioned ``spla.distribute`` keeps).

        Returns
        -------
        spla.Matrix

        Raises
        ------
        DTypeError
            ``A`` is not a matrix (a ``DistMatrix`` is refused: permute the
            global matrix, or distribute it with ``partition=``).
        DimensionMismatch
            ``A`` is not ``n x n``.
        InvalidValue
            A bad ``rows`` range.

        Examples
        --------
        >>> import numpy as np, spla
        >>> from spla.partition import Partition
        >>> A = spla.Matrix.from_dense(np.arange(9.0).reshape(3, 3))
        >>> Partition([1, 0, 1], 2).permute(A).to_dense()
        array([[4., 3., 5.],
               [1., 0., 2.],
               [7., 6., 8.]])
        """
        func = "Partition.permute"
        A = self._graph(func, A)
        start, stop = 0, self.n
        if rows is not None:
            if not isinstance(rows, (tuple, list)) or len(rows) != 2:
                fail(InvalidValue, func, "rows", "a pair (start, stop)", describe(rows))
            start = as_int(func, "rows[0]", rows[0], minimum=0)
            stop = as_int(func, "rows[1]", rows[1], minimum=start)
            if stop > self.n:
                fail(InvalidValue, func, "rows", f"a range inside [0, {self.n}]",
                     (start, stop))
        return extract(A, rows=self._perm[start:stop], cols=self._perm)

    # -- quality --------------------------------------------------------------
    def edge_cut(self, A):
        """The stored entries of ``A`` whose endpoints lie in different parts.

        Counted per stored entry: an undirected edge stored both ways
        (``(u, v)`` and ``(v, u)``) counts **twice**, once per direction,
        as each direction is a row entry some other part must fetch.  METIS
        reports the undirected count (each edge of the symmetrised graph
        once): for a symmetric ``A`` it is half of this.  Self loops are
        never cut.

        Parameters
        ----------
        A : spla.Matrix or scipy.sparse matrix, shape (n, n), in user ids

        Returns
        -------
        int

        Examples
        --------
        >>> import spla
        >>> from spla.partition import Partition
        >>> A = spla.Matrix.from_coo([0, 1, 1, 2], [1, 0, 2, 1], shape=(3, 3))
        >>> Partition([0, 0, 1], 2).edge_cut(A)        # edge {1, 2} both ways
        2
        """
        A = self._graph("Partition.edge_cut", A).to("cpu")
        ptr = np.asarray(A.indptr, np.int64)
        src = np.repeat(self._part, np.diff(ptr))
        return int(np.count_nonzero(src != self._part[A.indices]))

    def balance(self, A, train_idx=None):
        """Vertices, stored entries and training vertices of each part.

        Parameters
        ----------
        A : spla.Matrix or scipy.sparse matrix, shape (n, n), in user ids
            A part's entries are the stored entries of its vertices' rows.
        train_idx : array_like, optional
            The training vertices (user ids, distinct), or a boolean mask
            of length ``n``.

        Returns
        -------
        Balance

        Raises
        ------
        InvalidValue
            Repeated training ids, or a mask of the wrong length.

        Examples
        --------
        >>> import spla
        >>> from spla.partition import Partition
        >>> A = spla.Matrix.from_coo([0, 0, 1, 2], [1, 2, 0, 0], shape=(4, 4))
        >>> b = Partition([0, 0, 1, 1], 2).balance(A, train_idx=[0, 3])
        >>> b.vertices.tolist(), b.edges.tolist(), b.train.tolist()
        ([2, 2], [3, 1], [1, 1])
        >>> round(b.imbalance["edges"], 2)
        1.5
        """
        func = "Partition.balance"
        A = self._graph(func, A).to("cpu")
        deg = np.diff(np.asarray(A.indptr, np.int64))
        # Entries of new rows, in new order: each part is a contiguous slice.
        cum = np.zeros(self.n + 1, np.int64)
        np.cumsum(deg[self._perm], out=cum[1:])
        edges = cum[self._bounds[1:]] - cum[self._bounds[:-1]]
        train = None
        if train_idx is not None:
            ids = _train_ids(func, train_idx, self.n)
            train = np.bincount(self._part[ids], minlength=self.parts).astype(np.int64)
        return Balance(self.sizes, edges, train)

    def _graph(self, func, A):
        """A as a spla.Matrix, checked to be n x n."""
        A = as_graph_matrix(func, A)
        if A.shape != (self.n, self.n):
            fail(DimensionMismatch, func, "A",
                 f"a {self.n} x {self.n} matrix (the partition's vertices)", f"shape {A.shape}")
        return A


def as_graph_matrix(func, A):
    """``A`` as a local spla.Matrix (a scipy.sparse matrix converted), else ``DTypeError``."""
    if isinstance(A, Matrix):
        return A
    if sp.issparse(A):
        return Matrix.from_scipy(A)
    fail(DTypeError, func, "A", "a spla.Matrix or scipy.sparse matrix (gather a DistMatrix "
         "first: a partition is of the global graph)", describe(A))


def _train_ids(func, train_idx, n):
    _, a = xp_array(train_idx)
    a = to_host(a)
    if a.dtype == np.bool_:
        if a.ndim != 1 or a.size != n:
            fail(InvalidValue, func, "train_idx", f"a boolean mask of length {n}", describe(a))
        return np.flatnonzero(a)
    if a.dtype == object:
        fail(DTypeError, func, "train_idx", "integer vertex ids or a boolean mask",
             describe(train_idx))
    ids = as_index_array(func, "train_idx", a, bound=n)
    if np.unique(ids).size != ids.size:
        fail(InvalidValue, func, "train_idx", "distinct vertex ids", "repeated ids")
    return ids


def _ratio(counts):
    """max / mean, 1.0 when there is nothing to balance."""
    total = int(counts.sum())
    return 1.0 if total == 0 else float(counts.max()) * counts.size / total


@dataclass(frozen=True, eq=False)
class Balance:
    """What each part of a partition holds (``Partition.balance``).

    Attributes
    ----------
    vertices, edges : numpy.ndarray of int64, shape (parts,)
        Vertices per part, and stored entries of their rows.
    train : numpy.ndarray of int64, shape (parts,), or None
        Training vertices per part (None when none were given).
    imbalance : dict
        ``max / mean`` over the parts of each count (``'vertices'``,
        ``'edges'`` and, with training vertices, ``'train'``); 1.0 is a
        perfect balance, and the busiest part sets the pace of a
        synchronous step.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.partition import Balance
    >>> b = Balance(np.array([3, 1]), np.array([5, 5]))
    >>> b.imbalance
    {'vertices': 1.5, 'edges': 1.0}
    >>> print(b.table())
        part  vertices  edges
           0         3      5
           1         1      5
    max/mean      1.50   1.00
    """

    vertices: np.ndarray
    edges: np.ndarray
    train: np.ndarray = None

    def _columns(self):
        cols = [("vertices", self.vertices), ("edges", self.edges)]
        if self.train is not None:
            cols.append(("train", self.train))
        return cols

    @property
    def imbalance(self):
        return {name: _ratio(c) for name, c in self._columns()}

    def table(self):
        """A plain-text table: one line per part, then the max/mean ratios."""
        cols = self._columns()
        ratios = self.imbalance
        rows = [["part"] + [name for name, _ in cols]]
        rows += [[str(i)] + [str(int(c[i])) for _, c in cols] for i in range(len(self.vertices))]
        rows.append(["max/mean"] + [f"{ratios[name]:.2f}" for name, _ in cols])
        widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
        return "\n".join("  ".join(s.rjust(w) for s, w in zip(r, widths)) for r in rows)


# -- factories --------------------------------------------------------------------


__all__ = ["Partition", "Balance"]
