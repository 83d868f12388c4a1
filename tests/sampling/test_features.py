"""FeatureStore on one rank: the rows fetched, the deduplicated requests, errors.

The MPI behaviour (partitioned fetches across ranks, bytes moved) is tested
under mpiexec in tests/mpi/test_dist_train.py.
"""

import re

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from spla import comm as C
from spla.layout import chunk, owner_of
from sampling.loading.features import FeatureStore, plan_requests


@pytest.fixture(scope="module")
def x():
    rng = np.random.default_rng(0)
    return rng.standard_normal((37, 5)).astype(np.float32)


IDS = np.array([36, 3, 3, 0, 17, 36, 5, 3, 20, 1])  # unsorted, with repeats


def test_replicated_fetch_returns_the_rows(x):
    store = FeatureStore(x)
    got = store.fetch(IDS)
    assert got.dtype == np.float32 and got.shape == (IDS.size, 5)
    assert np.array_equal(got, x[IDS])
    assert store.fetch(np.zeros(0, np.int64)).shape == (0, 5)


def test_partitioned_fetch_on_one_rank_moves_nothing(x):
    store = FeatureStore(x, mode="partitioned")
    assert (store.row_start, store.row_stop) == (0, 37)
    with C.counting() as moved:
        got = store.fetch(IDS)
    assert np.array_equal(got, x[IDS])
    assert sum(moved.values()) == 0


@pytest.mark.parametrize("mode, cache", [("replicated", 0), ("partitioned", 0),
                                         ("partitioned", 0.3)])
def test_fetch_into_out_writes_the_rows_there(x, mode, cache):
    store = FeatureStore(x, mode=mode, cache=cache, cache_graph=np.arange(37) % 7)
    out = np.full((IDS.size, 5), np.nan, np.float32)
    assert store.fetch(IDS, out=out) is out
    assert np.array_equal(out, x[IDS])
    # A gather far above the kernels' serial threshold (every thread).
    big = np.random.default_rng(1).integers(0, 37, 20000)
    assert np.array_equal(store.fetch(big, out=np.empty((big.size, 5), np.float32)), x[big])


@pytest.mark.parametrize("out, got", [
    (np.empty((10, 5), np.float64), "float64"),
    (np.empty((9, 5), np.float32), "(9, 5)"),
    (np.empty((5, 10), np.float32).T, "(10, 5)"),
    ([[0.0] * 5] * 10, "[[0.0, 0.0"),
])
def test_fetch_out_of_the_wrong_kind_is_refused(x, out, got):
    from spla.exceptions import DimensionMismatch
    with pytest.raises(DimensionMismatch, match=r"^FeatureStore\.fetch: argument 'out' must be "
                       r"a writable C-contiguous float32 array of shape \(10, 5\)"):
        FeatureStore(x).fetch(IDS, out=out)
    with pytest.raises(DimensionMismatch, match=re.escape(got)):
        FeatureStore(x).fetch(IDS, out=out)


@pytest.mark.parametrize("parts", [1, 2, 3, 5])
def test_requests_are_deduplicated_and_grouped_by_owner(parts):
    n = 37
    unique, inverse, counts = plan_requests(IDS, n, parts)
    # every distinct row is asked for exactly once ...
    assert np.array_equal(unique, np.unique(IDS))
    assert counts.sum() == unique.size < IDS.size
    # ... in owner order, the counts matching chunk()'s blocks ...
    owners = owner_of(unique, n, parts)
    assert np.all(np.diff(owners) >= 0)
    for k in range(parts):
        s, e = chunk(n, parts, k)
        assert counts[k] == np.count_nonzero((unique >= s) & (unique < e))
    # ... and the inverse index expands the answers back to the request.
    assert np.array_equal(unique[inverse], IDS)


