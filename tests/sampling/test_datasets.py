"""Datasets: the embedded graphs, the npz loader's checks, the Dataset type, imports.

Bad data must stop at load time with a message naming the function, the
argument, what was expected and what was received: NaN features used to
train to ``loss nan`` with exit status 0, float labels were truncated, and
a label out of range added a class.
"""

import os

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from sampling.datasets.dataset import Dataset
from sampling.datasets import DATA_DIR, EMBEDDED, load, load_npz
from sampling.datasets.synthetic import rmat_dataset



@pytest.fixture(scope="module")
def cora_arrays():
    with np.load(os.path.join(DATA_DIR, "cora.npz"), allow_pickle=False) as d:
        return {k: d[k] for k in d.files}


def _write(tmp_path, arrays, **changes):
    a = dict(arrays)
    a.update(changes)
    path = tmp_path / "graph.npz"
    np.savez(path, **a)
    return str(path)


@pytest.mark.parametrize("name", sorted(EMBEDDED))
def test_embedded_datasets_load_with_their_classes(name):
    ds = load(name)
    assert ds.num_classes == EMBEDDED[name]
    assert ds.y.dtype == np.int64
    for split in (ds.train_idx, ds.val_idx, ds.test_idx):
        assert (ds.y[split] >= 0).all()


def test_load_npz_reads_the_embedded_format(tmp_path, cora_arrays):
    ds = load_npz(_write(tmp_path, cora_arrays))
    assert ds.name == "graph" and ds.num_nodes == 2708 and ds.num_classes == 7
    assert ds.A.isequal(load("cora").A)


def test_nan_features_are_refused(tmp_path, cora_arrays):
    x = cora_arrays["x_data"].copy()
    x[10] = np.nan
    with pytest.raises(spla.InvalidValue) as info:
        load_npz(_write(tmp_path, cora_arrays, x_data=x))
    assert str(info.value).startswith("Dataset: argument 'x' must be finite values; got nan")


def test_inf_features_are_refused(tmp_path, cora_arrays):
    x = cora_arrays["x_data"].copy()
    x[0] = np.inf
    with pytest.raises(spla.InvalidValue, match="argument 'x' must be finite"):
        load_npz(_write(tmp_path, cora_arrays, x_data=x))


def test_float_labels_are_refused_not_truncated(tmp_path, cora_arrays):
    y = cora_arrays["y"].astype(np.float64) + 0.7
    with pytest.raises(spla.DTypeError) as info:
        load_npz(_write(tmp_path, cora_arrays, y=y))
    assert str(info.value) == ("Dataset: argument 'y' must be integer class labels; got array "
                               "of shape (2708,) and dtype float64")


def test_negative_labels_are_refused(tmp_path, cora_arrays):
    y = cora_arrays["y"].copy()
    y[5] = -3
    with pytest.raises(spla.InvalidValue) as info:
        load_npz(_write(tmp_path, cora_arrays, y=y))
    assert "argument 'y' must be labels >= 0 (or -1 for unknown); got -3 at vertex 5" in str(
        info.value)


def test_labels_out_of_range_are_refused(tmp_path, cora_arrays):
    y = cora_arrays["y"].copy()
    y[9] = 40
    path = _write(tmp_path, cora_arrays, y=y, num_classes=np.int64(7))
    with pytest.raises(spla.InvalidValue) as info:
        load_npz(path)
    assert "argument 'y' must be labels in [0, 7) (7 classes); got 40 at vertex 9" in str(
        info.value)
    with pytest.raises(spla.InvalidValue, match="labels in \\[0, 7\\)"):
        load_npz(_write(tmp_path, cora_arrays, y=y), num_classes=7)


def test_split_vertices_need_known_labels(tmp_path, cora_arrays):
    y = cora_arrays["y"].copy()
    v = int(cora_arrays["train_idx"][3])
    y[v] = -1
    with pytest.raises(spla.InvalidValue) as info:
        load_npz(_write(tmp_path, cora_arrays, y=y))
    assert "argument 'train_idx' must be vertices with known labels" in str(info.value)
    assert f"vertex {v} with label -1" in str(info.value)


def test_missing_array_is_named(tmp_path, cora_arrays):
    a = dict(cora_arrays)
    del a["val_idx"]
    path = tmp_path / "partial.npz"
    np.savez(path, **a)
    with pytest.raises(spla.InvalidValue, match="without val_idx"):
        load_npz(str(path))


def test_dataset_checks_shapes():
    A = spla.Matrix.from_dense(np.ones((3, 3)) - np.eye(3)).structure()
    x = spla.Matrix.from_dense(np.eye(3, dtype=np.float32))
    ids = np.array([0])
    with pytest.raises(spla.DimensionMismatch, match="argument 'y'"):
        Dataset("t", A, x, np.array([0, 1]), ids, ids, ids)
    with pytest.raises(spla.DimensionMismatch, match="argument 'x'"):
        Dataset("t", A, spla.Matrix.from_dense(np.eye(2, dtype=np.float32)),
                np.array([0, 1, 1]), ids, ids, ids)
    with pytest.raises(spla.IndexOutOfRange, match="argument 'test_idx'"):
        Dataset("t", A, x, np.array([0, 1, 1]), ids, ids, np.array([3]))
    ds = Dataset("t", A, x, np.array([0, 1, 1]), ids, ids, ids, classes=5)
    assert ds.num_classes == 5


