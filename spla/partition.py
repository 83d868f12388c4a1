"""Vertex partitions of a graph and the renumbering they induce.

A ``Partition`` assigns each vertex of an ``n``-vertex graph to one of
``parts`` parts and renumbers the vertices so that every part is a
contiguous range of new ids: the vertices of part 0 first, then those of
part 1, and so on, each part in ascending order of the user's ids.  Two
ways to build one:

``block(A, parts)``
    contiguous ranges of the user's ids (``spla.layout.chunk``): the
    renumbering is the identity, the partition today's 1D layouts use;
``metis(A, parts, seed=...)``
    METIS's multilevel k-way partitioning (through the optional ``pymetis``
    package) of the symmetrised graph, which keeps the edges inside parts.

``spla.distribute(A, comm, partition=P)`` then gives process row ``i``
the rows of part ``i``'s vertices, stored in the renumbering's order while
every id in and out stays the user's (``P.permute(A)`` is the renumbered
graph itself, for code that wants it).  ``edge_cut``
and ``balance`` report what a partition costs: the entries that cross
parts (the rows a rank will fetch from others) and the vertices, entries
and training vertices per part.

Examples
--------
>>> import numpy as np, spla
>>> from spla import partition
>>> A = spla.Matrix.from_coo([0, 1, 2, 3], [1, 0, 3, 2], shape=(4, 4))
>>> P = partition.Partition([1, 0, 1, 0], 2)
>>> P.perm.tolist(), P.bounds.tolist()
([1, 3, 0, 2], [0, 2, 4])
>>> P.edge_cut(A), partition.block(A, 2).edge_cut(A)
(4, 0)
"""

import hashlib
import threading
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from spla.backend import to_host
from spla.checks import as_index_array, as_int, as_u64, describe, fail, xp_array
from spla.elementwise import ewise_add, select
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.extract import extract
from spla.random import permutation
from spla.layout import chunk_bounds
from spla.matrix import Matrix
from spla.optional import require
from spla.structure import transpose

# METIS (GKlib) keeps its error-recovery state in process globals: one call
# at a time.  The lock holds no data.
_METIS_LOCK = threading.Lock()



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
        if isinstance(A, Matrix):
            pass
        elif sp.issparse(A):
            A = Matrix.from_scipy(A)
        else:
            fail(DTypeError, func, "A", "a spla.Matrix or scipy.sparse matrix (a DistMatrix: "
                 "use the global matrix)", describe(A))
        if A.shape != (self.n, self.n):
            fail(DimensionMismatch, func, "A",
                 f"a {self.n} x {self.n} matrix (the partition's vertices)", f"shape {A.shape}")
        return A


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
def _num_vertices(func, A):
    """n from a square matrix or an int.

    Any object with a 2-D integer ``shape`` counts as a matrix (spla.Matrix,
    DistMatrix, scipy.sparse): spla.dist imports this module, so it is not
    named here.
    """
    if isinstance(A, (int, np.integer)) and not isinstance(A, bool):
        return as_int(func, "A", A, minimum=0)
    shape = getattr(A, "shape", None)
    if not (isinstance(shape, tuple) and len(shape) == 2
            and all(isinstance(s, (int, np.integer)) for s in shape)):
        fail(DTypeError, func, "A", "a square matrix or a number of vertices", describe(A))
    if shape[0] != shape[1]:
        fail(DimensionMismatch, func, "A", "a square adjacency matrix", f"shape {tuple(shape)}")
    return int(shape[0])


def _check_parts(func, parts, n):
    parts = as_int(func, "parts", parts, minimum=1)
    if parts > n:
        fail(InvalidValue, func, "parts", f"an integer in [1, n] (n = {n} vertices)", parts)
    return parts


