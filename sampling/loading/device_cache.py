"""Features larger than the GPU: hot rows in device memory, the rest read in place.

``DeviceFeatureCache`` keeps the rows of the highest-ranked vertices (by
degree, or by scores the caller gives) in device memory and the whole
feature matrix in pinned, device-mapped host memory
(``spla.backend.to_mapped_host``).  ``gather(ids)`` is one kernel
(``spla.take_rows``) that reads cached rows from device memory and the
others over the host-device link, with no copy staged through the host and
no blocking read: its result equals ``features_on_device[ids]`` bit for bit.

The ranking and slot map are plain numpy functions (``cache_order``,
``slot_map``, ``resolve_cache_rows``), so they are tested without a GPU.
"""

import threading
import time

import numpy as np

import spla
from spla import backend
from spla.checks import as_index_array, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue

_CLS = "DeviceFeatureCache"

#: Share of the device's free memory a default-sized cache may take: the
#: rest is left to the model, the sampler's buffers and the minibatches.
DEFAULT_FREE_SHARE = 0.5


def cache_order(scores, k):
    """The ``k`` vertices of highest score, best first, ties by smaller id.

    Parameters
    ----------
    scores : 1-D numeric numpy array (n,)
    k : int, 0 <= k <= n

    Returns
    -------
    int64 numpy array (k,)

    Examples
    --------
    >>> import numpy as np
    >>> from sampling.loading.device_cache import cache_order
    >>> cache_order(np.array([1, 5, 5, 0, 2]), 3).tolist()
    [1, 2, 4]
    """
    scores = np.asarray(scores)
    # A stable sort of the negated scores keeps equal scores in id order.
    key = -scores.astype(np.float64) if scores.dtype.kind in "iub" else -scores
    return np.argsort(key, kind="stable")[:int(k)].astype(np.int64)


def slot_map(n, hot_ids):
    """Each vertex's row in the cache (its position in ``hot_ids``), or -1.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling.loading.device_cache import slot_map
    >>> slot_map(5, np.array([3, 0])).tolist()
    [1, -1, -1, 0, -1]
    """
    slot = np.full(int(n), -1, np.int64)
    slot[np.asarray(hot_ids, np.int64)] = np.arange(len(hot_ids), dtype=np.int64)
    return slot


