"""Feature storage and fetching for minibatch training, on one rank or over MPI.

A ``FeatureStore`` holds the node features (``n x f``, float32, dense) in
one of two ways:

* **replicated**: every rank holds all ``n`` rows; ``fetch`` is a local
  gather and moves nothing;
* **partitioned** (1.5D): the rows are cut into ``p/c`` blocks with
  ``spla.layout.chunk`` and block ``i`` is held by the ``c`` ranks of
  process row ``i`` (``c = 1`` is the 1D layout).  ``fetch`` is collective:
  each rank deduplicates the ids it needs, asks the owner of each row *in
  its own process column* (rank ``k`` of the grid's ``col_comm`` holds block
  ``k``) with one all-to-allv of ids, receives the rows with a second one,
  and expands them with the inverse index, so every distinct row travels
  once.  Bytes are counted by ``spla.comm`` under ``'features.request'`` and
  ``'features.reply'``.

A partitioned store can also keep a **hot-feature cache** (Quiver's idea:
feature collection is bandwidth-bound, so the hottest rows are replicated
next to every trainer and only the misses travel): ``cache=fraction``
selects the ``ceil(fraction * n)`` hottest vertices, ranked by degree
(``cache_policy='degree'``, from ``cache_graph``) or by the access counts of
a pre-sampled epoch (``cache_policy='frequency'``, ``warm_cache(counts)``),
the same set on every rank; ``fetch`` serves those rows locally and sends
only the others through the all-to-allv.  The rows returned are the same
with and without the cache; ``cache_stats()`` reports hits, misses, bytes
sent and the memory the cache holds.

Labels and split masks are small and are kept replicated on every rank.
"""

import copy
import math
import numbers
import threading
from dataclasses import dataclass, fields, replace
from fractions import Fraction

import numpy as np

from spla import comm as C
from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError
from spla.layout import chunk, chunk_bounds, owner_of
from spla.matrix import Matrix

from sampling.datasets.validation import as_features, check_targets, host_array, is_sparse

_MODES = ("replicated", "partitioned")
#: the ways a hot-feature cache ranks the vertices (``FeatureStore(cache_policy=...)``)
CACHE_POLICIES = ("degree", "frequency")


def plan_requests(ids, n, parts):
    """What a rank asks for: distinct ids grouped by owner, and how to expand them.

    Parameters
    ----------
    ids : 1-D int array
        Global row ids, any order, repeats allowed.
    n : int
        Number of rows of the whole feature matrix.
    parts : int
        Number of row blocks (``p / c``).

    Returns
    -------
    unique : int64 array
        The distinct ids, ascending (hence grouped by owner block).
    inverse : int64 array
        ``unique[inverse] == ids``.
    sendcounts : int64 array of length ``parts``
        How many of ``unique`` each block's owner is asked for.

    Examples
    --------
    >>> import numpy as np
    >>> u, inv, counts = plan_requests(np.array([7, 1, 7, 4, 1]), 10, 3)
    >>> u.tolist(), counts.tolist(), u[inv].tolist()
    ([1, 4, 7], [1, 1, 1], [7, 1, 7, 4, 1])
    """
    ids = np.asarray(ids, dtype=np.int64)
    unique, inverse = np.unique(ids, return_inverse=True)
    owners = owner_of(unique, n, parts)
    sendcounts = np.bincount(owners, minlength=parts).astype(np.int64)
    return unique, inverse.reshape(-1).astype(np.int64), sendcounts


def cache_size(fraction, n):
    """Rows of a hot-feature cache: ``ceil(fraction * n)``, reading ``fraction`` as printed.

    The fraction is taken as the decimal number it prints as (``0.1`` is one
    tenth, not the binary float just above it), so ``cache_size(0.1, 10)``
    is 1 and ``cache_size(0.3, 10)`` is 3, as a reader expects.

    Examples
    --------
    >>> cache_size(0.1, 10), cache_size(0.3, 10), cache_size(0.05, 65536), cache_size(1.0, 7)
    (1, 3, 3277, 7)
    """
    return int(math.ceil(Fraction(repr(float(fraction))) * int(n)))


def hottest(scores, k):
    """The ``k`` vertices of highest score, ties broken by smaller vertex id (sorted ids).

    Linear time (one partition, no full sort): every vertex scoring above
    the k-th largest score is taken, then the smallest ids among those
    scoring exactly that much.  A pure function of ``(scores, k)``, so
    ranks holding the same scores pick the same set.

    Parameters
    ----------
    scores : 1-D numeric numpy array
        One score per vertex (degrees, access counts); higher is hotter.
    k : int
        How many to pick (at most ``len(scores)``).

    Returns
    -------
    int64 array of the chosen vertex ids, ascending.

    Examples
    --------
    >>> import numpy as np
    >>> hottest(np.array([3, 9, 1, 9, 3, 0]), 3).tolist()   # 9, 9, then the first 3
    [0, 1, 3]
    """
    scores = np.asarray(scores)
    n = scores.size
    k = max(0, min(int(k), n))
    if k == n:
        return np.arange(n, dtype=np.int64)
    if k == 0:
        return np.zeros(0, np.int64)
    t = np.partition(scores, n - k)[n - k]   # the k-th largest score
    above = np.flatnonzero(scores > t)       # fewer than k of these ...
    tied = np.flatnonzero(scores == t)       # ... and at least k with these
    return np.sort(np.concatenate([above, tied[:k - above.size]])).astype(np.int64)


