"""spla.partition: the Partition object, block and METIS partitions, and the
partitioned layouts of ``spla.distribute`` on one process.

References are independent of spla: plain Python loops and sorts, scipy
indexing, and (for METIS) what a spy records of the graph handed to
pymetis.  The multi-rank behaviour is in tests/mpi/test_partition_mpi.py.
"""

import sys

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats
from hypothesis import given
from hypothesis import strategies as st

import spla
from spla.layout import Layout, chunk, chunk_bounds
from spla.partition import Balance, Partition, block, hashed, metis
from strategies import SETTINGS, assert_canonical, twins


# -- helpers -------------------------------------------------------------------
@st.composite
def memberships(draw, max_n=40, max_parts=6):
    parts = draw(st.integers(1, max_parts))
    n = draw(st.integers(0, max_n))
    part = draw(st.lists(st.integers(0, parts - 1), min_size=n, max_size=n))
    return np.array(part, np.int64), parts


def reference_perm(part):
    """New order by plain sorting: by part, then by user id."""
    return sorted(range(len(part)), key=lambda v: (part[v], v))


def python_cut(S, part):
    """Stored entries (i, j) with part[i] != part[j], by a plain loop."""
    S = S.tocoo()
    return sum(1 for i, j in zip(S.row.tolist(), S.col.tolist()) if part[i] != part[j])


def community_graph(k=4, size=60, p_in=0.25, p_out=0.004, seed=0):
    """k dense communities of ``size`` vertices, sparse links between them,
    vertex ids shuffled (so contiguous blocks of ids mix the communities).

    Returns the symmetric scipy matrix and the community of each vertex.
    """
    rng = np.random.default_rng(seed)
    n = k * size
    comm = np.repeat(np.arange(k), size)
    prob = np.where(comm[:, None] == comm[None, :], p_in, p_out)
    upper = np.triu(rng.random((n, n)) < prob, 1)
    dense = upper | upper.T
    shuffle = rng.permutation(n)             # new label of planted vertex v
    S = sp.csr_matrix(dense.astype(np.float32))
    P = sp.csr_matrix((np.ones(n), (shuffle, np.arange(n))), shape=(n, n))
    S = (P @ S @ P.T).tocsr()
    labels = np.empty(n, np.int64)
    labels[shuffle] = comm
    S.sort_indices()
    return S, labels


# -- the Partition object ------------------------------------------------------------
@SETTINGS
@given(memberships())
def test_partition_is_a_valid_renumbering(case):
    part, parts = case
    P = Partition(part, parts)
    n = part.size
    assert P.n == n and P.parts == parts
    assert P.perm.tolist() == reference_perm(part.tolist())
    assert sorted(P.perm.tolist()) == list(range(n))              # a permutation
    assert P.inverse[P.perm].tolist() == list(range(n))           # its inverse
    assert P.perm[P.inverse].tolist() == list(range(n))
    sizes = [int((part == i).sum()) for i in range(parts)]
    assert P.sizes.tolist() == sizes
    assert P.bounds.tolist() == [0] + np.cumsum(sizes).tolist()
    for i in range(parts):
        block_ids = P.perm[P.bounds[i]:P.bounds[i + 1]]
        assert (part[block_ids] == i).all()
        assert (np.diff(block_ids) > 0).all()                    # ascending user ids
    for a in (P.part, P.perm, P.inverse, P.bounds):
        assert a.dtype == np.int64 and not a.flags.writeable


@SETTINGS
@given(memberships(max_n=30), st.data())
def test_to_new_and_to_user_are_inverse_maps(case, data):
    part, parts = case
    P = Partition(part, parts)
    n = part.size
    ids = np.array(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=10 if n else 0)),
                   np.int64)
    new = P.to_new(ids)
    assert new.tolist() == [reference_perm(part.tolist()).index(v) for v in ids.tolist()]
    assert np.array_equal(P.to_user(new), ids)