def resolve_cache_rows(cache_rows, n, row_bytes, free_bytes):
    """The number of rows to cache.

    ``None``: as many rows as fit in ``DEFAULT_FREE_SHARE`` of ``free_bytes``
    (at most ``n``); an int: that many (0..n), refused if they do not fit in
    ``free_bytes``; a float in [0, 1]: that fraction of ``n``, rounded down,
    refused likewise.

    Examples
    --------
    >>> from sampling.loading.device_cache import resolve_cache_rows
    >>> resolve_cache_rows(None, 100, 8, 400), resolve_cache_rows(0.25, 100, 8, 400)
    (25, 25)
    >>> resolve_cache_rows(60, 100, 8, 400)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: DeviceFeatureCache: argument 'cache_rows' must be at most 50 rows ...; got 60
    """
    n, row_bytes, free_bytes = int(n), max(int(row_bytes), 1), int(free_bytes)
    if cache_rows is None:
        return min(n, int(free_bytes * DEFAULT_FREE_SHARE) // row_bytes)
    if isinstance(cache_rows, (bool, np.bool_)) or not isinstance(
            cache_rows, (int, float, np.integer, np.floating)):
        fail(DTypeError, _CLS, "cache_rows", "None, an int or a float in [0, 1]",
             describe(cache_rows))
    if isinstance(cache_rows, (float, np.floating)):
        if not 0.0 <= cache_rows <= 1.0:
            fail(InvalidValue, _CLS, "cache_rows", "a fraction in [0, 1]", cache_rows)
        k = int(np.floor(cache_rows * n))
    else:
        k = int(cache_rows)
        if not 0 <= k <= n:
            fail(InvalidValue, _CLS, "cache_rows", f"a row count in [0, {n}]", k)
    fit = free_bytes // row_bytes
    if k > fit:
        fail(InvalidValue, _CLS, "cache_rows", f"at most {fit} rows (the free device "
             f"memory, {free_bytes} bytes, holds {fit} rows of {row_bytes} bytes)", k)
    return k


def rank_scores(rank, graph, n):
    """The score of each vertex: ``graph``'s out-degrees, or the given array.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from sampling.loading.device_cache import rank_scores
    >>> A = spla.Matrix.from_coo([0, 0, 2], [1, 2, 0], shape=(3, 3))
    >>> rank_scores("degree", A, 3).tolist()
    [2, 0, 1]
    """
    if isinstance(rank, str):
        if rank != "degree":
            fail(InvalidValue, _CLS, "rank", "'degree' or an array of vertex scores", rank)
        if graph is None or not hasattr(graph, "indptr") or tuple(graph.shape) != (n, n):
            fail(InvalidValue, _CLS, "graph", f"a spla.Matrix of shape ({n}, {n}) "
                 "(rank='degree' ranks by its degrees)", describe(graph))
        return np.diff(backend.to_host(graph.indptr)).astype(np.int64)
    scores = backend.to_host(rank) if hasattr(rank, "dtype") else np.asarray(rank)
    if scores.shape != (n,) or scores.dtype.kind not in "iuf":
        fail(DimensionMismatch, _CLS, "rank", f"'degree' or {n} numeric vertex scores",
             describe(scores))
    if scores.dtype.kind == "f" and not np.isfinite(scores).all():
        fail(InvalidValue, _CLS, "rank", "finite scores", "NaN or infinite ones")
    return scores


def _features(features):
    if backend.device_of(features) != backend.CUDA and not isinstance(features, np.ndarray):
        fail(DTypeError, _CLS, "features", "a numpy or cupy array", describe(features))
    if features.ndim != 2 or features.dtype.kind not in "iuf":
        fail(DTypeError, _CLS, "features", "a 2-D numeric array (one row per vertex)",
             describe(features))
    return np.ascontiguousarray(backend.to_host(features))


class DeviceFeatureCache:
    """Vertex features gathered on the GPU: hot rows in device memory, the rest zero-copy.

    Parameters
    ----------
    features : numpy or cupy array (n, f)
        One row per vertex, any numeric dtype.
    cache_rows : None, int or float, optional
        Rows kept in device memory: ``None`` as many as fit in half the
        device's free memory (``cupy.cuda.Device().mem_info[0]``, the
        free bytes ``cudaMemGetInfo`` reports), at most ``n``; an int that
        many; a float that fraction of ``n``.  A size that does not fit in
        the free memory is refused with an error naming ``cache_rows``.
    rank : "degree" or array (n,)
        Which rows are hot: the vertices of highest degree in ``graph``, or
        of highest given score; ties go to the smaller vertex id.
    graph : spla.Matrix (n, n), optional
        The graph whose degrees rank the vertices (needed for "degree").
    device : str
        A CUDA device ("cuda", "cuda:0").

    Notes
    -----
    The whole matrix is copied once into pinned, device-mapped host memory
    (it must fit in host memory that can be page-locked).  ``gather`` may be
    called from several threads at once: each call allocates its own
    output, the device hit counter is updated atomically by the kernel and
    the host counters under a lock.

    Examples
    --------
    >>> import numpy as np, spla, sampling
    >>> A = spla.generators.rmat(8, 8, seed=0)  # doctest: +SKIP
    >>> X = np.random.default_rng(0).random((A.shape[0], 16), np.float32)  # doctest: +SKIP
    >>> cache = sampling.DeviceFeatureCache(X, cache_rows=0.1, graph=A)  # doctest: +SKIP
    >>> bool((cache.gather(np.array([3, 1])).get() == X[[3, 1]]).all())  # doctest: +SKIP
    True
    """

    def __init__(self, features, *, cache_rows=None, rank="degree", graph=None, device="cuda"):
        if backend.normalize_device(_CLS, device) != backend.CUDA:
            fail(InvalidValue, _CLS, "device", "a CUDA device ('cuda', 'cuda:0')", device)
        cp = backend.require_cupy(_CLS)
        host = _features(features)
        n, f = host.shape
        row_bytes = f * host.dtype.itemsize
        free = int(cp.cuda.Device().mem_info[0])
        k = resolve_cache_rows(cache_rows, n, row_bytes, free)
        hot_ids = cache_order(rank_scores(rank, graph, n), k)
        self.num_nodes, self.width, self.dtype = int(n), int(f), host.dtype
        self.cache_rows, self.row_bytes = int(k), int(row_bytes)
        self.hot_ids = hot_ids
        self.cold = backend.to_mapped_host(host)
        self.hot = cp.asarray(host[hot_ids]).reshape(k, f)
        self.slot = cp.asarray(slot_map(n, hot_ids))
        self._hits = cp.zeros(1, np.int64)
        self._lock = threading.Lock()
        self._gathers = self._rows = 0
        self._seconds = 0.0

    def gather(self, ids, *, check=True):
        """The feature rows of ``ids`` as a device array (k, f), with no blocking read.

        Parameters
        ----------
        ids : numpy or cupy integer array (k,)
        check : bool
            Check that ``ids`` are vertices (free for numpy ids, one blocking
            read for device ids; pass False for ids known to be in range,
            e.g. a sampler's).

        Returns
        -------
        cupy.ndarray (k, f)
            ``features[ids]``, bit for bit.

        Examples
        --------
        >>> cache.gather(np.array([0, 2])).shape  # doctest: +SKIP
        (2, 16)
        """
        cp = backend.require_cupy("DeviceFeatureCache.gather")
        t0 = time.perf_counter()
        if isinstance(ids, np.ndarray) and backend.device_of(ids) != backend.CUDA:
            if check:
                ids = as_index_array("DeviceFeatureCache.gather", "ids", ids, self.num_nodes)
            ids, check = cp.asarray(ids), False
        out = spla.take_rows(self.cold, ids, hot=self.hot, slot=self.slot, hits=self._hits,
                             check=check)
        with self._lock:
            self._gathers += 1
            self._rows += int(ids.shape[0])
            self._seconds += time.perf_counter() - t0
        return out

    def stats(self):
        """Counters since creation (one blocking read, of the hit counter).

        Returns
        -------
        dict
            ``hits``, ``misses``, ``hit_rate`` (hits / rows, 0 with no rows),
            ``pcie_bytes`` (bytes of missed rows read from host memory),
            ``gathers``, ``rows`` and ``seconds`` (host time in ``gather``,
            which queues the kernel without waiting for it).

        Examples
        --------
        >>> cache.stats()["gathers"]  # doctest: +SKIP
        1
        """
        with self._lock:
            gathers, rows, seconds = self._gathers, self._rows, self._seconds
        hits = int(backend.to_host(self._hits)[0])
        misses = max(rows - hits, 0)
        return {"hits": hits, "misses": misses, "hit_rate": hits / rows if rows else 0.0,
                "pcie_bytes": misses * self.row_bytes, "gathers": gathers, "rows": rows,
                "seconds": seconds}

    def describe(self):
        """One line: rows cached of all, their bytes in device memory.

        Examples
        --------
        >>> cache.describe()  # doctest: +SKIP
        'DeviceFeatureCache: 25 of 256 rows (16 float32 wide) in device memory (1.6 KB) ...'
        """
        share = self.cache_rows / self.num_nodes if self.num_nodes else 0.0
        return (f"{_CLS}: {self.cache_rows} of {self.num_nodes} rows ({self.width} "
                f"{self.dtype} wide, {share:.1%}) in device memory "
                f"({self.cache_rows * self.row_bytes / 1e6:.1f} MB), all rows in mapped host "
                f"memory ({self.num_nodes * self.row_bytes / 1e6:.1f} MB)")

    def __repr__(self):
        return (f"{_CLS}(num_nodes={self.num_nodes}, width={self.width}, "
                f"dtype={self.dtype}, cache_rows={self.cache_rows})")


__all__ = ["DeviceFeatureCache", "cache_order", "slot_map", "resolve_cache_rows",
           "rank_scores", "DEFAULT_FREE_SHARE"]
