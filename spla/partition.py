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

import threading

import numpy as np

from spla.backend import to_host
from spla.checks import as_int, as_u64, describe, fail, xp_array
from spla.elementwise import ewise_add, select
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, MissingDependency
from spla.random import permutation
from spla.layout import chunk_bounds
from spla.optional import require
from spla.partition_map import Balance, Partition, as_graph_matrix  # noqa: F401 - Balance: re-exported
from spla.structure import transpose

# METIS (GKlib) keeps its error-recovery state in process globals: one call
# at a time.  The lock holds no data.
_METIS_LOCK = threading.Lock()



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
    vertex_weights : array_like of int, shape (n,) or (n, k), optional
        Non-negative integer weights whose per-part sums are balanced
        instead of vertex counts: e.g. ``1 + degree`` to balance the rows'
        entries as well, or ``1 + k * is_train`` to spread the training
        vertices.  With ``k`` columns, METIS balances every column at once
        (multi-constraint partitioning, ``ncon = k``): each column's
        largest part stays within ``imbalance`` times its mean, where METIS
        finds such a partition (e.g. one column per vertex type, one for
        the training vertices).  Columns that are all zero constrain
        nothing and are dropped.

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
        ``A`` is not square, or weights of the wrong shape.
    DTypeError
        Weights that are not integers.

    Notes
    -----
    Always METIS's k-way algorithm (``METIS_PartGraphKway``): recursive
    bisection applies the tolerance at every level, so its parts may
    exceed ``imbalance``.  pymetis (2025.2) always tells METIS there is
    one constraint, so several weight columns are passed to the METIS
    library inside pymetis' extension module directly, through ctypes;
    a pymetis build that does not export METIS with 64-bit indices gets
    ``MissingDependency`` for ``k > 1``.  With several constraints METIS
    meets tight tolerances (1.03) up to about one vertex per part, but may
    overshoot looser ones (1.1) by a few percent.

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

    Two constraints: every part gets three vertices and one of the two
    marked ones (0 and 3):

    >>> W = np.stack([np.ones(6, np.int64), np.isin(np.arange(6), [0, 3])], axis=1)
    >>> Q = metis(A, 2, seed=1, vertex_weights=W.astype(np.int64))
    >>> np.bincount(Q.part, weights=W[:, 1]).tolist()
    [1.0, 1.0]
    """
    func = "partition.metis"
    A = as_graph_matrix(func, A)
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
    ufactor = int(round((float(imbalance) - 1) * 1000))
    if weights is not None and weights.ndim == 2:
        used = weights[:, weights.any(axis=0)]
        if used.shape[1] > 1:
            membership = _kway_multi(func, S, used, parts, seed, ufactor)
            return Partition(membership, parts, method="metis")
        weights = np.ascontiguousarray(used[:, 0] if used.shape[1] else weights[:, 0])
    opts = pymetis.Options(seed=seed, ufactor=ufactor)
    # int64 is the index type of pymetis' wheels (no copy); a build with
    # 32-bit indices converts.
    graph = pymetis.CSRAdjacency(np.ascontiguousarray(S.indptr, np.int64),
                                 np.ascontiguousarray(S.indices, np.int64))
    with _METIS_LOCK:
        _, membership = pymetis.part_graph(parts, adjacency=graph, vweights=weights,
                                           recursive=False, options=opts)
    return Partition(np.asarray(membership, np.int64), parts, method="metis")


def _vertex_weights(func, w, n):
    """int64 weights, one per vertex and constraint (METIS's vwgt), shape (n,) or (n, k)."""
    _, a = xp_array(w)
    a = to_host(a)
    if a.dtype.kind not in "iu":
        fail(DTypeError, func, "vertex_weights", "an integer array", describe(a))
    if not (a.shape == (n,) or (a.ndim == 2 and a.shape[0] == n and a.shape[1] >= 1)):
        fail(DimensionMismatch, func, "vertex_weights",
             f"an array of shape ({n},) or ({n}, k) with k >= 1", describe(a))
    if a.size and (int(a.min()) < 0 or int(a.max()) >= 2 ** 62):
        fail(InvalidValue, func, "vertex_weights", "integers in [0, 2**62)",
             f"{int(a.min())}..{int(a.max())}")
    return np.ascontiguousarray(a, np.int64)


# METIS's option slots (METIS_NOPTIONS in metis.h 5.x) and return code.
_METIS_NOPTIONS = 40
_METIS_OK = 1


def _metis_library(func):
    """METIS's C entry points in pymetis' extension module, via ctypes.

    pymetis links METIS statically and exports its symbols; the index
    width is read off ``METIS_SetDefaultOptions``, which sets every option
    to -1: with 64-bit indices all 40 int64 slots become -1, with 32-bit
    ones only the first 20.
    """
    import ctypes

    # The package imports its extension module, so it is an attribute.
    internal = getattr(_import_pymetis(func), "_internal", None)
    try:
        lib = ctypes.CDLL(internal.__file__)
        lib.METIS_PartGraphKway.restype = ctypes.c_int
        probe = np.full(2 * _METIS_NOPTIONS, 7, np.int64)
        lib.METIS_SetDefaultOptions(probe.ctypes.data_as(ctypes.c_void_p))
    except (OSError, AttributeError):
        probe = None
    if probe is None or not (probe[:_METIS_NOPTIONS] == -1).all():
        fail(MissingDependency, func, "vertex_weights",
             "several weight columns: a pymetis whose extension exports METIS with "
             "64-bit indices (the PyPI wheels)", "a pymetis build without it")
    return lib, internal.options_indices


def _kway_multi(func, S, weights, parts, seed, ufactor):
    """``METIS_PartGraphKway`` with ``ncon = weights.shape[1]`` constraints."""
    import ctypes

    lib, opt = _metis_library(func)
    n, ncon = weights.shape
    options = np.full(2 * _METIS_NOPTIONS, -1, np.int64)
    lib.METIS_SetDefaultOptions(options.ctypes.data_as(ctypes.c_void_p))
    options[opt.SEED], options[opt.UFACTOR], options[opt.NUMBERING] = seed, ufactor, 0
    arrays = [np.array([n], np.int64), np.array([ncon], np.int64),
              np.ascontiguousarray(S.indptr, np.int64), np.ascontiguousarray(S.indices, np.int64),
              np.ascontiguousarray(weights, np.int64), np.array([parts], np.int64)]
    edgecut, part = np.zeros(1, np.int64), np.zeros(n, np.int64)
    ptr = [a.ctypes.data_as(ctypes.c_void_p) for a in arrays]
    # vsize, adjwgt, tpwgts and ubvec stay NULL: unit sizes and edge
    # weights, equal parts, and ufactor's tolerance on every constraint.
    with _METIS_LOCK:
        info = lib.METIS_PartGraphKway(*ptr[:5], None, None, ptr[5], None, None,
                                       options.ctypes.data_as(ctypes.c_void_p),
                                       edgecut.ctypes.data_as(ctypes.c_void_p),
                                       part.ctypes.data_as(ctypes.c_void_p))
    if info != _METIS_OK:
        fail(InvalidValue, func, "vertex_weights", "weights METIS can partition",
             f"METIS_PartGraphKway error code {info}")
    return part


def _import_pymetis(func):
    # pymetis.CSRAdjacency came with 2025.2, the version setup.cfg asks for.
    return require("pymetis", what=f"{func}: METIS", needs="pymetis 2025.2 or later",
                   hint='pip install "pymetis>=2025.2"',
                   note="(it comes with the mpi, train and test extras)",
                   check=lambda mod: hasattr(mod, "CSRAdjacency"))


__all__ = ["Partition", "Balance", "block", "hashed", "metis"]
