"""HeteroGraphSAGE: invariants, keying (bulk == alone), law per relation, fanouts -1/0, errors.

References are independent of the sampler: the relations' edges as Python
sets, the homogeneous ``GraphSAGE`` on a one-type one-relation graph (the
same draws by construction), and the exact per-relation laws tested with
chi-square at ALPHA = 1e-3.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st
from scipy import stats

import spla
from sampling import GraphSAGE, HeteroGraph, HeteroGraphSAGE
from sampling.datasets.mag import mag_dataset

ALPHA = 1e-3


def _edge_sets(G):
    out = {}
    for rel, A in G.relations.items():
        S = A.to_scipy().tocoo()
        out[rel] = set(zip(S.row.tolist(), S.col.tolist()))
    return out


def check_invariants(G, mbs, fanouts, node_type, seeds):
    edges = _edge_sets(G)
    deg = {rel: np.diff(np.asarray(A.indptr)) for rel, A in G.relations.items()}
    rels = G.edge_types
    for mb, s in zip(mbs, seeds):
        assert mb.seeds.tolist() == list(s) and mb.seed_type == node_type
        L = len(mb.layers)
        for i, layer in enumerate(mb.layers):
            hop = L - 1 - i  # layers input first, fanouts output first
            for t in G.node_types:
                d, sr = layer.dst_nodes[t], layer.src_nodes[t]
                assert sr[:d.size].tolist() == d.tolist()          # destinations first
                assert len(set(sr.tolist())) == sr.size             # each vertex once
                if i + 1 < L:                                       # prefix chain
                    assert mb.layers[i + 1].src_nodes[t].tolist() == d.tolist()
            for r, rel in enumerate(rels):
                b = layer.blocks[rel]
                A = b.adj
                assert A.shape == (layer.dst_nodes[rel[2]].size, layer.src_nodes[rel[0]].size)
                ptr = np.asarray(A.indptr)
                k = fanouts[rel][hop] if isinstance(fanouts, dict) else fanouts[hop]
                for row in range(A.nrows):
                    v = int(b.dst_nodes[row])
                    cols = np.asarray(A.indices[ptr[row]:ptr[row + 1]])
                    us = b.src_nodes[cols].tolist()
                    assert len(set(us)) == len(us)                  # distinct picks
                    assert all((v, u) in edges[rel] for u in us)    # edges of this relation
                    want = 0 if k == 0 else (deg[rel][v] if k == -1 else min(k, deg[rel][v]))
                    assert len(us) == want


def test_invariants_on_mag():
    G = mag_dataset(6).to_undirected()
    fan = {rel: [3, 2] for rel in G.edge_types}
    fan[("paper", "cites", "paper")] = [-1, 0]
    seeds = [np.array([0, 5, 9]), np.array([63, 1])]
    mbs = HeteroGraphSAGE(G, fan).sample(seeds, node_type="paper", seed=3, epoch=2)
    check_invariants(G, mbs, fan, "paper", seeds)
    # every type is reached through the reverse relations
    assert all(mbs[0].input_nodes[t].size > 0 for t in G.node_types)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_invariants_hypothesis(data):
    na, nb = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    dense_ab = data.draw(st.lists(st.booleans(), min_size=na * nb, max_size=na * nb))
    dense_bb = data.draw(st.lists(st.booleans(), min_size=nb * nb, max_size=nb * nb))
    ab = np.array(dense_ab).reshape(nb, na)        # rows b (dst), cols a (src)
    bb = np.array(dense_bb).reshape(nb, nb)
    G = HeteroGraph({"a": na, "b": nb},
                    {("a", "to", "b"): spla.Matrix.from_dense(ab.astype(float)).structure(),
                     ("b", "rev", "a"): spla.Matrix.from_dense(ab.T.astype(float)).structure(),
                     ("b", "self", "b"): spla.Matrix.from_dense(bb.astype(float)).structure()})
    fan = data.draw(st.lists(st.sampled_from([-1, 0, 1, 2, 3]), min_size=1, max_size=3))
    k = data.draw(st.integers(1, 3))
    seeds = [np.array(data.draw(st.lists(st.integers(0, nb - 1), min_size=1, max_size=nb,
                                         unique=True))) for _ in range(k)]
    mbs = HeteroGraphSAGE(G, fan).sample(seeds, node_type="b", seed=data.draw(
        st.integers(0, 2**64 - 1)))
    check_invariants(G, mbs, fan, "b", seeds)


@pytest.mark.parametrize("replace", [False, True])
def test_bulk_equals_alone(replace):
    G = mag_dataset(6).to_undirected()
    s = HeteroGraphSAGE(G, [4, 3], replace=replace)
    seeds = [np.array([1, 2, 3]), np.array([7, 1]), np.array([40])]
    bulk = s.sample(seeds, node_type="paper", seed=11, epoch=1, batch_ids=[5, 9, 2])
    for i, (b, bid) in enumerate(zip(seeds, [5, 9, 2])):
        alone, = s.sample([b], node_type="paper", seed=11, epoch=1, batch_ids=[bid])
        assert alone == bulk[i] and alone.index == bid
    other, = s.sample([seeds[0]], node_type="paper", seed=11, epoch=2, batch_ids=[5])
    assert not (other == bulk[0])                   # the epoch changes the draws


@pytest.mark.parametrize("threads", [1, 2])
def test_fused_hops_equal_composition(threads, monkeypatch):
    """The fused relation hops give the composition's minibatches (fanouts -1 and 0 too)."""
    import numba
    from spla.relation_hops import RelationStack
    G = mag_dataset(6).to_undirected()
    fan = {rel: [3, 2] for rel in G.edge_types}
    fan[("paper", "cites", "paper")] = [-1, 0]
    s = HeteroGraphSAGE(G, fan)
    seeds = [np.array([1, 2, 3]), np.array([7, 1]), np.array([40])]
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        for bulk in (seeds, seeds[:1]):
            fused = s.sample(bulk, node_type="paper", seed=4, batch_ids=range(3, 3 + len(bulk)))
            with monkeypatch.context() as m:
                m.setattr(RelationStack, "fused", lambda self, *a, **k: False)
                composed = s.sample(bulk, node_type="paper", seed=4,
                                    batch_ids=range(3, 3 + len(bulk)))
            assert all(a == b for a, b in zip(fused, composed)) and len(fused) == len(bulk)
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("replace", [False, True])
def test_one_relation_equals_graphsage(replace):
    """With one type and one relation the draws are GraphSAGE's, key for key."""
    rng = np.random.default_rng(0)
    dense = (rng.random((30, 30)) < 0.3).astype(float)
    A = spla.Matrix.from_dense(dense).structure()
    G = HeteroGraph({"v": 30}, {("v", "e", "v"): A})
    seeds = [np.array([0, 4, 7]), np.array([29, 3])]
    het = HeteroGraphSAGE(G, [3, 2], replace=replace).sample(seeds, node_type="v", seed=5,
                                                              epoch=3)
    hom = GraphSAGE(A, [3, 2], replace=replace).sample(seeds, seed=5, epoch=3)
    for h, m in zip(het, hom):
        for hl, ml in zip(h.layers, m.blocks):
            assert hl.blocks[("v", "e", "v")] == ml