def block(A, parts):
    """The contiguous partition: part ``i`` holds the user ids ``chunk(n, parts, i)``.

    The renumbering is the identity (``perm = arange(n)``): the rows each
    rank holds in today's 1D layouts.

    Parameters
    ----------
    A : square spla.Matrix, scipy.sparse matrix, spla.DistMatrix, or int
        The graph (only its number of vertices ``n`` is used), or ``n``.
    parts : int
        ``1 <= parts <= n``.

    Returns
    -------
    Partition

    Raises
    ------
    InvalidValue
        ``parts`` outside ``[1, n]``.
    DimensionMismatch
        ``A`` is not square.

    Examples
    --------
    >>> from spla.partition import block
    >>> P = block(10, 4)
    >>> P.bounds.tolist(), P.part.tolist()
    ([0, 3, 6, 8, 10], [0, 0, 0, 1, 1, 1, 2, 2, 3, 3])
    """
    func = "partition.block"
    n = _num_vertices(func, A)
    parts = _check_parts(func, parts, n)
    part = np.repeat(np.arange(parts, dtype=np.int64), np.diff(chunk_bounds(n, parts)))
    return Partition(part, parts, method="block")


def hashed(A, parts, *, seed=0):
    """A random balanced partition: vertices dealt to parts by a hash of their ids.

    P3's partition of the graph structure (and DistDGL's baseline): no
    locality at all, so about ``(parts - 1) / parts`` of the edges are cut,
    but every part gets the same share of any vertex set in expectation,
    hubs included.  The vertices are ordered by ``spla.random.permutation(n,
    seed=seed)`` and that order is cut into ``parts`` blocks of ``chunk``
    sizes, so the parts' sizes differ by at most one.  A pure function of
    ``(n, parts, seed)``: every rank computes the same partition without
    communicating.

    Parameters
    ----------
    A : square spla.Matrix, scipy.sparse matrix, spla.DistMatrix, or int
        The graph (only its number of vertices ``n`` is used), or ``n``.
    parts : int
        ``1 <= parts <= n``.
    seed : int, default 0
        ``0 <= seed < 2**64``.

    Returns
    -------
    Partition
        ``method`` 'hash'.

    Raises
    ------
    InvalidValue
        ``parts`` outside ``[1, n]``, or a bad ``seed``.
    DimensionMismatch
        ``A`` is not square.

    Examples
    --------
    >>> from spla.partition import hashed
    >>> P = hashed(10, 3, seed=1)
    >>> P.sizes.tolist(), sorted(P.perm.tolist()) == list(range(10))
    ([4, 3, 3], True)
    """
    func = "partition.hashed"
    n = _num_vertices(func, A)
    parts = _check_parts(func, parts, n)
    order = permutation(n, seed=as_u64(func, "seed", seed))
    part = np.empty(n, np.int64)
    part[order] = np.repeat(np.arange(parts, dtype=np.int64), np.diff(chunk_bounds(n, parts)))
    return Partition(part, parts, method="hash")


