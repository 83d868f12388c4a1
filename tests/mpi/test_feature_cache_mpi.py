"""The hot-feature cache of a partitioned FeatureStore under mpiexec (any number of ranks).

* a cached store returns exactly the global rows (random ids with repeats,
  some ranks asking for nothing), for every 1.5D grid, both policies and
  every form of ``cache_graph`` (a DistMatrix of a partitioned graph, the
  whole graph, a degree array), from the whole matrix and from
  ``from_local``;
* every rank caches the same rows, those a full sort of the degrees (or of
  the counts summed over the ranks) names, and holds copies of exactly the
  hot rows outside its own block;
* hits are the requested rows in the hot set, and the bytes sent shrink
  (to nothing with a 100 % cache);
* bad cache arguments on one rank raise on every rank;
* training with and without the cache gives the same losses, parameters
  and accuracy.
"""

import numpy as np
import pytest

import spla
from spla import comm as C
from spla.layout import chunk
from sampling.loading.features import FeatureStore, cache_size

N, F = 53, 5


def grids(p):
    return [c for c in range(1, p + 1) if p % c == 0]


@pytest.fixture(scope="module")
def x():
    rng = np.random.default_rng(11)
    return rng.standard_normal((N, F)).astype(np.float32)


@pytest.fixture(scope="module")
def graph():
    """A random graph with skewed, tied row degrees (the same on every rank)."""
    rng = np.random.default_rng(12)
    deg = np.minimum(rng.zipf(1.8, N), 20)
    rows = np.repeat(np.arange(N), deg)
    cols = rng.integers(0, N, rows.size)
    return spla.Matrix.from_coo(rows, cols, shape=(N, N))


def ref_hot(scores, k):
    """The k vertices of highest score, ties by smaller id: a full sort."""
    order = sorted(range(len(scores)), key=lambda v: (-scores[v], v))
    return np.array(sorted(order[:k]), np.int64)


def requests(comm, seed):
    """This rank's ids: every other row reversed, then random repeats; rank 1 asks for nothing."""
    rng = np.random.default_rng(seed + comm.rank)
    ids = np.concatenate([np.arange(comm.rank % 2, N, 2)[::-1], rng.integers(0, N, 40)])
    return ids[:0] if comm.rank == 1 else ids


def same_on_every_rank(comm, values):
    allv = comm.allgather(values)
    return all(v == allv[0] for v in allv)


def check_store(comm, store, x, hot, seed):
    """Rows equal the global ones; hits, copies and memory match the hot set."""
    s, e = store.row_start, store.row_stop
    st0 = store.cache_stats()
    assert np.array_equal(store.cached_ids, hot)
    assert st0.cached_rows == hot.size
    outside = hot[(hot < s) | (hot >= e)]
    assert st0.stored_rows == outside.size
    assert st0.memory_bytes == outside.size * (F * 4 + 8) + hot.size * 8
    assert same_on_every_rank(comm, st0.cached_rows)
    ids = requests(comm, seed)
    with C.counting() as moved:
        got = store.fetch(ids)
    assert got.dtype == np.float32 and np.array_equal(got, x[ids])
    d = store.cache_stats() - st0
    distinct = np.unique(ids)
    assert d.requested == distinct.size
    assert d.hits == np.intersect1d(distinct, hot).size
    assert d.misses == distinct.size - d.hits
    assert d.bytes_sent == moved["features.request"] + moved["features.reply"]
    return d


@pytest.mark.parametrize("form", ["dist", "matrix", "degrees"])
def test_degree_cache_returns_the_global_rows(comm, x, graph, form):
    p = comm.size
    deg = np.asarray(graph.row_degrees())
    for c in grids(p):
        cache_graph = {"dist": lambda: spla.distribute(graph, comm, layout="1.5d",
                                                       replication=c),
                       "matrix": lambda: graph, "degrees": lambda: deg}[form]()
        for frac in (0.0, 0.1, 0.3, 1.0):
            store = FeatureStore(x, mode="partitioned", comm=comm, replication=c,
                                 cache=frac, cache_graph=cache_graph)
            hot = ref_hot(deg.tolist(), cache_size(frac, N))
            d = check_store(comm, store, x, hot, seed=300)
            sent = sum(comm.allgather(d.bytes_sent))
            if frac == 1.0:
                assert sent == 0        # every row local: nothing travels
            if frac == 0.0:
                base = sent
            else:
                assert sent <= base, (c, frac, sent, base)
            if frac == 0.3 and p // c > 1:
                assert sent < base


def test_a_partitioned_graph_on_another_grid_gives_the_same_degrees(comm, x, graph):
    """The DistMatrix's grid need not be the store's: the degrees are gathered per block."""
    deg = np.asarray(graph.row_degrees())
    D = spla.distribute(graph, comm)                  # 1D, c = 1
    for c in grids(comm.size):
        store = FeatureStore(x, mode="partitioned", comm=comm, replication=c, cache=0.2,
                             cache_graph=D)
        check_store(comm, store, x, ref_hot(deg.tolist(), cache_size(0.2, N)), seed=400)


