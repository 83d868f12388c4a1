"""DistMatrix under mpiexec: layouts, factories, gather, row fetches, errors.

Every expectation is computed from ``chunk`` and a single-process
reference, so the same module runs with any number of ranks.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from spla import comm as C
from spla.layout import Layout, chunk, owner_of


def grids(p):
    """(layout, c) pairs that fit p ranks: 1D and every 1.5D c dividing p."""
    out = [("1d", 1)]
    out += [("1.5d", c) for c in range(1, p + 1) if p % c == 0]
    return out


def random_matrix(n, m, density, seed, dtype=np.float64):
    S = sp.random(n, m, density=density, format="csr", random_state=seed, dtype=dtype)
    return spla.Matrix.from_scipy(S)


@pytest.fixture(scope="module")
def A():
    return random_matrix(41, 41, 0.12, 3)


@pytest.mark.parametrize("replicate", [False, True])
@pytest.mark.parametrize("root_only", [False, True])
def test_distribute_and_gather(comm, A, replicate, root_only):
    for layout, c in grids(comm.size):
        D = spla.distribute(A if (comm.rank == 0 or not root_only) else None, comm,
                            layout=layout, replication=c, replicate_graph=replicate)
        L = Layout(layout, comm.size, c, replicate)
        start, stop = L.block_rows(A.nrows, comm.rank)
        assert (D.row_start, D.row_stop) == (start, stop)
        assert D.local.isequal(spla.extract(A, rows=np.arange(start, stop)))
        assert D.shape == A.shape and D.nnz == A.nnz
        assert D.gather().isequal(A)


def test_empty_blocks_when_more_ranks_than_rows(comm):
    A = random_matrix(2, 5, 0.5, 1)
    D = spla.distribute(A, comm)
    s, e = chunk(2, comm.size, comm.rank)
    assert D.lshape == (e - s, 5)
    assert D.gather().isequal(A)


def test_from_local_and_from_generator(comm, A):
    for layout, c in grids(comm.size):
        L = Layout(layout, comm.size, c)
        s, e = L.block_rows(A.nrows, comm.rank)
        block = spla.extract(A, rows=np.arange(s, e))
        D1 = spla.DistMatrix.from_local(block, A.shape, comm=comm, layout=layout, replication=c)
        D2 = spla.DistMatrix.from_generator(
            lambda s, e: spla.extract(A, rows=np.arange(s, e)), A.shape, comm=comm,
            layout=layout, replication=c)
        assert D1.gather().isequal(A) and D2.gather().isequal(A)


@pytest.mark.parametrize("replicate", [False, True])
def test_fetch_rows_matches_extraction(comm, A, replicate):
    rng = np.random.default_rng(100 + comm.rank)  # different requests per rank
    for layout, c in grids(comm.size):
        D = spla.distribute(A, comm, layout=layout, replication=c, replicate_graph=replicate)
        want = rng.integers(0, A.nrows, size=rng.integers(0, 15))
        with C.counting() as moved:
            V = D.rows_view(want)
        for r in np.unique(want):
            got = spla.extract(V, rows=[r])
            assert got.isequal(spla.extract(A, rows=[r])), (layout, c, r)
        if replicate:
            assert sum(moved.values()) == 0


def test_alltoallv_in_rounds(comm, monkeypatch):
    """Messages larger than the per-round limit are split and reassembled."""
    monkeypatch.setattr(C, "_INT_MAX", 3)
    p = comm.size
    counts = np.array([(comm.rank + r) % 5 + 1 for r in range(p)])
    send = np.concatenate([np.full(counts[r], 100 * comm.rank + r, np.int64) for r in range(p)])
    recv, rc = C.alltoallv(comm, send, counts, "test")
    expect = np.concatenate([np.full((r + comm.rank) % 5 + 1, 100 * r + comm.rank, np.int64)
                             for r in range(p)])
    assert np.array_equal(recv, expect)


def test_bad_replication_raises_on_every_rank(comm, A):
    with pytest.raises(spla.LayoutError, match="replication"):
        spla.distribute(A, comm, layout="1.5d", replication=comm.size + 1)
    with pytest.raises(spla.LayoutError, match="replication"):
        spla.distribute(A, comm, layout="1d", replication=2)


def test_ranks_passing_different_shapes_raise_everywhere(comm):
    M = random_matrix(10 + (comm.rank if comm.size > 1 else 0) % 2, 10, 0.2, 5)
    if comm.size == 1:
        pytest.skip("needs two ranks to disagree")
    with pytest.raises(spla.LayoutError, match="same matrix shape"):
        spla.distribute(M, comm)


def test_mismatched_operand_grids_raise_everywhere(comm, A):
    if comm.size % 2:
        pytest.skip("needs an even number of ranks for c = 2")
    D1 = spla.distribute(A, comm, layout="1d")
    D2 = spla.distribute(A, comm, layout="1.5d", replication=2)
    with pytest.raises(spla.LayoutError, match="process grid"):
        spla.mxm(D1, D2)


# -- row fetch strategies ----------------------------------------------------
STRATEGIES = ("direct", "pooled")


def wants_of(r, L, n):
    """Rank r's row request: random rows with repeats, a few rows of its own
    block, and nothing at all on rank 1 (so some rank of a row asks for none)."""
    if r == 1:
        return np.zeros(0, np.int64)
    rng = np.random.default_rng(1000 + r)
    want = rng.integers(0, n, size=rng.integers(1, 14))
    s, e = L.block_rows(n, r)
    own = rng.integers(s, e, size=3) if e > s else np.zeros(0, np.int64)
    return np.concatenate([want, own, want[:2], own[:1]])[::-1]


def needed_remote(want, L, n, r):
    """The distinct rows of ``want`` outside rank r's block, and their blocks."""
    u = np.unique(want)
    owner = owner_of(u, n, L.grid_rows)
    keep = owner != L.position(r)[0]
    return u[keep], owner[keep]


