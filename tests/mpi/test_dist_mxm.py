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
