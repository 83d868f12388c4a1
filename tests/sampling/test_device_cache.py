"""Features gathered on the GPU: ``sampling.DeviceFeatureCache`` (its ranking and
slot map in plain numpy on the CPU, its gather under the CUDA simulator with
cupy stood in for, and on a real GPU) and a loader's sparse features kept
on the device.

``test_sim_*`` run in the CUDA-simulator child of
``tests/kernels/test_cuda_kernels.py`` (``SPLA_IN_CUDASIM=1``); elsewhere they skip.
"""

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
from sampling.loading.device_cache import (cache_order, rank_scores, resolve_cache_rows,
                                           slot_map)
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue

from sim_marks import IN_SIM, sim


# --------------------------------------------------------------------------
# Ranking and slot map (CPU).

@settings(max_examples=60, deadline=None)
@given(scores=st.lists(st.integers(0, 4), min_size=0, max_size=30), data=st.data())
def test_cache_order_is_top_scores_ties_by_id(scores, data):
    scores = np.array(scores, np.int64)
    k = data.draw(st.integers(0, scores.size))
    got = cache_order(scores, k)
    # Independent reference: Python's sort on (-score, id).
    want = sorted(range(scores.size), key=lambda v: (-scores[v], v))[:k]
    assert got.tolist() == want
    slot = slot_map(scores.size, got)
    assert slot.tolist() == [want.index(v) if v in want else -1 for v in range(scores.size)]


def test_cache_order_float_scores():
    assert cache_order(np.array([0.5, 2.0, -1.0, 2.0]), 4).tolist() == [1, 3, 0, 2]


def test_rank_by_degree_and_by_scores():
    A = spla.Matrix.from_coo([0, 1, 1, 3, 3, 3], [1, 0, 2, 0, 1, 2], shape=(4, 4))
    assert rank_scores("degree", A, 4).tolist() == [1, 2, 0, 3]
    assert cache_order(rank_scores("degree", A, 4), 2).tolist() == [3, 1]
    assert rank_scores(np.array([3, 1, 2, 0]), None, 4).tolist() == [3, 1, 2, 0]


@pytest.mark.parametrize("rank,graph,cls,arg", [
    ("pagerank", None, InvalidValue, "rank"),
    ("degree", None, InvalidValue, "graph"),
    (np.zeros(3), None, DimensionMismatch, "rank"),
    (np.array([0.0, np.nan, 1.0, 2.0]), None, InvalidValue, "rank"),
])
def test_rank_errors(rank, graph, cls, arg):
    with pytest.raises(cls, match=f"^DeviceFeatureCache: argument '{arg}' must be"):
        rank_scores(rank, graph, 4)


def test_resolve_cache_rows():
    assert resolve_cache_rows(0, 10, 4, 100) == 0
    assert resolve_cache_rows(10, 10, 4, 100) == 10
    assert resolve_cache_rows(1.0, 10, 4, 100) == 10
    assert resolve_cache_rows(0.35, 10, 4, 100) == 3
    assert resolve_cache_rows(None, 10, 4, 100) == 10   # 50 bytes hold 12 rows: all 10
    assert resolve_cache_rows(None, 100, 4, 100) == 12  # half of 100 bytes
    for bad, cls in ((11, InvalidValue), (-1, InvalidValue), (1.5, InvalidValue),
                     (True, DTypeError), ("all", DTypeError), (26, InvalidValue)):
        with pytest.raises(cls, match="^DeviceFeatureCache: argument 'cache_rows' must be"):
            resolve_cache_rows(bad, 100 if bad == 26 else 10, 4, 100)


def test_cache_needs_a_cuda_device():
    with pytest.raises(InvalidValue, match="argument 'device' must be a CUDA device"):
        spla_cache = __import__("sampling").DeviceFeatureCache
        spla_cache(np.zeros((3, 2), np.float32), rank=np.zeros(3), device="cpu")


# --------------------------------------------------------------------------
# The gather under the simulator, cupy stood in for (blocking reads counted).

@pytest.fixture(scope="module")
def cp():
    """The cupy stand-in, installed for this module's tests only."""
    import fake_cupy
    with fake_cupy.installed() as mod:
        yield mod


def _problem(n=40, f=3, seed=0):
    rng = np.random.default_rng(seed)
    A = spla.Matrix.from_coo(rng.integers(0, n, 120), rng.integers(0, n, 120), shape=(n, n))
    X = rng.standard_normal((n, f)).astype(np.float32)
    return A, X


