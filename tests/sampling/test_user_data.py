"""Users' own graphs: from_pyg, from_scipy, load(path) / save_npz, and their errors.

The orientation is the point most easily got wrong: PyG's ``edge_index``
lists (source, target) pairs and messages flow source -> target, while a
sampler reads row ``v`` of ``A`` as the vertices feeding ``v``.  Every test
builds the expected adjacency independently (scipy from the raw pairs, or
PyG's own conversion) and compares.
"""

import os
import pathlib
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
from sampling.datasets import from_pyg, from_scipy, load, load_npz, save_npz, symmetrize

torch = pytest.importorskip("torch")
pyg_data = pytest.importorskip("torch_geometric.data")
pyg_utils = pytest.importorskip("torch_geometric.utils")
Data = pyg_data.Data

# A directed graph on 6 vertices: 0 -> 1, 0 -> 2, 1 -> 2, 3 -> 0, 4 -> 4 (self
# loop), 2 -> 1, 0 -> 1 again (a repeat), and vertex 5 isolated.
SRC = [0, 0, 1, 3, 4, 2, 0]
DST = [1, 2, 2, 0, 4, 1, 1]
N = 6


def target_rows(src, dst, n):
    """The expected pattern, built from the pairs with scipy: A[target, source] = 1."""
    m = sp.coo_matrix((np.ones(len(src)), (dst, src)), shape=(n, n)).tocsr()
    m.sum_duplicates()
    return (m.toarray() != 0).astype(np.float64)


def pattern(A):
    return (A.to_dense() != 0).astype(np.float64)


def make_data(**overrides):
    rng = np.random.default_rng(1)
    attrs = dict(edge_index=torch.tensor([SRC, DST]),
                 x=torch.from_numpy(rng.standard_normal((N, 3)).astype(np.float32)),
                 y=torch.tensor([0, 1, 2, 1, -1, 0]),
                 train_mask=torch.tensor([True, True, False, False, False, False]),
                 val_mask=torch.tensor([False, False, True, False, False, False]),
                 test_mask=torch.tensor([False, False, False, True, False, True]))
    attrs.update(overrides)
    return Data(**{k: v for k, v in attrs.items() if v is not None})


# ---- from_pyg ----------------------------------------------------------------

def test_from_pyg_orientation_row_is_target():
    data = make_data()
    ds = from_pyg(data, name="toy")
    assert ds.name == "toy" and ds.num_nodes == N
    assert ds.A.is_structural
    np.testing.assert_array_equal(pattern(ds.A), target_rows(SRC, DST, N))
    # The same against PyG's own conversion, which puts sources on rows.
    ref = pyg_utils.to_scipy_sparse_matrix(data.edge_index, num_nodes=N).toarray() != 0
    np.testing.assert_array_equal(pattern(ds.A), ref.T.astype(np.float64))
    # Row 1 (vertex 1) receives from 0 and 2; vertex 0 receives only from 3.
    assert ds.A.to_scipy()[1].indices.tolist() == [0, 2]
    assert ds.A.to_scipy()[0].indices.tolist() == [3]


def test_from_pyg_keeps_features_labels_and_splits():
    data = make_data()
    ds = from_pyg(data, num_classes=4)
    assert isinstance(ds.x, np.ndarray) and ds.x.dtype == np.float32 and ds.x.flags.c_contiguous
    np.testing.assert_array_equal(ds.x, data.x.numpy())
    assert np.shares_memory(ds.x, data.x.numpy())          # dense float32: no copy
    assert ds.y.dtype == np.int64 and ds.y.tolist() == [0, 1, 2, 1, -1, 0]
    assert ds.train_idx.tolist() == [0, 1] and ds.val_idx.tolist() == [2]
    assert ds.test_idx.tolist() == [3, 5]
    assert ds.num_classes == 4 and not ds.sparse_features


def test_from_pyg_to_undirected_matches_pyg():
    data = make_data()
    ds = from_pyg(data, to_undirected=True)
    ref = pyg_utils.to_undirected(data.edge_index, num_nodes=N)
    expected = target_rows(ref[0].tolist(), ref[1].tolist(), N)
    np.testing.assert_array_equal(pattern(ds.A), expected)
    assert ds.A.isequal(ds.A.T)