def test_partition_is_immutable_and_compares_by_membership():
    P = Partition([0, 1, 1], 2)
    with pytest.raises(AttributeError):
        P.parts = 3
    with pytest.raises(ValueError):
        P.perm[0] = 1
    assert P == Partition(np.array([0, 1, 1], np.int32), 2, method="other")
    assert P != Partition([0, 1, 0], 2)
    assert P != Partition([0, 1, 1], 3)                        # an empty third part
    assert P.fingerprint() != Partition([0, 1, 1], 3).fingerprint()
    assert "3 vertices in 2 parts" in repr(P)


@pytest.mark.parametrize("part, parts, exc, match", [
    ([0, 2], 2, spla.IndexOutOfRange, "'part' must be indices below 2"),
    ([0, -1], 2, spla.IndexOutOfRange, "'part' must be non-negative"),
    ([0.0, 1.0], 2, spla.DTypeError, "'part' must be an integer array"),
    ([[0, 1]], 2, spla.InvalidValue, "'part' must be a 1-D array"),
    ([0, 1], 0, spla.InvalidValue, "'parts' must be an integer >= 1"),
    ([0, 1], 2.0, spla.InvalidValue, "'parts' must be an integer"),
])
def test_partition_errors(part, parts, exc, match):
    with pytest.raises(exc, match=f"^Partition: argument {match}"):
        Partition(part, parts)


def test_id_map_errors():
    P = Partition([0, 1, 1], 2)
    with pytest.raises(spla.IndexOutOfRange, match="Partition.to_new: argument 'ids'"):
        P.to_new([3])
    with pytest.raises(spla.DTypeError, match="Partition.to_user: argument 'ids'"):
        P.to_user([0.5])
    assert P.to_new([]).tolist() == []


# -- block ------------------------------------------------------------------------
@pytest.mark.parametrize("n, parts", [(10, 4), (7, 7), (1, 1), (100, 3), (5, 1)])
def test_block_is_chunk_with_the_identity_renumbering(n, parts):
    A = sp.random(n, n, density=0.3, format="csr", random_state=1)
    for P in (block(A, parts), block(n, parts), block(spla.Matrix.from_scipy(A), parts)):
        assert P.method == "block"
        assert P.perm.tolist() == list(range(n))
        assert P.bounds.tolist() == chunk_bounds(n, parts).tolist()
        for i in range(parts):
            s, e = chunk(n, parts, i)
            assert (P.part[s:e] == i).all()
    assert block(spla.distribute(spla.Matrix.from_scipy(A)), parts) == block(n, parts)


@pytest.mark.parametrize("args, exc, match", [
    ((5, 0), spla.InvalidValue, "'parts' must be an integer >= 1"),
    ((5, 6), spla.InvalidValue, r"'parts' must be an integer in \[1, n\] \(n = 5"),
    ((sp.random(3, 4, density=0.5, format="csr"), 2), spla.DimensionMismatch,
     "'A' must be a square adjacency matrix"),
    (("graph", 2), spla.DTypeError, "'A' must be a square matrix or a number of vertices"),
    ((True, 1), spla.DTypeError, "'A' must be a square matrix"),
])
def test_block_errors(args, exc, match):
    with pytest.raises(exc, match=f"^partition.block: argument {match}"):
        block(*args)


# -- hashed ------------------------------------------------------------------------
@pytest.mark.parametrize("n, parts", [(10, 4), (7, 7), (1, 1), (100, 3)])
def test_hashed_is_balanced_and_a_pure_function_of_the_seed(n, parts):
    A = sp.random(n, n, density=0.3, format="csr", random_state=1)
    P = hashed(A, parts, seed=3)
    assert P.method == "hash" and P.parts == parts
    assert sorted(P.sizes.tolist()) == sorted(np.diff(chunk_bounds(n, parts)).tolist())
    assert P == hashed(n, parts, seed=3) == hashed(spla.Matrix.from_scipy(A), parts, seed=3)
    if n >= 10 and parts > 1:
        assert P != hashed(n, parts, seed=4)


