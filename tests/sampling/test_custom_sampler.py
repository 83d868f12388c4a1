"""The "writing your own sampler" example (docs/examples/khop_sampler.py).

The example must keep working and keep the contract of every sampler:
block structure and chaining, bulk == one at a time, reproducible draws,
and a law that can be stated: its hop-by-hop picks are GraphSAGE's, and
the returned adjacency is the subgraph of A induced on the reached
vertices.
"""

import itertools
import runpy
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from scipy import stats

import spla
from sampling import GraphSAGE
from sampling.datasets import load

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
sys.path.insert(0, str(EXAMPLES))

from khop_sampler import KHopSubgraph  # noqa: E402

ALPHA = 1e-3   # one chi-square test in this file


def path_graph(n):
    r = np.arange(n - 1)
    S = sp.csr_matrix((np.ones(2 * (n - 1)), (np.r_[r, r + 1], np.r_[r + 1, r])), shape=(n, n))
    S.sort_indices()
    return S


@pytest.fixture(scope="module")
def cora():
    return load("cora")


def hop_distance(A, seeds):
    """BFS distance from the seed set (inf where unreachable)."""
    dist = np.full(A.shape[0], np.inf)
    dist[list(seeds)] = 0
    frontier = list(seeds)
    while frontier:
        nxt = []
        for v in frontier:
            for u in A.indices[A.indptr[v]:A.indptr[v + 1]]:
                if dist[u] == np.inf:
                    dist[u] = dist[v] + 1
                    nxt.append(u)
        frontier = nxt
    return dist


def check_khop(A, mb, seeds, fanouts, depth):
    """Every invariant of one k-hop minibatch; A is the scipy graph."""
    A = sp.csr_matrix(A)
    blocks = mb.blocks
    assert len(blocks) == depth
    seeds = np.asarray(seeds)
    assert_array_equal(np.asarray(mb.seeds), seeds)
    union = np.asarray(mb.input_nodes)
    assert np.unique(union).size == union.size
    assert_array_equal(union[:seeds.size], seeds)
    for l, b in enumerate(blocks):
        dst, src = np.asarray(b.dst_nodes), np.asarray(b.src_nodes)
        assert_array_equal(src[:dst.size], dst)
        assert_array_equal(src, union)
        if l > 0:
            assert_array_equal(src, np.asarray(blocks[l - 1].dst_nodes))
        # the block is A induced on (dst, union): every edge, sampled or not
        want = A[dst][:, union].toarray() != 0
        assert_array_equal(b.to_scipy().toarray() != 0, want)
    for b in blocks[:-1]:
        assert_array_equal(np.asarray(b.dst_nodes), union)
    # everything within len(fanouts) hops, at most b * prod(1 + f) vertices
    assert np.all(hop_distance(A, seeds)[union] <= len(fanouts))
    assert union.size <= seeds.size * np.prod([1 + f for f in fanouts])


@pytest.mark.parametrize("fanouts,depth", [([2], 1), ([2, 1], 2), ([1, 1, 1], 4)])
def test_invariants_small_graph(fanouts, depth):
    A = path_graph(9)
    sampler = KHopSubgraph(spla.Matrix.from_scipy(A, structural=True), fanouts, depth=depth)
    batches = [np.array([4]), np.array([0, 8]), np.array([3, 5, 1])]
    for seed in range(4):
        for mb, b in zip(sampler.sample(batches, seed=seed), batches):
            check_khop(A, mb, b, fanouts, depth)


def test_invariants_cora_and_agreement_with_graphsage(cora):
    A = cora.A.to_scipy()
    fanouts = [6, 3]
    batches = [cora.train_idx[:10], cora.train_idx[10:13], cora.train_idx[13:40]]
    sampler = KHopSubgraph(cora.A, fanouts, depth=3)
    mbs = sampler.sample(batches, seed=7, epoch=2)
    sage = GraphSAGE(cora.A, fanouts).sample(batches, seed=7, epoch=2)
    for mb, sg, b in zip(mbs, sage, batches):
        check_khop(A, mb, b, fanouts, 3)
        # same draws as GraphSAGE: the union is GraphSAGE's input layer
        assert_array_equal(np.asarray(mb.input_nodes), np.asarray(sg.input_nodes))
        # and GraphSAGE's sampled edges are a subset of the induced subgraph
        assert sg.num_sampled_edges <= sum(blk.num_edges for blk in mb.blocks)


def test_bulk_equals_one_at_a_time_and_reproducible(cora):
    sampler = KHopSubgraph(cora.A, [5, 5])
    batches = [cora.train_idx[:20], cora.train_idx[20:21], cora.train_idx[21:60]]
    bulk = sampler.sample(batches, seed=3, epoch=1)
    for i, b in enumerate(batches):
        alone, = sampler.sample([b], seed=3, epoch=1, batch_ids=[i])
        assert alone == bulk[i]
    assert bulk == sampler.sample(batches, seed=3, epoch=1)
    other = sampler.sample(batches, seed=3, epoch=2)
    assert all(a != b for a, b in zip(bulk, other) if a.batch_size > 1)


def test_one_hop_neighbourhood_is_a_uniform_subset():
    """One hop of fanout 2 from the centre of a 5-leaf star: the reached
    leaves form a uniformly random 2-subset (chi-square, ALPHA).  Draws:
    the centres of 4000 disjoint stars in one minibatch, over 3 epochs."""
    d, f, R = 5, 2, 4000
    n = R * (d + 1)
    centres = np.arange(R) * (d + 1)
    rows = np.repeat(centres, d)
    cols = (centres[:, None] + 1 + np.arange(d)).ravel()
    A = spla.Matrix.from_coo(rows, cols, shape=(n, n))
    sampler = KHopSubgraph(A, [f])
    counts = Counter()
    for epoch in range(3):
        mb, = sampler.sample([centres], seed=2024, epoch=epoch)
        top = mb.blocks[-1]
        S = top.to_scipy()                    # seeds x union: the centres' rows
        union = np.asarray(top.src_nodes)
        for r in range(R):
            leaves = union[S.indices[S.indptr[r]:S.indptr[r + 1]]] - centres[r] - 1
            counts[tuple(sorted(leaves.tolist()))] += 1
    subsets = list(itertools.combinations(range(d), f))
    assert set(counts) <= set(subsets)
    obs = np.array([counts[s] for s in subsets], float)
    p = stats.chisquare(obs).pvalue           # uniform expected counts
    assert p > ALPHA, f"p-value {p:.3g}"


def test_example_script_runs(capsys):
    runpy.run_path(str(EXAMPLES / "khop_sampler.py"), run_name="__main__")
    assert "induced edges" in capsys.readouterr().out


def test_sampler_body_is_short():
    # the docs promise a sampler in at most 15 lines of spla calls
    import inspect
    import khop_sampler
    src = inspect.getsource(khop_sampler.KHopSubgraph._sample_stacked).splitlines()
    body = [ln for ln in src[1:] if ln.strip() and not ln.strip().startswith("#")]
    assert len(body) <= 15, len(body)