@dataclass(frozen=True)
class CacheStats:
    """What a rank's hot-feature cache holds and how it served ``fetch`` calls.

    Counters are this rank's, since the store was built (or since another
    snapshot: ``later - earlier`` is the window between two snapshots).
    Each ``fetch`` call counts its *distinct* ids, since each distinct row
    travels at most once per call.

    Attributes
    ----------
    policy : str
        ``'degree'`` or ``'frequency'``.
    fraction : float
        The ``cache`` argument (0 when there is no cache).
    cached_rows : int
        Vertices in the hot set (``ceil(fraction * n)``; for a 'frequency'
        store, 0 until ``warm_cache``), the same on every rank.
    stored_rows : int
        Copies of remote rows this rank holds for the cache (the hot rows
        of its own block are read from the block itself).
    memory_bytes : int
        Bytes the cache holds on this rank: the copied rows (float32) and
        the sorted ids of the hot set and of the copies (int64).
    fetches : int
        ``fetch`` calls.
    requested : int
        Distinct ids looked up, summed over the calls.
    hits : int
        Of those, rows served from the cache (no message).
    misses : int
        Rows sent through the all-to-allv (``requested - hits``; rows of
        this rank's own block are among them and move no bytes).
    bytes_sent : int
        Bytes this rank sent in ``fetch`` calls (its requests and its
        replies to the other ranks' requests): the ``spla.comm`` counters
        ``'features.request'`` and ``'features.reply'``.  Summed over the
        ranks this is also the bytes received.

    Examples
    --------
    >>> s = CacheStats("degree", 0.1, 4, 3, 3 * 4 * 2 + 7 * 8, 2, 10, 6, 4, 96)
    >>> s.hit_rate
    0.6
    >>> (s - s).requested, (s - s).cached_rows
    (0, 4)
    """

    policy: str = "degree"
    fraction: float = 0.0
    cached_rows: int = 0
    stored_rows: int = 0
    memory_bytes: int = 0
    fetches: int = 0
    requested: int = 0
    hits: int = 0
    misses: int = 0
    bytes_sent: int = 0

    _COUNTERS = ("fetches", "requested", "hits", "misses", "bytes_sent")

    @property
    def hit_rate(self):
        """``hits / requested`` (NaN before any id was requested)."""
        return self.hits / self.requested if self.requested else float("nan")

    def __sub__(self, other):
        """The counters of the window since snapshot ``other`` (the rest as in ``self``)."""
        if not isinstance(other, CacheStats):
            return NotImplemented
        return replace(self, **{k: getattr(self, k) - getattr(other, k)
                                for k in self._COUNTERS})

    def as_dict(self):
        """Every field, and ``hit_rate``, as a plain dict (for reports and JSON)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["hit_rate"] = self.hit_rate
        return out


def _cache_fraction(func, cache):
    """``cache`` as a float in [0, 1]."""
    if isinstance(cache, (bool, np.bool_)) or not isinstance(cache, (numbers.Real, np.number)):
        fail(InvalidValue, func, "cache", "a fraction of the rows in [0, 1] (a number)",
             describe(cache))
    v = float(cache)
    if not (0.0 <= v <= 1.0):  # also refuses NaN
        fail(InvalidValue, func, "cache", "a fraction of the rows in [0, 1]", repr(cache))
    return v


#: the kinds of ``cache_graph`` (wire codes for the ranks' agreement)
_NO_GRAPH, _SCORES, _MATRIX, _DIST = 0, 1, 2, 3


def _cache_source(func, graph, n, comm):
    """(kind, value) of ``cache_graph``, checked locally (no messages).

    ``value`` is an int64/float64 score vector for ``_SCORES`` and
    ``_MATRIX`` (the row degrees), the DistMatrix itself for ``_DIST``.
    """
    import scipy.sparse as sp
    from spla.backend import to_host
    from spla.dist import DistMatrix
    expected = ("the graph (a spla.Matrix, scipy.sparse matrix or spla.DistMatrix whose row "
                "v holds the in-neighbours of vertex v) or a 1-D array of n vertex degrees")
    if isinstance(graph, DistMatrix):
        if graph.nrows != n:
            fail(DimensionMismatch, func, "cache_graph", f"a graph of {n} vertices (one per "
                 "feature row)", f"a DistMatrix of shape {graph.shape}")
        MPI = C.mpi()
        if comm is None or comm.Compare(graph.comm) not in (MPI.IDENT, MPI.CONGRUENT):
            fail(LayoutError, func, "cache_graph", "a DistMatrix over the store's "
                 "communicator", f"one over another communicator (of "
                 f"{graph.comm.Get_size()} rank(s))")
        return _DIST, graph
    if isinstance(graph, Matrix) or sp.issparse(graph):
        M = graph if isinstance(graph, Matrix) else Matrix.from_scipy(graph)
        if M.nrows != n:
            fail(DimensionMismatch, func, "cache_graph", f"a graph of {n} vertices (one per "
                 "feature row)", f"a matrix of shape {M.shape}")
        return _MATRIX, np.asarray(to_host(M.row_degrees()), np.int64)
    if is_sparse(graph):  # sparse torch / cupyx: not a form the degrees are read from
        fail(DTypeError, func, "cache_graph", expected, describe(graph))
    try:
        scores = host_array(func, "cache_graph", graph)
    except DTypeError:
        fail(DTypeError, func, "cache_graph", expected, describe(graph))
    if scores.dtype.kind not in "iuf":
        fail(DTypeError, func, "cache_graph", expected, describe(graph))
    if scores.ndim != 1:
        fail(DimensionMismatch, func, "cache_graph", expected, describe(graph))
    if scores.size != n:
        fail(DimensionMismatch, func, "cache_graph", f"{n} degrees (one per feature row)",
             describe(scores))
    return _SCORES, _scores(func, "cache_graph", scores, "degrees")


def _scores(func, arg, a, what):
    """A checked non-negative score vector: int64 for integers, float64 for floats."""
    if a.dtype.kind == "f":
        a = a.astype(np.float64, copy=False)
        bad = np.flatnonzero(~np.isfinite(a) | (a < 0))
    else:
        if a.dtype.kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:
            fail(InvalidValue, func, arg, f"{what} below 2**63", int(a.max()))
        a = a.astype(np.int64, copy=False)
        bad = np.flatnonzero(a < 0)
    if bad.size:
        fail(InvalidValue, func, arg, f"non-negative finite {what}",
             f"{a[bad[0]]} at vertex {bad[0]}")
    return a


def _fingerprint(ids):
    """An int64 digest of a sorted id set (to check that ranks hold the same one)."""
    with np.errstate(over="ignore"):
        h = ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(31)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        return int(np.bitwise_xor.reduce(h, initial=np.uint64(ids.size)) >> np.uint64(1))


def _dense_rows(func, features, start, stop, ids=None):
    """Rows ``start:stop`` (or the rows ``ids``) of ``features`` as a checked
    C-contiguous float32 array.

    Rows are cut before anything is converted or copied to the host, so a
    partitioned store converts, checks and moves only its own block.
    """
    pick = slice(start, stop) if ids is None else ids
    if is_sparse(features):
        import scipy.sparse as sp
        if not isinstance(features, Matrix) and hasattr(features, "tocsr"):
            if not sp.issparse(features):  # cupyx.scipy.sparse: to the host first
                features = features.get()
            features = sp.csr_matrix(features)[pick]
            pick = slice(0, int(features.shape[0]))
        x = as_features(func, "features", features)
        from spla.dist import row_block, row_block_list
        x = x.to("cpu")
        blk = (row_block(x, pick.start, pick.stop) if isinstance(pick, slice)
               else row_block_list(x, pick))
        if blk.values is None:
            blk = blk.astype(np.float32)
        return np.ascontiguousarray(blk.to_scipy().toarray(), dtype=np.float32)
    if len(getattr(features, "shape", ())) != 2:
        fail(DimensionMismatch, func, "features", "a 2-D (n, f) matrix", describe(features))
    if ids is not None and features.__class__.__module__.startswith("torch"):
        import torch
        pick = torch.from_numpy(ids).to(features.device)
    return as_features(func, "features", features[pick])


class FeatureStore:
    """Node features (n x f, float32), replicated or partitioned in 1.5D.

    Parameters
    ----------
    features : array or matrix of shape (n, f)
        The whole feature matrix (every rank passes it; each keeps only its
        block when partitioned, densified): a numpy, cupy or torch array
        (CPU or GPU: GPU rows are copied to the host), or a sparse matrix
        (spla.Matrix, scipy.sparse, cupyx.scipy.sparse, sparse torch
        tensor), of any real dtype (kept as float32; a float32 C-contiguous
        numpy array is kept without a copy).  Use
        ``FeatureStore.from_local`` when each rank only has its own block.
    labels : 1-D int array of length n, optional
        Kept replicated (``store.labels``, int64): integer class ids
        ``>= 0``, or -1 for an unknown label, as a numpy, torch or cupy
        array (float labels are refused, not truncated; labels below -1
        too).
    splits : dict of name -> 1-D int array, optional
        Vertex ids of each split (``'train'``, ``'val'``, ``'test'``), kept
        replicated (``store.splits``, ``store.mask(name)``).
    mode : {'replicated', 'partitioned'}, default 'replicated'
    comm : MPI communicator, optional
        Default COMM_WORLD when partitioned.  A replicated store never
        touches MPI.
    replication : int, default 1
        ``c``, the ranks per process row (must divide p).  Only for
        ``mode='partitioned'``.
    num_classes : int, optional
        When given, every known label must be below it.
    cache : float in [0, 1], default 0
        ``mode='partitioned'`` only: every rank also keeps a copy of the
        hottest ``ceil(cache * n)`` rows (``cache_size``), the same rows on
        every rank, and ``fetch`` sends only the other rows through the
        all-to-allv.  A replicated store holds every row already: a
        ``cache`` above 0 there is refused (``InvalidValue``).
    cache_policy : {'degree', 'frequency'}, default 'degree'
        How the hot rows are chosen.  ``'degree'``: the vertices of highest
        degree in ``cache_graph``, chosen when the store is built.
        ``'frequency'``: the vertices requested most often, from access
        counts given to ``warm_cache`` (Quiver's probability-based
        placement: count the input vertices of a pre-sampled epoch); the
        cache is empty until then.  Ties go to the smaller vertex id.
    partition : spla.partition.Partition, optional
        ``mode='partitioned'`` only: place the rows by parts, process row
        ``i`` holding the vertices of part ``i`` (``row_ids``), as
        ``spla.distribute(A, comm, partition=P)`` places the graph's rows,
        so a METIS partition keeps a vertex's features on the rank that
        holds its neighbourhood.  Ids stay the user's: ``fetch`` returns
        the same rows with or without a partition.  ``p / c`` parts, the
        same on every rank.
    cache_graph : graph or 1-D array, optional
        The degrees of ``cache_policy='degree'`` (required with ``cache >
        0``, not used with ``cache=0``, refused with 'frequency'): a
        ``spla.Matrix`` or scipy.sparse matrix of the whole graph (row
        ``v`` holds the in-neighbours of ``v``, as the samplers read it:
        the degree of ``v`` is its row's entry count), a
        ``spla.DistMatrix`` over ``comm`` (each rank
        contributes its block's row degrees with one Allgatherv, so a
        partitioned graph works), or a 1-D array of ``n`` non-negative
        degrees (or any hotness score), the same on every rank.  On a
        symmetric graph the row degree is also how many rows list ``v``,
        which is how likely a sampled neighbourhood is to ask for it.

    Raises
    ------
    InvalidValue
        NaN or infinite features, labels below -1 or not below
        ``num_classes``, a bad ``mode``, ``cache`` outside [0, 1] (or above
        0 for a replicated store), an unknown ``cache_policy``, a missing
        ``cache_graph`` or negative degrees, ranks disagreeing on the cache.
    DTypeError
        Non-numeric features, non-integer labels, a ``cache_graph`` of
        another type.
    DimensionMismatch, LayoutError
        Shapes (also of ``cache_graph``), a ``replication`` that does not
        divide the ranks, a ``cache_graph`` DistMatrix over another
        communicator.

    When partitioned every check is collective: each error is raised on
    every rank of ``comm`` (with the failing rank's message).

    Notes
    -----
    Building a cache is collective: the hot rows this rank does not hold
    come from their owners with one all-to-allv (counted under
    ``'features.cache.request'`` / ``'features.cache.reply'``, apart from
    the per-fetch counters), so ``from_local`` stores cache like any other.
    The cache holds copies taken when it is built: the store's rows never
    change afterwards, so a copy is never stale.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(12, dtype=np.float32).reshape(6, 2)
    >>> store = FeatureStore(x)
    >>> store.fetch(np.array([5, 0, 5])).tolist()
    [[10.0, 11.0], [0.0, 1.0], [10.0, 11.0]]

    A partitioned store (here on one rank) caching the 2 rows of highest
    degree (vertices 4 and 1):

    >>> deg = np.array([1, 5, 0, 2, 7, 1])
    >>> part = FeatureStore(x, mode="partitioned", cache=0.3, cache_graph=deg)
    >>> part.fetch(np.array([4, 2, 4])).tolist()
    [[8.0, 9.0], [4.0, 5.0], [8.0, 9.0]]
    >>> s = part.cache_stats()
    >>> s.cached_rows, s.requested, s.hits, s.hit_rate
    (2, 2, 1, 0.5)
    """

    def __init__(self, features, *, labels=None, splits=None, mode="replicated", comm=None,
                 replication=1, num_classes=None, cache=0.0, cache_policy="degree",
                 cache_graph=None, partition=None, _local=None, _shape=None):
        func = "FeatureStore"
        # A partitioned store is built collectively: its checks agree over
        # the communicator, so a bad argument on one rank raises on every
        # rank.  A replicated store never touches MPI (unless a rank passes
        # a bad mode together with a communicator: then it must still meet
        # the others' agreement).
        if mode == "partitioned":
            check_comm = C.as_comm(comm)
        elif mode not in _MODES:
            check_comm = comm
        else:
            check_comm = None
        with C.collective_checks(check_comm):
            if mode not in _MODES:
                fail(InvalidValue, func, "mode", "'replicated' or 'partitioned'", repr(mode))
            c = as_int(func, "replication", replication, minimum=1)
            if mode == "replicated":
                if c != 1:
                    fail(LayoutError, func, "replication", "1 for a replicated store "
                         "(use mode='partitioned')", c)
                local = _dense_rows(func, features, 0, _rows_of(func, features))
                n, start, stop, p = local.shape[0], 0, local.shape[0], 1
            else:
                p = check_comm.Get_size()
                if p % c:
                    fail(LayoutError, func, "replication",
                         f"a divisor of the number of ranks p = {p}", c)
                n = _rows_of(func, features) if _local is None else int(_shape[0])
                # Process row of this rank in the (p/c) x c grid (ProcessGrid's rule).
                row = check_comm.Get_rank() // c
                start, stop = chunk(n, p // c, row)
                ids = None
                if partition is not None:
                    _check_partition(func, partition, n, p // c)
                    start, stop = int(partition.bounds[row]), int(partition.bounds[row + 1])
                    ids = np.asarray(partition.perm[start:stop], np.int64)
                local = (_dense_rows(func, features, start, stop, ids)
                         if _local is None else _local)
            if partition is not None and mode == "replicated":
                fail(InvalidValue, func, "partition", "None for a replicated store (every "
                     "rank holds every row; partition applies to mode='partitioned')",
                     describe(partition))
            num_classes, labels, checked = check_targets(func, labels, splits, n, num_classes)
            fraction = _cache_fraction(func, cache)
            if not isinstance(cache_policy, str) or cache_policy not in CACHE_POLICIES:
                fail(InvalidValue, func, "cache_policy", "'degree' or 'frequency'",
                     describe(cache_policy))
            if fraction > 0 and mode == "replicated":
                fail(InvalidValue, func, "cache", "0 for a replicated store (every rank "
                     "holds every row already; the cache applies to mode='partitioned')",
                     repr(cache))
            source = (_NO_GRAPH, None)
            if cache_graph is not None and cache_policy == "frequency":
                fail(InvalidValue, func, "cache_graph", "None with cache_policy="
                     "'frequency' (its counts go to warm_cache)", describe(cache_graph))
            if cache_graph is not None and fraction > 0:
                source = _cache_source(func, cache_graph, n, check_comm)
            elif fraction > 0 and cache_policy == "degree":
                fail(InvalidValue, func, "cache_graph", "the graph or its degrees for "
                     "cache_policy='degree' (or cache_policy='frequency' and warm_cache)",
                     "None")
        self.mode = mode
        self.comm = comm if mode == "replicated" else check_comm
        self.p, self.c = p, c
        self.parts = p // c
        self.grid = None if mode == "replicated" else C.grid(self.comm, c)
        self.num_nodes = n
        self.row_start, self.row_stop = start, stop
        self.partition = partition
        # Block boundaries in storage positions (a partition's, or chunk's).
        self._bounds = (None if mode == "replicated" else
                        chunk_bounds(n, p // c) if partition is None else
                        np.asarray(partition.bounds, np.int64))
        self.local = local
        self.num_features = int(local.shape[1]) if local.ndim == 2 else 0
        if mode == "partitioned":
            # Every rank must agree on (n, f) and the placement of the rows: a
            # mismatch would hang the fetch or answer with other rows.
            digest = [-1, -1] if partition is None else [partition.parts,
                                                          partition.fingerprint()]
            C.check_same(self.comm, func, "partition", digest, cls=LayoutError,
                         show=lambda v: ("no partition" if v[0] < 0 else
                                         f"a partition in {v[0]} parts (fingerprint "
                                         f"{int(v[1]):#x})"))
            allv = C.allgather_int(self.comm, [self.num_nodes, self.num_features])
            with C.collective_checks(self.comm):
                if not (allv == allv[0]).all():
                    raise DimensionMismatch(f"{func}: every rank must hold the same feature "
                                            f"shape; got {[tuple(r) for r in allv.tolist()]}")
        self.num_classes = num_classes
        self.labels = labels
        self.splits = checked
        self.cache_fraction = fraction
        self.cache_policy = cache_policy
        self._stats_lock = threading.Lock()
        self._stats = dict.fromkeys(CacheStats._COUNTERS, 0)
        # [(hot ids, ids of the copies, the copies)]: the tuple is replaced
        # as one, so a fetch in another thread sees one cache or the other,
        # never a mix; the list is shared with the store's twins (``dup``).
        self._hot = [(np.zeros(0, np.int64), np.zeros(0, np.int64),
                       np.zeros((0, self.num_features), np.float32))]
        if mode == "partitioned":
            k = cache_size(fraction, n) if fraction > 0 else 0
            # Both steer collectives (the Allgatherv of the degrees, the
            # exchange of the hot rows): every rank must agree.
            C.check_same(self.comm, func, "cache", [k, CACHE_POLICIES.index(cache_policy),
                                                    source[0] if k else 0],
                         cls=InvalidValue, expected="the same cache, cache_policy and kind "
                         "of cache_graph on every rank",
                         show=lambda v: (f"{v[0]} rows, policy "
                                         f"{CACHE_POLICIES[int(v[1])]!r}, cache_graph "
                                         f"{_SOURCE_NAMES[int(v[2])]}"))
            if k and cache_policy == "degree":
                self._fill(func, "cache_graph", hottest(self._degrees(source), k))

    @classmethod
    def from_local(cls, local, num_nodes, *, comm=None, replication=1, labels=None,
                   splits=None, num_classes=None, cache=0.0, cache_policy="degree",
                   cache_graph=None, partition=None):
        """Collective: a partitioned store from this rank's own block of rows.

        ``local`` must hold rows ``chunk(num_nodes, p / c, rank // c)``, or
        with a ``partition`` the rows of the vertices of part ``rank // c``
        in ascending order (``partition.perm[bounds[i]:bounds[i + 1]]``).
        The other arguments are those of ``FeatureStore``; every check
        raises on every rank.  The rows of a cache come from their owners.

        Examples
        --------
        >>> import numpy as np
        >>> store = FeatureStore.from_local(np.ones((4, 2), np.float32), 4)  # one rank
        >>> store.shape
        (4, 2)
        """
        func = "FeatureStore.from_local"
        comm = C.as_comm(comm)
        p = comm.Get_size()
        with C.collective_checks(comm):
            c = as_int(func, "replication", replication, minimum=1)
            num_nodes = as_int(func, "num_nodes", num_nodes, minimum=0)
            if p % c:
                fail(LayoutError, func, "replication", f"a divisor of p = {p}", c)
            s, e = chunk(num_nodes, p // c, comm.Get_rank() // c)
            if partition is not None:
                _check_partition(func, partition, num_nodes, p // c)
                i = comm.Get_rank() // c
                s, e = int(partition.bounds[i]), int(partition.bounds[i + 1])
            block = _dense_rows(func, local, 0, _rows_of(func, local))
            if block.shape[0] != e - s:
                fail(DimensionMismatch, func, "local", f"{e - s} rows (rows {s}:{e} of "
                     f"{num_nodes})", describe(block))
        return cls(None, labels=labels, splits=splits, mode="partitioned", comm=comm,
                   replication=c, num_classes=num_classes, cache=cache,
                   cache_policy=cache_policy, cache_graph=cache_graph, partition=partition,
                   _local=block, _shape=(num_nodes, block.shape[1]))

    def dup(self):
        """Collective when partitioned: a twin that fetches on a duplicated communicator.

        The twin shares this store's rows, its cache (also one filled later
        by ``warm_cache``) and its counters (``cache_stats`` counts the
        fetches of both), but its all-to-allv run on its own communicator
        (``comm.Dup()``), so a background thread may fetch with it while
        this thread communicates (``NodeLoader(prefetch=k)`` does so).  A
        replicated store never communicates and returns itself.  Every rank
        of ``comm`` must call it.

        Returns
        -------
        FeatureStore

        Examples
        --------
        >>> import numpy as np
        >>> store = FeatureStore(np.eye(3, dtype=np.float32), mode="partitioned")
        >>> twin = store.dup()
        >>> twin.comm is store.comm, twin.fetch([2]).tolist()
        (False, [[0.0, 0.0, 1.0]])
        >>> store.cache_stats().fetches                  # counted on both
        1
        """
        if self.replicated:
            return self
        twin = copy.copy(self)
        twin.comm = self.comm.Dup()
        twin.grid = C.grid(twin.comm, self.c)
        return twin

    @property
    def row_ids(self):
        """The vertices whose rows ``local`` holds, in order (int64; all when replicated).

        Examples
        --------
        >>> import numpy as np
        >>> from spla.partition import Partition
        >>> x = np.arange(8, dtype=np.float32).reshape(4, 2)
        >>> store = FeatureStore(x, mode="partitioned", partition=Partition([0, 0, 0, 0], 1))
        >>> store.row_ids.tolist(), store.fetch([3]).tolist()
        ([0, 1, 2, 3], [[6.0, 7.0]])
        """
        if self.partition is None:
            return np.arange(self.row_start, self.row_stop, dtype=np.int64)
        return np.asarray(self.partition.perm[self.row_start:self.row_stop], np.int64)

    @property
    def replicated(self):
        return self.mode == "replicated"

    @property
    def shape(self):
        return (self.num_nodes, self.num_features)

    def __repr__(self):
        where = ("replicated" if self.replicated else
                 f"partitioned over {self.p} ranks (c = {self.c}), "
                 + (f"rows {self.row_start}:{self.row_stop} here" if self.partition is None
                    else f"{self.row_stop - self.row_start} rows of part "
                         f"{self.grid.row} of a partition here"))
        if self.cache_fraction > 0:
            where += (f", cache {self.cache_fraction:g} by {self.cache_policy} "
                      f"({self._hot[0][0].size} rows)")
        return f"<FeatureStore {self.num_nodes}x{self.num_features} float32, {where}>"

    @property
    def cached_ids(self):
        """The vertices of the hot set, ascending (read-only; the same on every rank).

        Empty without a cache (and for a 'frequency' store until
        ``warm_cache``).

        Examples
        --------
        >>> import numpy as np
        >>> x = np.zeros((5, 2), np.float32)
        >>> store = FeatureStore(x, mode="partitioned", cache=0.4, cache_graph=[0, 3, 1, 3, 2])
        >>> store.cached_ids.tolist()
        [1, 3]
        """
        hot = self._hot[0][0].view()
        hot.flags.writeable = False
        return hot

    def mask(self, name):
        """Boolean mask of split ``name`` (length n)."""
        m = np.zeros(self.num_nodes, bool)
        m[self.splits[name]] = True
        return m

    def fetch(self, ids):
        """The feature rows of ``ids`` (float32, ``len(ids) x f``).

        Collective when partitioned: every rank of the communicator must
        call it (with its own ids, possibly none).  Replicated: local.
        With a cache, the hot rows are read locally and only the others
        travel; the result is the same.

        Parameters
        ----------
        ids : 1-D int array (numpy, cupy or torch)
            Global vertex ids, any order, repeats allowed.

        Returns
        -------
        numpy float32 array of shape (len(ids), f)
        """
        func = "FeatureStore.fetch"
        with C.collective_checks(None if self.replicated else self.comm):
            ids = as_index_array(func, "ids", host_array(func, "ids", ids), self.num_nodes)
        if self.replicated:
            return self.local[ids]
        hot, copy_ids, copies = self._hot[0]
        unique, inverse = np.unique(ids, return_inverse=True)
        inverse = inverse.reshape(-1)
        hit = _members(unique, hot)
        miss = unique[~hit] if hot.size else unique
        with C.counting() as moved:
            got = self._exchange(miss, "features")
        f = self.num_features
        if hot.size:
            rows = np.empty((unique.size, f), np.float32)
            rows[~hit] = got
            rows[hit] = self._hot_rows(unique[hit], copy_ids, copies)
        else:
            rows = got
        nhit = int(np.count_nonzero(hit))
        with self._stats_lock:
            c = self._stats
            c["fetches"] += 1
            c["requested"] += int(unique.size)
            c["hits"] += nhit
            c["misses"] += int(unique.size) - nhit
            c["bytes_sent"] += sum(moved.values())
        return rows[inverse] if f else np.zeros((ids.size, 0), np.float32)

    def _exchange(self, unique, op):
        """Rows of the sorted distinct ``unique`` from their owners (collective).

        Each id goes to the owner of its block in this rank's process
        column (rank ``k`` of ``col_comm`` holds block ``k``), ids with one
        all-to-allv, rows back with a second (counted under ``op +
        '.request'`` / ``'.reply'``).
        """
        slots = self._slots(unique)
        order = None
        if self.partition is not None:
            # Storage positions ascending, hence grouped by owner block.
            order = np.argsort(slots, kind="stable")
            slots = slots[order]
        owner = np.searchsorted(self._bounds, slots, side="right") - 1
        sendcounts = np.bincount(owner, minlength=self.parts).astype(np.int64)
        cc = self.grid.col_comm
        req, reqcounts = C.alltoallv(cc, slots, sendcounts, op + ".request")
        f = self.num_features
        rows = self.local[req - self.row_start] if req.size else np.zeros((0, f), np.float32)
        got, _ = C.alltoallv(cc, rows.reshape(-1), reqcounts * f, op + ".reply")
        # Requests went out grouped by owner in ascending order, and each
        # owner answers in the order asked: the rows come back as ``slots``.
        got = got.reshape(unique.size, f)
        if order is None:
            return got
        out = np.empty_like(got)
        out[order] = got
        return out

    def _slots(self, ids):
        """Storage positions of global ids (the ids themselves without a partition)."""
        if self.partition is None:
            return ids
        return np.asarray(self.partition.inverse[ids], np.int64)

    def _owned(self, ids):
        """Which of ``ids`` this rank's block holds, and their rows' positions in ``local``."""
        slots = self._slots(ids)
        own = (slots >= self.row_start) & (slots < self.row_stop)
        return own, slots[own] - self.row_start

    def _hot_rows(self, ids, copy_ids, copies):
        """Rows of hot ``ids`` (sorted): this rank's block, or the cache's copies."""
        own, at = self._owned(ids)
        out = np.empty((ids.size, self.num_features), np.float32)
        out[own] = self.local[at]
        out[~own] = copies[np.searchsorted(copy_ids, ids[~own])]
        return out

    def _degrees(self, source):
        """The degree vector of ``cache_graph`` (collective for a DistMatrix)."""
        kind, value = source
        if kind != _DIST:
            return value
        from spla.backend import to_host
        D = value
        deg = np.asarray(to_host(D.local.row_degrees()), np.int64)
        if D.layout.replicated:
            return deg
        # Rank k of a process column holds block k: one Allgatherv there
        # puts every block's degrees, in order, on every rank.
        allv, _ = C.allgatherv(D.grid.col_comm, deg, "features.cache.degrees")
        # The blocks hold their rows in storage order: vertex v's degree is
        # at its position there.
        return allv if D.partition is None else allv[np.asarray(D.partition.inverse)]

    def _fill(self, func, arg, hot):
        """Collective: make ``hot`` (sorted, the same on every rank) the cached set."""
        C.check_same(self.comm, func, arg, [hot.size, _fingerprint(hot)],
                     cls=InvalidValue, expected="the same on every rank (the same graph, "
                     "degrees or summed counts), so that every rank caches the same rows",
                     show=lambda v: f"a hot set of {v[0]} rows with digest {v[1]}")
        mine, _ = self._owned(hot)
        copy_ids = hot[~mine]
        copies = self._exchange(copy_ids, "features.cache")
        self._hot[0] = (hot, copy_ids, copies)

    def warm_cache(self, counts):
        """Collective: choose the cached rows of a ``cache_policy='frequency'`` store.

        ``counts[v]`` is how often this rank requested vertex ``v``, e.g.
        ``np.bincount(ids, minlength=n)`` over the ids it fetched in a
        pre-sampled epoch (the input vertices of its minibatches).  The
        counts are summed over the ranks (one Allreduce), the
        ``ceil(cache * n)`` most requested vertices (ties: smaller id) are
        cached on every rank, and their rows come from their owners.  A
        second call replaces the cache.  With ``cache=0`` nothing is cached
        (the counts are still checked and summed, so every rank calls it
        the same way).

        Parameters
        ----------
        counts : 1-D integer array of length n (numpy, torch or cupy)
            Non-negative.

        Returns
        -------
        self

        Raises
        ------
        InvalidValue
            On every rank: a store whose ``cache_policy`` is not
            'frequency' (its hot rows are chosen by degree), negative counts.
        DTypeError, DimensionMismatch
            On every rank: counts that are not integers, or not n of them.

        Examples
        --------
        >>> import numpy as np
        >>> x = np.arange(12, dtype=np.float32).reshape(6, 2)
        >>> store = FeatureStore(x, mode="partitioned", cache=0.3, cache_policy="frequency")
        >>> seen = np.array([5, 2, 5, 5, 3, 2])          # ids of a pre-sampled epoch
        >>> store.warm_cache(np.bincount(seen, minlength=6)).cache_stats().cached_rows
        2
        >>> store.fetch(np.array([5, 2])).tolist(), store.cache_stats().hits
        ([[10.0, 11.0], [4.0, 5.0]], 2)
        """
        func = "FeatureStore.warm_cache"
        with C.collective_checks(None if self.replicated else self.comm):
            if self.cache_policy != "frequency":
                fail(InvalidValue, func, "self", "a store built with cache_policy="
                     "'frequency' (this one ranks its rows by degree)",
                     f"cache_policy={self.cache_policy!r}")
            a = host_array(func, "counts", counts)
            if a.ndim != 1 or a.size != self.num_nodes:
                fail(DimensionMismatch, func, "counts", f"a 1-D array of {self.num_nodes} "
                     "counts (one per vertex)", describe(a))
            if a.dtype.kind not in "iu":
                fail(DTypeError, func, "counts", "integer counts", describe(a))
            a = _scores(func, "counts", a, "counts")
        if self.replicated:
            return self  # cache is 0 there
        total = C.allreduce_array(self.comm, a, "sum", "features.cache.counts")
        k = cache_size(self.cache_fraction, self.num_nodes)
        if k:
            self._fill(func, "counts", hottest(total, k))
        return self

    def cache_stats(self):
        """This rank's ``CacheStats``: the cache's size and memory, hits and misses.

        Counters run since the store was built; the difference of two
        snapshots (``after - before``) covers the calls between them.
        A replicated store has no cache and counts nothing.

        Examples
        --------
        >>> import numpy as np
        >>> store = FeatureStore(np.ones((4, 2), np.float32), mode="partitioned")
        >>> before = store.cache_stats()
        >>> _ = store.fetch([3, 3, 1])
        >>> d = store.cache_stats() - before
        >>> d.fetches, d.requested, d.hits, d.misses
        (1, 2, 0, 2)
        """
        hot, copy_ids, copies = self._hot[0]
        with self._stats_lock:
            counters = dict(self._stats)
        return CacheStats(policy=self.cache_policy, fraction=self.cache_fraction,
                          cached_rows=int(hot.size), stored_rows=int(copy_ids.size),
                          memory_bytes=int(copies.nbytes + hot.nbytes + copy_ids.nbytes),
                          **counters)

    def fetch_labels(self, ids):
        """Labels of ``ids`` (local: labels are replicated)."""
        func = "FeatureStore.fetch_labels"
        return self.labels[as_index_array(func, "ids", host_array(func, "ids", ids),
                                          self.num_nodes)]


def _members(ids, sorted_set):
    """Boolean mask: which of ``ids`` are in the sorted int64 array ``sorted_set``."""
    if not sorted_set.size or not ids.size:
        return np.zeros(ids.size, bool)
    pos = np.minimum(np.searchsorted(sorted_set, ids), sorted_set.size - 1)
    return sorted_set[pos] == ids


_SOURCE_NAMES = ("None", "a degree array", "a matrix", "a DistMatrix")


def _check_partition(func, partition, n, parts):
    from spla.partition import Partition
    if not isinstance(partition, Partition):
        fail(DTypeError, func, "partition", "a spla.partition.Partition or None",
             describe(partition))
    if partition.n != n:
        fail(DimensionMismatch, func, "partition", f"a Partition of the {n} vertices",
             f"one of {partition.n}")
    if partition.parts != parts:
        fail(LayoutError, func, "partition", f"a Partition in p/c = {parts} parts (one per "
             "process row)", f"{partition.parts} parts")


def _rows_of(func, features):
    shape = getattr(features, "shape", None)
    if shape is None or len(shape) != 2:
        fail(DimensionMismatch, func, "features", "a 2-D (n, f) matrix", describe(features))
    return int(shape[0])


__all__ = ["CACHE_POLICIES", "CacheStats", "FeatureStore", "cache_size", "hottest",
           "plan_requests"]
