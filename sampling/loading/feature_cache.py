"""The hot-row cache of a partitioned feature store: which rows, their copies, its counters.

Feature collection is bandwidth-bound (Quiver's observation), so the
hottest rows are replicated next to every trainer and only the misses
travel.  ``cache_size`` says how many rows, ``hottest`` which ones (by
degree or by access counts, ties to the smaller id, the same set on every
rank); a ``HotRowCache`` holds the current ``HotSet`` (the ids and the
copies of the rows this rank does not own) and the counters that
``CacheStats`` reports.  ``features.FeatureStore`` owns one.
"""

import math
import numbers
import threading
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from spla import comm as C
from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError
from spla.matrix import Matrix

from sampling.datasets.validation import host_array, is_sparse

#: the ways a hot-feature cache ranks the vertices (``FeatureStore(cache_policy=...)``)
CACHE_POLICIES = ("degree", "frequency")


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


class HotSet(NamedTuple):
    """One cache's contents: the hot ids, and copies of those this rank does not own.

    Replaced as a whole when the cache is (re)filled, so a ``fetch`` in
    another thread reads one hot set or the other, never a mix.

    Attributes
    ----------
    ids : int64 array
        The hot vertices, ascending (the same on every rank).
    copy_ids : int64 array
        Those whose rows are copies here (not in this rank's block), ascending.
    copies : float32 array of shape (len(copy_ids), f)

    Examples
    --------
    >>> import numpy as np
    >>> hot = HotSet(np.array([1, 4]), np.array([4]), np.ones((1, 2), np.float32))
    >>> hot.hits(np.array([0, 1, 4, 7])).tolist(), hot.memory_bytes
    ([False, True, True, False], 32)
    """

    ids: np.ndarray
    copy_ids: np.ndarray
    copies: np.ndarray

    @classmethod
    def empty(cls, num_features):
        """No hot row (rows of ``num_features`` columns)."""
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64),
                   np.zeros((0, num_features), np.float32))

    @property
    def memory_bytes(self):
        """Bytes held: the copies and both id arrays."""
        return int(self.copies.nbytes + self.ids.nbytes + self.copy_ids.nbytes)

    def hits(self, ids):
        """Boolean mask: which of ``ids`` (int64) are hot."""
        return _members(ids, self.ids)

    def rows(self, storage, ids):
        """Rows of hot ``ids`` (sorted): from ``storage``'s block, or from the copies."""
        own, at = storage.owned(ids)
        out = np.empty((ids.size, storage.num_features), np.float32)
        out[own] = storage.local[at]
        out[~own] = self.copies[np.searchsorted(self.copy_ids, ids[~own])]
        return out