def test_sparse_features_are_densified(x):
    S = sp.csr_matrix(np.where(np.abs(x) > 0.8, x, 0))
    dense = S.toarray().astype(np.float32)
    for given in (spla.Matrix.from_scipy(S), S):
        store = FeatureStore(given)
        assert np.array_equal(store.fetch(IDS), dense[IDS])
    structural = spla.Matrix.from_scipy(S, structural=True)
    assert np.array_equal(FeatureStore(structural).fetch(IDS), (dense != 0)[IDS].astype(np.float32))


def test_labels_and_splits_are_replicated(x):
    y = np.arange(37) % 4
    store = FeatureStore(x, labels=y, splits={"train": [1, 2], "test": np.array([30])})
    assert np.array_equal(store.fetch_labels(IDS), y[IDS])
    assert store.mask("train").sum() == 2 and store.mask("test")[30]


def test_from_local_on_one_rank(x):
    store = FeatureStore.from_local(x, 37)
    assert np.array_equal(store.fetch(IDS), x[IDS])


def test_errors(x):
    store = FeatureStore(x)
    with pytest.raises(spla.IndexOutOfRange, match="FeatureStore.fetch"):
        store.fetch([0, 37])
    with pytest.raises(spla.DTypeError):
        store.fetch(np.array([0.5]))
    with pytest.raises(spla.DimensionMismatch, match="labels"):
        FeatureStore(x, labels=np.zeros(3))
    with pytest.raises(spla.InvalidValue, match="mode"):
        FeatureStore(x, mode="sharded")
    with pytest.raises(spla.LayoutError, match="replication"):
        FeatureStore(x, replication=2)
    with pytest.raises(spla.DimensionMismatch):
        FeatureStore(np.zeros(5, np.float32))
    with pytest.raises(spla.LayoutError, match="replication"):
        FeatureStore(x, mode="partitioned", replication=2)  # 2 does not divide p = 1


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features_are_refused(x, bad):
    y = x.copy()
    y[7, 2] = bad
    with pytest.raises(spla.InvalidValue) as info:
        FeatureStore(y)
    assert "FeatureStore: argument 'features' must be finite" in str(info.value)
    assert "entry" in str(info.value)
    with pytest.raises(spla.InvalidValue, match="features"):
        FeatureStore(sp.csr_matrix(y))
    with pytest.raises(spla.InvalidValue, match="features"):
        FeatureStore(y, mode="partitioned")
    with pytest.raises(spla.InvalidValue, match="features"):
        FeatureStore.from_local(y, 37)


@pytest.mark.parametrize("labels, exc, got", [
    (np.arange(37) + 0.5, spla.DTypeError, "dtype float64"),
    (np.ones(37, np.float32), spla.DTypeError, "dtype float32"),   # integral floats too
    (np.array([True] * 37), spla.DTypeError, "dtype bool"),
    (np.r_[np.zeros(36, np.int64), -2], spla.InvalidValue, "-2 at vertex 36"),
    (np.r_[np.zeros(5, np.int64), 3, np.zeros(31, np.int64)], spla.InvalidValue,
     "3 at vertex 5"),
])
def test_bad_labels_are_refused(x, labels, exc, got):
    with pytest.raises(exc) as info:
        FeatureStore(x, labels=labels, num_classes=3)
    msg = str(info.value)
    assert msg.startswith("FeatureStore: argument 'labels' must be"), msg
    assert got in msg, msg


def test_labels_are_kept_as_int64_with_unknowns(x):
    labels = np.r_[np.arange(36) % 3, -1].astype(np.int32)
    store = FeatureStore(x, labels=labels, num_classes=3)
    assert store.labels.dtype == np.int64 and store.labels[-1] == -1
    assert store.fetch_labels([36, 1]).tolist() == [-1, 1]
    # Without num_classes any label >= 0 is accepted.
    assert FeatureStore(x, labels=np.arange(37)).labels.max() == 36


# ---- features and labels in other containers -----------------------------------

