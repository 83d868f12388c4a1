"""A bad argument on one rank raises the same error on every rank, never a hang.

Each test makes one call that is wrong on one rank only (rank 1, or rank 0
when it runs alone) while the other ranks make the good call, and checks
that every rank raises the same exception class with the same message
(the failing rank's, marked ``[raised on rank r of p]`` elsewhere), and
that the communicator still works afterwards.  Expectations are computed
from the communicator, so the module runs under any number of ranks.
"""

import numpy as np
import pytest
import scipy.sparse as sp

import spla
from spla.dist import fetch_rows
from spla.layout import Layout


def bad_rank(comm):
    return min(1, comm.size - 1)


def raises_everywhere(comm, cls, bad_call, good_call, text):
    """Run ``bad_call`` on the bad rank and ``good_call`` elsewhere; check the errors."""
    bad = bad_rank(comm)
    with pytest.raises(cls) as info:
        (bad_call if comm.rank == bad else good_call)()
    exc = info.value
    seen = comm.allgather((type(exc).__name__, str(exc)))
    suffix = f" [raised on rank {bad} of {comm.size}]"
    assert {name for name, _ in seen} == {seen[bad][0]}, seen
    origin_msg = seen[bad][1]
    assert text in origin_msg, origin_msg
    for r, (_, msg) in enumerate(seen):
        assert msg == (origin_msg if r == bad else origin_msg + suffix), (r, seen)
    assert getattr(exc, "collective_origin", None) == bad
    comm.Barrier()  # every rank got here: nobody is left waiting
    return exc


def random_matrix(n, m, density, seed):
    S = sp.random(n, m, density=density, format="csr", random_state=seed)
    return spla.Matrix.from_scipy(S)


@pytest.fixture(scope="module")
def A():
    return random_matrix(23, 19, 0.2, 4)


@pytest.fixture(scope="module")
def D(comm, A):
    return spla.distribute(A, comm)


def still_works(D, A):
    got, ids = D.fetch_rows([0, D.nrows - 1])
    assert got.isequal(spla.extract(A, rows=ids))


# -- fetch_rows / rows_view --------------------------------------------------
@pytest.mark.parametrize("bad_rows, cls", [
    ([2 ** 70], spla.IndexOutOfRange),          # was an OverflowError: a hang
    ([2 ** 63], spla.IndexOutOfRange),
    (np.array([2 ** 63], np.uint64), spla.IndexOutOfRange),
    ([-1], spla.IndexOutOfRange),
    ([1.0, 2.0], spla.DTypeError),              # was silently truncated
    (np.array([0.5]), spla.DTypeError),
    ([[0, 1]], spla.InvalidValue),
    ("rows", spla.InvalidValue),
])
@pytest.mark.parametrize("how", ["method", "function", "rows_view"])
def test_bad_rows_on_one_rank(comm, A, D, bad_rows, cls, how):
    call, func = {
        "method": (D.fetch_rows, "DistMatrix.fetch_rows"),
        "function": (lambda rows: fetch_rows(D, rows), "fetch_rows"),
        "rows_view": (D.rows_view, "DistMatrix.rows_view"),
    }[how]
    raises_everywhere(comm, cls, lambda: call(bad_rows), lambda: call([0, 1]),
                      f"{func}: argument 'rows'")
    still_works(D, A)


def test_bad_strategy_on_one_rank(comm, A, D):
    raises_everywhere(comm, spla.InvalidValue, lambda: D.fetch_rows([0], strategy=["direct"]),
                      lambda: D.fetch_rows([0]), "DistMatrix.fetch_rows: argument 'strategy'")
    if comm.size > 1:
        # valid on every rank, but not the same one
        with pytest.raises(spla.InvalidValue, match="must be the same on every rank"):
            D.fetch_rows([0], strategy="pooled" if comm.rank == bad_rank(comm) else "direct")
    still_works(D, A)


# -- mxm ---------------------------------------------------------------------
def test_local_operand_on_one_rank(comm, A, D):
    Dsq = spla.distribute(spla.Matrix.from_scipy(sp.random(19, 19, density=0.2,
                                                           random_state=5, format="csr")), comm)
    raises_everywhere(comm, spla.DTypeError, lambda: spla.mxm(D.local, Dsq),
                      lambda: spla.mxm(D, Dsq), "mxm: argument 'A' must be a spla.DistMatrix")
    raises_everywhere(comm, spla.DTypeError, lambda: spla.mxm(D, Dsq.local),
                      lambda: spla.mxm(D, Dsq), "mxm: argument 'B' must be a spla.DistMatrix")
    ref = spla.mxm(A, Dsq.gather()).new()
    assert spla.mxm(D, Dsq).gather().isequal(ref)


# -- from_local / from_generator --------------------------------------------
def block_of(A, comm, layout="1d", c=1):
    s, e = Layout(layout, comm.size, c).block_rows(A.nrows, comm.rank)
    return spla.extract(A, rows=np.arange(s, e))