@sim
@pytest.mark.parametrize("cache_rows", [0, 0.25, 40])
def test_sim_cache_gather_equals_rows_without_blocking_reads(cp, cache_rows):
    import fake_cupy

    import sampling
    A, X = _problem()
    cache = sampling.DeviceFeatureCache(X, cache_rows=cache_rows, graph=A)
    ids = np.random.default_rng(1).integers(0, 40, 13)
    dev_ids = cp.asarray(ids)
    fake_cupy.reset()
    got = cache.gather(dev_ids, check=False)
    got_host = cache.gather(ids)
    assert fake_cupy.STATS["reads"] == 0, fake_cupy.STATS
    assert fake_cupy.STATS["launches"] == 2, fake_cupy.STATS
    np.testing.assert_array_equal(np.asarray(got), X[ids])
    np.testing.assert_array_equal(np.asarray(got_host), X[ids])
    s = cache.stats()
    hits = int((cache_order(rank_scores("degree", A, 40), cache.cache_rows)[:, None]
                == ids).sum())
    assert (s["hits"], s["misses"], s["gathers"], s["rows"]) == (2 * hits, 26 - 2 * hits, 2, 26)
    assert s["pcie_bytes"] == s["misses"] * 12
    assert "DeviceFeatureCache" in repr(cache) and "rows" in cache.describe()


@sim
def test_sim_cache_errors(cp):
    import sampling
    A, X = _problem()
    import fake_cupy
    saved = fake_cupy._Device.mem_info
    fake_cupy._Device.mem_info = (100, 1000)  # 100 free bytes: 8 rows of 12 bytes
    try:
        with pytest.raises(InvalidValue, match="argument 'cache_rows' must be at most 8 rows"):
            sampling.DeviceFeatureCache(X, cache_rows=9, graph=A)
        assert sampling.DeviceFeatureCache(X, graph=A).cache_rows == 4  # half of the free bytes
    finally:
        fake_cupy._Device.mem_info = saved
    cache = sampling.DeviceFeatureCache(X, cache_rows=4, graph=A)
    with pytest.raises(Exception, match="argument 'ids'"):
        cache.gather(np.array([40]))


# --------------------------------------------------------------------------
# On a real GPU.

def _real_gpu():
    if IN_SIM:
        pytest.skip("the simulator child process has no real GPU")
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CUDA runtime that fails to load
        pytest.skip(f"needs cupy and a CUDA GPU ({exc})")
    from numba import cuda
    if not cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return cupy


@pytest.mark.gpu
def test_gpu_cache_gather_equals_device_copy():
    cupy = _real_gpu()
    import sampling
    A = spla.generators.rmat(12, 8, seed=0)
    n = A.shape[0]
    X = np.random.default_rng(0).standard_normal((n, 64)).astype(np.float32)
    full = cupy.asarray(X)
    ids = np.random.default_rng(1).integers(0, n, 5000)
    for rows in (0, 0.1, n):
        cache = sampling.DeviceFeatureCache(X, cache_rows=rows, graph=A)
        got = cache.gather(cupy.asarray(ids), check=False)
        assert bool((got == full[cupy.asarray(ids)]).all())


@pytest.mark.gpu
def test_gpu_node_loader_with_cache_equals_plain_array():
    _real_gpu()
    import torch

    import sampling
    A = spla.generators.rmat(10, 8, seed=0)
    n = A.shape[0]
    X = np.random.default_rng(0).standard_normal((n, 16)).astype(np.float32)
    cache = sampling.DeviceFeatureCache(X, cache_rows=0.1, graph=A)
    sampler = sampling.GraphSAGE(A, [5, 3])
    seeds = np.arange(0, n, 7)
    kw = dict(batch_size=64, device="cuda")
    plain = [mb.x for mb in sampling.NodeLoader(sampler, seeds, features=X, **kw)]
    cached = [mb.x for mb in sampling.NodeLoader(sampler, seeds, features=cache, **kw)]
    assert len(plain) == len(cached) > 0
    for a, b in zip(plain, cached):
        assert b.is_cuda and torch.equal(a, b)