def test_features_of_every_backend(x, backend):
    """numpy (and cupy with a GPU): dense and sparse features, replicated and partitioned."""
    dense = backend.asarray(x)
    for mode in ("replicated", "partitioned"):
        store = FeatureStore(dense, mode=mode, labels=backend.asarray(np.arange(37) % 3))
        assert np.array_equal(store.fetch(backend.asarray(IDS)), x[IDS])
        assert store.labels.dtype == np.int64 and isinstance(store.labels, np.ndarray)
        assert store.fetch_labels(backend.asarray(IDS)).tolist() == (IDS % 3).tolist()
    M = spla.Matrix.from_scipy(sp.csr_matrix(x)).to(backend.device)
    assert np.array_equal(FeatureStore(M).fetch(IDS), x[IDS])
    if backend.name == "cupy":
        import cupyx.scipy.sparse as csp
        assert np.array_equal(FeatureStore(csp.csr_matrix(dense)).fetch(IDS), x[IDS])
    with pytest.raises(spla.DTypeError, match="FeatureStore: argument 'labels' must be integer"):
        FeatureStore(dense, labels=backend.asarray(np.arange(37) + 0.25))


def test_torch_features_labels_and_ids(x):
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(x.copy())
    store = FeatureStore(t, labels=torch.arange(37) % 4, splits={"train": torch.tensor([1, 2])})
    assert np.shares_memory(store.local, t.numpy())      # a CPU tensor is not copied
    assert np.array_equal(store.fetch(torch.from_numpy(IDS)), x[IDS])
    assert store.fetch_labels(torch.tensor([5, 36])).tolist() == [1, 0]
    assert store.splits["train"].tolist() == [1, 2]
    part = FeatureStore(t.double(), mode="partitioned")
    assert part.local.dtype == np.float32 and np.array_equal(part.fetch(IDS), x[IDS])
    assert np.array_equal(FeatureStore.from_local(t, 37).fetch(IDS), x[IDS])
    sparse = torch.from_numpy(np.where(np.abs(x) > 1, x, 0)).to_sparse()
    assert np.array_equal(FeatureStore(sparse).fetch(IDS), np.where(np.abs(x) > 1, x, 0)[IDS])
    assert FeatureStore(t.to(torch.bfloat16)).local.dtype == np.float32


@pytest.mark.parametrize("make", [
    lambda torch: torch.arange(37) + 0.5,                         # truncation would give ints
    lambda torch: torch.ones(37),                                 # integral floats too
    lambda torch: torch.ones(37, dtype=torch.bfloat16),
    lambda torch: torch.ones(37, dtype=torch.float16),
    lambda torch: torch.ones(37, dtype=torch.float64).requires_grad_(True),
])
def test_float_torch_labels_are_refused_not_truncated(x, make):
    # The reported bug: "FeatureStore ... truncates float labels".  Every
    # float path (numpy above, torch here, replicated or partitioned,
    # FeatureStore.from_local) must raise instead.
    torch = pytest.importorskip("torch")
    labels = make(torch)
    for build in (lambda: FeatureStore(x, labels=labels),
                  lambda: FeatureStore(x, labels=labels, mode="partitioned"),
                  lambda: FeatureStore.from_local(x, 37, labels=labels)):
        with pytest.raises(spla.DTypeError) as info:
            build()
        assert "argument 'labels' must be integer class labels" in str(info.value)


@pytest.mark.parametrize("bad, exc, words", [
    (np.array([["a"] * 5] * 37), spla.DTypeError, "numeric features"),
    (np.ones((37, 5), complex), spla.DTypeError, "numeric features"),
    (np.ones((37, 5, 1), np.float32), spla.DimensionMismatch, "2-D (n, f)"),
    ("x", spla.DimensionMismatch, "2-D (n, f)"),
    (np.full((37, 5), 1e300), spla.InvalidValue, "within float32's range"),
])
def test_bad_feature_containers_are_refused(bad, exc, words):
    with pytest.raises(exc) as info:
        FeatureStore(bad)
    assert str(info.value).startswith("FeatureStore: argument 'features' must be"), info.value
    assert words in str(info.value)


# ---- the hot-feature cache (one rank; tests/mpi/test_feature_cache_mpi.py has the rest) -----

