"""Conversions of a MiniBatch (PyG, DGL layouts), edge ids, and the directed-graph warning.

Every layout is checked against references built here from scipy and plain
Python: the edges of each block (from ``Block.to_scipy``), the position of an
entry in a canonical CSR matrix (a search in scipy's sorted row), and the
merged graph of ``to_pyg_data`` rebuilt vertex by vertex.
"""

import dataclasses
import sys
import types
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import spla
from spla.exceptions import (DeviceMismatch, DimensionMismatch, DTypeError,
                             IndexOutOfRange, InvalidValue, MissingDependency)
from spla.edges import find_entries_xp
from spla.generators import rmat
from sampling import FastGCN, GraphSAGE, LADIES, DirectedGraphWarning
from sampling.samplers.minibatch import Block, MiniBatch

from strategies import SETTINGS, masks, make_twin

torch = pytest.importorskip("torch")


# ---------------------------------------------------------------------------
# A graph and one sampler of every kind
# ---------------------------------------------------------------------------

N = 90


def _graph():
    """Symmetric pattern, unsymmetric positive values, a few diagonal entries."""
    rng = np.random.default_rng(11)
    M = sp.random(N, N, density=0.06, random_state=rng, format="csr")
    M = ((M + M.T) > 0).astype(np.float64).tolil()
    M.setdiag(0)
    for v in (2, 5, 40):              # self loops that A stores
        M[v, v] = 1.0
    M = M.tocsr()
    M.eliminate_zeros()
    M.sort_indices()
    M.data = rng.uniform(0.5, 2.0, M.nnz)
    return M


@pytest.fixture(scope="module")
def S():
    return _graph()


@pytest.fixture(scope="module")
def A(S):
    return spla.Matrix.from_scipy(S)


SAMPLERS = {
    "graphsage": lambda A: GraphSAGE(A, [4, 3]),
    "graphsage-replace": lambda A: GraphSAGE(A, [4, 3], replace=True),
    "graphsage-weighted": lambda A: GraphSAGE(A, [4, 3], weighted=True),
    "graphsage-weighted-replace": lambda A: GraphSAGE(A, [4, 3], weighted=True, replace=True),
    "graphsage-3": lambda A: GraphSAGE(A, [3, 2, 2]),
    "ladies": lambda A: LADIES(A, [6, 5]),
    "ladies-raw": lambda A: LADIES(A, [6, 5], normalize=False),
    "fastgcn": lambda A: FastGCN(A, [6, 5, 4]),
}
SEEDS = [np.array([1, 7, 30, 2]), np.array([55]), np.array([5, 40, 88, 12, 13, 60])]


@pytest.fixture(scope="module")
def batches(A):
    return {name: make(A).sample(SEEDS, seed=3, epoch=1) for name, make in SAMPLERS.items()}


def position(S, v, u):
    """Where entry (v, u) sits among the stored entries of canonical scipy S, or -1."""
    lo, hi = S.indptr[v], S.indptr[v + 1]
    k = lo + np.searchsorted(S.indices[lo:hi], u)
    return int(k) if k < hi and S.indices[k] == u else -1


def block_edges(blk):
    """[(source global, target global)] of a block, in its stored order (scipy reference)."""
    B = blk.to_scipy()
    rows = np.repeat(np.arange(B.shape[0]), np.diff(B.indptr))
    src, dst = np.asarray(blk.src_nodes), np.asarray(blk.dst_nodes)
    return list(zip(src[B.indices].tolist(), dst[rows].tolist()))


def numpy_of(t):
    return None if t is None else t.detach().cpu().numpy()


# ---------------------------------------------------------------------------
# The prefix chain every conversion relies on
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", SAMPLERS)
def test_every_sampler_forms_a_prefix_chain(batches, name):
    for mb, seeds in zip(batches[name], SEEDS):
        blocks = mb.blocks
        np.testing.assert_array_equal(blocks[-1].dst_nodes, seeds)
        for i, b in enumerate(blocks):
            src, dst = np.asarray(b.src_nodes), np.asarray(b.dst_nodes)
            np.testing.assert_array_equal(src[:dst.size], dst)
            assert np.unique(src).size == src.size            # each vertex once
            if i:
                np.testing.assert_array_equal(blocks[i - 1].dst_nodes, b.src_nodes)
        mb.check_chain()