def test_hashed_deals_every_vertex_uniformly():
    """Over seeds, vertex 0's part is uniform and two vertices share a part with
    the probability of a uniformly random balanced partition, (s - 1) / (n - 1)."""
    n, parts, draws = 12, 3, 3000
    first = np.empty(draws, np.int64)
    together = 0
    for seed in range(draws):
        part = hashed(n, parts, seed=seed).part
        first[seed] = part[0]
        together += int(part[0] == part[1])
    counts = np.bincount(first, minlength=parts)
    assert stats.chisquare(counts).pvalue > 1e-4, counts
    want = (n // parts - 1) / (n - 1)
    assert stats.binomtest(together, draws, want).pvalue > 1e-4, (together, want)


@pytest.mark.parametrize("args, kw, exc, match", [
    ((5, 6), {}, spla.InvalidValue, r"'parts' must be an integer in \[1, n\]"),
    ((5, 2), {"seed": -1}, spla.InvalidValue, "'seed' must be an integer >= 0"),
    (("graph", 2), {}, spla.DTypeError, "'A' must be a square matrix"),
])
def test_hashed_errors(args, kw, exc, match):
    with pytest.raises(exc, match=f"^partition.hashed: argument {match}"):
        hashed(*args, **kw)


# -- edge cut, balance, permute -------------------------------------------------------
@SETTINGS
@given(st.integers(0, 9).flatmap(lambda n: st.tuples(
    twins((n, n)), st.integers(1, 4),
    st.lists(st.integers(0, 3), min_size=n, max_size=n))))
def test_edge_cut_counts_crossing_entries(case):
    t, parts, raw = case
    part = np.array(raw, np.int64) % parts
    P = Partition(part, parts)
    want = python_cut(t.S, part.tolist())
    assert P.edge_cut(t.M) == want
    assert P.edge_cut(t.S) == want                       # scipy input


def test_edge_cut_counts_a_symmetric_edge_twice_and_never_a_self_loop():
    A = spla.Matrix.from_coo([0, 1, 2, 0], [1, 0, 2, 2], shape=(3, 3))   # {0,1} both ways
    assert Partition([0, 1, 1], 2).edge_cut(A) == 3       # (0,1), (1,0), (0,2)
    assert Partition([0, 0, 1], 2).edge_cut(A) == 1       # (0,2); (2,2) stays inside
    assert Partition([0, 0, 0], 1).edge_cut(A) == 0


@SETTINGS
@given(st.integers(1, 9).flatmap(lambda n: st.tuples(
    twins((n, n)), st.integers(1, 4),
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.sets(st.integers(0, n - 1)))))
def test_balance_counts_per_part(case):
    t, parts, raw, train = case
    part = np.array(raw, np.int64) % parts
    P = Partition(part, parts)
    train = np.array(sorted(train), np.int64)
    b = P.balance(t.M, train_idx=train)
    deg = t.mask.sum(axis=1)
    want_v = [int((part == i).sum()) for i in range(parts)]
    want_e = [int(deg[part == i].sum()) for i in range(parts)]
    want_t = [sum(1 for v in train.tolist() if part[v] == i) for i in range(parts)]
    assert b.vertices.tolist() == want_v
    assert b.edges.tolist() == want_e
    assert b.train.tolist() == want_t
    for name, counts in (("vertices", want_v), ("edges", want_e), ("train", want_t)):
        mean = sum(counts) / parts
        want = 1.0 if mean == 0 else max(counts) / mean
        assert b.imbalance[name] == pytest.approx(want)
    mask = np.zeros(t.M.nrows, bool)
    mask[train] = True
    assert P.balance(t.S, train_idx=mask).train.tolist() == want_t
    assert P.balance(t.M).train is None and "train" not in P.balance(t.M).imbalance


def test_balance_table_and_errors():
    A = spla.Matrix.from_coo([0, 1, 2], [1, 2, 0], shape=(3, 3))
    P = Partition([0, 1, 1], 2)
    text = P.balance(A, train_idx=[0, 2]).table()
    lines = text.splitlines()
    assert lines[0].split() == ["part", "vertices", "edges", "train"]
    assert lines[1].split() == ["0", "1", "1", "1"] and lines[2].split() == ["1", "2", "2", "1"]
    assert lines[3].split() == ["max/mean", "1.33", "1.33", "1.00"]
    with pytest.raises(spla.InvalidValue, match="'train_idx' must be distinct vertex ids"):
        P.balance(A, train_idx=[0, 0])
    with pytest.raises(spla.InvalidValue, match="'train_idx' must be a boolean mask of length 3"):
        P.balance(A, train_idx=np.ones(2, bool))
    with pytest.raises(spla.IndexOutOfRange, match="'train_idx' must be indices below 3"):
        P.balance(A, train_idx=[3])
    with pytest.raises(spla.DimensionMismatch, match="'A' must be a 3 x 3 matrix"):
        P.balance(spla.Matrix.from_coo([0], [0], shape=(4, 4)))
    assert Balance(np.zeros(2, np.int64), np.zeros(2, np.int64)).imbalance["edges"] == 1.0


@SETTINGS
@given(st.integers(0, 9).flatmap(lambda n: st.tuples(
    twins((n, n)), st.integers(1, 4),
    st.lists(st.integers(0, 3), min_size=n, max_size=n), st.data())))
def test_permute_is_scipy_indexing(case):
    t, parts, raw, data = case
    part = np.array(raw, np.int64) % parts
    P = Partition(part, parts)
    n = t.M.nrows
    want = t.S[P.perm][:, P.perm].toarray()
    got = P.permute(t.M)
    assert_canonical(got)
    assert (got.values is None) == (t.dtype is None)
    assert np.array_equal(got.to_scipy().toarray(), want)
    assert np.array_equal(P.permute(t.S).to_scipy().toarray(), want)
    s = data.draw(st.integers(0, n))
    e = data.draw(st.integers(s, n))
    blk = P.permute(t.M, rows=(s, e))
    assert_canonical(blk)
    assert blk.shape == (e - s, n)
    assert np.array_equal(blk.to_scipy().toarray(), want[s:e])


def test_permute_moves_entry_ij_to_inverse_ij():
    A = spla.Matrix.from_coo([0, 2], [1, 0], [5.0, 7.0], shape=(3, 3))
    P = Partition([1, 1, 0], 2)
    B = P.permute(A).to_dense()
    inv = P.inverse
    assert B[inv[0], inv[1]] == 5.0 and B[inv[2], inv[0]] == 7.0 and B.sum() == 12.0


def test_permute_errors():
    P = Partition([0, 1, 1], 2)
    with pytest.raises(spla.DimensionMismatch, match="^Partition.permute: argument 'A' must "
                                                     "be a 3 x 3 matrix"):
        P.permute(spla.Matrix.from_coo([0], [0], shape=(3, 4)))
    with pytest.raises(spla.DTypeError, match="^Partition.permute: argument 'A' must be a "
                                              "spla.Matrix or scipy.sparse matrix"):
        P.permute(np.eye(3))
    with pytest.raises(spla.DTypeError, match="a DistMatrix"):
        P.permute(spla.distribute(spla.Matrix.from_dense(np.eye(3))))
    A = spla.Matrix.from_dense(np.eye(3))
    with pytest.raises(spla.InvalidValue, match="'rows' must be a range inside"):
        P.permute(A, rows=(1, 4))
    with pytest.raises(spla.InvalidValue, match="'rows\\[1\\]' must be an integer >= 2"):
        P.permute(A, rows=(2, 1))
    with pytest.raises(spla.InvalidValue, match="'rows' must be a pair"):
        P.permute(A, rows=3)


def test_permute_on_the_gpu(backend):
    if backend.name != "cupy":
        pytest.skip("the GPU case runs where cupy and a GPU are present")
    S = sp.random(30, 30, density=0.2, format="csr", random_state=3, dtype=np.float32)
    P = Partition(np.arange(30) % 3, 3)
    got = P.permute(backend.matrix(spla.Matrix.from_scipy(S)))
    assert got.device == "cuda"
    assert np.array_equal(got.to("cpu").to_scipy().toarray(), S[P.perm][:, P.perm].toarray())
    assert backend.host(P.to_new(backend.asarray([2, 0]))).tolist() == P.to_new([2, 0]).tolist()


# -- METIS ----------------------------------------------------------------------------
@pytest.fixture
def pymetis():
    return pytest.importorskip("pymetis", reason="METIS partitions need pymetis "
                                                  "(pip install pymetis)")


@pytest.fixture
def metis_spy(pymetis, monkeypatch):
    """Records the arguments of every pymetis.part_graph call (and runs it)."""
    calls = []
    real = pymetis.part_graph

    def spy(nparts, **kw):
        calls.append(dict(kw, nparts=nparts))
        return real(nparts, **kw)

    monkeypatch.setattr(pymetis, "part_graph", spy)
    return calls


def test_metis_gets_the_symmetrised_graph_without_self_loops(metis_spy):
    rng = np.random.default_rng(4)
    S = sp.random(50, 50, density=0.08, format="csr", random_state=rng)   # directed
    S.setdiag(1.0)                                                        # self loops
    S = sp.csr_matrix(S)
    S.sort_indices()
    P = metis(S, 3, seed=7)
    assert len(metis_spy) == 1
    call = metis_spy[0]
    ref = ((S != 0) + (S != 0).T).astype(np.int8).tolil()
    ref.setdiag(0)
    ref = sp.csr_matrix(ref)
    ref.eliminate_zeros()
    ref.sort_indices()
    assert call["nparts"] == 3
    graph = call["adjacency"]
    assert np.array_equal(np.asarray(graph.adj_starts), ref.indptr)
    assert np.array_equal(np.asarray(graph.adjacent), ref.indices)
    assert call["options"].seed == 7 and call["options"].ufactor == 30
    assert call["recursive"] is False                     # k-way: imbalance holds overall
    assert P.method == "metis" and P.n == 50 and P.parts == 3


def test_metis_one_part_does_not_call_metis(metis_spy):
    P = metis(sp.random(20, 20, density=0.2, format="csr", random_state=0), 1)
    assert metis_spy == []
    assert P.part.tolist() == [0] * 20 and P.bounds.tolist() == [0, 20]


def test_metis_finds_planted_communities(pymetis):
    S, labels = community_graph()
    k = 4
    P = metis(S, k, seed=0)
    B = block(S, k)
    cut, block_cut = P.edge_cut(S), B.edge_cut(S)
    # Blocks of shuffled ids cut about 3/4 of the edges; METIS only the few
    # links between communities.
    assert cut <= 0.25 * block_cut, (cut, block_cut)
    inter = python_cut(S, labels.tolist())
    assert cut <= 1.5 * inter, (cut, inter)
    # Each part is (almost) one community.
    for i in range(k):
        members = labels[P.part == i]
        assert np.bincount(members, minlength=k).max() >= 0.9 * members.size
    assert P.balance(S).imbalance["vertices"] <= 1.1


@pytest.mark.parametrize("parts", [2, 3, 4, 8])
def test_metis_balance_on_rmat(pymetis, parts):
    from sampling.datasets.synthetic import rmat_dataset
    ds = rmat_dataset(12)
    P = metis(ds.A, parts, seed=1)
    b = P.balance(ds.A, train_idx=ds.train_idx)
    assert b.imbalance["vertices"] <= 1.1, b.table()
    assert P.edge_cut(ds.A) < block(ds.A, parts).edge_cut(ds.A)


def test_metis_is_deterministic_for_a_seed(pymetis):
    S, _ = community_graph(seed=2)
    A = spla.Matrix.from_scipy(S)
    first = metis(A, 4, seed=5)
    assert metis(A, 4, seed=5) == first
    assert metis(S, 4, seed=5) == first                  # scipy or spla input alike


def test_metis_vertex_weights_are_balanced(pymetis):
    S, labels = community_graph(k=4, size=60, seed=5)
    w = np.where(labels == 0, 5, 1)              # community 0 weighs five times more
    P = metis(S, 4, seed=0, vertex_weights=w)
    sums = np.bincount(P.part, weights=w, minlength=4)
    assert sums.max() / sums.mean() <= 1.1, sums
    assert P.balance(S).imbalance["vertices"] > 1.5       # counts are not what is balanced
    T = metis(S, 4, seed=0, vertex_weights=np.ones(S.shape[0], np.int64))
    assert T.balance(S).imbalance["vertices"] <= 1.1


def typed_community_graph(seed, k=4, size=60):
    """A community graph whose rare type lives in communities 0 and 1 only,
    with random training vertices: one weight column per type and one for
    training (the balance a heterogeneous partition asks for)."""
    S, labels = community_graph(k=k, size=size, seed=seed)
    rng = np.random.default_rng(seed + 100)
    rare = (labels < 2) & (rng.random(labels.size) < 0.5)
    train = rng.random(labels.size) < 0.3
    W = np.stack([~rare, rare, train], axis=1).astype(np.int64)
    return S, W


def per_part(P, W):
    return np.stack([np.bincount(P.part, weights=W[:, j], minlength=P.parts)
                     for j in range(W.shape[1])], axis=1)


@SETTINGS
@given(st.integers(0, 2 ** 20), st.sampled_from([2, 3, 4]))
def test_metis_balances_every_weight_column(pymetis, seed, parts):
    # At the default tolerance; METIS's multi-constraint refinement can
    # overshoot looser ones (1.1) by a few percent (see metis' Notes).
    imbalance = 1.03
    S, W = typed_community_graph(seed)
    P = metis(S, parts, seed=seed % 2 ** 31, imbalance=imbalance, vertex_weights=W)
    sums = per_part(P, W)
    assert sums.sum(axis=0).tolist() == W.sum(axis=0).tolist()
    # METIS's tolerance, plus one vertex's share: a part can hold only whole vertices.
    bound = imbalance + parts / W.sum(axis=0) + 0.02
    ratio = sums.max(axis=0) / sums.mean(axis=0)
    assert (ratio <= bound).all(), (ratio, bound, sums)


def test_metis_one_constraint_does_not_balance_the_types(pymetis):
    # The control for the test above: balancing vertex counts alone packs
    # the rare type (two communities) into half the parts.
    S, W = typed_community_graph(3)
    rare = per_part(metis(S, 4, seed=1), W)[:, 1]
    assert rare.max() / rare.mean() > 1.5, rare
    rare = per_part(metis(S, 4, seed=1, vertex_weights=W), W)[:, 1]
    assert rare.max() / rare.mean() <= 1.1, rare


def test_metis_weight_columns_that_reduce_to_one(metis_spy):
    S, W = typed_community_graph(5)
    one = metis(S, 3, seed=2, vertex_weights=W[:, 2])
    # One column, or one column beside all-zero ones, is the 1-D call.
    assert metis(S, 3, seed=2, vertex_weights=W[:, 2:]) == one
    zeros = np.zeros_like(W[:, :2])
    assert metis(S, 3, seed=2, vertex_weights=np.hstack([zeros, W[:, 2:]])) == one
    assert metis(S, 3, seed=2, vertex_weights=zeros) == metis(S, 3, seed=2,
                                                              vertex_weights=zeros[:, 0])
    assert len(metis_spy) == 5
    # Several columns bypass pymetis.part_graph (it would pass ncon = 1) ...
    many = metis(S, 3, seed=2, vertex_weights=W)
    assert len(metis_spy) == 5
    # ... and an all-zero column changes nothing.
    assert metis(S, 3, seed=2, vertex_weights=np.hstack([W, zeros])) == many
    assert metis(S, 3, seed=2, vertex_weights=W) == many          # deterministic


def test_metis_several_columns_without_the_metis_library(pymetis, monkeypatch):
    import ctypes

    def no_library(*args, **kw):
        raise OSError("cannot open")

    monkeypatch.setattr(ctypes, "CDLL", no_library)
    S, W = typed_community_graph(0)
    with pytest.raises(spla.MissingDependency, match="^partition.metis: argument "
                       "'vertex_weights' must be several weight columns: a pymetis"):
        metis(S, 2, vertex_weights=W)
    assert metis(S, 2, vertex_weights=W[:, 0]).parts == 2      # one column needs no ctypes


def test_metis_on_a_graph_without_edges(pymetis):
    P = metis(spla.Matrix.from_coo([], [], shape=(10, 10)), 2)
    assert sorted(P.sizes.tolist()) == [5, 5]


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(parts=0), spla.InvalidValue, "'parts' must be an integer >= 1"),
    (dict(parts=11), spla.InvalidValue, r"'parts' must be an integer in \[1, n\]"),
    (dict(seed=-1), spla.InvalidValue, "'seed' must be an integer >= 0"),
    (dict(seed=2 ** 31), spla.InvalidValue, "'seed' must be an integer below 2\\*\\*31"),
    (dict(imbalance=1.0), spla.InvalidValue, "'imbalance' must be a number >= 1.001"),
    (dict(imbalance=float("nan")), spla.InvalidValue, "'imbalance' must be a number"),
    (dict(imbalance=True), spla.InvalidValue, "'imbalance' must be a number"),
    (dict(vertex_weights=np.ones(10)), spla.DTypeError,
     "'vertex_weights' must be an integer array"),
    (dict(vertex_weights=np.ones(9, np.int64)), spla.DimensionMismatch,
     r"'vertex_weights' must be an array of shape \(10,\)"),
    (dict(vertex_weights=np.ones((9, 2), np.int64)), spla.DimensionMismatch,
     r"'vertex_weights' must be an array of shape \(10,\) or \(10, k\) with k >= 1"),
    (dict(vertex_weights=np.ones((10, 0), np.int64)), spla.DimensionMismatch,
     r"'vertex_weights' must be an array of shape \(10,\) or \(10, k\)"),
    (dict(vertex_weights=np.ones((10, 2, 2), np.int64)), spla.DimensionMismatch,
     r"'vertex_weights' must be an array of shape \(10,\) or \(10, k\)"),
    (dict(vertex_weights=np.ones((10, 2))), spla.DTypeError,
     "'vertex_weights' must be an integer array"),
    (dict(vertex_weights=np.ones((10, 2), bool)), spla.DTypeError,
     "'vertex_weights' must be an integer array"),
    (dict(vertex_weights=np.array([[1, -1]] * 10)), spla.InvalidValue,
     "'vertex_weights' must be integers in"),
    (dict(vertex_weights=-np.ones(10, np.int64)), spla.InvalidValue,
     "'vertex_weights' must be integers in"),
])
def test_metis_errors(kwargs, exc, match):
    A = spla.Matrix.from_dense(np.ones((10, 10)))
    args = dict(parts=2)
    args.update(kwargs)
    with pytest.raises(exc, match=f"^partition.metis: argument {match}"):
        metis(A, args.pop("parts"), **args)