import math  # noqa: E402
from decimal import Decimal  # noqa: E402

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sampling.loading.features import (CACHE_POLICIES, CacheStats, cache_size,  # noqa: E402
                               hottest)


def ref_hottest(scores, k):
    """Sort by (-score, id), keep k, sort the ids: the definition, by a full sort."""
    order = sorted(range(len(scores)), key=lambda v: (-scores[v], v))
    return sorted(order[:k])


@given(st.lists(st.integers(0, 4), max_size=40), st.data())
def test_hottest_matches_a_full_sort_with_ties_by_smaller_id(scores, data):
    k = data.draw(st.integers(0, len(scores)))
    got = hottest(np.array(scores, np.int64), k)
    assert got.dtype == np.int64
    assert got.tolist() == ref_hottest(scores, k)
    # float scores follow the same rule
    fl = [s / 3 for s in scores]
    assert hottest(np.array(fl), k).tolist() == ref_hottest(fl, k)


@given(st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 5000))
def test_cache_size_is_the_ceiling_of_the_decimal_fraction(num, den, n):
    den = max(den, num, 1)
    f = float(f"{num / den:.3g}")  # a fraction as a user types it
    assert cache_size(f, n) == math.ceil(Decimal(repr(f)) * n)
    assert cache_size(0.1, 10) == 1 and cache_size(0.3, 10) == 3 and cache_size(0.7, 10) == 7
    assert cache_size(0.0, n) == 0 and cache_size(1.0, n) == n


DEG = np.array([3, 0, 7, 7, 1, 2, 9, 0, 4, 4, 4, 1] + [1] * 25)   # 37 vertices, ties


@pytest.mark.parametrize("graph", ["degrees", "matrix", "scipy", "dist"])
def test_degree_cache_on_one_rank_returns_the_same_rows(x, graph):
    rng = np.random.default_rng(1)
    rows = np.repeat(np.arange(37), DEG)
    cols = rng.integers(0, 37, rows.size)
    S = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(37, 37))
    S.sum_duplicates()
    deg = np.diff(S.indptr)             # the row degrees (repeats merged)
    given_graph = {"degrees": deg, "matrix": spla.Matrix.from_scipy(S), "scipy": S,
                   "dist": spla.distribute(spla.Matrix.from_scipy(S))}[graph]
    store = FeatureStore(x, mode="partitioned", cache=0.2, cache_graph=given_graph)
    hot = ref_hottest(deg.tolist(), 8)                      # ceil(0.2 * 37) = 8
    s0 = store.cache_stats()
    assert store.cached_ids.tolist() == hot and not store.cached_ids.flags.writeable
    assert (s0.policy, s0.fraction, s0.cached_rows) == ("degree", 0.2, 8)
    # one rank holds every row: nothing is copied, only the hot ids are kept
    assert s0.stored_rows == 0 and s0.memory_bytes == 8 * 8
    ids = np.concatenate([IDS, rng.integers(0, 37, 50)])
    with C.counting() as moved:
        got = store.fetch(ids)
    assert np.array_equal(got, x[ids]) and got.dtype == np.float32
    assert sum(moved.values()) == 0
    s = store.cache_stats() - s0
    distinct = set(ids.tolist())
    assert (s.fetches, s.requested) == (1, len(distinct))
    assert s.hits == len(distinct & set(hot)) and s.misses == len(distinct - set(hot))
    assert s.hits > 0 and s.bytes_sent == 0
    assert s.hit_rate == s.hits / s.requested