def metis(A, parts, *, seed=0, imbalance=1.03, vertex_weights=None):
    """A METIS k-way partition of the graph ``A`` (needs ``pymetis``).

    METIS needs an undirected graph without self loops: it partitions the
    pattern of ``A + A^T`` without the diagonal (values are ignored).  It
    minimises the edges cut while keeping every part within ``imbalance``
    times the mean part weight (vertices, or ``vertex_weights``).

    Parameters
    ----------
    A : spla.Matrix or scipy.sparse matrix, shape (n, n)
        The whole graph (gather a DistMatrix first).
    parts : int
        ``1 <= parts <= n``; ``parts = 1`` puts every vertex in part 0
        without calling METIS.
    seed : int, default 0
        METIS's random seed, ``0 <= seed < 2**31``: the same graph, parts
        and seed give the same partition.
    imbalance : float, default 1.03
        The largest part weight METIS allows, over the mean (METIS's
        ``ufactor`` is ``1000 * (imbalance - 1)``, rounded), ``>= 1.001``.
    vertex_weights : array_like of int, shape (n,), optional
        Non-negative integer weights whose per-part sums are balanced
        instead of vertex counts: e.g. ``1 + degree`` to balance the rows'
        entries as well, or ``1 + k * is_train`` to spread the training
        vertices.  (One constraint: pymetis 2025.2 does not pass several
        weight columns to METIS correctly.)

    Returns
    -------
    Partition

    Raises
    ------
    MissingDependency
        ``pymetis`` (2025.2 or later) is not installed.
    InvalidValue
        Bad ``parts``, ``seed``, ``imbalance`` or ``vertex_weights``.
    DimensionMismatch
        ``A`` is not square, or weights of the wrong length.

    Notes
    -----
    Always METIS's k-way algorithm (``METIS_PartGraphKway``): recursive
    bisection applies the tolerance at every level, so its parts may
    exceed ``imbalance``.

    Examples
    --------
    Two triangles joined by one edge fall apart along it:

    >>> import numpy as np, spla
    >>> from spla.partition import metis
    >>> r = [0, 0, 1, 3, 3, 4, 2]
    >>> c = [1, 2, 2, 4, 5, 5, 3]
    >>> A = spla.Matrix.from_coo(r + c, c + r, shape=(6, 6))
    >>> P = metis(A, 2, seed=1)
    >>> sorted(P.sizes.tolist()), P.edge_cut(A)
    ([3, 3], 2)
    """
    func = "partition.metis"
    if isinstance(A, Matrix):
        pass
    elif sp.issparse(A):
        A = Matrix.from_scipy(A)
    else:
        fail(DTypeError, func, "A", "a spla.Matrix or scipy.sparse matrix (gather a "
             "DistMatrix first)", describe(A))
    n = _num_vertices(func, A)
    parts = _check_parts(func, parts, n)
    seed = as_int(func, "seed", seed, minimum=0)
    if seed >= 2 ** 31:
        fail(InvalidValue, func, "seed", "an integer below 2**31", seed)
    if (isinstance(imbalance, bool) or not isinstance(imbalance, (int, float, np.number))
            or not np.isfinite(imbalance) or imbalance < 1.001):
        fail(InvalidValue, func, "imbalance", "a number >= 1.001 (max part over mean)",
             describe(imbalance))
    weights = None if vertex_weights is None else _vertex_weights(func, vertex_weights, n)
    if parts == 1:
        return Partition(np.zeros(n, np.int64), 1, method="metis")
    S = A.to("cpu").structure()
    S = select(ewise_add(S, transpose(S), "any"), "offdiag")
    pymetis = _import_pymetis(func)
    opts = pymetis.Options(seed=seed, ufactor=int(round((float(imbalance) - 1) * 1000)))
    # int64 is the index type of pymetis' wheels (no copy); a build with
    # 32-bit indices converts.
    graph = pymetis.CSRAdjacency(np.ascontiguousarray(S.indptr, np.int64),
                                 np.ascontiguousarray(S.indices, np.int64))
    with _METIS_LOCK:
        _, membership = pymetis.part_graph(parts, adjacency=graph, vweights=weights,
                                           recursive=False, options=opts)
    return Partition(np.asarray(membership, np.int64), parts, method="metis")


def _vertex_weights(func, w, n):
    """int64 weights, one per vertex (METIS's vwgt)."""
    _, a = xp_array(w)
    a = to_host(a)
    if a.dtype.kind not in "iu":
        fail(DTypeError, func, "vertex_weights", "an integer array", describe(a))
    if a.shape != (n,):
        fail(DimensionMismatch, func, "vertex_weights", f"an array of shape ({n},)",
             describe(a))
    if a.size and (int(a.min()) < 0 or int(a.max()) >= 2 ** 62):
        fail(InvalidValue, func, "vertex_weights", "integers in [0, 2**62)",
             f"{int(a.min())}..{int(a.max())}")
    return np.ascontiguousarray(a, np.int64)


def _import_pymetis(func):
    # pymetis.CSRAdjacency came with 2025.2, the version setup.cfg asks for.
    return require("pymetis", what=f"{func}: METIS", needs="pymetis 2025.2 or later",
                   hint='pip install "pymetis>=2025.2"',
                   note="(it comes with the mpi, train and test extras)",
                   check=lambda mod: hasattr(mod, "CSRAdjacency"))


__all__ = ["Partition", "Balance", "block", "hashed", "metis"]