@pytest.fixture(scope="module", params=["float64", "float32", "structural"])
def M(request):
    B = random_matrix(43, 39, 0.15, 8)
    if request.param == "float32":
        return B.astype(np.float32)
    if request.param == "structural":
        return B.structure()
    return B


def value_bytes(M):
    return 0 if M.values is None else M.values.itemsize


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("replicate", [False, True])
def test_fetch_strategies_return_the_global_rows(comm, M, strategy, replicate):
    n = M.nrows
    for layout, c in grids(comm.size):
        L = Layout(layout, comm.size, c, replicate)
        D = spla.distribute(M, comm, layout=layout, replication=c, replicate_graph=replicate)
        want = wants_of(comm.rank, L, n)
        got, ids = D.fetch_rows(want, strategy=strategy)
        if strategy == "direct" or replicate:
            expect_ids = np.unique(want)
        else:  # the union over this rank's process row
            row = L.position(comm.rank)[0]
            expect_ids = np.unique(np.concatenate(
                [wants_of(row * c + j, L, n) for j in range(c)]))
        assert ids.dtype == np.int64 and np.array_equal(ids, expect_ids), (layout, c)
        assert got.isequal(spla.extract(M, rows=ids)), (layout, c)
        assert got.indices.dtype == np.int32
        V = D.rows_view(want, strategy=strategy)
        assert V.shape == M.shape
        assert spla.extract(V, rows=ids).isequal(spla.extract(M, rows=ids)), (layout, c)


def test_direct_fetch_moves_exactly_the_rows_asked_for(comm, M):
    """Per rank: 4 B per distinct row asked for outside its block, and, for each
    row other ranks of its process column ask from its block, 4 B of length
    plus (4 B index + value) per entry.  Nothing else moves."""
    n, p = M.nrows, comm.size
    deg = M.row_degrees()
    e = 4 + value_bytes(M)
    for layout, c in grids(p):
        L = Layout(layout, p, c)
        D = spla.distribute(M, comm, layout=layout, replication=c)
        row, col = L.position(comm.rank)
        mine, _ = needed_remote(wants_of(comm.rank, L, n), L, n, comm.rank)
        expect = {"fetch_rows.request": 4 * mine.size, "fetch_rows.reply": 0}
        for q in range(col, p, c):  # my process column
            theirs, owner = needed_remote(wants_of(q, L, n), L, n, q)
            mine_to_send = theirs[owner == row]
            expect["fetch_rows.reply"] += 4 * mine_to_send.size + e * int(deg[mine_to_send].sum())
        with C.counting() as moved:
            D.fetch_rows(wants_of(comm.rank, L, n))
        assert {k: v for k, v in moved.items() if v} == {k: v for k, v in expect.items() if v}, \
            (layout, c)
        # ... and the same through rows_view
        with C.counting() as moved_view:
            D.rows_view(wants_of(comm.rank, L, n))
        assert dict(moved_view) == dict(moved)