def test_frequency_cache_is_filled_by_warm_cache(x):
    torch = pytest.importorskip("torch")
    store = FeatureStore(x, mode="partitioned", cache=0.1, cache_policy="frequency")
    assert store.cache_stats().cached_rows == 0                  # empty until warmed
    seen = np.array([5, 9, 9, 30, 30, 30, 2, 2, 36, 36])
    counts = np.bincount(seen, minlength=37)
    assert store.warm_cache(torch.from_numpy(counts)) is store   # torch counts too
    assert store.cache_stats().cached_rows == 4                  # ceil(3.7)
    assert store.cached_ids.tolist() == [2, 9, 30, 36]          # 30 (3), then 2, 9, 36 (2)
    before = store.cache_stats()
    got = store.fetch(np.array([30, 36, 0, 9, 2, 5, 30]))
    assert np.array_equal(got, x[[30, 36, 0, 9, 2, 5, 30]])
    d = store.cache_stats() - before
    assert (d.requested, d.hits) == (6, 4)                     # 30, 36, 9, 2 are hot; 0, 5 not
    # a second call replaces the cache
    store.warm_cache(np.bincount([0, 0, 1], minlength=37))
    assert store.cache_stats().cached_rows == 4
    before = store.cache_stats()
    store.fetch([0, 1, 30])
    # hot: 0 and 1, then the smallest ids among the zero counts (2, 3): 30 is a miss now
    assert (store.cache_stats() - before).hits == 2


def test_full_cache_serves_everything_and_empty_cache_nothing(x):
    full = FeatureStore(x, mode="partitioned", cache=1.0, cache_graph=np.zeros(37))
    empty = FeatureStore(x, mode="partitioned", cache=0.0)
    for store, hits in ((full, np.unique(IDS).size), (empty, 0)):
        assert np.array_equal(store.fetch(IDS), x[IDS])
        assert store.cache_stats().hits == hits
    assert full.cache_stats().cached_rows == 37 and empty.cache_stats().cached_rows == 0
    assert empty.cache_stats().hit_rate == 0.0          # every lookup missed
    # zero features: the shapes still work
    z = FeatureStore(np.zeros((37, 0), np.float32), mode="partitioned", cache=0.5,
                     cache_graph=DEG)
    assert z.fetch(IDS).shape == (IDS.size, 0)


def test_from_local_and_repr_with_a_cache(x):
    store = FeatureStore.from_local(x, 37, cache=0.1, cache_graph=DEG)
    assert np.array_equal(store.fetch(IDS), x[IDS])
    # hot: 6 (degree 9), 2 and 3 (7), then 8 of the three 4s: of IDS only 3 is hot
    assert store.cache_stats().hits == 1
    assert "cache 0.1 by degree (4 rows)" in repr(store)
    assert "cache" not in repr(FeatureStore(x, mode="partitioned"))


def test_cache_stats_snapshots_and_dict():
    s = CacheStats("frequency", 0.5, 10, 6, 100, 3, 20, 5, 15, 640)
    d = s - CacheStats("frequency", 0.5, 10, 6, 100, 1, 8, 2, 6, 128)
    assert (d.fetches, d.requested, d.hits, d.misses, d.bytes_sent) == (2, 12, 3, 9, 512)
    assert (d.cached_rows, d.memory_bytes, d.policy) == (10, 100, "frequency")
    assert d.hit_rate == 0.25
    assert np.isnan(CacheStats().hit_rate)
    assert s.as_dict()["hit_rate"] == 0.25 and s.as_dict()["stored_rows"] == 6
    assert CACHE_POLICIES == ("degree", "frequency")


def test_replicated_store_has_no_cache(x):
    store = FeatureStore(x)
    store.fetch(IDS)
    s = store.cache_stats()
    assert (s.cached_rows, s.requested, s.fraction) == (0, 0, 0.0)