def test_from_pyg_index_splits_and_column_labels():
    data = make_data(train_mask=None, val_mask=None, test_mask=None,
                     train_idx=torch.tensor([1, 0]), val_idx=torch.tensor([2]),
                     test_idx=torch.tensor([], dtype=torch.long),
                     y=torch.tensor([[0], [1], [2], [1], [-1], [0]]))
    ds = from_pyg(data)
    assert ds.train_idx.tolist() == [1, 0] and ds.test_idx.size == 0
    assert ds.y.tolist() == [0, 1, 2, 1, -1, 0]
    # Mask and ids both given and agreeing: fine.
    both = make_data(train_idx=torch.tensor([1, 0]))
    assert from_pyg(both).train_idx.tolist() == [0, 1]


def test_from_pyg_sparse_features_become_a_matrix():
    dense = np.zeros((N, 5), np.float32)
    dense[[0, 2, 5], [1, 4, 0]] = [1.0, 2.0, 3.0]
    ds = from_pyg(make_data(x=torch.from_numpy(dense).to_sparse()))
    assert isinstance(ds.x, spla.Matrix) and ds.sparse_features
    np.testing.assert_array_equal(ds.x.to_dense(), dense)
    with warnings.catch_warnings():  # torch: "Sparse CSR tensor support is in beta state"
        warnings.simplefilter("ignore", UserWarning)
        csr = torch.from_numpy(dense).to_sparse_csr()
    ds = from_pyg(make_data(x=csr))
    np.testing.assert_array_equal(ds.x.to_dense(), dense)


@settings(max_examples=40)
@given(n=st.integers(1, 12), data=st.data())
def test_from_pyg_random_graphs_match_scipy(n, data):
    e = data.draw(st.integers(0, 40))
    src = data.draw(st.lists(st.integers(0, n - 1), min_size=e, max_size=e))
    dst = data.draw(st.lists(st.integers(0, n - 1), min_size=e, max_size=e))
    undirected = data.draw(st.booleans())
    g = Data(edge_index=torch.tensor([src, dst], dtype=torch.long).reshape(2, -1),
             x=torch.ones(n, 2), y=torch.zeros(n, dtype=torch.long),
             train_idx=torch.tensor([0]), val_idx=torch.tensor([n - 1]),
             test_idx=torch.tensor([], dtype=torch.long))
    ds = from_pyg(g, to_undirected=undirected)
    expected = target_rows(src, dst, n)
    if undirected:
        expected = ((expected + expected.T) != 0).astype(np.float64)
    np.testing.assert_array_equal(pattern(ds.A), expected)
    assert ds.A.nnz == int(expected.sum())


@pytest.mark.parametrize("changes, exc, words", [
    (dict(edge_index=None), spla.InvalidValue, "attribute 'edge_index'"),
    (dict(x=None), spla.InvalidValue, "attribute 'x'"),
    (dict(y=None), spla.InvalidValue, "attribute 'y'"),
    (dict(val_mask=None), spla.InvalidValue, "a split 'val'"),
    (dict(y=torch.tensor([0.0, 1.0, 2.0, 1.0, 0.5, 0.0])), spla.DTypeError,
     "argument 'data.y' must be integer class labels"),
    (dict(y=torch.zeros(N, 2, dtype=torch.long)), spla.DimensionMismatch, "'data.y'"),
    (dict(y=torch.tensor([0, 1, 2, 1, -2, 0])), spla.InvalidValue, "-2 at vertex 4"),
    (dict(x=torch.ones(N)), spla.DimensionMismatch, "'data.x' must be a 2-D"),
    (dict(x=torch.tensor([[1.0], [float("nan")], [0], [0], [0], [0]])), spla.InvalidValue,
     "'data.x' must be finite values; got nan at entry 1"),
    (dict(edge_index=torch.tensor([[0, 1, 2]])), spla.DimensionMismatch,
     "'data.edge_index' must be a (2, E) array"),
    (dict(edge_index=torch.tensor([[0, 9], [1, 2]])), spla.IndexOutOfRange,
     "'data.edge_index[0]' must be indices below 6; got 9"),
    (dict(edge_index=torch.tensor([[0.0], [1.0]])), spla.DTypeError, "integer vertex ids"),
    (dict(train_mask=torch.tensor([1, 1, 0, 0, 0, 0])), spla.DTypeError,
     "'data.train_mask' must be a boolean mask"),
    (dict(train_mask=torch.ones(N, 3, dtype=torch.bool)), spla.DimensionMismatch,
     "pick one, e.g. data.train_mask = data.train_mask[:, 0]"),
    (dict(test_mask=torch.ones(N - 1, dtype=torch.bool)), spla.DimensionMismatch,
     "'data.test_mask' must be a 1-D mask of 6 vertices"),
    (dict(train_idx=torch.tensor([0, 2])), spla.InvalidValue,
     "'data.train_idx' must be the vertices of data.train_mask"),
    (dict(test_mask=None), spla.InvalidValue, "a split 'test': a 'test_mask' or 'test_idx'"),
    (dict(train_mask=None, train_idx=torch.tensor([7])), spla.IndexOutOfRange,
     "'data.train_idx' must be indices below 6; got 7"),
    (dict(train_mask=torch.tensor([True, False, False, False, True, False])),
     spla.InvalidValue, "vertex 4 with label -1"),
])
def test_from_pyg_errors(changes, exc, words):
    with pytest.raises(exc) as info:
        from_pyg(make_data(**changes))
    msg = str(info.value)
    assert words in msg, msg
    assert msg.startswith(("from_pyg: ", "Dataset: ")), msg


