"""Masks, out, accum and replace on the distributed mxm (and masked mxv/vxm):
bit-identical to the local operators on the gathered matrices, on every
layout (1D, 1.5D, replicated, partition-placed), and a bad mask raises the
same error on every rank."""

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from spla import semiring
from spla.partition import Partition


def grids(p):
    return [("1d", 1)] + [("1.5d", c) for c in range(2, p + 1) if p % c == 0]


def random_matrix(m, n, density, seed, dtype=np.float64):
    rs = np.random.RandomState(seed)
    return spla.Matrix.from_scipy(sp.random(m, n, density=density, format="csr",
                                            random_state=rs, dtype=dtype))


def placements(comm, layout, c, n):
    """(name, keyword arguments of distribute) for block rows, a random
    partition (its first part left empty when there are more than two) and,
    in 1D, replication (which moves nothing, whatever the grid)."""
    q = comm.size // c
    part = np.random.default_rng(5).integers(0, q, n)
    P = Partition(np.where(part == 0, 1, part) if q > 2 else part, q, method="random")
    base = dict(comm=comm, layout=layout, replication=c)
    out = [("block", base), ("partition", dict(base, partition=P))]
    return out + [("replicated", dict(base, replicate_graph=True))] if c == 1 else out


def test_masked_mxm_equals_local(comm):
    A = random_matrix(29, 37, 0.12, 1)
    B = random_matrix(37, 31, 0.12, 2)
    M = random_matrix(29, 31, 0.3, 3)
    C = random_matrix(29, 31, 0.2, 4)
    want = {
        "S": spla.mxm(A, B, mask=M.S),
        "~V": spla.mxm(A, B, semiring.min_plus, mask=~M.V),
        "accum": spla.mxm(A, B, mask=M.S, out=C, accum="plus"),
        "replace": spla.mxm(A, B, mask=~M.S, out=C, replace=True),
    }
    calls = {
        "S": lambda DA, DB, DM, DC, W: spla.mxm(DA, DB, mask=DM.S),
        # W: a mask every rank holds whole (a local Matrix or a replicated DistMatrix).
        "~V": lambda DA, DB, DM, DC, W: spla.mxm(DA, DB, semiring.min_plus, mask=~W.V),
        "accum": lambda DA, DB, DM, DC, W: spla.mxm(DA, DB, mask=DM.S, out=DC, accum="plus"),
        "replace": lambda DA, DB, DM, DC, W: spla.mxm(DA, DB, mask=~DM.S, out=DC,
                                                      replace=True),
    }
    # Per placement: a mask every rank holds whole (sliced by the rows of
    # this rank's block, or by the partition's) and a placed mask with out.
    pairs = {"block": ("~V", "accum"), "partition": ("~V", "replace"),
             "replicated": ("S", "replace")}
    RM = spla.distribute(M, comm, replicate_graph=True)
    for g, (layout, c) in enumerate(grids(comm.size)):
        DBs, W = {}, (M if g % 2 == 0 else RM)
        for name, kw in placements(comm, layout, c, A.nrows):
            pair = pairs[name]
            DA = spla.distribute(A, **kw)
            # Block rows of A times a replicated B in 1D; fetched rows of B in 1.5D.
            rep_b = name == "replicated" or (name == "block" and c == 1)
            if rep_b not in DBs:
                DBs[rep_b] = spla.distribute(B, comm, layout=layout, replication=c,
                                             replicate_graph=rep_b)
            DB = DBs[rep_b]
            DM = spla.distribute(M, **kw)
            DC = spla.distribute(C, **kw) if {"accum", "replace"} & set(pair) else None
            for key in pair:
                P = calls[key](DA, DB, DM, DC, W)
                # Each rank checks its own rows: no gather (time on 4 ranks).
                assert P.layout == DA.layout and P.nnz == want[key].nnz
                assert P.local.isequal(spla.extract(want[key], rows=P.row_ids)), \
                    (layout, c, name, key)


def test_triangle_count_equals_local(comm):
    rs = np.random.RandomState(8)
    U = sp.triu(sp.random(60, 60, density=0.15, format="csr", random_state=rs), 1)
    A = spla.Matrix.from_scipy((U + U.T).tocsr())
    L = spla.select(A, "tril", -1)
    Lt = spla.transpose(L)
    ref = spla.mxm(L, Lt, semiring.plus_pair, mask=L.S)
    dense = (U + U.T).toarray() != 0
    assert spla.reduce_scalar(ref) == int(np.trace(np.linalg.matrix_power(
        dense.astype(np.int64), 3))) // 6
    for layout, c in grids(comm.size):
        for name, kw in placements(comm, layout, c, L.nrows)[1:2]:  # by a partition
            DL = spla.distribute(L, **kw)
            DLt = spla.distribute(Lt, comm, layout=layout, replication=c)
            got = spla.mxm(DL, DLt, semiring.plus_pair, mask=DL.S)
            assert got.gather().isequal(ref), (layout, c, name)


def test_masked_mxv_vxm_equal_local(comm):
    A = random_matrix(41, 41, 0.15, 11)
    rs = np.random.RandomState(2)
    u = spla.Vector.from_dense(rs.rand(41) * (rs.rand(41) < .6))
    m = spla.Vector.from_dense(((rs.rand(41) < .5) * rs.randint(0, 2, 41)).astype(np.float64))
    out = spla.Vector.from_dense(rs.rand(41))
    for layout, c in grids(comm.size):
        for name, kw in placements(comm, layout, c, A.nrows):
            D = spla.distribute(A, **kw)
            for mask, extra in ((m.S, {}), (~m.V, {}),
                                (m.V, dict(out=out, accum="plus", replace=True)),
                                (~m.S, dict(out=out, accum="plus"))):
                key = (layout, c, name, repr(mask), bool(extra))
                assert spla.mxv(D, u, mask=mask, **extra).isequal(
                    spla.mxv(A, u, mask=mask, **extra)), key
                assert spla.vxm(u, D, mask=mask, **extra).isequal(
                    spla.vxm(u, A, mask=mask, **extra)), key