def test_metis_refuses_bad_graphs():
    with pytest.raises(spla.DimensionMismatch, match="'A' must be a square adjacency"):
        metis(spla.Matrix.from_coo([0], [1], shape=(2, 3)), 2)
    with pytest.raises(spla.DTypeError, match="gather a DistMatrix first"):
        metis(spla.distribute(spla.Matrix.from_dense(np.eye(3))), 2)


def test_metis_without_pymetis_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymetis", None)      # makes the import fail
    with pytest.raises(spla.MissingDependency, match="pip install .pymetis>=2025.2"):
        metis(spla.Matrix.from_dense(np.ones((4, 4))), 2)
    # Everything else works without it.
    assert metis(spla.Matrix.from_dense(np.ones((4, 4))), 1).parts == 1
    assert block(4, 2).parts == 2


# -- layouts with explicit bounds, and distribute on one process -----------------------
def test_layout_bounds():
    L = Layout("1.5d", p=4, c=2, bounds=[0, 0, 9])
    assert L.bounds == (0, 0, 9)
    assert [L.block_rows(9, r) for r in range(4)] == [(0, 0), (0, 0), (0, 9), (0, 9)]
    assert L.row_bounds(9).tolist() == [0, 0, 9]
    assert L.owner(np.arange(9), 9).tolist() == [1] * 9       # block 0 is empty
    plain = Layout("1d", p=3)
    assert plain.owner(np.arange(10), 10).tolist() == [0] * 4 + [1] * 3 + [2] * 3
    assert repr(plain) == "Layout(kind='1d', p=3, c=1, replicated=False)"
    assert "bounds=(0, 0, 9)" in repr(L)
    assert L != Layout("1.5d", p=4, c=2) and hash(L) == hash(Layout("1.5d", 4, 2, False,
                                                                     (0, 0, 9)))
    with pytest.raises(spla.LayoutError, match="Layout: argument 'bounds' must be boundaries "
                                               "of the matrix's 8 rows"):
        L.block_rows(8, 0)


