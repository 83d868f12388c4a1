"""The distributed SpGEMM equals the single-process mxm exactly, for every
semiring, layout, replication and mode."""

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from spla import comm as C


def grids(p):
    return [("1d", 1)] + [("1.5d", c) for c in range(2, p + 1) if p % c == 0]


@pytest.mark.parametrize("semiring", ["plus_times", "plus_pair", "any_pair", "min_plus",
                                      "max_times", "max_plus", "min_times", "plus_min"])
@pytest.mark.parametrize("replicate", [False, True])
def test_dist_mxm_exact(comm, semiring, replicate):
    rs = np.random.RandomState(7)
    A = spla.Matrix.from_scipy(sp.random(53, 47, density=0.1, format="csr", random_state=rs,
                                         dtype=np.float32))
    Q = spla.Matrix.from_scipy(sp.random(29, 53, density=0.08, format="csr", random_state=rs,
                                         dtype=np.float32))
    ref = spla.mxm(Q, A, semiring).new()
    for layout, c in grids(comm.size):
        DA = spla.distribute(A, comm, layout=layout, replication=c, replicate_graph=replicate)
        DQ = spla.distribute(Q, comm, layout=layout, replication=c)
        with C.counting() as moved:
            P = spla.mxm(DQ, DA, semiring)
        assert isinstance(P, spla.DistMatrix)
        assert P.gather().isequal(ref), (semiring, layout, c)
        if replicate:
            assert sum(moved.values()) == 0, dict(moved)


def test_row_selection_product(comm):
    """GraphSAGE's Q (one entry per row) against a partitioned graph."""
    rs = np.random.RandomState(1)
    A = spla.Matrix.from_scipy(sp.random(60, 60, density=0.1, format="csr", random_state=rs))
    rows = rs.randint(0, 60, size=25)
    Q = spla.Matrix.from_coo(np.arange(25), rows, shape=(25, 60))
    ref = spla.mxm(Q, A).new()
    for layout, c in grids(comm.size):
        P = spla.mxm(spla.distribute(Q, comm, layout=layout, replication=c),
                     spla.distribute(A, comm, layout=layout, replication=c))
        assert P.gather().isequal(ref)


def test_each_member_fetches_only_the_rows_of_its_range(comm):
    """1.5D: member j of a process row computes rows chunk(block, c, j) of its
    Q block and fetches exactly the rows of A those rows need (int32 ids,
    lengths and indices on the wire); the row then shares the product rows."""
    from spla.layout import Layout, chunk, owner_of
    rs = np.random.RandomState(3)
    A = spla.Matrix.from_scipy(sp.random(53, 47, density=0.1, format="csr", random_state=rs,
                                         dtype=np.float32))
    Q = spla.Matrix.from_scipy(sp.random(29, 53, density=0.08, format="csr", random_state=rs,
                                         dtype=np.float32))
    ref = spla.mxm(Q, A).new()
    deg, pdeg = A.row_degrees(), ref.row_degrees()
    p = comm.size
    for layout, c in grids(p):
        L = Layout(layout, p, c)

        def computed_rows(r):
            s, e = L.block_rows(Q.nrows, r)
            a, b = chunk(e - s, c, L.position(r)[1])
            return np.arange(s + a, s + b)

        def remote_needs(r):
            u = np.unique(spla.extract(Q, rows=computed_rows(r)).indices).astype(np.int64)
            owner = owner_of(u, A.nrows, L.grid_rows)
            keep = owner != L.position(r)[0]
            return u[keep], owner[keep]

        row, col = L.position(comm.rank)
        mine, _ = remote_needs(comm.rank)
        expect = {"fetch_rows.request": 4 * mine.size, "fetch_rows.reply": 0}
        for q in range(col, p, c):
            theirs, owner = remote_needs(q)
            sent = theirs[owner == row]
            expect["fetch_rows.reply"] += 4 * sent.size + 8 * int(deg[sent].sum())
        if c > 1:
            out = computed_rows(comm.rank)
            expect["mxm.rows"] = (c - 1) * (4 * out.size + 8 * int(pdeg[out].sum()))
        DQ = spla.distribute(Q, comm, layout=layout, replication=c)
        DA = spla.distribute(A, comm, layout=layout, replication=c)
        with C.counting() as moved:
            P = spla.mxm(DQ, DA)
        assert P.gather().isequal(ref)
        assert {k: v for k, v in moved.items() if v} == {k: v for k, v in expect.items() if v}, \
            (layout, c)


def test_replicated_product_counts_its_entries_once(comm):
    """Both operands replicated: every rank holds the whole product, and
    ``nnz`` is its entry count (not that count times the replicas)."""
    rs = np.random.RandomState(9)
    A = spla.Matrix.from_scipy(sp.random(31, 31, density=0.1, format="csr", random_state=rs))
    ref = spla.mxm(A, A).new()
    for layout, c in grids(comm.size):
        D = spla.distribute(A, comm, layout=layout, replication=c, replicate_graph=True)
        P = spla.mxm(D, D)
        assert P.nnz == ref.nnz and P.gather().isequal(ref), (layout, c)