@pytest.mark.parametrize("bad_shape, cls", [
    (None, spla.InvalidValue),                  # was int(None) before agreeing: a hang
    ((2 ** 70, 19), spla.InvalidValue),
    ((23.0, 19), spla.InvalidValue),
    ((-1, 19), spla.InvalidValue),
    ((23,), spla.InvalidValue),
])
def test_from_local_bad_shape_on_one_rank(comm, A, bad_shape, cls):
    block = block_of(A, comm)
    f = spla.DistMatrix.from_local
    raises_everywhere(comm, cls, lambda: f(block, bad_shape, comm=comm),
                      lambda: f(block, A.shape, comm=comm), "DistMatrix.from_local: argument")
    assert f(block, A.shape, comm=comm).gather().isequal(A)


def test_from_local_bad_block_on_one_rank(comm, A):
    block = block_of(A, comm)
    f = spla.DistMatrix.from_local
    raises_everywhere(comm, spla.DTypeError, lambda: f(block.to_dense(), A.shape, comm=comm),
                      lambda: f(block, A.shape, comm=comm),
                      "DistMatrix.from_local: argument 'local' must be a spla.Matrix")
    wrong = spla.extract(A, rows=np.arange(A.nrows))  # the whole matrix, not the block
    if comm.size > 1:
        raises_everywhere(comm, spla.DimensionMismatch, lambda: f(wrong, A.shape, comm=comm),
                          lambda: f(block, A.shape, comm=comm),
                          "DistMatrix.from_local: argument 'local' must be a matrix of shape")
        # ranks disagreeing on the global shape
        with pytest.raises(spla.LayoutError, match="argument 'shape' must be the same"):
            f(block, (A.nrows, A.ncols + (comm.rank == bad_rank(comm))), comm=comm)


def test_from_generator_failing_on_one_rank(comm, A):
    def make(s, e):
        if comm.rank == bad_rank(comm):
            raise RuntimeError(f"cannot build rows {s}:{e}")
        return spla.extract(A, rows=np.arange(s, e))

    def good(s, e):
        return spla.extract(A, rows=np.arange(s, e))

    g = spla.DistMatrix.from_generator
    raises_everywhere(comm, RuntimeError, lambda: g(make, A.shape, comm=comm),
                      lambda: g(make, A.shape, comm=comm), "cannot build rows")
    raises_everywhere(comm, spla.DTypeError, lambda: g("make", A.shape, comm=comm),
                      lambda: g(good, A.shape, comm=comm),
                      "DistMatrix.from_generator: argument 'make_rows'")
    assert g(good, A.shape, comm=comm).gather().isequal(A)


# -- distribute --------------------------------------------------------------
@pytest.mark.parametrize("kwargs, cls, text", [
    (dict(replication=2 ** 70, layout="1.5d"), spla.LayoutError, "argument 'replication'"),
    (dict(replication="2", layout="1.5d"), spla.InvalidValue, "argument 'replication'"),
    (dict(replication=1.0), spla.InvalidValue, "argument 'replication'"),
    (dict(replication=0, layout="1.5d"), spla.InvalidValue, "argument 'replication'"),
    (dict(layout="2d"), spla.LayoutError, "argument 'layout'"),
    (dict(layout=None), spla.LayoutError, "argument 'layout'"),
    (dict(replicate_graph="no"), spla.InvalidValue, "argument 'replicate_graph'"),
])
def test_distribute_bad_options_on_one_rank(comm, A, kwargs, cls, text):
    raises_everywhere(comm, cls, lambda: spla.distribute(A, comm, **kwargs),
                      lambda: spla.distribute(A, comm), f"distribute: {text}")
    assert spla.distribute(A, comm).gather().isequal(A)


def test_distribute_bad_matrix_on_one_rank(comm, A):
    raises_everywhere(comm, spla.DTypeError, lambda: spla.distribute(A.to_dense(), comm),
                      lambda: spla.distribute(A, comm), "distribute: argument 'A'")
    with pytest.raises(spla.DimensionMismatch, match="argument 'A' must be a matrix on rank 0"):
        spla.distribute(None, comm)
    if comm.size > 1:
        with pytest.raises(spla.LayoutError, match="must be the same on every rank"):
            spla.distribute(A, comm, layout="1.5d", replication=1,
                            replicate_graph=comm.rank == bad_rank(comm))
        with pytest.raises(spla.LayoutError, match="same matrix shape"):
            spla.distribute(spla.transpose(A) if comm.rank == bad_rank(comm) else A, comm)
    assert spla.distribute(A, comm).gather().isequal(A)


def test_bad_semiring_on_one_rank_of_a_distributed_product(comm, A, D):
    # spla.mxm must hand distributed operands to the collective checks before
    # it validates the semiring locally, or rank 1 alone would raise here.
    Q = spla.distribute(random_matrix(7, 23, 0.3, 5), comm)
    raises_everywhere(comm, spla.InvalidValue,
                      lambda: spla.mxm(Q, D, "no_such_semiring"),
                      lambda: spla.mxm(Q, D, "plus_times"), "no_such_semiring")
    still_works(D, A)