def _single_vertex_graph(weights_w, n_cite):
    """Paper 0 written by authors 0..len-1 with weights, citing papers 1..n_cite."""
    na = len(weights_w)
    W = spla.Matrix.from_coo(np.zeros(na, np.int64), np.arange(na), np.asarray(weights_w, float),
                             shape=(n_cite + 1, na))
    Cm = spla.Matrix.from_coo(np.zeros(n_cite, np.int64), np.arange(1, n_cite + 1),
                              np.ones(n_cite), shape=(n_cite + 1, n_cite + 1))
    return HeteroGraph({"paper": n_cite + 1, "author": na},
                       {("author", "writes", "paper"): W, ("paper", "cites", "paper"): Cm})


def _picks(s, node_type, reps, seed):
    mbs = s.sample([np.array([0])] * reps, node_type=node_type, seed=seed,
                   batch_ids=list(range(reps)))
    out = {}
    for rel in s.G.edge_types:
        out[rel] = [tuple(sorted(mb.layers[-1].blocks[rel].src_nodes[
            np.asarray(mb.layers[-1].blocks[rel].adj.indices)].tolist())) for mb in mbs]
    return out


def test_law_per_relation():
    """Weighted single picks ∝ weight on one relation; uniform pairs on the other."""
    w = [1.0, 2.0, 3.0, 4.0]
    G = _single_vertex_graph(w, 5)
    reps = 3000
    s = HeteroGraphSAGE(G, {"writes": [1], "cites": [2]}, weighted=True)
    picks = _picks(s, "paper", reps, seed=17)
    obs = np.bincount([p[0] for p in picks[("author", "writes", "paper")]], minlength=4)
    assert stats.chisquare(obs, reps * np.array(w) / sum(w)).pvalue > ALPHA
    pairs = list(itertools.combinations(range(1, 6), 2))
    got = [pairs.index(p) for p in picks[("paper", "cites", "paper")]]
    obs = np.bincount(got, minlength=len(pairs))
    assert stats.chisquare(obs, np.full(len(pairs), reps / len(pairs))).pvalue > ALPHA
    # a wrong law is rejected by the same test (the test can fail)
    assert stats.chisquare(np.bincount([p[0] for p in picks[("author", "writes", "paper")]],
                                       minlength=4), np.full(4, reps / 4)).pvalue < ALPHA