@pytest.mark.gpu
def test_gpu_cache_gather_from_threads():
    # Not under the simulator: it cannot run kernels from several threads at once.
    _real_gpu()
    import sampling
    A, X = _problem(seed=3)
    cache = sampling.DeviceFeatureCache(X, cache_rows=10, rank=np.arange(40))
    errors = []

    def work(seed):
        ids = np.random.default_rng(seed).integers(0, 40, 5)
        try:
            for _ in range(2):
                np.testing.assert_array_equal(cache.gather(ids).get(), X[ids])
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cache.stats()["gathers"] == 6 and cache.stats()["rows"] == 30


@sim
def test_sim_node_loader_refuses_a_cpu_device_for_the_cache(cp):
    import sampling
    A, X = _problem()
    cache = sampling.DeviceFeatureCache(X, cache_rows=4, graph=A)
    sampler = sampling.GraphSAGE(A, [2])
    with pytest.raises(InvalidValue, match="NodeLoader: argument 'device' must be a CUDA "
                                           "device .*DeviceFeatureCache"):
        sampling.NodeLoader(sampler, np.arange(8), 4, features=cache, device="cpu")
    with pytest.raises(DimensionMismatch, match="NodeLoader: argument 'features'"):
        small = sampling.DeviceFeatureCache(X[:30], cache_rows=4, rank=np.arange(30))
        sampling.NodeLoader(sampler, np.arange(8), 4, features=small, device="cpu")


# --------------------------------------------------------------------------
# A loader's sparse features on the GPU: gathered there, never copied back.

def _sparse_features(n=40, f=6, seed=4):
    rng = np.random.default_rng(seed)
    X = np.where(rng.random((n, f)) < 0.3, rng.standard_normal((n, f)), 0.0)
    X[3] = 0.0                    # an empty row
    return X


@sim
@pytest.mark.parametrize("values", ["float64", "int64", "structural"])
def test_sim_loader_gathers_gpu_sparse_features_on_the_device(cp, values, monkeypatch):
    import fake_cupy
    import torch

    from sampling.loading.inputs import Inputs, device_sparse_rows
    X = _sparse_features()
    r, c = np.nonzero(X != 0)
    vals = {"float64": X[r, c], "int64": np.round(X[r, c] * 3).astype(np.int64),
            "structural": None}[values]
    F = spla.Matrix.from_coo(r, c, vals, shape=X.shape)
    want = F.to_dense().astype(np.float32)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    on_gpu = Inputs("NodeLoader", 40, F.to("cuda"), None, "cuda")
    assert on_gpu.kind == "devsparse" and on_gpu.features.device == "cuda"
    assert on_gpu.features.dtype == np.float32
    # A loader on the CPU takes the matrix to the host once.
    on_cpu = Inputs("NodeLoader", 40, F.to("cuda"), None, "cpu")
    assert on_cpu.kind == "sparse" and on_cpu.features.device == "cpu"
    ids = np.array([5, 3, 0, 39, 5, 17])
    for given in (ids, cp.asarray(ids)):      # a CPU sampler's ids, a GPU sampler's
        fake_cupy.reset()
        got = device_sparse_rows(on_gpu.features, given)
        # An upload of host ids, a fill and one kernel; nothing read back.
        assert fake_cupy.STATS["reads"] == 0, fake_cupy.STATS
        assert fake_cupy.STATS["launches"] == 2, fake_cupy.STATS
        assert isinstance(got, cp.ndarray) and got.dtype == np.float32
        assert np.asarray(got).tobytes() == want[ids].tobytes()


@pytest.mark.gpu
def test_gpu_node_loader_with_gpu_sparse_features_equals_host_ones():
    _real_gpu()
    import torch

    import sampling
    A = spla.generators.rmat(10, 8, seed=0)
    n = A.shape[0]
    X = _sparse_features(n, 32, seed=1)
    F = spla.Matrix.from_dense(X.astype(np.float32))
    sampler = sampling.GraphSAGE(A, [5, 3])
    seeds = np.arange(0, n, 7)
    kw = dict(batch_size=64, device="cuda")
    host = [mb.x for mb in sampling.NodeLoader(sampler, seeds, features=F, **kw)]
    dev = [mb.x for mb in sampling.NodeLoader(sampler, seeds, features=F.to("cuda"), **kw)]
    assert len(host) == len(dev) > 0
    for a, b in zip(host, dev):
        assert b.is_cuda and torch.equal(a, b)
