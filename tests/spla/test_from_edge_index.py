"""``spla.Matrix.from_edge_index``: PyG edge lists into the samplers' orientation.

References are independent of spla: scipy's COO -> CSR (which sums
duplicates), plain Python dictionaries for the other duplicate modes, and
torch_geometric's own ``MessagePassing`` / ``SAGEConv`` for the meaning of
the orientation.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import spla
from spla import Matrix
from spla.exceptions import (DimensionMismatch, DTypeError, IndexOutOfRange,
                             InvalidValue)

from strategies import SETTINGS

torch = pytest.importorskip("torch")


@st.composite
def edge_lists(draw):
    """(edge_index (2, E) int64, num_nodes, values or None): repeats and self loops likely."""
    n = draw(st.integers(1, 9))
    E = draw(st.integers(0, 30))
    ids = st.integers(0, n - 1)
    src = np.array(draw(st.lists(ids, min_size=E, max_size=E)), np.int64)
    dst = np.array(draw(st.lists(ids, min_size=E, max_size=E)), np.int64)
    kind = draw(st.sampled_from([None, np.float32, np.float64, np.int64]))
    vals = None
    if kind is not None:
        vals = np.array(draw(st.lists(st.integers(-5, 5), min_size=E, max_size=E)), kind)
    extra = draw(st.integers(0, 2))  # isolated vertices past the largest id
    dtype = draw(st.sampled_from([np.int64, np.int32, np.uint32, np.uint8]))
    return np.stack([src, dst]).astype(dtype), n + extra, vals


def reference(edge_index, n, vals, mode, flow="source_to_target"):
    """{(row, col): value} by the rules of the docstring, in plain Python (None: 'error' raises)."""
    src, dst = edge_index.astype(np.int64)
    rows, cols = (dst, src) if flow == "source_to_target" else (src, dst)
    out = {}
    for t, key in enumerate(zip(rows.tolist(), cols.tolist())):
        v = 1 if vals is None else vals[t].item()
        if key in out:
            if mode == "error":
                return None
            if mode == "sum":
                out[key] += v
            continue  # keep-first
        out[key] = v
    return out


def as_dict(A):
    S = A.to_scipy().tocoo()
    return {(int(r), int(c)): v.item() for r, c, v in zip(S.row, S.col, S.data)}


def assert_canonical(A):
    ptr, idx = np.asarray(A.indptr), np.asarray(A.indices)
    assert ptr.dtype == np.int64 and ptr[0] == 0 and ptr[-1] == idx.size
    for i in range(A.nrows):
        row = idx[ptr[i]:ptr[i + 1]]
        assert np.all(np.diff(row) > 0)


@SETTINGS
@given(edge_lists(), st.sampled_from(["error", "sum", "keep-first"]),
       st.sampled_from(["source_to_target", "target_to_source"]))
def test_matches_plain_python(case, mode, flow):
    ei, n, vals = case
    expected = reference(ei, n, vals, mode, flow)
    if expected is None:
        with pytest.raises(InvalidValue, match="distinct edges"):
            Matrix.from_edge_index(ei, n, values=vals, flow=flow, duplicates=mode)
        return
    A = Matrix.from_edge_index(ei, n, values=vals, flow=flow, duplicates=mode)
    assert A.shape == (n, n)
    assert_canonical(A)
    assert as_dict(A) == pytest.approx(expected)
    if vals is None:
        # structural, except summed duplicates: then int64 counts
        assert (A.dtype == np.int64) if mode == "sum" else A.is_structural
    else:
        assert A.dtype == vals.dtype


@SETTINGS
@given(edge_lists())
def test_sum_matches_scipy(case):
    ei, n, vals = case
    A = Matrix.from_edge_index(ei, n, values=vals, duplicates="sum")
    data = np.ones(ei.shape[1]) if vals is None else vals.astype(np.float64)
    S = sp.coo_matrix((data, (ei[1].astype(np.int64), ei[0].astype(np.int64))),
                      shape=(n, n)).tocsr()
    S.sum_duplicates()
    S.sort_indices()
    got = A.to_scipy()
    np.testing.assert_array_equal(np.asarray(A.indptr), S.indptr)
    np.testing.assert_array_equal(np.asarray(A.indices), S.indices)
    np.testing.assert_allclose(got.data, S.data)


@SETTINGS
@given(edge_lists())
def test_target_to_source_is_the_transpose(case):
    ei, n, vals = case
    a = Matrix.from_edge_index(ei, n, values=vals, duplicates="sum")
    b = Matrix.from_edge_index(ei, n, values=vals, duplicates="sum", flow="target_to_source")
    assert b.isequal(spla.transpose(a))


def test_from_coo_of_sources_and_targets_is_the_transpose():
    # The trap the docstring names: from_coo(edge_index[0], edge_index[1])
    rng = np.random.default_rng(0)
    ei = np.unique(rng.integers(0, 30, (2, 120)), axis=1)
    A = Matrix.from_edge_index(ei, 30)
    B = Matrix.from_coo(ei[0], ei[1], shape=(30, 30))
    assert B.isequal(spla.transpose(A))
    assert not B.isequal(A)


def test_defaults_self_loops_and_empty():
    A = Matrix.from_edge_index(np.array([[0, 2, 3], [0, 1, 3]]))
    assert A.shape == (4, 4)
    assert as_dict(A) == {(0, 0): 1.0, (1, 2): 1.0, (3, 3): 1.0}   # self loops kept
    E = Matrix.from_edge_index(np.zeros((2, 0), np.int64))
    assert E.shape == (0, 0) and E.nnz == 0
    E = Matrix.from_edge_index([[], []], 5)
    assert E.shape == (5, 5) and E.nnz == 0


def test_first_repeat_is_named():
    ei = np.array([[0, 1, 2, 1, 0, 2], [1, 2, 0, 0, 1, 0]])
    # column 4 repeats column 0 and column 5 repeats column 2: the first is column 4
    with pytest.raises(InvalidValue, match=r"edge_index\[:, 4\] = \(0, 1\), a repeat of "
                                           r"edge_index\[:, 0\]"):
        Matrix.from_edge_index(ei)


def test_keep_first_and_sum_values():
    ei = np.array([[0, 0, 1, 0], [1, 1, 0, 1]])
    w = np.array([5.0, 7.0, 1.0, 9.0])
    assert as_dict(Matrix.from_edge_index(ei, values=w, duplicates="keep-first")) == \
        {(1, 0): 5.0, (0, 1): 1.0}
    assert as_dict(Matrix.from_edge_index(ei, values=w, duplicates="sum")) == \
        {(1, 0): 21.0, (0, 1): 1.0}
    counts = Matrix.from_edge_index(ei, duplicates="sum")
    assert counts.dtype == np.int64 and as_dict(counts) == {(1, 0): 3, (0, 1): 1}


def test_torch_inputs():
    ei = torch.tensor([[0, 1, 2], [1, 2, 0]], dtype=torch.int32)
    w = torch.tensor([0.5, 1.5, 2.5], requires_grad=True)
    A = Matrix.from_edge_index(ei, 4, values=w)
    assert A.device == "cpu" and A.shape == (4, 4) and A.dtype == np.float32
    assert as_dict(A) == {(1, 0): 0.5, (2, 1): 1.5, (0, 2): 2.5}
    assert Matrix.from_edge_index(ei.long()).isequal(Matrix.from_edge_index(ei.numpy()))
    # bool values: a pattern (structural)
    assert Matrix.from_edge_index(ei, values=torch.ones(3, dtype=torch.bool)).is_structural


@pytest.mark.parametrize("bad, exc, match", [
    (np.array([0, 1, 2]), DimensionMismatch, r"'edge_index' must be an array of shape \(2, E\)"),
    (np.zeros((3, 4), np.int64), DimensionMismatch, "shape \\(2, E\\)"),
    (np.zeros((2, 3), np.float64), DTypeError, "integer vertex ids"),
    (np.ones((2, 3), bool), DTypeError, "integer vertex ids"),
    (np.array([[0, -3], [1, 1]]), IndexOutOfRange, r"non-negative vertex ids; got -3 at "
                                                   r"edge_index\[0, 1\]"),
    (np.array([[0, 1], [1, 2**63 + 5]], np.uint64), IndexOutOfRange, "below 2\\*\\*63"),
])
def test_bad_edge_index(bad, exc, match):
    with pytest.raises(exc, match="Matrix.from_edge_index: argument 'edge_index' must"):
        Matrix.from_edge_index(bad)
    with pytest.raises(exc, match=match):
        Matrix.from_edge_index(bad)


def test_bad_other_arguments():
    ei = np.array([[0, 1, 3], [1, 2, 0]])
    f = Matrix.from_edge_index
    with pytest.raises(IndexOutOfRange, match=r"vertex ids below num_nodes = 3; got 3 at "
                                              r"edge_index\[0, 2\]"):
        f(ei, 3)
    with pytest.raises(InvalidValue, match="'num_nodes' must be an integer >= 0; got -1"):
        f(ei, -1)
    with pytest.raises(InvalidValue, match="'num_nodes' must be an integer; got 4.0"):
        f(ei, 4.0)
    with pytest.raises(DimensionMismatch, match="'values' must be a 1-D array of length 3"):
        f(ei, values=np.ones(2))
    with pytest.raises(InvalidValue, match=r"'values' must be finite values \(no NaN or inf\); "
                                           "got nan at position 1"):
        f(ei, values=np.array([1.0, np.nan, 2.0]))
    with pytest.raises(InvalidValue, match="got inf at position 2"):
        f(ei, values=np.array([1.0, 0.0, np.inf], np.float32))
    with pytest.raises(DTypeError, match="'values' must be real values"):
        f(ei, values=np.ones(3, np.complex64))
    with pytest.raises(InvalidValue, match="'flow' must be 'source_to_target' or "
                                           "'target_to_source'; got 'in'"):
        f(ei, flow="in")
    with pytest.raises(InvalidValue, match="'duplicates' must be 'error', 'sum' or "
                                           "'keep-first'; got 'max'"):
        f(ei, duplicates="max")


# ---------------------------------------------------------------------------
# The meaning of the orientation: what PyG's message passing aggregates
# ---------------------------------------------------------------------------

def _directed_graph(n=60, E=400, seed=5):
    rng = np.random.default_rng(seed)
    ei = rng.integers(0, n, (2, E))
    ei = ei[:, ei[0] != ei[1]]
    return np.unique(ei, axis=1)            # distinct edges, in lexicographic order


def test_sampled_in_neighbours_are_pygs_mean_aggregation():
    from torch_geometric.nn import MessagePassing, SAGEConv
    from sampling import DirectedGraphWarning, GraphSAGE

    class Mean(MessagePassing):
        def __init__(self):
            super().__init__(aggr="mean")          # flow="source_to_target"

        def forward(self, x, edge_index):
            return self.propagate(edge_index, x=x)

    n = 60
    ei = _directed_graph(n)
    A = Matrix.from_edge_index(ei, n)
    assert not spla.is_symmetric_pattern(A)
    fanout = int(np.asarray(A.row_degrees()).max())    # every in-neighbour
    with pytest.warns(DirectedGraphWarning):
        sampler = GraphSAGE(A, [fanout, fanout])
    seeds = np.array([3, 17, 42, 0, 59])
    mb, = sampler.sample([seeds], seed=1)
    x = torch.randn(n, 8, generator=torch.Generator().manual_seed(0))
    eit = torch.from_numpy(ei)

    # one layer: the mean over the seeds' block rows is PyG's mean over in-edges
    blk = mb.blocks[-1]
    xs = x[torch.from_numpy(np.asarray(blk.src_nodes))]
    S = blk.to_scipy()
    deg = np.maximum(np.diff(S.indptr), 1)
    block_mean = (S @ xs.numpy()) / deg[:, None]
    pyg_mean = Mean()(x, eit)[torch.from_numpy(seeds)].numpy()
    np.testing.assert_allclose(block_mean, pyg_mean, rtol=1e-5, atol=1e-6)

    # two SAGEConv layers on the blocks == on the whole graph, for the seeds
    torch.manual_seed(0)
    convs = [SAGEConv(8, 16), SAGEConv(16, 4)]
    full = convs[1](convs[0](x, eit).relu(), eit)[torch.from_numpy(seeds)]
    batch_size, n_id, adjs = mb.to_pyg()[:3]
    h = x[n_id]
    for i, (conv, (edge_index, _, size)) in enumerate(zip(convs, adjs)):
        h = conv((h, h[:size[1]]), edge_index)
        if i == 0:
            h = h.relu()
    torch.testing.assert_close(h, full, rtol=1e-5, atol=1e-5)

    # the transposed graph (from_coo of sources and targets) aggregates the
    # out-neighbours instead: a different answer on this directed graph
    B = Matrix.from_coo(ei[0], ei[1], shape=(n, n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DirectedGraphWarning)
        wrong, = GraphSAGE(B, [n]).sample([seeds], seed=1)
    assert set(map(tuple, wrong.blocks[-1].edge_index().T.tolist())) != \
        set(map(tuple, mb.blocks[-1].edge_index().T.tolist()))


@pytest.mark.parametrize("mode", ["error", "sum", "keep-first"])
def test_on_each_backend(backend, mode):
    """An edge list on the GPU (cupy) builds a GPU matrix equal to the CPU one."""
    rng = np.random.default_rng(2)
    ei = rng.integers(0, 40, (2, 300))
    if mode == "error":
        ei = np.unique(ei, axis=1)
    w = rng.standard_normal(ei.shape[1])
    ref = Matrix.from_edge_index(ei, 45, values=w, duplicates=mode)
    A = Matrix.from_edge_index(backend.asarray(ei), 45, values=backend.asarray(w),
                               duplicates=mode)
    assert A.device == backend.device
    assert A.to("cpu").isequal(ref)
    if backend.name == "cupy":
        t = torch.from_numpy(ei).cuda()
        assert Matrix.from_edge_index(t, 45, values=torch.from_numpy(w).cuda(),
                                      duplicates=mode).to("cpu").isequal(ref)