class HotRowCache:
    """A store's hot-row cache: its options, its current ``HotSet`` and its counters.

    Thread safe: the counters are updated under a lock and the hot set is
    replaced as one object.  Twins of a store (``FeatureStore.dup``) share
    one cache, hence its rows and its counters.

    Parameters
    ----------
    fraction : float in [0, 1]
        The share of the rows cached (0: none).
    policy : {'degree', 'frequency'}
    num_features : int

    Examples
    --------
    >>> cache = HotRowCache(0.5, "frequency", 2)
    >>> cache.count(requested=4, hits=1, bytes_sent=64)
    >>> s = cache.stats()
    >>> s.cached_rows, s.fetches, s.misses, s.bytes_sent
    (0, 1, 3, 64)
    """

    def __init__(self, fraction, policy, num_features):
        self.fraction = fraction
        self.policy = policy
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(CacheStats._COUNTERS, 0)
        self._hot = HotSet.empty(num_features)

    @staticmethod
    def check(func, cache, cache_policy, cache_graph, n, replicated, comm):
        """The options ``(fraction, policy, source)`` of a store's cache, checked locally.

        ``source`` is ``(kind, value)`` for ``cache_graph``: what
        ``fill_by_degree`` reads the degrees from.  Run inside
        ``spla.comm.collective_checks`` of ``comm`` when partitioned.

        Examples
        --------
        >>> fraction, policy, source = HotRowCache.check("f", 0.5, "degree", [3, 1], 2,
        ...                                              False, None)
        >>> fraction, policy, source[1].tolist()
        (0.5, 'degree', [3, 1])
        """
        fraction = _cache_fraction(func, cache)
        if not isinstance(cache_policy, str) or cache_policy not in CACHE_POLICIES:
            fail(InvalidValue, func, "cache_policy", "'degree' or 'frequency'",
                 describe(cache_policy))
        if fraction > 0 and replicated:
            fail(InvalidValue, func, "cache", "0 for a replicated store (every rank "
                 "holds every row already; the cache applies to mode='partitioned')",
                 repr(cache))
        source = (_NO_GRAPH, None)
        if cache_graph is not None and cache_policy == "frequency":
            fail(InvalidValue, func, "cache_graph", "None with cache_policy="
                 "'frequency' (its counts go to warm_cache)", describe(cache_graph))
        if cache_graph is not None and fraction > 0:
            source = _cache_source(func, cache_graph, n, comm)
        elif fraction > 0 and cache_policy == "degree":
            fail(InvalidValue, func, "cache_graph", "the graph or its degrees for "
                 "cache_policy='degree' (or cache_policy='frequency' and warm_cache)", "None")
        return fraction, cache_policy, source

    @property
    def hot(self):
        """The current ``HotSet`` (read it once per lookup)."""
        return self._hot

    def lookup(self, storage, unique):
        """Collective: the rows of the sorted distinct ids ``unique``, counted as one fetch.

        Hot rows are read here (this rank's block or the copies); only the
        others go through ``storage.exchange``, whose bytes are counted.

        Examples
        --------
        >>> import numpy as np
        >>> from sampling.loading.feature_storage import RowStorage
        >>> from spla import comm as C
        >>> x = np.arange(6, dtype=np.float32).reshape(3, 2)
        >>> comm = C.as_comm(None)
        >>> rows = RowStorage(RowStorage.check("f", x, "partitioned", comm, 1, None), comm)
        >>> cache = HotRowCache(0.0, "degree", 2)
        >>> cache.lookup(rows, np.array([0, 2])).tolist(), cache.stats().misses
        ([[0.0, 1.0], [4.0, 5.0]], 2)
        """
        hot = self._hot
        hit = hot.hits(unique)
        miss = unique[~hit] if hot.ids.size else unique
        with C.counting() as moved:
            got = storage.exchange(miss, "features")
        if hot.ids.size:
            rows = np.empty((unique.size, storage.num_features), np.float32)
            rows[~hit] = got
            rows[hit] = hot.rows(storage, unique[hit])
        else:
            rows = got
        self.count(int(unique.size), int(np.count_nonzero(hit)), sum(moved.values()))
        return rows

    def count(self, requested, hits, bytes_sent):
        """Add one ``fetch`` of ``requested`` distinct ids to the counters."""
        with self._lock:
            c = self._counts
            c["fetches"] += 1
            c["requested"] += requested
            c["hits"] += hits
            c["misses"] += requested - hits
            c["bytes_sent"] += bytes_sent

    def stats(self):
        """This rank's ``CacheStats`` now."""
        hot = self._hot
        with self._lock:
            counters = dict(self._counts)
        return CacheStats(policy=self.policy, fraction=self.fraction,
                          cached_rows=int(hot.ids.size), stored_rows=int(hot.copy_ids.size),
                          memory_bytes=hot.memory_bytes, **counters)

    def fill_by_degree(self, storage, func, source):
        """Collective: agree on the cache's options, then cache the rows of highest degree.

        Both the size and the kind of ``cache_graph`` steer collectives (the
        Allgatherv of the degrees, the exchange of the hot rows), so every
        rank must agree on them first.
        """
        n = storage.num_nodes
        k = cache_size(self.fraction, n) if self.fraction > 0 else 0
        C.check_same(storage.comm, func, "cache", [k, CACHE_POLICIES.index(self.policy),
                                                   source[0] if k else 0],
                     cls=InvalidValue, expected="the same cache, cache_policy and kind "
                     "of cache_graph on every rank",
                     show=lambda v: (f"{v[0]} rows, policy "
                                     f"{CACHE_POLICIES[int(v[1])]!r}, cache_graph "
                                     f"{_SOURCE_NAMES[int(v[2])]}"))
        if k and self.policy == "degree":
            self._fill(storage, func, "cache_graph", hottest(_degrees(source), k))

    def checked_counts(self, func, counts, n):
        """``warm_cache``'s ``counts`` as a non-negative int64 array, checked locally."""
        if self.policy != "frequency":
            fail(InvalidValue, func, "self", "a store built with cache_policy="
                 "'frequency' (this one ranks its rows by degree)",
                 f"cache_policy={self.policy!r}")
        a = host_array(func, "counts", counts)
        if a.ndim != 1 or a.size != n:
            fail(DimensionMismatch, func, "counts", f"a 1-D array of {n} "
                 "counts (one per vertex)", describe(a))
        if a.dtype.kind not in "iu":
            fail(DTypeError, func, "counts", "integer counts", describe(a))
        return _scores(func, "counts", a, "counts")

    def warm(self, storage, func, counts):
        """Collective: cache the rows most requested over the ranks (``counts`` checked)."""
        total = C.allreduce_array(storage.comm, counts, "sum", "features.cache.counts")
        k = cache_size(self.fraction, storage.num_nodes)
        if k:
            self._fill(storage, func, "counts", hottest(total, k))

    def _fill(self, storage, func, arg, hot):
        """Collective: make ``hot`` (sorted, the same on every rank) the cached set."""
        C.check_same(storage.comm, func, arg, [hot.size, _fingerprint(hot)],
                     cls=InvalidValue, expected="the same on every rank (the same graph, "
                     "degrees or summed counts), so that every rank caches the same rows",
                     show=lambda v: f"a hot set of {v[0]} rows with digest {v[1]}")
        mine, _ = storage.owned(hot)
        copy_ids = hot[~mine]
        copies = storage.exchange(copy_ids, "features.cache")
        self._hot = HotSet(hot, copy_ids, copies)