CACHE_ERRORS = [
    (dict(cache=-0.1, cache_graph=DEG), spla.InvalidValue, "argument 'cache' must be a "
     "fraction of the rows in [0, 1]; got -0.1"),
    (dict(cache=1.5, cache_graph=DEG), spla.InvalidValue, "in [0, 1]; got 1.5"),
    (dict(cache=float("nan"), cache_graph=DEG), spla.InvalidValue, "got nan"),
    (dict(cache="0.1", cache_graph=DEG), spla.InvalidValue, "(a number); got '0.1'"),
    (dict(cache=True, cache_graph=DEG), spla.InvalidValue, "(a number); got True"),
    (dict(cache=0.1, cache_policy="lru"), spla.InvalidValue, "argument 'cache_policy' must "
     "be 'degree' or 'frequency'; got 'lru'"),
    (dict(cache=0.1), spla.InvalidValue, "argument 'cache_graph' must be the graph or its "
     "degrees for cache_policy='degree'"),
    (dict(cache=0.1, cache_policy="frequency", cache_graph=DEG), spla.InvalidValue,
     "argument 'cache_graph' must be None with cache_policy='frequency'"),
    (dict(cache=0.1, cache_graph=DEG[:5]), spla.DimensionMismatch, "37 degrees (one per "
     "feature row); got array of shape (5,)"),
    (dict(cache=0.1, cache_graph=-DEG), spla.InvalidValue, "non-negative finite degrees; "
     "got -3 at vertex 0"),
    (dict(cache=0.1, cache_graph=np.r_[DEG[:36], np.nan]), spla.InvalidValue,
     "got nan at vertex 36"),
    (dict(cache=0.1, cache_graph=sp.eye(5).tocsr()), spla.DimensionMismatch,
     "a graph of 37 vertices (one per feature row); got a matrix of shape (5, 5)"),
    (dict(cache=0.1, cache_graph="graph"), spla.DTypeError, "argument 'cache_graph' must "
     "be the graph"),
    (dict(cache=0.1, cache_graph=np.ones((37, 2))), spla.DimensionMismatch,
     "argument 'cache_graph' must be the graph"),
]


@pytest.mark.parametrize("kwargs, exc, message", CACHE_ERRORS,
                         ids=[str(i) for i in range(len(CACHE_ERRORS))])
def test_bad_cache_arguments_are_refused(x, kwargs, exc, message):
    with pytest.raises(exc) as info:
        FeatureStore(x, mode="partitioned", **kwargs)
    assert str(info.value).startswith("FeatureStore: argument"), info.value
    assert message in str(info.value), info.value


def test_cache_on_a_replicated_store_is_refused(x):
    with pytest.raises(spla.InvalidValue) as info:
        FeatureStore(x, cache=0.1, cache_graph=DEG)
    assert ("FeatureStore: argument 'cache' must be 0 for a replicated store (every rank "
            "holds every row already") in str(info.value)
    FeatureStore(x, cache=0.0, cache_policy="frequency")   # no cache: accepted


@pytest.mark.parametrize("counts, exc, message", [
    (np.ones(5, np.int64), spla.DimensionMismatch, "a 1-D array of 37 counts (one per "
     "vertex); got array of shape (5,)"),
    (np.ones(37), spla.DTypeError, "integer counts; got array of shape (37,) and dtype "
     "float64"),
    (np.r_[np.ones(36, np.int64), -1], spla.InvalidValue, "non-negative finite counts; got "
     "-1 at vertex 36"),
])
def test_bad_warm_cache_counts_are_refused(x, counts, exc, message):
    store = FeatureStore(x, mode="partitioned", cache=0.1, cache_policy="frequency")
    with pytest.raises(exc) as info:
        store.warm_cache(counts)
    assert str(info.value).startswith("FeatureStore.warm_cache: argument 'counts'")
    assert message in str(info.value), info.value


def test_warm_cache_needs_a_frequency_store(x):
    store = FeatureStore(x, mode="partitioned", cache=0.1, cache_graph=DEG)
    with pytest.raises(spla.InvalidValue, match="a store built with cache_policy="
                                                "'frequency'"):
        store.warm_cache(np.ones(37, np.int64))
    # with cache=0 a frequency store accepts the counts and caches nothing
    none = FeatureStore(x, mode="partitioned", cache_policy="frequency")
    assert none.warm_cache(np.ones(37, np.int64)).cache_stats().cached_rows == 0



# ---------------------------------------------------------------------------
# The parts behind the facade: row storage, hot-row cache, labels
# ---------------------------------------------------------------------------

from sampling.loading import feature_cache, feature_storage, features  # noqa: E402
from sampling.loading.feature_cache import HotRowCache, HotSet  # noqa: E402
from sampling.loading.labels import Targets  # noqa: E402