@pytest.mark.parametrize("local", [False, True])
def test_frequency_cache_sums_the_counts_of_every_rank(comm, x, local):
    p, r = comm.size, comm.rank
    for c in grids(p):
        # Each rank saw different vertices: only the sum over the ranks ranks them.
        rng = np.random.default_rng(500 + r)
        seen = rng.integers(0, N, 30) if r % 2 == 0 else rng.integers(N // 2, N, 30)
        counts = np.bincount(seen, minlength=N)
        total = np.sum(comm.allgather(counts), axis=0)
        if local:
            s, e = chunk(N, p // c, r // c)
            store = FeatureStore.from_local(x[s:e], N, comm=comm, replication=c, cache=0.25,
                                            cache_policy="frequency")
        else:
            store = FeatureStore(x, mode="partitioned", comm=comm, replication=c,
                                 cache=0.25, cache_policy="frequency")
        assert store.cache_stats().cached_rows == 0
        store.warm_cache(counts)
        check_store(comm, store, x, ref_hot(total.tolist(), cache_size(0.25, N)), seed=600)


def test_cache_errors_on_one_rank_raise_on_every_rank(comm, x, graph):
    r, p = comm.rank, comm.size
    deg = np.asarray(graph.row_degrees())
    bad = r == p - 1
    with pytest.raises(spla.InvalidValue) as info:
        FeatureStore(x, mode="partitioned", comm=comm, cache=1.5 if bad else 0.1,
                     cache_graph=deg)
    assert "argument 'cache' must be a fraction of the rows in [0, 1]" in str(info.value)
    with pytest.raises(spla.InvalidValue, match="cache_policy"):
        FeatureStore(x, mode="partitioned", comm=comm, cache=0.1, cache_graph=deg,
                     cache_policy="lru" if bad else "degree")
    if p == 1:
        return
    # valid everywhere, but the ranks disagree: a hang without the agreement
    with pytest.raises(spla.InvalidValue) as info:
        FeatureStore(x, mode="partitioned", comm=comm, cache=0.2 if bad else 0.1,
                     cache_graph=deg)
    assert "the same cache, cache_policy and kind of cache_graph on every rank" in \
        str(info.value)
    D = spla.distribute(graph, comm)                   # collective: on every rank
    with pytest.raises(spla.InvalidValue, match="kind of cache_graph"):
        FeatureStore(x, mode="partitioned", comm=comm, cache=0.1,
                     cache_graph=graph if bad else D)
    other = deg.copy()
    if bad:
        other[np.argmin(other)] = 1000                  # a different hot set there
    with pytest.raises(spla.InvalidValue) as info:
        FeatureStore(x, mode="partitioned", comm=comm, cache=0.1, cache_graph=other)
    assert ("argument 'cache_graph' must be the same on every rank (the same graph, degrees "
            "or summed counts)") in str(info.value)
    with pytest.raises(spla.LayoutError, match="over the store's communicator"):
        FeatureStore(x, mode="partitioned", comm=comm, cache=0.1,
                     cache_graph=spla.distribute(graph, C.mpi().COMM_SELF) if bad else deg)
    store = FeatureStore(x, mode="partitioned", comm=comm, cache=0.1,
                         cache_policy="frequency")
    with pytest.raises(spla.InvalidValue, match="non-negative"):
        store.warm_cache(np.full(N, -1 if bad else 1, np.int64))
    # the store still works after the failed calls
    assert np.array_equal(store.fetch(np.arange(N)), x)


def trained(comm, **cache):
    from sampling.train import TrainOptions, Trainer
    c = 2 if comm.size % 2 == 0 else 1
    opts = TrainOptions(epochs=2, graph="partitioned", replication=c, threads=1, bulk=8,
                        **cache)
    trainer = Trainer(opts, comm)
    with C.counting() as moved:
        stats = [trainer.train_epoch(e) for e in range(2)]
    feat = sum(comm.allgather(moved.get("features.request", 0) +
                              moved.get("features.reply", 0)))
    return trainer, stats, feat


def test_training_is_identical_with_and_without_the_cache(comm):
    pytest.importorskip("torch")
    base, base_stats, base_bytes = trained(comm)
    assert all(np.isnan(s.cache_hit_rate) for s in base_stats)
    want = ([s.loss for s in base_stats], [s.val_acc for s in base_stats],
            base.parameter_checksum(), base.evaluate("test"))
    for cache in (dict(feature_cache=0.1), dict(feature_cache=0.2, cache_policy="frequency")):
        trainer, stats, nbytes = trained(comm, **cache)
        got = ([s.loss for s in stats], [s.val_acc for s in stats],
               trainer.parameter_checksum(), trainer.evaluate("test"))
        assert got == want, cache
        rates = [s.cache_hit_rate for s in stats]
        assert all(0 < v <= 1 for v in rates), rates
        assert same_on_every_rank(comm, rates)
        assert f"feature cache {cache['feature_cache']:g} by " in trainer.describe()
        if comm.size // trainer.opts.replication > 1:
            assert nbytes < base_bytes, (cache, nbytes, base_bytes)