def bulk_access_counts(it, n):
    """Per vertex, the bulks of an epoch iterator whose feature fetch asks for it.

    A 'frequency' cache ranks rows by how often they are fetched; a row
    wanted by several minibatches of one bulk travels once, so a bulk counts
    once.  ``it`` is a ``NodeLoader`` epoch iterator (its ``stats.bulks``
    tells the bulks apart), ``n`` the number of vertices.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from sampling import GraphSAGE, NodeLoader
    >>> A = spla.Matrix.from_dense(np.eye(4, k=1) + np.eye(4, k=-1))
    >>> it = iter(NodeLoader(GraphSAGE(A, [-1]), np.arange(4), 1, bulk=2, shuffle=False))
    >>> bulk_access_counts(it, 4).tolist()     # bulks {0, 1} and {2, 3} with their neighbours
    [1, 2, 2, 1]
    """
    from spla.backend import to_host
    counts = np.zeros(n, np.int64)
    bulk, wanted = 0, []
    for mb in it:
        if it.stats.bulks != bulk and wanted:
            counts[np.unique(np.concatenate(wanted))] += 1
            wanted = []
        bulk = it.stats.bulks
        wanted.append(np.asarray(to_host(mb.input_nodes)))
    if wanted:
        counts[np.unique(np.concatenate(wanted))] += 1
    return counts


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
_SOURCE_NAMES = ("None", "a degree array", "a matrix", "a DistMatrix")


def _cache_source(func, graph, n, comm):
    """(kind, value) of ``cache_graph``, checked locally (no messages).

    ``value`` is an int64/float64 score vector for ``_SCORES`` and
    ``_MATRIX`` (the row degrees), the DistMatrix itself for ``_DIST``.
    """
    import scipy.sparse as sp
    from spla.backend import to_host
    from spla.dist import DistMatrix
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
    return _SCORES, _degree_array(func, graph, n)


def _degree_array(func, graph, n):
    """``cache_graph`` given as an array of ``n`` degrees, checked."""
    expected = ("the graph (a spla.Matrix, scipy.sparse matrix or spla.DistMatrix whose row "
                "v holds the in-neighbours of vertex v) or a 1-D array of n vertex degrees")
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
    return _scores(func, "cache_graph", scores, "degrees")


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


def _degrees(source):
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


def _fingerprint(ids):
    """An int64 digest of a sorted id set (to check that ranks hold the same one)."""
    with np.errstate(over="ignore"):
        h = ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(31)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        return int(np.bitwise_xor.reduce(h, initial=np.uint64(ids.size)) >> np.uint64(1))


def _members(ids, sorted_set):
    """Boolean mask: which of ``ids`` are in the sorted int64 array ``sorted_set``."""
    if not sorted_set.size or not ids.size:
        return np.zeros(ids.size, bool)
    pos = np.minimum(np.searchsorted(sorted_set, ids), sorted_set.size - 1)
    return sorted_set[pos] == ids


__all__ = ["CACHE_POLICIES", "CacheStats", "HotRowCache", "HotSet", "bulk_access_counts",
           "cache_size", "hottest"]
