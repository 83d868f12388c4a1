"""One contract, every layout: local, 1D, and 1.5D for every c that divides p.

Each test body below is written once against a small adapter, so the same
assertions hold for a plain ``spla.Matrix`` and for a ``DistMatrix`` in
each layout (graph partitioned or replicated).  Expectations come from the
local matrix, never from per-rank-count constants.
"""

import numpy as np
import pytest

import spla
from sampling import GraphSAGE, LADIES, epoch_batches, gather_minibatches
from spla.generators import random_csr


def layouts(p):
    out = [("local", 1, False), ("1d", 1, False), ("1d", 1, True)]
    out += [("1.5d", c, False) for c in range(2, p + 1) if p % c == 0]
    return out


class Adapter:
    """The operations of the contract on one layout."""

    def __init__(self, A, comm, layout, c, replicate):
        self.comm = comm
        self.local = layout == "local"
        self.A = A if self.local else spla.distribute(A, comm, layout=layout,
                                                      replication=c,
                                                      replicate_graph=replicate)

    def whole(self):
        return self.A if self.local else self.A.gather()

    def rows(self, ids):
        if self.local:
            u = np.unique(ids)
            return spla.extract(self.A, rows=u), u
        return self.A.fetch_rows(ids)

    def times(self, B):
        """``A @ B`` as a local matrix on every rank."""
        if self.local:
            return (self.A @ B).new()
        D = spla.distribute(B, self.comm, layout=self.A.layout.kind,
                            replication=self.A.layout.c, replicate_graph=True)
        return spla.mxm(self.A, D).gather()    # distributed: computed at once


@pytest.fixture(scope="module")
def graph():
    return random_csr(61, 61, 4, seed=5)


@pytest.fixture(scope="module")
def cases(comm, graph):
    return [(spec, Adapter(graph, comm, *spec)) for spec in layouts(comm.size)]


def test_whole_matrix_is_the_local_one(cases, graph):
    for spec, a in cases:
        assert a.whole().isequal(graph), spec


def test_rows_are_the_global_rows(cases, graph, comm):
    rng = np.random.default_rng(comm.rank)       # ranks ask for different rows
    ids = rng.integers(0, graph.nrows, 17)
    for spec, a in cases:
        M, got_ids = a.rows(ids)
        np.testing.assert_array_equal(got_ids, np.unique(ids))
        assert M.isequal(spla.extract(graph, rows=got_ids)), spec


def test_product_is_the_local_product(cases, graph):
    B = random_csr(61, 9, 3, seed=8)
    want = (graph @ B).new()
    for spec, a in cases:
        assert a.times(B).isequal(want), spec


@pytest.mark.parametrize("make", [lambda G: GraphSAGE(G, [3, 2]),
                                  lambda G: LADIES(G, [12, 8])], ids=["sage", "ladies"])
def test_samples_are_the_local_samples(cases, graph, comm, make):
    batches = epoch_batches(np.arange(40), 8, seed=1)
    ref = make(graph).sample(batches, seed=4, epoch=2)
    for spec, a in cases:
        got = make(a.A).sample(batches, seed=4, epoch=2)
        every = got if a.local else gather_minibatches(got, comm)
        assert every == ref, spec
