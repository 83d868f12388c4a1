"""Datasets: the embedded graphs, the npz loader's checks, the Dataset type, imports.

Bad data must stop at load time with a message naming the function, the
argument, what was expected and what was received: NaN features used to
train to ``loss nan`` with exit status 0, float labels were truncated, and
a label out of range added a class.
"""

import os

import numpy as np
import pytest

import spla
from sampling.dataset import Dataset
from sampling.datasets import DATA_DIR, EMBEDDED, load, load_npz
from sampling.synthetic import rmat_dataset



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