def test_weighted_pairs_follow_sequential_law():
    w = np.array([1.0, 2.0, 5.0])
    G = _single_vertex_graph(w, 1)
    reps = 10000
    s = HeteroGraphSAGE(G, {"writes": [2], "cites": [1]}, weighted=True)
    picks = _picks(s, "paper", reps, seed=0)[("author", "writes", "paper")]
    pairs = list(itertools.combinations(range(3), 2))
    p = np.array([w[i] / w.sum() * w[j] / (w.sum() - w[i]) + w[j] / w.sum() * w[i]
                  / (w.sum() - w[j]) for i, j in pairs])
    obs = np.bincount([pairs.index(q) for q in picks], minlength=3)
    assert stats.chisquare(obs, reps * p).pvalue > ALPHA


def test_replace_counts():
    G = _single_vertex_graph([1.0, 1.0], 3)
    s = HeteroGraphSAGE(G, [5], replace=True)
    mb, = s.sample([np.array([0])], node_type="paper", seed=0)
    for rel in G.edge_types:
        vals = mb.layers[0].blocks[rel].adj.values
        assert vals is not None and float(np.sum(vals)) == 5.0


def test_relations_draw_independently():
    """Two relations with the same matrix draw different picks (relation in the key)."""
    rng = np.random.default_rng(1)
    A = spla.Matrix.from_dense((rng.random((20, 20)) < 0.5).astype(float)).structure()
    G = HeteroGraph({"v": 20}, {("v", "x", "v"): A, ("v", "y", "v"): A})
    mb, = HeteroGraphSAGE(G, [3]).sample([np.arange(20)], node_type="v", seed=0)
    bx, by = (mb.layers[0].blocks[r] for r in G.edge_types)
    px = [set(bx.src_nodes[np.asarray(bx.adj.indices[a:b])].tolist())
          for a, b in zip(bx.adj.indptr[:-1], bx.adj.indptr[1:])]
    py = [set(by.src_nodes[np.asarray(by.adj.indices[a:b])].tolist())
          for a, b in zip(by.adj.indptr[:-1], by.adj.indptr[1:])]
    assert px != py


