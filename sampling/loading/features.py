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

``FeatureStore`` is the facade over three parts, one module each:
``feature_storage`` (``RowStorage``: where the rows live and the
all-to-allv that brings them, ``plan_requests``), ``feature_cache``
(``HotRowCache``: the hot set, its fill and lookup, ``CacheStats``,
``cache_size``, ``hottest``) and ``labels`` (``Targets``: labels and
splits).  Their public names are importable from here too.
"""

import copy

import numpy as np

import spla
from spla import comm as C
from spla.checks import as_index_array

from sampling.datasets.validation import host_array
from sampling.loading.feature_cache import (CACHE_POLICIES, CacheStats, HotRowCache,
                                            cache_size, hottest)
from sampling.loading.feature_storage import RowStorage, plan_requests
from sampling.loading.labels import Targets


def _part(component, name, doc):
    """A read-only property answering ``self.<component>.<name>``."""
    return property(lambda self: getattr(getattr(self, component), name), doc=doc)


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
        # Every argument is checked before the first message, inside one
        # agreement (when partitioned), so a bad one on any rank raises on
        # every rank; the collectives of the parts come after.
        check_comm = RowStorage.check_comm(mode, comm)
        with C.collective_checks(check_comm):
            placement = RowStorage.check(func, features, mode, check_comm, replication,
                                         partition, _local, _shape)
            targets = Targets(func, labels, splits, placement.num_nodes, num_classes)
            fraction, policy, source = HotRowCache.check(
                func, cache, cache_policy, cache_graph, placement.num_nodes,
                mode == "replicated", check_comm)
        self._storage = RowStorage(placement, comm if mode == "replicated" else check_comm,
                                   func)
        self._targets = targets
        self._hot_cache = HotRowCache(fraction, policy, self._storage.num_features)
        if not self.replicated:
            self._hot_cache.fill_by_degree(self._storage, func, source)

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
        with C.collective_checks(comm):
            block, num_nodes, c = RowStorage.local_block(func, local, num_nodes, comm,
                                                         replication, partition)
        return cls(None, labels=labels, splits=splits, mode="partitioned", comm=comm,
                   replication=c, num_classes=num_classes, cache=cache,
                   cache_policy=cache_policy, cache_graph=cache_graph, partition=partition,
                   _local=block, _shape=(num_nodes, block.shape[1]))

    mode = _part("_storage", "mode", "``'replicated'`` or ``'partitioned'``.")
    comm = _part("_storage", "comm", "The communicator (as given when replicated: maybe None).")
    grid = _part("_storage", "grid", "The ``(p/c) x c`` process grid (None when replicated).")
    p = _part("_storage", "p", "Ranks of ``comm`` (1 when replicated).")
    c = _part("_storage", "c", "Ranks per process row (the replication).")
    parts = _part("_storage", "parts", "Row blocks, ``p // c``.")
    num_nodes = _part("_storage", "num_nodes", "Rows of the whole feature matrix.")
    num_features = _part("_storage", "num_features", "Columns of the feature matrix.")
    row_start = _part("_storage", "row_start", "First storage position held here.")
    row_stop = _part("_storage", "row_stop", "One past the last storage position held here.")
    partition = _part("_storage", "partition", "The ``Partition`` placing the rows, or None.")
    local = _part("_storage", "local", "The rows held here (float32, C-contiguous).")
    replicated = _part("_storage", "replicated", "Whether every rank holds every row.")
    labels = _part("_targets", "labels", "The labels (int64, -1 unknown), or None.")
    splits = _part("_targets", "splits", "Split name -> vertex ids (int64).")
    num_classes = _part("_targets", "num_classes", "The ``num_classes`` given, or None.")
    cache_fraction = _part("_hot_cache", "fraction", "The ``cache`` fraction (0: no cache).")
    cache_policy = _part("_hot_cache", "policy", "``'degree'`` or ``'frequency'``.")

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
        twin._storage = self._storage.dup()
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
        return self._storage.row_ids

    @property
    def shape(self):
        """``(num_nodes, num_features)``."""
        return (self.num_nodes, self.num_features)

    def __repr__(self):
        where = ("replicated" if self.replicated else
                 f"partitioned over {self.p} ranks (c = {self.c}), "
                 + (f"rows {self.row_start}:{self.row_stop} here" if self.partition is None
                    else f"{self.row_stop - self.row_start} rows of part "
                         f"{self.grid.row} of a partition here"))
        if self.cache_fraction > 0:
            where += (f", cache {self.cache_fraction:g} by {self.cache_policy} "
                      f"({self._hot_cache.hot.ids.size} rows)")
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
        hot = self._hot_cache.hot.ids.view()
        hot.flags.writeable = False
        return hot

    def mask(self, name):
        """Boolean mask of split ``name`` (length n)."""
        return self._targets.mask(name)

    def fetch(self, ids, out=None):
        """The feature rows of ``ids`` (float32, ``len(ids) x f``).

        Collective when partitioned: every rank of the communicator must
        call it (with its own ids, possibly none).  Replicated: local, a
        gather on every CPU thread (``spla.take_rows``).  With a cache, the
        hot rows are read locally and only the others travel; the result
        is the same.

        Parameters
        ----------
        ids : 1-D int array (numpy, cupy or torch)
            Global vertex ids, any order, repeats allowed.
        out : numpy float32 array of shape (len(ids), f), optional
            C-contiguous; written with the rows (e.g. a pinned staging
            buffer, saving a copy) and returned.

        Returns
        -------
        numpy float32 array of shape (len(ids), f)

        Raises
        ------
        IndexOutOfRange, DTypeError
            ``ids`` out of range or not integers.
        DimensionMismatch
            ``out`` of another shape or dtype, or not C-contiguous.

        Examples
        --------
        >>> import numpy as np
        >>> store = FeatureStore(np.arange(8, dtype=np.float32).reshape(4, 2))
        >>> store.fetch([3, 0]).tolist()
        [[6.0, 7.0], [0.0, 1.0]]
        >>> out = np.empty((1, 2), np.float32)
        >>> store.fetch(np.array([2]), out=out) is out, out.tolist()
        (True, [[4.0, 5.0]])
        """
        func = "FeatureStore.fetch"
        with C.collective_checks(None if self.replicated else self.comm):
            ids = as_index_array(func, "ids", host_array(func, "ids", ids), self.num_nodes)
            if out is not None:
                _check_out(func, out, (ids.size, self.num_features))
        if self.replicated:
            # ids checked above: the gather reads them as they are.
            return spla.take_rows(self.local, ids, out=out, check=False)
        unique, inverse = np.unique(ids, return_inverse=True)
        rows = self._hot_cache.lookup(self._storage, unique)
        if not self.num_features:
            rows = np.zeros((ids.size, 0), np.float32)
        else:
            rows = rows[inverse.reshape(-1)]
        if out is None:
            return rows
        out[...] = rows
        return out

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
            a = self._hot_cache.checked_counts(func, counts, self.num_nodes)
        if self.replicated:
            return self  # cache is 0 there
        self._hot_cache.warm(self._storage, func, a)
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
        return self._hot_cache.stats()

    def fetch_labels(self, ids):
        """Labels of ``ids`` (local: labels are replicated)."""
        return self._targets.fetch("FeatureStore.fetch_labels", ids)


def _check_out(func, out, shape):
    """``out`` must be a C-contiguous float32 numpy array of ``shape``."""
    from spla.checks import describe, fail
    from spla.exceptions import DimensionMismatch
    if not (isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == shape
            and out.flags.c_contiguous and out.flags.writeable):
        fail(DimensionMismatch, func, "out", f"a writable C-contiguous float32 array of shape "
             f"{shape}", describe(out))


__all__ = ["CACHE_POLICIES", "CacheStats", "FeatureStore", "cache_size", "hottest",
           "plan_requests"]