def test_rmat_dataset_declares_its_classes():
    ds = rmat_dataset(6, num_classes=5)
    assert ds.classes == 5 and ds.num_classes == 5



# ---- features in any container --------------------------------------------------

def _toy(x, y=np.array([0, 1, 1]), **kw):
    A = spla.Matrix.from_dense(np.ones((3, 3)) - np.eye(3)).structure()
    return Dataset("t", A, x, y, np.array([0]), np.array([1]), np.array([2]), **kw)


def test_dense_features_stay_dense_float32():
    x32 = np.arange(6, dtype=np.float32).reshape(3, 2)
    ds = _toy(x32)
    assert isinstance(ds.x, np.ndarray) and ds.x is x32          # no copy, no CSR
    assert ds.num_features == 2 and not ds.sparse_features
    for given in (x32.astype(np.float64), x32.astype(np.int64), np.asfortranarray(x32),
                  x32.astype(np.float16), x32 > 2):
        got = _toy(given).x
        assert got.dtype == np.float32 and got.flags.c_contiguous
        np.testing.assert_array_equal(got, np.asarray(given, dtype=np.float32))


def test_features_from_torch_and_scipy():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(3, 2)
    ds = _toy(t, y=torch.tensor([0, 1, 1]))
    assert isinstance(ds.x, np.ndarray) and np.shares_memory(ds.x, t.numpy())
    assert ds.y.dtype == np.int64 and ds.y.tolist() == [0, 1, 1]
    bf = _toy(t.to(torch.bfloat16)).x
    assert bf.dtype == np.float32 and bf.tolist() == t.tolist()
    g = _toy(t.clone().requires_grad_(True)).x                   # detached, not refused
    assert g.tolist() == t.tolist()
    S = sp.csr_matrix(np.array([[0, 1.5], [0, 0], [2, 0]]))
    sparse = _toy(S).x
    assert isinstance(sparse, spla.Matrix) and sparse.to_dense().tolist() == S.toarray().tolist()
    assert _toy(spla.Matrix.from_scipy(S)).sparse_features
    with pytest.raises(spla.DTypeError, match="argument 'y' must be integer class labels; got "
                       "array of shape \\(3,\\) and dtype float32"):
        _toy(t, y=torch.tensor([0.0, 1.0, 1.0]))


@pytest.mark.parametrize("x, exc, words", [
    (np.array([["a", "b"]] * 3), spla.DTypeError, "must be numeric features"),
    ("features", spla.DimensionMismatch, "must be a 2-D (n, f) matrix"),
    (np.ones(3), spla.DimensionMismatch, "must be a 2-D (n, f) matrix"),
    (np.ones((3, 2, 1)), spla.DimensionMismatch, "must be a 2-D (n, f) matrix"),
    (np.ones((4, 2)), spla.DimensionMismatch, "must be 3 rows (one per vertex)"),
    (sp.csr_matrix(np.ones((2, 2))), spla.DimensionMismatch, "must be 3 rows"),
    (np.ones((3, 2), complex), spla.DTypeError, "numeric features"),
    (np.array([[0.0, 1.0], [np.nan, 0.0], [0.0, 0.0]]), spla.InvalidValue,
     "must be finite values; got nan at entry 2"),
    (np.array([[0.0, 1.0], [0.0, 1e300], [0.0, 0.0]]), spla.InvalidValue,
     "must be values within float32's range; got 1e+300 at entry 3"),
    (sp.csr_matrix(np.array([[0.0, np.inf], [0, 0], [0, 0]])), spla.InvalidValue,
     "must be finite values; got inf at entry 0"),
    ([[1, 2], [3, None], [5, 6]], spla.DTypeError, "numeric features"),
])
def test_bad_features_are_refused_at_construction(x, exc, words):
    with pytest.raises(exc) as info:
        _toy(x)
    assert str(info.value).startswith("Dataset: argument 'x' "), str(info.value)
    assert words in str(info.value), str(info.value)


def test_finite_check_covers_every_chunk(monkeypatch):
    # A NaN past the first chunk of the check is still found, at its index.
    import sampling.datasets.validation as V
    monkeypatch.setattr(V, "_FINITE_CHUNK", 4)
    x = np.zeros((3, 5), np.float32)
    x[2, 3] = np.nan
    with pytest.raises(spla.InvalidValue, match="got nan at entry 13"):
        _toy(x)
    assert _toy(np.ones((3, 5), np.float32)).num_features == 5
