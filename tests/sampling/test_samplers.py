"""Invariants of the samplers (GraphSAGE, LADIES, FastGCN) and their drivers.

Every check here holds for every random draw, so the tests are exact: on
small hand-drawn graphs (a path, a star, a graph with isolated vertices, a
directed graph with a vertex that has no out-neighbours) and on the
embedded Cora.  The laws of the draws are tested in
``test_sampler_distribution.py``.

Conventions under test: fanouts / layer sizes are given output layer first;
``MiniBatch.blocks`` run input layer first; ``block.adj`` is
``n_dst x n_src``; ``src_nodes`` begin with ``dst_nodes``.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

import spla
from spla.exceptions import DimensionMismatch, DTypeError, IndexOutOfRange, InvalidValue
from sampling import (BulkPlanner, FastGCN, GraphSAGE, LADIES, MiniBatch,
                      epoch_batches)
from sampling.datasets import load

import reference_samplers as ref


# ---------------------------------------------------------------------------
# Graphs
# ---------------------------------------------------------------------------

def _undirected(n, edges, weights=None):
    r = [u for u, v in edges] + [v for u, v in edges]
    c = [v for u, v in edges] + [u for u, v in edges]
    w = None if weights is None else list(weights) + list(weights)
    S = sp.csr_matrix((np.ones(len(r)) if w is None else np.array(w, float), (r, c)), shape=(n, n))
    S.sort_indices()
    return S


def _directed(n, edges):
    r, c = zip(*edges)
    S = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(n, n))
    S.sort_indices()
    return S


PATH = _undirected(6, [(i, i + 1) for i in range(5)])
STAR = _undirected(7, [(0, i) for i in range(1, 7)])
# triangle 0-1-2, edge 3-4, vertices 5 and 6 isolated
ISOLATED = _undirected(7, [(0, 1), (1, 2), (0, 2), (3, 4)])
# directed: vertex 3 has in-edges but no neighbours of its own (empty row)
SINK = _directed(5, [(0, 1), (0, 2), (1, 2), (2, 3), (4, 3), (1, 0)])

# a path whose vertices also have self loops (a vertex is its own neighbour)
LOOPS = (_undirected(5, [(i, i + 1) for i in range(4)]) + sp.identity(5, format="csr")).tocsr()
LOOPS.sort_indices()

SMALL = {"path": PATH, "star": STAR, "isolated": ISOLATED, "sink": SINK, "loops": LOOPS}
SMALL_SEEDS = {"path": [[0, 3], [5]], "star": [[0], [1, 2, 0]],
               "isolated": [[5, 0], [6], [3, 2]], "sink": [[3], [0, 4], [3, 1]],
               "loops": [[0, 2], [4]]}


def spla_graph(S, structural=True):
    return spla.Matrix.from_scipy(S, structural=structural)


@pytest.fixture(scope="module")
def cora():
    return load("cora")


@pytest.fixture(scope="module")
def cora_sp(cora):
    return cora.A.to_scipy()


def cora_batches(cora, sizes=(20, 7, 33, 1)):
    ids = cora.train_idx
    out, at = [], 0
    for s in sizes:
        out.append(np.asarray(ids[at:at + s], np.int64))
        at += s
    return out


def host(a):
    return np.asarray(a)


# ---------------------------------------------------------------------------
# Checkers shared by every sampler
# ---------------------------------------------------------------------------

def check_chain(mb, seeds, num_layers):
    """Block structure and chaining common to every sampler."""
    blocks = mb.blocks
    assert isinstance(mb, MiniBatch)
    assert len(blocks) == num_layers
    assert_array_equal(host(blocks[-1].dst_nodes), np.asarray(seeds))
    assert_array_equal(host(mb.seeds), np.asarray(seeds))
    assert_array_equal(host(mb.input_nodes), host(blocks[0].src_nodes))
    assert mb.batch_size == len(seeds)
    for l, b in enumerate(blocks):
        dst, src = host(b.dst_nodes), host(b.src_nodes)
        assert dst.dtype == np.int64 and src.dtype == np.int64
        assert b.adj.shape == (dst.size, src.size) == (b.num_dst, b.num_src)
        assert_array_equal(src[:dst.size], dst)            # src begins with dst
        assert np.unique(src).size == src.size              # distinct
        if l > 0:                                            # chaining
            assert_array_equal(src, host(blocks[l - 1].dst_nodes))
    assert mb.num_sampled_edges == sum(b.adj.nnz for b in blocks)


def edge_set(S):
    S = sp.csr_matrix(S)
    rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
    return set(zip(rows.tolist(), S.indices.tolist()))


def check_graphsage(A, mb, seeds, fanouts, *, replace=False, weighted=False):
    """Every invariant of one GraphSAGE minibatch; A is the scipy graph."""
    A = sp.csr_matrix(A)
    L = len(fanouts)
    check_chain(mb, seeds, L)
    edges = edge_set(A)
    for l, b in enumerate(mb.blocks):
        fanout = fanouts[L - 1 - l]                 # output layer first
        dst, src = host(b.dst_nodes), host(b.src_nodes)
        S = b.to_scipy()
        assert S.shape == (dst.size, src.size)
        for r in range(dst.size):
            v = dst[r]
            lo, hi = S.indptr[r], S.indptr[r + 1]
            cols = S.indices[lo:hi]
            vals = S.data[lo:hi]
            for c in cols:                          # every sampled edge exists in A
                assert (int(v), int(src[c])) in edges, (v, src[c])
            assert np.unique(cols).size == cols.size
            a_lo, a_hi = A.indptr[v], A.indptr[v + 1]
            degree = a_hi - a_lo
            if weighted:
                degree = int((A.data[a_lo:a_hi] > 0).sum())
            assert cols.size <= min(fanout, degree)
            if replace:
                assert np.all(vals >= 1) and np.all(vals == np.round(vals))
                assert vals.sum() == (fanout if degree > 0 else 0)
            else:
                assert cols.size == min(fanout, degree)
                if weighted:                        # values are the edge weights
                    assert_array_equal(vals, [A[v, src[c]] for c in cols])
                else:                               # unweighted: ones (or structural)
                    assert b.adj.values is None or np.all(host(b.adj.values) == 1)
        # no vertex in src that nobody sampled
        if src.size > dst.size:
            assert np.all(np.diff(S.tocsc().indptr)[dst.size:] > 0)


def _nonzeros(S):
    S = sp.csr_matrix(S, copy=True)
    S.eliminate_zeros()
    return S


def scipy_layerwise_adjacency(Ahat, dst, src, p, s):
    """Â[dst, src] · diag(1 / (s p_src)), rows normalised (vectorised scipy)."""
    M = Ahat[dst][:, src].tocsr()
    pj = p[src]
    scale = np.where(pj > 0, 1.0 / (s * np.where(pj > 0, pj, 1.0)), 0.0)
    M = (M @ sp.diags(scale)).tocsr()
    rs = np.asarray(M.sum(axis=1)).ravel()
    return (sp.diags(np.where(rs > 0, 1.0 / np.where(rs > 0, rs, 1.0), 0.0)) @ M).toarray()


def check_layerwise(A, mb, seeds, layer_sizes, kind, *, normalize=True):
    """Every invariant of one LADIES / FastGCN minibatch; A is the scipy graph."""
    L = len(layer_sizes)
    check_chain(mb, seeds, L)
    Ahat = ref.normalized_adjacency(A, normalize)
    for l, b in enumerate(mb.blocks):
        s = layer_sizes[L - 1 - l]
        dst, src = host(b.dst_nodes), host(b.src_nodes)
        if kind == "ladies":
            p = ref.ladies_probabilities(Ahat, dst)
        else:
            p = ref.fastgcn_probabilities(Ahat)
        new = src[dst.size:]
        support = np.flatnonzero(p > 0)
        assert np.all(p[new] > 0), "sampled a vertex outside the support"
        assert new.size <= s
        # s distinct picks (or the whole support): those outside dst are new
        outside = np.setdiff1d(support, dst).size
        assert new.size >= min(s, support.size) - (support.size - outside)
        if support.size <= s:
            assert_array_equal(np.sort(new), np.setdiff1d(support, dst))
        got = b.adj.to_dense().astype(np.float64)
        rows = got.sum(axis=1)
        empty = _nonzeros(Ahat[dst][:, src]).getnnz(axis=1) == 0
        assert_allclose(rows[~empty], 1.0, rtol=1e-5)
        assert np.all(rows[empty] == 0)
        # the pattern is Â[dst, src]'s, the values the paper's formula
        assert edge_set(_nonzeros(b.to_scipy())) == edge_set(_nonzeros(Ahat[dst][:, src]))
        want = scipy_layerwise_adjacency(Ahat, dst, src, p, s)
        assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        assert_allclose(ref.layerwise_adjacency(Ahat, dst, src, p, s).toarray(), want,
                        rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------
# GraphSAGE invariants
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("fanouts", [[1], [2, 3], [3, 1, 2]])
@pytest.mark.parametrize("replace", [False, True])
def test_graphsage_invariants_small_graphs(name, fanouts, replace):
    A = SMALL[name]
    sampler = GraphSAGE(spla_graph(A), fanouts, replace=replace)
    # four copies of each minibatch under distinct ids: four independent draws
    batches = [np.array(b) for b in SMALL_SEEDS[name]] * 4
    for seed in range(2):
        mbs = sampler.sample(batches, seed=seed)
        assert [mb.index for mb in mbs] == list(range(len(batches)))
        for mb, b in zip(mbs, batches):
            check_graphsage(A, mb, b, fanouts, replace=replace)


def test_graphsage_path_takes_whole_neighbourhoods():
    # fanout >= degree everywhere: the block is exactly the 2-hop ball.
    mb, = GraphSAGE(spla_graph(PATH), [2, 2]).sample([np.array([2])], seed=0)
    assert mb.blocks[1].src_nodes.tolist() == [2, 1, 3]
    assert mb.blocks[0].src_nodes.tolist() == [2, 1, 3, 0, 4]
    assert_array_equal(mb.blocks[1].adj.to_dense(), [[0, 1, 1]])


def test_graphsage_vertex_without_neighbours():
    # vertex 3 of SINK has no neighbours: an empty row, no source but itself
    mb, = GraphSAGE(spla_graph(SINK), [4, 4]).sample([np.array([3])], seed=1)
    for b in mb.blocks:
        assert b.src_nodes.tolist() == [3] and b.dst_nodes.tolist() == [3]
        assert b.adj.nnz == 0 and b.adj.shape == (1, 1)
    # isolated vertices next to a connected one
    mb, = GraphSAGE(spla_graph(ISOLATED), [5]).sample([np.array([5, 0, 6])], seed=1)
    assert mb.blocks[0].adj.row_degrees().tolist() == [0, 2, 0]
    assert mb.blocks[0].src_nodes.tolist() == [5, 0, 6, 1, 2]


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_graphsage_invariants_cora(cora, cora_sp, replace, weighted):
    A, S = cora.A, cora_sp
    if weighted:
        w = np.random.default_rng(7).random(S.nnz)
        w[::5] = 0.0                                  # some zero-weight edges
        S = sp.csr_matrix((w, S.indices, S.indptr), shape=S.shape)
        A = spla.Matrix.from_csr(S.indptr, S.indices, w, S.shape)
    fanouts = [10, 5]
    batches = cora_batches(cora)
    sampler = GraphSAGE(A, fanouts, replace=replace, weighted=weighted)
    mbs = sampler.sample(batches, seed=3, epoch=2)
    for mb, b in zip(mbs, batches):
        check_graphsage(S, mb, b, fanouts, replace=replace, weighted=weighted)


@pytest.mark.parametrize("replace", [False, True])
def test_graphsage_weight_zero_is_never_picked(replace):
    w = [0.0, 1.0, 0.0, 2.0, 3.0, 0.0]
    S = _undirected(7, [(0, i) for i in range(1, 7)], weights=w)
    A = spla.Matrix.from_scipy(S)
    assert A.nnz == 12                                  # zeros stored explicitly
    zero_leaves = {1, 3, 6}
    batches = [np.array([0])] * 400
    for fanout in (1, 2, 3, 5):
        mbs = GraphSAGE(A, [fanout], replace=replace, weighted=True).sample(batches, seed=11)
        for i, mb in enumerate(mbs):
            picked = set(mb.blocks[0].src_nodes[1:].tolist())
            assert not picked & zero_leaves
            if not replace:
                assert len(picked) == min(fanout, 3)
            if i < 40:
                check_graphsage(S, mb, [0], [fanout], replace=replace, weighted=True)


def test_graphsage_all_zero_row_samples_nothing():
    S = _undirected(4, [(0, 1), (0, 2), (2, 3)], weights=[0.0, 0.0, 1.0])
    A = spla.Matrix.from_scipy(S)
    for replace in (False, True):
        mb, = GraphSAGE(A, [2], replace=replace, weighted=True).sample([np.array([0])], seed=0)
        assert mb.blocks[0].adj.nnz == 0 and mb.blocks[0].src_nodes.tolist() == [0]


def test_graphsage_replace_values_count_draws():
    # star center with 6 leaves, fanout 20 > degree: 20 draws spread on 6 leaves
    sampler = GraphSAGE(spla_graph(STAR), [20], replace=True)
    for mb in sampler.sample([np.array([0, 3])] * 20, seed=4):
        adj = mb.blocks[0].adj
        assert adj.values is not None
        assert adj.to_dense().sum(axis=1).tolist() == [20.0, 20.0]
        assert adj.row_degrees()[1] == 1                # leaf 3 has one neighbour


# ---------------------------------------------------------------------------
# LADIES / FastGCN invariants
# ---------------------------------------------------------------------------

LAYERWISE = {"ladies": LADIES, "fastgcn": FastGCN}


@pytest.mark.parametrize("kind", sorted(LAYERWISE))
@pytest.mark.parametrize("name", sorted(SMALL))
@pytest.mark.parametrize("normalize", [True, False])
def test_layerwise_invariants_small_graphs(kind, name, normalize):
    A = SMALL[name]
    sizes = [2, 3]
    sampler = LAYERWISE[kind](spla_graph(A), sizes, normalize=normalize)
    batches = [np.array(b) for b in SMALL_SEEDS[name]] * 4
    for seed in range(2):
        for mb, b in zip(sampler.sample(batches, seed=seed), batches):
            check_layerwise(A, mb, b, sizes, kind, normalize=normalize)


@pytest.mark.parametrize("kind", sorted(LAYERWISE))
@pytest.mark.parametrize("sizes", [[64, 128], [1], [5000]])
def test_layerwise_invariants_cora(cora, cora_sp, kind, sizes):
    batches = cora_batches(cora)
    mbs = LAYERWISE[kind](cora.A, sizes).sample(batches, seed=5, epoch=1)
    for mb, b in zip(mbs, batches):
        check_layerwise(cora_sp, mb, b, sizes, kind)


def test_ladies_support_is_the_batch_neighbourhood(cora, cora_sp):
    # 1-hop neighbourhood of the batch, self loops included: nothing else.
    b = cora_batches(cora)[0]
    ball = set(b.tolist()) | set(cora_sp[b].indices.tolist())
    sampler = LADIES(cora.A, [40])
    for mb in sampler.sample([b] * 30, seed=2):
        assert set(mb.blocks[0].src_nodes.tolist()) <= ball
    # with support <= s every vertex of the ball comes in
    mb, = LADIES(cora.A, [len(ball)]).sample([b], seed=2)
    assert set(mb.blocks[0].src_nodes.tolist()) == ball


def test_fastgcn_support_excludes_unreachable_vertices():
    # normalize=False: a vertex that is nobody's neighbour (column of zeros)
    # has p = 0 and is never drawn; with Â = D^-1(A+I) every vertex can be.
    A = spla_graph(SINK)                              # column 4 is empty
    for mb in FastGCN(A, [3], normalize=False).sample([np.array([0])] * 200, seed=9):
        assert 4 not in mb.blocks[0].src_nodes.tolist()
    seen = set()
    for mb in FastGCN(A, [1], normalize=True).sample([np.array([0])] * 400, seed=9):
        seen |= set(mb.blocks[0].src_nodes.tolist())
    assert seen == set(range(5))


@pytest.mark.parametrize("kind", sorted(LAYERWISE))
@pytest.mark.parametrize("normalize", [True, False])
def test_layerwise_weighted_graph_with_zero_weights(kind, normalize):
    # explicit zero weights: never drawn for their own sake, rows still sum to 1
    S = _undirected(7, [(0, i) for i in range(1, 7)] + [(1, 2)],
                    weights=[0.0, 1.0, 0.0, 2.0, 3.0, 0.0, 0.5])
    sampler = LAYERWISE[kind](spla.Matrix.from_scipy(S), [2, 3], normalize=normalize)
    batches = [np.array([0]), np.array([1, 2]), np.array([6, 3])] * 3
    for seed in range(2):
        for mb, b in zip(sampler.sample(batches, seed=seed), batches):
            check_layerwise(S, mb, b, [2, 3], kind, normalize=normalize)


@pytest.mark.parametrize("kind", sorted(LAYERWISE))
@pytest.mark.parametrize("dtype,normalize", [
    (np.float32, True), (np.float32, False), (np.float64, False),
    (np.int32, True), (np.int64, True),
    (np.int32, False), (np.int64, False),
])
def test_layerwise_value_dtypes(kind, dtype, normalize):
    S = _undirected(6, [(i, i + 1) for i in range(5)] + [(0, 3)], weights=[2, 1, 3, 1, 5, 4])
    A = spla.Matrix.from_csr(S.indptr, S.indices, S.data.astype(dtype), S.shape)
    batches = [np.array([0]), np.array([2, 5])] * 3
    sampler = LAYERWISE[kind](A, [2, 2], normalize=normalize)
    for mb, b in zip(sampler.sample(batches, seed=1), batches):
        check_layerwise(S, mb, b, [2, 2], kind, normalize=normalize)


def test_ladies_integer_weights_minimal():
    # seed 0 has neighbours 1 (weight 2) and 3 (weight 4): p = (0.2, 0.8) on
    # {1, 3}; s = 2 takes both.  Row 0 of the block over src [0, 1, 3] is
    # (0, 2 / (2 * 0.2), 4 / (2 * 0.8)) normalised = (0, 2/3, 1/3).
    S = _undirected(6, [(i, i + 1) for i in range(5)] + [(0, 3)], weights=[2, 1, 3, 1, 5, 4])
    A = spla.Matrix.from_csr(S.indptr, S.indices, S.data.astype(np.int64), S.shape)
    mb, = LADIES(A, [2], normalize=False).sample([np.array([0])], seed=0)
    assert mb.blocks[0].src_nodes.tolist() == [0, 1, 3]
    assert_allclose(mb.blocks[0].adj.to_dense(), [[0.0, 2 / 3, 1 / 3]], rtol=1e-6)


def test_ladies_empty_probability_row():
    # normalize=False and a batch with no neighbours: nothing to draw, the
    # block keeps its destinations and an all-zero adjacency.
    mb, = LADIES(spla_graph(ISOLATED), [3], normalize=False).sample([np.array([5, 6])], seed=0)
    b = mb.blocks[0]
    assert b.src_nodes.tolist() == [5, 6] and b.adj.nnz == 0


# ---------------------------------------------------------------------------
# Bulk == one at a time, determinism
# ---------------------------------------------------------------------------

def _samplers(A, weighted_A=None):
    out = {
        "graphsage": GraphSAGE(A, [5, 3]),
        "graphsage-replace": GraphSAGE(A, [4, 4], replace=True),
        "ladies": LADIES(A, [30, 40]),
        "fastgcn": FastGCN(A, [30, 40]),
    }
    if weighted_A is not None:
        out["graphsage-weighted"] = GraphSAGE(weighted_A, [5, 3], weighted=True)
        out["graphsage-weighted-replace"] = GraphSAGE(weighted_A, [3, 2], replace=True,
                                                      weighted=True)
    return out


@pytest.fixture(scope="module")
def cora_samplers(cora, cora_sp):
    w = np.random.default_rng(3).random(cora_sp.nnz) + 0.1
    Aw = spla.Matrix.from_csr(cora_sp.indptr, cora_sp.indices, w, cora_sp.shape)
    return _samplers(cora.A, Aw)


SAMPLER_NAMES = ["graphsage", "graphsage-replace", "graphsage-weighted",
                 "graphsage-weighted-replace", "ladies", "fastgcn"]


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_bulk_equals_one_at_a_time(cora, cora_samplers, name):
    sampler = cora_samplers[name]
    batches = cora_batches(cora)
    bulk = sampler.sample(batches, seed=17, epoch=3)
    for i, b in enumerate(batches):
        alone, = sampler.sample([b], seed=17, epoch=3, batch_ids=[i])
        assert alone == bulk[i]
        assert alone.index == i
    # any grouping and order, given the ids
    order = [2, 0, 3]
    part = sampler.sample([batches[i] for i in order], seed=17, epoch=3, batch_ids=order)
    assert [mb.index for mb in part] == order
    assert all(mb == bulk[i] for mb, i in zip(part, order))


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_bulk_equals_one_at_a_time_small_graphs(name):
    Aw = spla.Matrix.from_scipy(_undirected(7, [(0, 1), (1, 2), (0, 2), (3, 4)],
                                            weights=[1.0, 2.0, 0.5, 3.0]))
    sampler = _samplers(spla_graph(ISOLATED), Aw)[name]
    batches = [np.array(b) for b in SMALL_SEEDS["isolated"]]
    bulk = sampler.sample(batches, seed=5)
    for i, b in enumerate(batches):
        assert sampler.sample([b], seed=5, batch_ids=[i])[0] == bulk[i]


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_seed_and_epoch_select_the_stream(cora, cora_samplers, name):
    sampler = cora_samplers[name]
    batches = cora_batches(cora, (40, 40))
    a = sampler.sample(batches, seed=1, epoch=0)
    assert a == sampler.sample(batches, seed=1, epoch=0)          # reproducible
    assert a == sampler.sample(np.stack(batches), seed=1, epoch=0)  # (k, b) array form
    b = sampler.sample(batches, seed=2, epoch=0)
    c = sampler.sample(batches, seed=1, epoch=1)
    for i in range(len(batches)):
        assert a[i] != b[i] and a[i] != c[i]
    # the same seeds under two minibatch ids are two independent draws
    d = sampler.sample([batches[0], batches[0]], seed=1)
    assert d[0] != MiniBatch(d[1].blocks, index=0)


@pytest.mark.parametrize("name", SAMPLER_NAMES)
def test_independent_of_thread_count(cora, cora_samplers, name):
    import numba
    sampler = cora_samplers[name]
    batches = cora_batches(cora) + [cora.train_idx[60:140]]
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = sampler.sample(batches, seed=21)
    finally:
        numba.set_num_threads(before)
    assert one == sampler.sample(batches, seed=21)


# ---------------------------------------------------------------------------
# Outputs: to_pyg, to_scipy
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["graphsage", "graphsage-replace", "ladies"])
def test_to_pyg_conventions(cora, cora_samplers, name):
    b = cora_batches(cora)[0]
    mb, = cora_samplers[name].sample([b], seed=0)
    pyg = mb.to_pyg()
    assert_array_equal(host(pyg.n_id), host(mb.input_nodes))
    assert pyg.batch_size == b.size
    assert len(pyg.adjs) == len(mb.blocks)
    assert [a.size for a in pyg.adjs] == [(blk.num_src, blk.num_dst) for blk in mb.blocks]
    for (ei, _, _), blk in zip(pyg.adjs, mb.blocks):
        ei = host(ei)
        assert ei.shape == (2, blk.num_edges) and ei.dtype == np.int64
        src_local, dst_local = ei
        assert np.all((0 <= src_local) & (src_local < blk.num_src))
        assert np.all((0 <= dst_local) & (dst_local < blk.num_dst))
        # the edge (source -> destination) is the entry adj[destination, source]
        assert set(zip(dst_local.tolist(), src_local.tolist())) == edge_set(blk.to_scipy())


def test_block_to_scipy(cora, cora_samplers):
    mb, = cora_samplers["ladies"].sample([cora_batches(cora)[0]], seed=0)
    for blk in mb.blocks:
        S = blk.to_scipy()
        assert isinstance(S, sp.csr_matrix)
        assert S.shape == (blk.num_dst, blk.num_src)
        assert S.nnz == blk.num_edges
        assert_array_equal(S.toarray(), blk.adj.to_dense())
    mb, = cora_samplers["graphsage"].sample([cora_batches(cora)[0]], seed=0)
    S = mb.blocks[0].to_scipy()
    assert S.nnz and np.all(S.data == 1.0)             # unweighted: ones


@pytest.mark.filterwarnings("ignore:Sparse:UserWarning")
@pytest.mark.parametrize("name", ["graphsage", "graphsage-replace", "ladies"])
def test_block_to_torch(cora, cora_samplers, name):
    torch = pytest.importorskip("torch")
    mb, = cora_samplers[name].sample([cora_batches(cora)[0]], seed=0)
    for blk in mb.blocks:
        T = blk.to_torch()
        assert T.layout == torch.sparse_csr and tuple(T.shape) == blk.adj.shape
        assert T.dtype == torch.float32 or blk.adj.values is not None
        assert_allclose(T.to_dense().numpy(), blk.adj.to_dense(), rtol=1e-6)


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------

BAD_BATCHES = [
    ([np.array([], np.int64)], InvalidValue, "batches[0]"),
    ([np.array([0, 1]), np.array([], np.int64)], InvalidValue, "batches[1]"),
    ([], InvalidValue, "batches"),
    ([np.array([0, 7])], IndexOutOfRange, "batches[0]"),
    ([np.array([1]), np.array([2, 70])], IndexOutOfRange, "batches[1]"),
    ([np.array([0, -1])], IndexOutOfRange, "batches[0]"),
    ([np.array([1, 2]), np.array([3, 4, 3])], InvalidValue, "batches[1]"),
    ([np.array([0.0, 1.0])], DTypeError, "batches[0]"),
    ([[0.5, 1.0]], DTypeError, "batches[0]"),
    ([np.array([True, False])], DTypeError, "batches[0]"),
    (np.array([0, 1, 2]), DimensionMismatch, "batches"),
    ([np.array([[0, 1]])], DimensionMismatch, "batches[0]"),
    ("0, 1", DTypeError, "batches"),
]


def _arg(name):
    return "argument '" + name + "'"


@pytest.mark.parametrize("kind", ["graphsage", "ladies", "fastgcn"])
@pytest.mark.parametrize("batches,exc,arg", BAD_BATCHES,
                         ids=[f"{e.__name__}-{a}-{i}" for i, (_, e, a) in enumerate(BAD_BATCHES)])
def test_bad_batches(kind, batches, exc, arg):
    A = spla_graph(ISOLATED)                      # 7 vertices
    sampler = {"graphsage": GraphSAGE(A, [2]), "ladies": LADIES(A, [2]),
               "fastgcn": FastGCN(A, [2])}[kind]
    with pytest.raises(exc) as info:
        sampler.sample(batches, seed=0)
    assert _arg(arg) in str(info.value)


@pytest.mark.parametrize("kwargs,exc,arg", [
    (dict(seed=-1), InvalidValue, "seed"),
    (dict(seed=2 ** 64), InvalidValue, "seed"),
    (dict(seed=1.5), InvalidValue, "seed"),
    (dict(seed=0, epoch=-1), InvalidValue, "epoch"),
    (dict(seed=0, batch_ids=[0, 1]), DimensionMismatch, "batch_ids"),
    (dict(seed=0, batch_ids=[-1]), InvalidValue, "batch_ids"),
])
def test_bad_sample_arguments(kwargs, exc, arg):
    sampler = GraphSAGE(spla_graph(PATH), [2])
    with pytest.raises(exc) as info:
        sampler.sample([np.array([0])], **kwargs)
    assert _arg(arg) in str(info.value) or f"argument '{arg}[" in str(info.value)


@pytest.mark.parametrize("make,exc,arg", [
    (lambda A: GraphSAGE(A, [2, 0]), InvalidValue, "fanouts[1]"),
    (lambda A: GraphSAGE(A, [-3]), InvalidValue, "fanouts[0]"),
    (lambda A: GraphSAGE(A, [2.5]), InvalidValue, "fanouts[0]"),
    (lambda A: GraphSAGE(A, []), InvalidValue, "fanouts"),
    (lambda A: GraphSAGE(A, 3), InvalidValue, "fanouts"),
    (lambda A: LADIES(A, [0]), InvalidValue, "layer_sizes[0]"),
    (lambda A: LADIES(A, [4, -1]), InvalidValue, "layer_sizes[1]"),
    (lambda A: LADIES(A, []), InvalidValue, "layer_sizes"),
    (lambda A: FastGCN(A, [0, 3]), InvalidValue, "layer_sizes[0]"),
    (lambda A: FastGCN(A, []), InvalidValue, "layer_sizes"),
    (lambda A: GraphSAGE(A, [2], weighted=True), InvalidValue, "A"),
    (lambda A: GraphSAGE(A, [2, 2 ** 31]), InvalidValue, "fanouts[1]"),
    (lambda A: GraphSAGE(A, [10 ** 30], replace=True), InvalidValue, "fanouts[0]"),
    (lambda A: LADIES(A, [2 ** 63]), InvalidValue, "layer_sizes[0]"),
    (lambda A: FastGCN(A, [3, 2 ** 40]), InvalidValue, "layer_sizes[1]"),
])
def test_bad_sampler_configuration(make, exc, arg):
    with pytest.raises(exc) as info:
        make(spla_graph(PATH))
    assert _arg(arg) in str(info.value)


@pytest.mark.parametrize("cls", [LADIES, FastGCN])
def test_layerwise_config_errors_name_the_sampler(cls):
    with pytest.raises(InvalidValue) as info:
        cls(spla_graph(PATH), [0])
    assert str(info.value).startswith(f"{cls.__name__}: argument 'layer_sizes[0]'"), str(info.value)


def test_bad_batch_id_is_named_by_position():
    with pytest.raises(InvalidValue) as info:
        GraphSAGE(spla_graph(PATH), [2]).sample([np.array([0]), np.array([1])], seed=0,
                                                batch_ids=[0, -1])
    assert _arg("batch_ids[1]") in str(info.value), str(info.value)


@pytest.mark.parametrize("make", [
    lambda A: GraphSAGE(A, [2], weighted=True),
    lambda A: LADIES(A, [2]),
    lambda A: FastGCN(A, [2]),
])
@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_edge_weights(make, bad):
    S = PATH.copy()
    S.data = S.data.copy()
    S.data[3] = bad
    with pytest.raises(InvalidValue) as info:
        make(spla.Matrix.from_scipy(S))
    assert _arg("A") in str(info.value)


@pytest.mark.parametrize("cls", [GraphSAGE, LADIES, FastGCN])
def test_bad_graph(cls):
    with pytest.raises(DTypeError) as info:
        cls(PATH, [2])                                  # a scipy matrix, not spla
    assert _arg("A") in str(info.value)
    with pytest.raises(DimensionMismatch) as info:
        cls(spla.Matrix.from_dense(np.ones((3, 4))), [2])
    assert _arg("A") in str(info.value)


# ---------------------------------------------------------------------------
# epoch_batches
# ---------------------------------------------------------------------------

def test_epoch_batches_disjoint_covering():
    ids = np.arange(100, 203)                          # 103 ids
    for bs in (1, 10, 25, 103):
        batches = epoch_batches(ids, bs, seed=4, epoch=1)
        allv = np.concatenate(batches)
        assert allv.size == ids.size and np.unique(allv).size == ids.size
        assert set(allv.tolist()) == set(ids.tolist())
        sizes = [b.size for b in batches]
        assert sizes == [bs] * (ids.size // bs) + ([ids.size % bs] if ids.size % bs else [])
        assert all(b.dtype == np.int64 for b in batches)


def test_epoch_batches_deterministic_and_reshuffled():
    ids = np.arange(500)
    a = epoch_batches(ids, 64, seed=1, epoch=0)
    b = epoch_batches(ids, 64, seed=1, epoch=0)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    for other in (epoch_batches(ids, 64, seed=1, epoch=1),
                  epoch_batches(ids, 64, seed=2, epoch=0)):
        assert not np.array_equal(np.concatenate(a), np.concatenate(other))
    assert not np.array_equal(np.concatenate(a), ids)   # actually shuffled


def test_epoch_batches_drop_last():
    ids = np.arange(23)
    batches = epoch_batches(ids, 5, seed=0, drop_last=True)
    assert [b.size for b in batches] == [5, 5, 5, 5]
    full = epoch_batches(ids, 5, seed=0, drop_last=False)
    assert all(np.array_equal(x, y) for x, y in zip(batches, full[:4]))
    assert [b.size for b in epoch_batches(np.arange(20), 5, seed=0, drop_last=True)] == [5] * 4


def test_epoch_batches_bad_seed_names_the_function():
    with pytest.raises(InvalidValue) as info:
        epoch_batches(np.arange(10), 2, seed=-1)
    assert str(info.value).startswith("epoch_batches: argument 'seed'"), str(info.value)


def test_epoch_batches_larger_than_the_seeds_is_one_minibatch():
    bs = epoch_batches(np.arange(10), 11, seed=0)
    assert len(bs) == 1 and sorted(bs[0].tolist()) == list(range(10))


def test_epoch_batches_huge_epoch_names_epoch():
    with pytest.raises(InvalidValue) as info:
        epoch_batches(np.arange(10), 2, seed=0, epoch=2 ** 48)
    assert "epoch_batches: argument 'epoch'" in str(info.value), str(info.value)


@pytest.mark.parametrize("args,kwargs,exc,arg", [
    ((np.arange(10), 11), {"drop_last": True}, InvalidValue, "batch_size"),
    ((np.arange(10), 0), {}, InvalidValue, "batch_size"),
    ((np.array([1, 2, 2]), 1), {}, InvalidValue, "train_ids"),
    ((np.array([], np.int64), 1), {}, InvalidValue, "train_ids"),
    ((np.array([0.0, 1.0]), 1), {}, DTypeError, "train_ids"),
    ((np.arange(10), 2), {"epoch": -1}, InvalidValue, "epoch"),
])
def test_epoch_batches_bad_input(args, kwargs, exc, arg):
    with pytest.raises(exc) as info:
        epoch_batches(*args, seed=0, **kwargs)
    assert _arg(arg) in str(info.value)


# ---------------------------------------------------------------------------
# BulkPlanner
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["graphsage", "ladies", "fastgcn"])
def test_bulk_planner(cora, cora_samplers, name):
    sampler = cora_samplers[name]
    batches = epoch_batches(cora.train_idx, 16, seed=0)          # 140 -> 9 minibatches
    per = sampler.estimate_bytes(16)
    assert per > 0
    for budget_k in (1, 2, 4, 100):
        planner = BulkPlanner(sampler, memory_budget=budget_k * per)
        plan = planner.plan(batches)
        assert sum(plan, []) == list(range(len(batches)))        # all, in order
        k = min(budget_k, len(batches))
        assert all(len(p) == k for p in plan[:-1]) and 1 <= len(plan[-1]) <= k
        assert planner.passes(len(batches), 16) == len(plan)
    planner = BulkPlanner(sampler, memory_budget=100 * per, max_bulk=3)
    plan = planner.plan(batches)
    assert sum(plan, []) == list(range(len(batches)))
    assert max(len(p) for p in plan) == 3
    with pytest.raises(InvalidValue) as info:
        BulkPlanner(sampler, memory_budget=per - 1).plan(batches)
    assert _arg("memory_budget") in str(info.value)
    with pytest.raises(InvalidValue) as info:
        BulkPlanner(sampler, memory_budget=per).plan([])
    assert _arg("batches") in str(info.value)
    with pytest.raises(InvalidValue):
        BulkPlanner(sampler, memory_budget=0)
    with pytest.raises(InvalidValue):
        BulkPlanner(sampler, memory_budget=per, max_bulk=0)


def test_estimate_counts_draws_with_replacement(cora):
    """With replacement a vertex draws ``fanout`` times whatever its degree:
    the estimate grows with the fanout, where without replacement it is
    capped by the degrees."""
    small = GraphSAGE(cora.A, [10], replace=True).estimate_bytes(64)
    huge = GraphSAGE(cora.A, [10 ** 9], replace=True).estimate_bytes(64)
    assert huge > 64 * 10 ** 9 * 0.9 > small
    capped = GraphSAGE(cora.A, [10 ** 9]).estimate_bytes(64)
    assert capped == GraphSAGE(cora.A, [int(cora.A.row_degrees().max())]).estimate_bytes(64)
    assert capped < 10 ** 7
    with pytest.raises(InvalidValue) as info:
        BulkPlanner(GraphSAGE(cora.A, [10 ** 9], replace=True), 2 ** 30).bulk_size(64)
    assert _arg("memory_budget") in str(info.value)


def test_draws_beyond_memory_name_the_fanout(cora):
    """A fanout whose draws cannot be allocated is refused before any kernel
    runs (it used to try to allocate tens of GB)."""
    sampler = GraphSAGE(cora.A, [5, 2 ** 31 - 1], replace=True)
    with pytest.raises(InvalidValue) as info:
        sampler.sample([cora.train_idx[:64]], seed=0)
    assert _arg("fanouts[1]") in str(info.value) and "replace=True" in str(info.value)
    # Without replacement the same fanout takes whole neighbourhoods.
    mb, = GraphSAGE(cora.A, [5, 2 ** 31 - 1]).sample([cora.train_idx[:64]], seed=0)
    assert mb.blocks[0].adj.nnz <= cora.A.nnz


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("replace", [False, True])
def test_materialize_gives_the_fused_picks(cora, weighted, replace):
    A = cora.A
    if weighted:
        A = A.with_values((np.arange(A.nnz) % 5 + 1).astype(np.float32))
    batches = epoch_batches(cora.train_idx, 32, seed=1)
    fused = GraphSAGE(A, [4, 3], replace=replace, weighted=weighted)
    literal = GraphSAGE(A, [4, 3], replace=replace, weighted=weighted, materialize=True)
    assert literal.sample(batches, seed=5, epoch=2) == fused.sample(batches, seed=5, epoch=2)


def test_bulk_planner_plan_samples_like_one_bulk(cora, cora_samplers):
    sampler = cora_samplers["graphsage"]
    batches = epoch_batches(cora.train_idx, 16, seed=0)
    plan = BulkPlanner(sampler, memory_budget=3 * sampler.estimate_bytes(16)).plan(batches)
    pieces = []
    for bulk in plan:
        pieces += sampler.sample([batches[i] for i in bulk], seed=8, batch_ids=bulk)
    assert pieces == sampler.sample(batches, seed=8)