def _broken(kind):
    A = spla.Matrix.from_dense(np.ones((2, 3)))
    ok = Block(A, np.array([0, 1]), np.array([0, 1, 2]))
    if kind == "prefix":
        return MiniBatch([Block(A, np.array([0, 1]), np.array([1, 0, 2]))])
    return MiniBatch([ok, Block(spla.Matrix.from_dense(np.ones((1, 2))), np.array([0]),
                                np.array([0, 2]))])


@pytest.mark.parametrize("kind, match", [
    ("prefix", r"argument 'blocks\[0\]' must be a block whose src_nodes begin with its "
               "dst_nodes"),
    ("chain", r"argument 'blocks\[1\]' must be src_nodes equal to the previous block's "
              "dst_nodes"),
])
@pytest.mark.parametrize("method", ["check_chain", "to_pyg", "to_pyg_data"])
def test_broken_chains_are_refused(kind, match, method):
    with pytest.raises(InvalidValue, match=f"MiniBatch.{method}: " + match):
        getattr(_broken(kind), method)()


# ---------------------------------------------------------------------------
# to_pyg: NeighborSampler's convention
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", SAMPLERS)
def test_to_pyg_layout(S, batches, name):
    for mb in batches[name]:
        out = mb.to_pyg()
        batch_size, n_id, adjs = out[:3]
        assert out.batch_size == batch_size == mb.seeds.size
        assert n_id.dtype == torch.int64
        np.testing.assert_array_equal(n_id.numpy(), mb.input_nodes)
        assert isinstance(adjs, list) and len(adjs) == len(mb.blocks) == len(out.edge_weight)
        for adj, w, blk in zip(adjs, out.edge_weight, mb.blocks):
            edge_index, e_id, size = adj
            assert size == (blk.num_src, blk.num_dst)
            assert edge_index.dtype == torch.int64 and tuple(edge_index.shape) == (2, blk.num_edges)
            # sources index n_id's prefix, targets the first size[1] of them
            ei = edge_index.numpy()
            got = list(zip(n_id.numpy()[ei[0]].tolist(), n_id.numpy()[ei[1]].tolist()))
            assert got == block_edges(blk)
            assert np.all(ei[0] < size[0]) and np.all(ei[1] < size[1])
            # e_id: the graph's entry (target, source), or -1 for a self loop A lacks
            assert e_id.dtype == torch.int64
            ref = [position(S, t, s) for s, t in got]
            np.testing.assert_array_equal(e_id.numpy(), ref)
            missing = [e for e, r in zip(got, ref) if r < 0]
            assert all(s == t and S[s, s] == 0 for s, t in missing)
            if name.startswith("graphsage"):
                assert not missing
            # edge weights: the block's values, float32, None when structural
            if blk.adj.values is None:
                assert w is None
            else:
                assert w.dtype == torch.float32
                np.testing.assert_array_equal(w.numpy(), blk.to_scipy().data.astype(np.float32))


def test_what_the_edge_weights_are(S, batches):
    assert all(w is None for mb in batches["graphsage"] for w in mb.to_pyg().edge_weight)
    for mb in batches["graphsage-weighted"]:
        # without replacement, the graph's own edge values
        out = mb.to_pyg()
        for adj, w in zip(out.adjs, out.edge_weight):
            np.testing.assert_array_equal(w.numpy(), S.data[adj.e_id.numpy()].astype(np.float32))
    for name in ("graphsage-replace", "graphsage-weighted-replace"):
        fanouts = [3, 4]  # input layer first
        for mb in batches[name]:
            # with replacement, draw counts: every destination with a neighbour draws f times
            for f, blk, w in zip(fanouts, mb.blocks, mb.to_pyg().edge_weight):
                deg = np.diff(S.indptr)[np.asarray(blk.dst_nodes)]
                rows = np.repeat(np.arange(blk.num_dst), np.diff(blk.to_scipy().indptr))
                per_row = np.bincount(rows, weights=w.numpy(), minlength=blk.num_dst)
                np.testing.assert_array_equal(per_row, np.where(deg > 0, f, 0))