def test_from_pyg_argument_errors():
    with pytest.raises(spla.InvalidValue, match="from_pyg: argument 'data' must be a graph "
                       "with the attribute 'edge_index'; got dict without it"):
        from_pyg({})
    with pytest.raises(spla.InvalidValue, match="argument 'to_undirected' must be True or False"):
        from_pyg(make_data(), to_undirected="yes")
    with pytest.raises(spla.InvalidValue, match="labels in \\[0, 2\\)"):
        from_pyg(make_data(), num_classes=2)
    g = make_data()
    g.num_nodes = 7
    with pytest.raises(spla.DimensionMismatch, match="num_nodes = 7"):
        from_pyg(g)


@pytest.mark.slow
def test_from_pyg_does_not_import_torch_geometric():
    import subprocess
    import sys
    code = ("import sys, types, torch\n"
            "from sampling.datasets import from_pyg\n"
            "g = types.SimpleNamespace(edge_index=torch.tensor([[0], [1]]), x=torch.ones(2, 1),\n"
            "    y=torch.tensor([0, 1]), train_idx=[0], val_idx=[1], test_idx=[])\n"
            "print(from_pyg(g).A.to_dense().tolist(), 'torch_geometric' in sys.modules)\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=root), timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["[[0.0,", "0.0],", "[1.0,", "0.0]]", "False"]


# ---- from_scipy --------------------------------------------------------------

def test_from_scipy_keeps_rows_as_targets():
    adj = sp.coo_matrix((np.ones(len(SRC)), (DST, SRC)), shape=(N, N))   # row = target
    x = np.arange(N * 2, dtype=np.float64).reshape(N, 2)
    ds = from_scipy(adj, x, np.array([0, 1, 2, 1, -1, 0]), [0, 1], [2], [3, 5], num_classes=3)
    np.testing.assert_array_equal(pattern(ds.A), target_rows(SRC, DST, N))
    assert ds.x.dtype == np.float32 and np.array_equal(ds.x, x.astype(np.float32))
    assert ds.name == "graph" and ds.num_classes == 3
    # A source-row adjacency is passed transposed.
    by_source = sp.csr_matrix((np.ones(len(SRC)), (SRC, DST)), shape=(N, N))
    ds_t = from_scipy(by_source.T, x, np.zeros(N, np.int64), [0], [], [])
    assert ds_t.A.isequal(ds.A)


def test_from_scipy_pattern_only_and_sparse_features():
    adj = sp.csr_matrix(np.array([[0, 2.5, 0], [0, 0, 0], [7, 0, 0]]))
    adj.data[0] = 0.0                                   # a stored zero is no edge
    xs = sp.random(3, 4, density=0.5, format="csr", random_state=0, dtype=np.float32)
    ds = from_scipy(adj, xs, torch.tensor([0, 1, 0]), torch.tensor([0]), [1], [2],
                    name="s")
    assert ds.A.is_structural and pattern(ds.A).tolist() == [[0, 0, 0], [0, 0, 0], [1, 0, 0]]
    assert isinstance(ds.x, spla.Matrix)
    np.testing.assert_array_equal(ds.x.to_dense(), xs.toarray())
    M = spla.Matrix.from_scipy(sp.csr_matrix(np.array([[0, 3.0], [1, 0]])))
    assert from_scipy(M, np.ones((2, 1)), [0, 0], [0], [], []).A.is_structural


@pytest.mark.parametrize("args, exc, words", [
    ((np.eye(3),), spla.DTypeError, "from_scipy: argument 'adj' must be a scipy.sparse matrix"),
    ((sp.eye(3, 4, format="csr"),), spla.DimensionMismatch, "argument 'adj' must be a square"),
    ((sp.eye(3, format="csr"), np.ones((2, 2))), spla.DimensionMismatch,
     "argument 'x' must be 3 rows"),
    ((sp.eye(3, format="csr"), np.array([["a"], ["b"], ["c"]])), spla.DTypeError,
     "argument 'x' must be numeric features"),
    ((sp.eye(3, format="csr"), np.ones((3, 1)), np.array([0.0, 1.0, 1.0])), spla.DTypeError,
     "argument 'y' must be integer class labels"),
    ((sp.eye(3, format="csr"), np.ones((3, 1)), [0, 1, 1], [3]), spla.IndexOutOfRange,
     "argument 'train_idx' must be indices below 3"),
    ((sp.eye(3, format="csr"), np.ones((3, 1)), [0, 1, 1], [0], [0.5]), spla.DTypeError,
     "argument 'val_idx' must be an integer array"),
])
def test_from_scipy_errors(args, exc, words):
    defaults = [sp.eye(3, format="csr"), np.ones((3, 1)), [0, 1, 1], [0], [1], [2]]
    full = list(args) + defaults[len(args):]
    with pytest.raises(exc) as info:
        from_scipy(*full)
    assert words in str(info.value), str(info.value)


# ---- load(path) / load_npz / save_npz ---------------------------------------------

def graph_arrays():
    """A 6-vertex graph in the npz format, with dense features."""
    A = sp.csr_matrix(target_rows(SRC, DST, N))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((N, 4)).astype(np.float32)
    x[:, 3] = 0.0                                 # an all-zero last column
    return dict(indptr=A.indptr.astype(np.int64), indices=A.indices, x=x,
                y=np.array([0, 1, 2, 1, -1, 0]), train_idx=np.array([0, 1]),
                val_idx=np.array([2]), test_idx=np.array([3, 5]))


def write(tmp_path, arrays, fname="g.npz"):
    path = tmp_path / fname
    np.savez(path, **arrays)
    return str(path)


def test_load_path_dense_features(tmp_path):
    a = graph_arrays()
    ds = load(write(tmp_path, dict(a, num_classes=np.int64(5))))
    assert ds.name == "g" and ds.num_classes == 5
    assert isinstance(ds.x, np.ndarray) and ds.x.dtype == np.float32
    np.testing.assert_array_equal(ds.x, a["x"])
    np.testing.assert_array_equal(pattern(ds.A), target_rows(SRC, DST, N))
    assert ds.y.tolist() == a["y"].tolist() and ds.test_idx.tolist() == [3, 5]
    # pathlib paths, and a symmetrised view on request.
    und = load(pathlib.Path(tmp_path / "g.npz"), to_undirected=True)
    expected = target_rows(SRC, DST, N)
    np.testing.assert_array_equal(pattern(und.A), ((expected + expected.T) != 0) * 1.0)


def test_load_path_sparse_features(tmp_path):
    a = graph_arrays()
    xs = sp.csr_matrix(a.pop("x"))
    a.update(x_indptr=xs.indptr.astype(np.int64), x_indices=xs.indices, x_data=xs.data)
    ds = load(write(tmp_path, a))
    assert isinstance(ds.x, spla.Matrix)
    assert ds.num_features == 3                    # inferred: the last column is empty
    ds = load(write(tmp_path, dict(a, num_features=np.int64(4))))
    assert ds.num_features == 4
    np.testing.assert_array_equal(ds.x.to_dense(), xs.toarray())


@pytest.mark.parametrize("dense", [True, False])
def test_save_npz_round_trip(tmp_path, dense):
    a = graph_arrays()
    x = a["x"] if dense else sp.csr_matrix(a["x"])
    ds = from_scipy(sp.csr_matrix(target_rows(SRC, DST, N)), x, a["y"], a["train_idx"],
                    a["val_idx"], a["test_idx"], num_classes=3)
    path = tmp_path / "out.npz"
    save_npz(ds, path)
    assert sorted(os.listdir(tmp_path)) == ["out.npz"]          # no temporary left behind
    back = load_npz(path)
    assert back.A.isequal(ds.A) and back.num_classes == 3 and back.num_features == 4
    got = back.x if dense else back.x.to_dense()
    np.testing.assert_array_equal(got, a["x"])
    for split in ("train_idx", "val_idx", "test_idx"):
        assert np.array_equal(getattr(back, split), getattr(ds, split))
    with np.load(path, allow_pickle=False) as f:           # the documented keys
        keys = set(f.files)
    common = {"indptr", "indices", "y", "train_idx", "val_idx", "test_idx", "num_classes"}
    assert keys == common | ({"x"} if dense else {"x_indptr", "x_indices", "x_data",
                                                    "num_features"})


def test_save_npz_interrupted_leaves_no_file(tmp_path, monkeypatch):
    ds = load("cora")
    path = tmp_path / "cora.npz"

    def broken(f, **arrays):
        f.write(b"PK half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(KeyboardInterrupt):
        save_npz(ds, path)
    assert os.listdir(tmp_path) == []


def test_save_npz_errors(tmp_path):
    with pytest.raises(spla.DTypeError, match="save_npz: argument 'dataset' must be a sampling "
                       "Dataset"):
        save_npz({"A": 1}, tmp_path / "x.npz")
    A = spla.Matrix.from_dense(np.array([[0.0, 2.0], [1.0, 0.0]]))
    from sampling.datasets.dataset import Dataset
    ds = Dataset("w", A, np.ones((2, 1)), np.array([0, 1]), [0], [1], [])
    with pytest.raises(spla.InvalidValue, match="a structural adjacency"):
        save_npz(ds, tmp_path / "w.npz")


@pytest.mark.parametrize("edit, exc, words", [
    (lambda a: a.pop("y"), spla.InvalidValue, "without y"),
    (lambda a: a.pop("x"), spla.InvalidValue, "without x_indptr, x_indices, x_data"),
    (lambda a: a.update(x_indptr=np.zeros(7, np.int64)), spla.InvalidValue, "not both"),
    (lambda a: a.update(x=a["x"][:, 0]), spla.DimensionMismatch, "argument 'x' must be a 2-D"),
    (lambda a: a.update(x=a["x"][:4]), spla.DimensionMismatch, "argument 'x' must be 6 rows"),
    (lambda a: a.update(x=np.where(a["x"] > 1, np.nan, a["x"])), spla.InvalidValue,
     "argument 'x' must be finite values; got nan"),
    (lambda a: a.update(x=a["x"].astype(np.float64) * 1e300), spla.InvalidValue,
     "argument 'x' must be values within float32's range"),
    (lambda a: a.update(y=a["y"] + 0.5), spla.DTypeError, "integer class labels"),
    (lambda a: a.update(num_classes=np.float64(3)), spla.DTypeError,
     "an integer scalar 'num_classes'"),
    (lambda a: a.update(num_features=np.int64(9)), spla.DimensionMismatch,
     "num_features equal to x's 4 columns"),
    (lambda a: a.update(x=np.array([["a", "b"]] * 6)), spla.DTypeError, "numeric features"),
    (lambda a: a.update(test_idx=np.array([6])), spla.IndexOutOfRange, "'test_idx'"),
])
def test_load_path_errors(tmp_path, edit, exc, words):
    a = graph_arrays()
    edit(a)
    with pytest.raises(exc) as info:
        load(write(tmp_path, a))
    assert words in str(info.value), str(info.value)


def test_load_refuses_what_is_not_an_npz(tmp_path):
    a = graph_arrays()
    a["y"] = np.array([0, 1, 2, 1, None, 0], dtype=object)
    with pytest.raises(spla.InvalidValue, match="no pickled objects"):
        load(write(tmp_path, a))
    text = tmp_path / "notes.npz"
    text.write_text("not an archive")
    with pytest.raises(spla.InvalidValue, match="load_npz: argument 'path' must be an .npz file"):
        load(str(text))
    single = tmp_path / "one.npy"
    np.save(single, np.arange(3))
    with pytest.raises(spla.InvalidValue, match="holding a single array"):
        load(str(single))
    with pytest.raises(spla.InvalidValue, match="'no/such.npz' \\(no such file\\)"):
        load("no/such.npz")
    with pytest.raises(spla.InvalidValue, match="'pubmed' \\(no such file\\)"):
        load("pubmed")
    with pytest.raises(spla.InvalidValue, match="argument 'name_or_path'"):
        load(3)
    with pytest.raises(spla.InvalidValue, match="argument 'to_undirected' must be True or False"):
        load("cora", to_undirected=1)
    with pytest.raises(spla.InvalidValue, match="argument 'root' must be a folder path"):
        load("ogbn-arxiv", root=3)


def test_symmetrize_matches_scipy():
    rng = np.random.default_rng(5)
    S = sp.random(20, 20, density=0.1, format="csr", random_state=rng)
    got = pattern(symmetrize(spla.Matrix.from_scipy(S)))
    dense = S.toarray() != 0
    np.testing.assert_array_equal(got, (dense | dense.T).astype(np.float64))