def test_every_public_name_still_imports_from_features():
    for name, module in [("CACHE_POLICIES", feature_cache), ("CacheStats", feature_cache),
                         ("cache_size", feature_cache), ("hottest", feature_cache),
                         ("plan_requests", feature_storage)]:
        assert getattr(features, name) is getattr(module, name)
        assert name in features.__all__
    assert features.CACHE_POLICIES == ("degree", "frequency")


class _HalfOwned:
    """A stand-in for RowStorage that owns only the even storage positions below ``stop``."""

    def __init__(self, x, stop):
        self.local, self.num_features, self.stop = x[:stop], x.shape[1], stop

    def owned(self, ids):
        own = ids < self.stop
        return own, ids[own]


@given(st.sets(st.integers(0, 36), max_size=37), st.integers(0, 37))
def test_hot_rows_come_from_the_block_or_the_copies(hot, stop):
    x = np.random.default_rng(3).standard_normal((37, 5)).astype(np.float32)
    ids = np.array(sorted(hot), np.int64)
    copy_ids = ids[ids >= stop]
    hot_set = HotSet(ids, copy_ids, x[copy_ids])
    assert np.array_equal(hot_set.rows(_HalfOwned(x, stop), ids), x[ids])
    probe = np.arange(37)
    assert hot_set.hits(probe).tolist() == [v in hot for v in range(37)]
    assert hot_set.memory_bytes == 8 * ids.size + 8 * copy_ids.size + 4 * 5 * copy_ids.size


@given(st.lists(st.integers(0, 36), max_size=60), st.sets(st.integers(0, 36), max_size=37))
def test_cache_lookup_matches_a_plain_gather_and_counts_hits(x, wanted, hot):
    store = FeatureStore(x, mode="partitioned")
    cache = HotRowCache(0.5, "degree", 5)
    hot_ids = np.array(sorted(hot), np.int64)
    cache._hot = HotSet(hot_ids, np.zeros(0, np.int64), np.zeros((0, 5), np.float32))
    unique = np.unique(np.array(wanted, np.int64))
    assert np.array_equal(cache.lookup(store._storage, unique), x[unique])
    s = cache.stats()
    expected_hits = len(set(wanted) & hot)
    assert (s.fetches, s.requested, s.hits, s.misses) == (1, unique.size, expected_hits,
                                                          unique.size - expected_hits)
    assert s.bytes_sent == 0                          # one rank: every row is its own


def test_a_twin_sees_a_cache_warmed_after_dup(x):
    store = FeatureStore(x, mode="partitioned", cache=0.1, cache_policy="frequency")
    twin = store.dup()
    store.warm_cache(np.bincount(IDS, minlength=37))
    # counts: 3 thrice, 36 twice, then ties of one broken by the smaller id (0, 1)
    assert twin.cached_ids.tolist() == store.cached_ids.tolist() == [0, 1, 3, 36]
    assert np.array_equal(twin.fetch(IDS), x[IDS])
    assert store.cache_stats().hits == 4              # the twin's fetch, counted on both
    assert twin.local is store.local and twin.comm is not store.comm


def test_targets_answer_like_numpy():
    y = np.arange(37) % 3 - (np.arange(37) == 4)       # vertex 4 unknown (-1)
    t = Targets("FeatureStore", y, {"train": [5, 1, 5], "test": []}, 37, 3)
    assert t.fetch("f", IDS).tolist() == y[IDS].tolist()
    assert t.mask("train").tolist() == np.isin(np.arange(37), [1, 5]).tolist()
    assert not t.mask("test").any() and t.num_classes == 3
    with pytest.raises(spla.IndexOutOfRange) as info:
        t.fetch("FeatureStore.fetch_labels", [37])
    assert str(info.value) == ("FeatureStore.fetch_labels: argument 'ids' must be indices "
                               "below 37; got 37")
    with pytest.raises(KeyError):
        t.mask("val")