def test_e_id_matches_the_graph_as_given_not_the_sampled_copy(S, A):
    # LADIES samples D^-1 (A + I): positions there differ from A's; e_id must be A's
    mb, = LADIES(A, [8]).sample([np.array([3, 4])], seed=0)
    _, _, adjs = mb.to_pyg()[:3]
    e_id = adjs[0].e_id.numpy()
    n_id = mb.input_nodes
    ei = adjs[0].edge_index.numpy()
    for k, (s, t) in enumerate(zip(n_id[ei[0]], n_id[ei[1]])):
        if e_id[k] >= 0:
            Sc = S.tocoo()
            assert (Sc.row[e_id[k]], Sc.col[e_id[k]]) == (t, s)
    assert (e_id == -1).sum() == 2          # vertices 3 and 4 have no stored self loop


def test_e_id_unknown_or_partitioned(A, batches):
    mb = batches["graphsage"][0]
    # the sampler's copy of the graph (its pattern): the same entry positions as A
    assert mb.graph.indptr is A.indptr and mb.graph.indices is A.indices
    bare = MiniBatch(mb.blocks, index=mb.index)
    assert bare.edge_ids() is None
    assert all(adj.e_id is None for adj in bare.to_pyg().adjs)
    assert all(lay.e_id is None for lay in bare.to_dgl_layout())
    # a DistMatrix whose rank holds every row (one rank) works as a local graph ...
    D = spla.distribute(A)
    dmb, = GraphSAGE(D, [4, 3]).sample([SEEDS[0]], seed=3, epoch=1)
    assert dmb == mb
    for x, y in zip(dmb.edge_ids(), mb.edge_ids()):
        np.testing.assert_array_equal(x, y)
    # ... and one holding a block of rows gives no edge ids
    half = spla.extract_rows(A, np.arange(N // 2))
    part = spla.DistMatrix(half, A.shape, A.nnz, D.layout, D.comm, 0)
    assert dataclasses.replace(mb, graph=part).edge_ids() is None


# ---------------------------------------------------------------------------
# to_pyg_data: one merged graph, as NeighborLoader lays it out
# ---------------------------------------------------------------------------

def merged_reference(mb):
    """Each vertex's in-edges from the first hop at which it is a destination, hop by hop."""
    L = len(mb.blocks)
    n_id = np.asarray(mb.input_nodes)
    where = {int(v): i for i, v in enumerate(n_id)}
    first_hop, nodes = {}, [mb.batch_size]
    for hop in range(L):
        blk = mb.blocks[L - 1 - hop]
        for v in np.asarray(blk.dst_nodes).tolist():
            first_hop.setdefault(v, hop)
        nodes.append(blk.num_src - blk.num_dst)
    edges, counts = [], []
    for hop in range(L):
        blk = mb.blocks[L - 1 - hop]
        mine = [(s, t) for s, t in block_edges(blk) if first_hop[t] == hop]
        edges += [(where[s], where[t]) for s, t in mine]
        counts.append(len(mine))
    return edges, nodes, counts


@pytest.mark.parametrize("name", SAMPLERS)
def test_to_pyg_data_layout(S, batches, name):
    pytest.importorskip("torch_geometric")
    for mb in batches[name]:
        x = torch.randn(mb.input_nodes.size, 3)
        y = torch.arange(mb.batch_size)
        data = dataclasses.replace(mb, x=x, y=y).to_pyg_data()
        edges, nodes, counts = merged_reference(mb)
        ei = data.edge_index.numpy()
        assert data.edge_index.dtype == torch.int64
        assert list(zip(ei[0].tolist(), ei[1].tolist())) == edges
        assert data.num_sampled_nodes == nodes and data.num_sampled_edges == counts
        assert sum(nodes) == data.num_nodes == mb.input_nodes.size
        assert data.batch_size == mb.batch_size
        np.testing.assert_array_equal(data.n_id.numpy(), mb.input_nodes)
        n_id = mb.input_nodes
        np.testing.assert_array_equal(data.e_id.numpy(),
                                      [position(S, n_id[t], n_id[s]) for s, t in edges])
        # targets of hop h's edges are exactly the vertices new at hop h
        bounds = np.cumsum([0] + nodes)
        ebounds = np.cumsum([0] + counts)
        for h in range(len(counts)):
            t = ei[1][ebounds[h]:ebounds[h + 1]]
            assert np.all((bounds[h] <= t) & (t < bounds[h + 1]))
        if all(b.adj.values is None for b in mb.blocks):
            assert "edge_weight" not in data
        else:
            assert data.edge_weight.dtype == torch.float32
            assert data.edge_weight.shape == (len(edges),)
        assert data.x is x and data.y is y


def test_to_pyg_data_weights_follow_their_hop(batches):
    pytest.importorskip("torch_geometric")
    mb = batches["ladies"][2]
    data = mb.to_pyg_data()
    ref = []
    L = len(mb.blocks)
    seen = set()
    for hop in range(L):
        blk = mb.blocks[L - 1 - hop]
        B = blk.to_scipy()
        rows = np.repeat(np.arange(B.shape[0]), np.diff(B.indptr))
        dst = np.asarray(blk.dst_nodes)
        for r, w in zip(rows, B.data):
            if dst[r] not in seen:
                ref.append(w)
        seen.update(dst.tolist())
    np.testing.assert_array_equal(data.edge_weight.numpy(), np.float32(ref))


def test_to_pyg_data_without_x_y_or_graph(batches):
    pytest.importorskip("torch_geometric")
    mb = batches["graphsage"][0]
    data = MiniBatch(mb.blocks).to_pyg_data()
    assert "x" not in data and "y" not in data and "e_id" not in data
    assert "e_id" in mb.to_pyg_data() and "e_id" not in mb.to_pyg_data(edge_ids=False)


@pytest.mark.parametrize("name", ["graphsage", "ladies"])
def test_edge_ids_can_be_skipped(batches, name):
    mb = batches[name][1]
    fast, full = mb.to_pyg(edge_ids=False), mb.to_pyg()
    assert all(a.e_id is None for a in fast.adjs)
    for a, b in zip(fast.adjs, full.adjs):
        assert a.edge_index.equal(b.edge_index) and a.size == b.size
    assert all(lay.e_id is None for lay in mb.to_dgl_layout(edge_ids=False))


# ---------------------------------------------------------------------------
# DGL
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", SAMPLERS)
def test_dgl_layout(S, batches, name):
    for mb in batches[name]:
        lays = mb.to_dgl_layout()
        assert len(lays) == len(mb.blocks)
        for lay, blk in zip(lays, mb.blocks):
            assert (lay.num_src_nodes, lay.num_dst_nodes) == (blk.num_src, blk.num_dst)
            for t in (lay.src, lay.dst, lay.src_nid, lay.dst_nid, lay.e_id):
                assert t.dtype == torch.int64
            src_nid, dst_nid = lay.src_nid.numpy(), lay.dst_nid.numpy()
            np.testing.assert_array_equal(src_nid, blk.src_nodes)
            np.testing.assert_array_equal(dst_nid, blk.dst_nodes)
            np.testing.assert_array_equal(src_nid[:lay.num_dst_nodes], dst_nid)
            got = list(zip(src_nid[lay.src.numpy()].tolist(), dst_nid[lay.dst.numpy()].tolist()))
            assert got == block_edges(blk)
            np.testing.assert_array_equal(lay.e_id.numpy(), [position(S, t, s) for s, t in got])
            if blk.adj.values is None:
                assert lay.weight is None
            else:
                np.testing.assert_array_equal(lay.weight.numpy(),
                                              blk.to_scipy().data.astype(np.float32))


class _FakeGraph:
    def __init__(self, uv, num_src_nodes, num_dst_nodes):
        self.uv, self.num_src_nodes, self.num_dst_nodes = uv, num_src_nodes, num_dst_nodes
        self.srcdata, self.dstdata, self.edata = {}, {}, {}


def test_to_dgl_builds_blocks_from_the_layout(monkeypatch, batches):
    fake = types.ModuleType("dgl")
    fake.NID, fake.EID = "_ID", "_ID"
    fake.create_block = lambda uv, num_src_nodes, num_dst_nodes: _FakeGraph(
        uv, num_src_nodes, num_dst_nodes)
    monkeypatch.setitem(sys.modules, "dgl", fake)
    for name in ("graphsage", "ladies"):
        mb = batches[name][0]
        blocks = mb.to_dgl()
        for blk, lay in zip(blocks, mb.to_dgl_layout()):
            assert blk.uv[0].equal(lay.src) and blk.uv[1].equal(lay.dst)
            assert (blk.num_src_nodes, blk.num_dst_nodes) == (lay.num_src_nodes,
                                                              lay.num_dst_nodes)
            assert blk.srcdata["_ID"].equal(lay.src_nid)
            assert blk.dstdata["_ID"].equal(lay.dst_nid)
            assert blk.edata["_ID"].equal(lay.e_id)
            if lay.weight is None:
                assert "w" not in blk.edata
            else:
                assert blk.edata["w"].equal(lay.weight)


@pytest.mark.parametrize("module, method, hint", [
    ("dgl", "to_dgl", "pip install dgl"),
    ("torch_geometric", "to_pyg_data", 'pip install -e ".[pyg]"'),
    ("torch", "to_pyg", 'pip install -e ".[train]"'),
    ("torch", "to_dgl_layout", 'pip install -e ".[train]"'),
])
def test_missing_dependencies(monkeypatch, batches, module, method, hint):
    mb = batches["graphsage"][0]
    for name in list(sys.modules):
        if name == module or name.startswith(module + "."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependency, match=f"MiniBatch.{method}") as info:
        getattr(mb, method)()
    assert hint in str(info.value)
    assert isinstance(info.value, ImportError)


# ---------------------------------------------------------------------------
# spla.entry_positions and spla.is_symmetric_pattern against scipy
# ---------------------------------------------------------------------------

@st.composite
def matrices_and_queries(draw):
    shape = (draw(st.integers(1, 12)), draw(st.integers(1, 12)))
    idx = draw(st.sampled_from([np.int32, np.int64]))
    tw = make_twin(draw(masks(shape)), None, None, idx)
    q = draw(st.integers(0, 40))
    rows = np.array(draw(st.lists(st.integers(0, shape[0] - 1), min_size=q, max_size=q)),
                    np.int64)
    cols = np.array(draw(st.lists(st.integers(0, shape[1] - 1), min_size=q, max_size=q)),
                    np.int64)
    return tw, rows, cols


@SETTINGS
@given(matrices_and_queries())
def test_entry_positions_match_scipy(case):
    tw, rows, cols = case
    S = tw.S
    ref = [position(S, r, c) for r, c in zip(rows, cols)]
    np.testing.assert_array_equal(spla.entry_positions(tw.M, rows, cols), ref)
    # the GPU path's array code, run on numpy
    np.testing.assert_array_equal(find_entries_xp(tw.M.indptr, tw.M.indices, rows, cols), ref)


def test_entry_positions_errors():
    A = spla.Matrix.from_coo([0, 1], [1, 0], shape=(2, 3))
    f = spla.entry_positions
    with pytest.raises(DTypeError, match="entry_positions: argument 'A' must be a spla.Matrix"):
        f(A.to_scipy(), [0], [0])
    with pytest.raises(IndexOutOfRange, match="argument 'rows' must be indices below 2; got 2"):
        f(A, [2], [0])
    with pytest.raises(IndexOutOfRange, match="argument 'cols' must be indices below 3; got 3"):
        f(A, [0], [3])
    with pytest.raises(DimensionMismatch, match="argument 'cols' must be an array of length 2"):
        f(A, [0, 1], [0])
    with pytest.raises(DTypeError, match="argument 'rows' must be an integer array"):
        f(A, [0.0], [0])


def test_on_each_backend(backend, S, A):
    """The same answers from the GPU path (cupy arrays) as from the CPU one."""
    G = backend.matrix(A)
    rng = np.random.default_rng(0)
    rows = rng.integers(0, N, 300)
    cols = rng.integers(0, N, 300)
    ref = [position(S, r, c) for r, c in zip(rows, cols)]
    got = spla.entry_positions(G, backend.asarray(rows), backend.asarray(cols))
    np.testing.assert_array_equal(backend.host(got), ref)
    assert spla.is_symmetric_pattern(G)
    assert not spla.is_symmetric_pattern(backend.matrix(_directed()))
    if backend.name == "cupy":
        with pytest.raises(DeviceMismatch, match="'rows' must be an array on A's device"):
            spla.entry_positions(G, rows, backend.asarray(cols))
    # sampled on the device: tensors on the device, the same contents as on the CPU
    mb, = GraphSAGE(G, [4, 3], weighted=True).sample([backend.asarray(SEEDS[0])], seed=3)
    cpu, = GraphSAGE(A, [4, 3], weighted=True).sample([SEEDS[0]], seed=3)
    out, ref = mb.to_pyg(), cpu.to_pyg()
    assert out.n_id.device.type == ("cuda" if backend.name == "cupy" else "cpu")
    assert out.n_id.cpu().equal(ref.n_id)
    for a, b, wa, wb in zip(out.adjs, ref.adjs, out.edge_weight, ref.edge_weight):
        assert a.edge_index.cpu().equal(b.edge_index) and a.e_id.cpu().equal(b.e_id)
        assert a.size == b.size and wa.cpu().equal(wb)
    for a, b in zip(mb.to_dgl_layout(), cpu.to_dgl_layout()):
        assert a.src.cpu().equal(b.src) and a.e_id.cpu().equal(b.e_id)


@st.composite
def square_patterns(draw):
    n = draw(st.integers(0, 10))
    m = draw(masks((n, n)))
    if draw(st.booleans()):
        m = m | m.T                                   # symmetric half of the time
    return make_twin(m, None, None, draw(st.sampled_from([np.int32, np.int64])))


@SETTINGS
@given(square_patterns())
def test_is_symmetric_pattern_matches_scipy(tw):
    ref = (tw.S != tw.S.T).nnz == 0
    assert spla.is_symmetric_pattern(tw.M) is ref


def test_is_symmetric_pattern_ignores_values_and_shape():
    A = spla.Matrix.from_coo([0, 1], [1, 0], [1.0, 9.0])
    assert spla.is_symmetric_pattern(A)
    assert not spla.is_symmetric_pattern(spla.Matrix.from_dense(np.ones((2, 3))))
    # one missing mirror entry among many, in a large graph (the parallel kernel)
    G = rmat(12, 8, seed=2)
    assert spla.is_symmetric_pattern(G)
    S = G.to_scipy().tolil()
    r, c = G.to_scipy().nonzero()
    S[r[777], c[777]] = 0
    S = S.tocsr()
    S.eliminate_zeros()
    assert not spla.is_symmetric_pattern(spla.Matrix.from_scipy(S))
    with pytest.raises(DTypeError, match="is_symmetric_pattern: argument 'A' must be"):
        spla.is_symmetric_pattern(S)


# ---------------------------------------------------------------------------
# The directed-graph warning
# ---------------------------------------------------------------------------

def _directed(n=20, seed=0):
    rng = np.random.default_rng(seed)
    ei = np.unique(rng.integers(0, n, (2, 60)), axis=1)
    return spla.Matrix.from_edge_index(ei, n)


MAKERS = [lambda A: GraphSAGE(A, [2]), lambda A: LADIES(A, [3]), lambda A: FastGCN(A, [3])]


@pytest.mark.parametrize("make", MAKERS)
def test_samplers_warn_on_a_directed_graph(make):
    A = _directed()
    with pytest.warns(DirectedGraphWarning) as caught:
        make(A)
    assert len(caught) == 1
    msg = str(caught[0].message)
    assert "row v's columns" in msg and "in-neighbours" in msg and "from_edge_index" in msg
    assert "sampling.DirectedGraphWarning" in msg
    assert caught[0].filename == __file__           # points at the user's line


def test_warned_once_per_graph():
    A, B = _directed(seed=1), _directed(seed=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for make in MAKERS:
            make(A)
            make(A)
        make(B)                                      # another object: warned again
    assert [w.category for w in caught] == [DirectedGraphWarning] * 2


def test_no_warning_for_symmetric_patterns_or_distributed_graphs(A):
    sym = spla.Matrix.from_coo([0, 1, 1, 2], [1, 0, 2, 1], [1.0, 5.0, 2.0, 7.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for make in MAKERS:
            make(sym)                                 # unequal values: still symmetric
            make(A)
        GraphSAGE(spla.distribute(_directed(seed=3)), [2])   # not checked


def test_silencing_the_warning():
    A = _directed(seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=DirectedGraphWarning)
        GraphSAGE(A, [2])
