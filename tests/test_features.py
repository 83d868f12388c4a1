"""FeatureStore on one rank: the rows fetched, the deduplicated requests, errors.

The MPI behaviour (partitioned fetches across ranks, bytes moved) is tested
under mpiexec in tests/mpi/test_dist_train.py.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from spla import comm as C
from spla.layout import chunk, owner_of
from sampling.features import FeatureStore, plan_requests


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