def test_pooled_fetch_moves_the_modelled_bytes(comm, M):
    """The pooled fetch (kept for comparison) against its own exact count."""
    n, p = M.nrows, comm.size
    deg = M.row_degrees()
    e = 4 + value_bytes(M)
    for layout, c in grids(p):
        L = Layout(layout, p, c)
        D = spla.distribute(M, comm, layout=layout, replication=c)
        row, col = L.position(comm.rank)

        def share_of(i, j):
            """Rows member j of process row i fetches: its 1/c of the row's union."""
            U = np.unique(np.concatenate([wants_of(i * c + k, L, n) for k in range(c)]))
            owner = owner_of(U, n, L.grid_rows)
            keep = owner % c == j
            return U[keep], owner[keep]

        F, owner = share_of(row, col)
        remote = owner != row
        expect = {"fetch_rows.request": 4 * int(remote.sum()), "fetch_rows.reply": 0}
        for i in range(L.grid_rows):
            if i != row:
                Fi, oi = share_of(i, col)
                asked = Fi[oi == row]
                expect["fetch_rows.reply"] += 4 * asked.size + e * int(deg[asked].sum())
        if c > 1:
            expect["fetch_rows.pool"] = 4 * np.unique(wants_of(comm.rank, L, n)).size * (c - 1)
            expect["fetch_rows.share"] = (c - 1) * (8 * F.size + e * int(deg[F].sum()))
        with C.counting() as moved:
            D.fetch_rows(wants_of(comm.rank, L, n), strategy="pooled")
        assert {k: v for k, v in moved.items() if v} == {k: v for k, v in expect.items() if v}, \
            (layout, c)


def test_direct_fetch_never_moves_more_than_pooled(comm, M):
    """Summed over ranks; equal at c = 1, where the two are the same exchange."""
    for layout, c in grids(comm.size):
        L = Layout(layout, comm.size, c)
        D = spla.distribute(M, comm, layout=layout, replication=c)
        totals = {}
        for strategy in STRATEGIES:
            with C.counting() as moved:
                D.fetch_rows(wants_of(comm.rank, L, M.nrows), strategy=strategy)
            totals[strategy] = sum(comm.allgather(sum(moved.values())))
        assert totals["direct"] <= totals["pooled"], (layout, c, totals)
        if c == 1:
            assert totals["direct"] == totals["pooled"]


def test_wide_matrix_sends_int64_indices(comm):
    """ncols >= 2**31: column indices and lengths travel as int64 (ids still int32)."""
    n, m = 12, 2 ** 31 + 5
    rows = np.array([0, 1, 3, 3, 7, 11])
    cols = np.array([5, m - 1, 2 ** 31, 7, 1, m - 2])
    W = spla.Matrix.from_coo(rows, cols, np.arange(6, dtype=np.float64), shape=(n, m))
    deg = W.row_degrees()
    for layout, c in grids(comm.size):
        L = Layout(layout, comm.size, c)
        D = spla.distribute(W, comm, layout=layout, replication=c)
        for strategy in STRATEGIES:
            got, ids = D.fetch_rows(np.arange(n), strategy=strategy)
            assert got.isequal(W) and got.indices.dtype == np.int64
        row, col = L.position(comm.rank)
        s, e = chunk(n, L.grid_rows, row)
        with C.counting() as moved:
            D.fetch_rows(np.arange(n))
        askers = L.grid_rows - 1  # every other rank of my column asks for my whole block
        assert moved["fetch_rows.request"] == 4 * (n - (e - s))
        assert moved["fetch_rows.reply"] == askers * (8 * (e - s) + 16 * int(deg[s:e].sum()))
        assert D.gather().isequal(W)


def test_gather_sends_int32_lengths_and_indices(comm, M):
    for layout, c in grids(comm.size):
        L = Layout(layout, comm.size, c)
        D = spla.distribute(M, comm, layout=layout, replication=c)
        with C.counting() as moved:
            G = D.gather()
        assert G.isequal(M)
        peers = L.grid_rows - 1
        expect = peers * (4 * D.lshape[0] + (4 + value_bytes(M)) * D.lnnz)
        assert moved.get("gather", 0) == expect, (layout, c)