@pytest.mark.parametrize("bounds", [(0, 5), (1, 2, 3), (0, 4, 2), (0, 1, 2, 3), "0,1,2"])
def test_layout_bad_bounds(bounds):
    with pytest.raises(spla.LayoutError, match="^Layout: argument 'bounds' must be 3 "
                                               "non-decreasing row boundaries"):
        Layout("1.5d", p=4, c=2, bounds=bounds)


def test_distribute_with_a_partition_on_one_process():
    S, _ = community_graph(k=2, size=20)
    A = spla.Matrix.from_scipy(S)
    P = Partition(np.zeros(A.nrows, np.int64), 1)             # one part: one rank
    D = spla.distribute(A, partition=P)
    assert D.partition is P and D.layout.bounds == (0, A.nrows)
    assert D.gather().isequal(A)                              # user ids out
    E = spla.DistMatrix.from_local(A, A.shape, partition=P)
    assert E.gather().isequal(A) and E.partition is P
    # Replicated: any number of parts, no bounds, rows where they were.
    Q = Partition(np.arange(A.nrows) % 3, 3)
    R = spla.distribute(A, replicate_graph=True, partition=Q)
    assert R.layout.bounds is None and R.local.isequal(A) and R.gather().isequal(A)
    np.testing.assert_array_equal(R.row_ids, np.arange(A.nrows))