def test_bad_mask_raises_on_every_rank(comm):
    from test_collective_errors import raises_everywhere
    A = random_matrix(23, 23, 0.2, 4)
    D = spla.distribute(A, comm)
    good = spla.distribute(A, comm).S
    wrong_shape = spla.Matrix.from_dense(np.eye(5)).S
    raises_everywhere(comm, spla.DimensionMismatch, lambda: spla.mxm(D, D, mask=wrong_shape),
                      lambda: spla.mxm(D, D, mask=good), "mxm: argument 'mask' must be a "
                      "mask of shape (23, 23)")
    R = spla.distribute(A, comm, replicate_graph=True)
    raises_everywhere(comm, spla.LayoutError, lambda: spla.mxm(D, D, mask=good, out=R),
                      lambda: spla.mxm(D, D, mask=good, out=D), "mxm: argument 'out' must be "
                      "a DistMatrix placed as the product")
    raises_everywhere(comm, spla.DTypeError, lambda: spla.mxm(D, D, mask=good, out=A),
                      lambda: spla.mxm(D, D, mask=good, out=D), "mxm: argument 'out' must be "
                      "a spla.DistMatrix")
    if comm.size > 1:
        other = spla.distribute(A, comm, layout="1.5d", replication=comm.size)
        with pytest.raises(spla.LayoutError, match="argument 'mask' must be a DistMatrix "
                                                   "placed as the product"):
            spla.mxm(D, D, mask=other.S)


def test_elementwise_equal_local(comm):
    """apply, select (by value, by global row index, by a callable), ewise_add
    and ewise_mult on DistMatrix operands, with masks, out and accum: each
    rank's rows equal the local operator's, on every placement."""
    A = random_matrix(31, 27, 0.2, 21)
    B = random_matrix(31, 27, 0.2, 22)
    M = random_matrix(31, 27, 0.3, 23)

    def every_third(i, j, v):
        return (i + 2 * j) % 3 == 0

    cases = {
        "apply": (lambda X, Y, K, W: spla.apply(X, "square", mask=K.S, out=Y, accum="plus"),
                  lambda: spla.apply(A, "square", mask=M.S, out=B, accum="plus")),
        "tril": (lambda X, Y, K, W: spla.select(X, "tril", -2, mask=~W.V),
                 lambda: spla.select(A, "tril", -2, mask=~M.V)),
        "row>=": (lambda X, Y, K, W: spla.select(X, "row>=", 9),
                  lambda: spla.select(A, "row>=", 9)),
        "callable": (lambda X, Y, K, W: spla.select(X, every_third, out=Y, mask=K.S,
                                                    replace=True),
                     lambda: spla.select(A, every_third, out=B, mask=M.S, replace=True)),
        "add": (lambda X, Y, K, W: spla.ewise_add(X, Y, "max", mask=W.S),
                lambda: spla.ewise_add(A, B, "max", mask=M.S)),
        "mult": (lambda X, Y, K, W: spla.ewise_mult(X, Y, "plus", mask=~K.S, out=X,
                                                    accum="times"),
                 lambda: spla.ewise_mult(A, B, "plus", mask=~M.S, out=A, accum="times")),
    }
    want = {key: ref() for key, (_, ref) in cases.items()}
    RM = spla.distribute(M, comm, replicate_graph=True)
    for g, (layout, c) in enumerate(grids(comm.size)):
        W = M if g % 2 == 0 else RM
        for name, kw in placements(comm, layout, c, A.nrows):
            DA, DB, DM = (spla.distribute(X, **kw) for X in (A, B, M))
            for key, (call, _) in cases.items():
                P = call(DA, DB, DM, W)
                assert P.layout == DA.layout and P.nnz == want[key].nnz, (layout, c, name, key)
                assert P.local.isequal(spla.extract(want[key], rows=P.row_ids)), \
                    (layout, c, name, key)


def test_elementwise_bad_operands_raise_on_every_rank(comm):
    from test_collective_errors import raises_everywhere
    A = random_matrix(23, 23, 0.2, 4)
    D = spla.distribute(A, comm)
    R = spla.distribute(A, comm, replicate_graph=True)
    raises_everywhere(comm, spla.DTypeError, lambda: spla.ewise_add(D, A),
                      lambda: spla.ewise_add(D, D), "ewise_add: argument 'B' must be a "
                      "spla.DistMatrix (distribute both operands, or neither)")
    raises_everywhere(comm, spla.DTypeError, lambda: spla.apply(A, "abs", mask=D.S),
                      lambda: spla.apply(D, "abs", mask=D.S), "apply: argument 'A' must be "
                      "a spla.DistMatrix")
    raises_everywhere(comm, spla.DimensionMismatch,
                      lambda: spla.select(D, "tril", mask=spla.Matrix.from_dense(np.eye(4)).S),
                      lambda: spla.select(D, "tril"), "select: argument 'mask' must be a "
                      "mask of shape (23, 23)")
    if comm.size > 1:
        raises_everywhere(comm, spla.LayoutError, lambda: spla.ewise_mult(D, R),
                          lambda: spla.ewise_mult(D, D), "ewise_mult: argument 'B' must be "
                          "a DistMatrix placed as A")