def test_errors():
    G = mag_dataset(4)
    with pytest.raises(spla.InvalidValue, match="fanouts"):
        HeteroGraphSAGE(G, {"cites": [2], "nope": [1]})
    with pytest.raises(spla.InvalidValue, match="none for"):
        HeteroGraphSAGE(G, {"cites": [2]})
    with pytest.raises(spla.InvalidValue, match=r"fanouts\["):
        HeteroGraphSAGE(G, [-2])
    with pytest.raises(spla.DimensionMismatch, match="layers"):
        HeteroGraphSAGE(G, {r: ([1] if r[1] == "cites" else [1, 1]) for r in G.edge_types})
    with pytest.raises(spla.InvalidValue, match="weighted"):
        HeteroGraphSAGE(G, [1], weighted=True)
    with pytest.raises(spla.DTypeError, match="HeteroGraph"):
        HeteroGraphSAGE(spla.Matrix.from_dense(np.eye(2)), [1])
    s = HeteroGraphSAGE(G, [1])
    with pytest.raises(spla.InvalidValue, match="node_type"):
        s.sample([[0]], node_type="venue", seed=0)
    with pytest.raises(spla.IndexOutOfRange, match="batches"):
        s.sample([[G.num_nodes["institution"]]], node_type="institution", seed=0)
    with pytest.raises(spla.InvalidValue, match="distinct"):
        s.sample([[1, 1]], node_type="paper", seed=0)


def test_loader_bulk_independent_and_features():
    pytest.importorskip("torch")
    from sampling import NodeLoader
    from sampling.loading.hetero_loader import is_typed_seeds

    def epoch(loader, e):
        loader.set_epoch(e)
        return list(loader)

    G = mag_dataset(6).to_undirected()
    s = HeteroGraphSAGE(G, [3, 2])
    train = G.split("train", "paper")
    assert is_typed_seeds(("paper", train))
    one = epoch(NodeLoader(s, ("paper", train), 7, bulk=1), 2)
    many = epoch(NodeLoader(s, ("paper", train), 7, bulk=5, prefetch=2), 2)
    assert len(one) == len(many) == -(-train.size // 7)
    assert all(a == b for a, b in zip(one, many))
    assert sorted(np.concatenate([m.seeds for m in one]).tolist()) == sorted(train.tolist())
    for mb in one:
        for t, v in mb.input_nodes.items():
            assert np.array_equal(mb.x[t].numpy(), G.x[t][v])
        assert np.array_equal(mb.y["paper"].numpy(), G.y["paper"][mb.seeds])
    loader = NodeLoader(s, ("paper", train), 7)
    e0, e1 = [m.seeds.tolist() for m in loader], [m.seeds.tolist() for m in loader]
    assert e0 != e1                                           # a new shuffle per epoch
    ordered = NodeLoader(s, ("paper", train), 7, shuffle=False, drop_last=True)
    assert [m.seeds.tolist() for m in epoch(ordered, 0)][0] == train[:7].tolist()
    assert len(ordered) == train.size // 7


def test_loader_errors():
    from sampling import NodeLoader as HeteroNodeLoader
    G = mag_dataset(5).to_undirected()
    s = HeteroGraphSAGE(G, [2])
    with pytest.raises(spla.InvalidValue, match="labels"):
        HeteroNodeLoader(s, ("author", [0, 1]), 2)
    assert HeteroNodeLoader(s, ("author", [0, 1]), 2, labels={}).node_type == "author"
    with pytest.raises(spla.InvalidValue, match="seeds"):
        HeteroNodeLoader(s, ("venue", [0]), 2)
    with pytest.raises(spla.InvalidValue, match="distinct"):
        HeteroNodeLoader(s, ("paper", [0, 0]), 2)
    with pytest.raises(spla.IndexOutOfRange):
        HeteroNodeLoader(s, ("paper", [10**6]), 2)
    with pytest.raises(spla.DTypeError, match="HeteroGraphSAGE"):
        HeteroNodeLoader(object(), ("paper", [0]), 2)
