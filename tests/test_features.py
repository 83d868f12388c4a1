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