def test_distribute_places_a_rectangular_matrix_by_its_rows():
    # A relation between two vertex types: rows placed by a partition of the
    # row type, columns left as they are.
    B = spla.Matrix.from_coo([0, 2, 3, 3], [4, 0, 1, 6], [1.0, 2.0, 3.0, 4.0], shape=(4, 7))
    P = Partition([0, 0, 0, 0], 1)
    D = spla.distribute(B, partition=P)
    assert D.shape == (4, 7) and D.partition is P
    assert D.gather().isequal(B)
    np.testing.assert_array_equal(D.row_ids, P.perm)


def test_distribute_partition_errors():
    A = spla.Matrix.from_dense(np.ones((4, 4)))
    with pytest.raises(spla.DTypeError, match="^distribute: argument 'partition' must be a "
                                              "spla.partition.Partition or None"):
        spla.distribute(A, partition=np.zeros(4, np.int64))
    with pytest.raises(spla.DimensionMismatch, match="'partition' must be a Partition of the "
                                                     "matrix's 4 rows; got one of 5"):
        spla.distribute(A, partition=Partition(np.zeros(5, np.int64), 1))
    with pytest.raises(spla.LayoutError, match=r"'partition' must be a Partition in p/c = 1 "
                                               r"parts \(one per process row\); got 2 parts"):
        spla.distribute(A, partition=Partition([0, 0, 1, 1], 2))
    with pytest.raises(spla.DimensionMismatch, match="'partition' must be a Partition of the "
                                                     "matrix's 4 rows; got one of 5"):
        spla.distribute(spla.Matrix.from_dense(np.ones((4, 5))),
                        partition=Partition(np.zeros(5, np.int64), 1))
    with pytest.raises(spla.LayoutError, match="^DistMatrix.from_local: argument 'partition'"):
        spla.DistMatrix.from_local(A, (4, 4), partition=Partition([0, 0, 1, 1], 2))


def test_metis_with_an_old_pymetis_says_which_version(pymetis, monkeypatch):
    monkeypatch.delattr(pymetis, "CSRAdjacency")
    with pytest.raises(spla.MissingDependency, match="needs pymetis 2025.2 or later"):
        metis(spla.Matrix.from_dense(np.ones((4, 4))), 2)


def test_metis_from_several_threads_gives_the_same_partition(pymetis):
    from concurrent.futures import ThreadPoolExecutor
    S, _ = community_graph(seed=3)
    want = metis(S, 4, seed=2)
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda _: metis(S, 4, seed=2), range(8)))
    assert all(P == want for P in got)