@pytest.mark.parametrize("replicate", [False, True])
def test_bad_strategy_raises_on_every_rank(comm, A, replicate):
    D = spla.distribute(A, comm, layout="1.5d", replication=comm.size,
                        replicate_graph=replicate)
    for bad in ("broadcast", None, 3):
        with pytest.raises(spla.InvalidValue, match="DistMatrix.fetch_rows: argument 'strategy'"):
            D.fetch_rows([0, 1], strategy=bad)
        with pytest.raises(spla.InvalidValue, match="DistMatrix.rows_view: argument 'strategy'"):
            D.rows_view([0, 1], strategy=bad)
        with pytest.raises(spla.InvalidValue, match="^fetch_rows: argument 'strategy'"):
            spla.dist.fetch_rows(D, [0, 1], strategy=bad)
    # one rank alone with a bad strategy: the others stop too
    if comm.size > 1:
        with pytest.raises(spla.SplaError):
            D.fetch_rows([0], strategy="pooled" if comm.rank else "bogus")
        with pytest.raises(spla.InvalidValue, match="same on every rank"):
            D.fetch_rows([0], strategy="pooled" if comm.rank else "direct")
    # and the communicator is still usable afterwards
    got, ids = D.fetch_rows([2, 0])
    assert got.isequal(spla.extract(A, rows=[0, 2]))


def test_bad_rows_raise_on_every_rank(comm, A):
    D = spla.distribute(A, comm, layout="1.5d", replication=1)
    last = comm.rank == comm.size - 1
    # the failing rank raises its own error, the others a SplaError naming it
    with pytest.raises(spla.IndexOutOfRange if last else spla.SplaError,
                       match="argument 'rows'" if last else f"rank {comm.size - 1}"):
        D.fetch_rows([A.nrows] if last else [0])


def test_grids_follow_their_communicator(comm):
    """A freed communicator's process grid is never reused by a new one.

    MPICH recycles communicator handles after ``Free``; a grid cache keyed
    by the handle once gave a new communicator the old grid, and ``gather``
    returned 128 x 256 instead of 256 x 256.  Grids now live on the
    communicator itself.
    """
    A = random_matrix(256, 256, 0.02, 11)
    p = comm.size
    for first_c, second in [(p, "split"), (1, "dup"), (p, "dup")]:
        sub = comm.Dup()
        D = spla.distribute(A, sub, layout="1.5d", replication=first_c)
        assert D.gather().isequal(A) and D.grid.c == first_c
        del D
        sub.Free()
        if second == "split":  # another size: the ranks below p/2 and the others
            new = comm.Split(int(comm.rank < (p + 1) // 2), comm.rank)
            c = 1
        else:  # the same size, another replication
            new = comm.Dup()
            c = 1 if first_c != 1 else p
        D = spla.distribute(A, new, layout="1.5d", replication=c)
        q = new.Get_size()
        assert (D.grid.p, D.grid.c) == (q, c)
        assert D.layout.grid_rows == q // c
        L = Layout("1.5d", q, c)
        assert (D.row_start, D.row_stop) == L.block_rows(A.nrows, new.Get_rank())
        G = D.gather()
        assert G.shape == A.shape and G.isequal(A)
        del D, G
        new.Free()


def test_scatter_from_root_in_pieces(comm, A, monkeypatch):
    """Rank 0 sends each rank its block point to point, in messages of at
    most ``_INT_MAX`` bytes (made tiny here), and counts what it sent."""
    monkeypatch.setattr(C, "_INT_MAX", 40)
    with C.counting() as moved:
        D = spla.distribute(A if comm.rank == 0 else None, comm)
    assert D.gather().isequal(A)
    expect = 0
    if comm.rank == 0:
        for r in range(1, comm.size):
            s, e = chunk(A.nrows, comm.size, r)
            B = spla.extract(A, rows=np.arange(s, e))
            # head (nnz, index size), indptr, indices, values
            expect += 16 + 8 * (e - s + 1) + (B.indices.itemsize + 8) * B.nnz
    assert moved.get("distribute", 0) == expect
