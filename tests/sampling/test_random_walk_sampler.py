"""The random-walk example sampler (docs/examples/random_walk_sampler.py) and
``sampling.stream_of``, the keying helper it and every custom sampler use.

The sampler must keep the contract of every sampler (block structure and
chaining, bulk == one at a time, reproducible draws, the same minibatches on
a DistMatrix) and its law must be the stated one: the visit counts of W
independent uniform walks of length L, exactly as enumerated over every
path of a tiny graph, and the kept neighbourhood the top T of those counts.
"""

import itertools
import runpy
import sys
from collections import Counter
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal
from scipy import stats

import spla
import sampling
from sampling import stream_of
from sampling.datasets import load

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"
sys.path.insert(0, str(EXAMPLES))

from random_walk_sampler import RandomWalkNeighbourhood  # noqa: E402

ALPHA = 1e-3   # one chi-square test in this file


@pytest.fixture(scope="module")
def cora():
    return load("cora")


# --------------------------------------------------------------------------
# stream_of

def test_stream_of_values_and_injectivity():
    assert stream_of(0, 0) == 0 and stream_of(0, 255) == 255 and stream_of(1, 0) == 256
    assert stream_of(2 ** 56 - 1, 255) == 2 ** 64 - 1
    assert stream_of(np.int64(3), np.uint8(4)) == 3 * 256 + 4
    pairs = list(itertools.product(range(40), range(256)))
    assert len({stream_of(e, l) for e, l in pairs}) == len(pairs)
    # the keying the built-in samplers have always used: their draws do not change
    assert all(stream_of(e, l) == (e << 8) | l for e, l in pairs[::97])


@pytest.mark.parametrize("epoch, layer, arg, expected", [
    (-1, 0, "epoch", "an integer >= 0"),
    (2 ** 56, 0, "epoch", r"an integer in \[0, 2\*\*56\)"),
    (0, 256, "layer", r"an integer in \[0, 256\)"),
    (0, -1, "layer", "an integer >= 0"),
    (True, 0, "epoch", "an integer"),
    (0, 1.0, "layer", "an integer"),
])
def test_stream_of_refuses_out_of_range(epoch, layer, arg, expected):
    with pytest.raises(spla.InvalidValue, match=f"^stream_of: argument '{arg}' must be "
                                                f"{expected}; got"):
        stream_of(epoch, layer)


def test_stream_of_is_exported():
    assert "stream_of" in sampling.__all__ and sampling.stream_of is stream_of


# --------------------------------------------------------------------------
# The law on a tiny graph, against an exact enumeration of the walks

#: out-neighbours in one copy of the tiny graph; vertex 4 is a dead end
TINY = {0: [1, 2], 1: [0, 3], 2: [3, 4], 3: [0], 4: []}
M_TINY = len(TINY)


def walk_law(length, start=0):
    """{visit-count vector over vertices 1..4: probability} of one walk (exact)."""
    law = Counter()

    def go(v, steps, counts, p):
        if steps == length or not TINY[v]:
            law[tuple(counts)] += p
            return
        for u in TINY[v]:
            c = list(counts)
            if u != start:
                c[u - 1] += 1
            go(u, steps + 1, c, p / len(TINY[v]))

    go(start, 0, [0] * (M_TINY - 1), Fraction(1))
    assert sum(law.values()) == 1
    return law


def walks_law(walks, length):
    """The law of the summed counts of ``walks`` independent walks."""
    law = Counter({(0,) * (M_TINY - 1): Fraction(1)})
    one = walk_law(length)
    for _ in range(walks):
        nxt = Counter()
        for a, pa in law.items():
            for b, pb in one.items():
                nxt[tuple(x + y for x, y in zip(a, b))] += pa * pb
        law = nxt
    return law


def tiny_copies(R):
    rows = [c * M_TINY + v for c in range(R) for v, us in TINY.items() for _ in us]
    cols = [c * M_TINY + u for c in range(R) for us in TINY.values() for u in us]
    n = R * M_TINY
    return spla.Matrix.from_coo(np.array(rows), np.array(cols), shape=(n, n))


def count_vectors(mb, R):
    """The visit-count vector (vertices 1..4 of its copy) of every seed."""
    blk = mb.blocks[-1]
    S, src = blk.to_scipy(), np.asarray(blk.src_nodes)
    out = np.zeros((R, M_TINY - 1), np.int64)
    for r in range(R):
        lo, hi = S.indptr[r], S.indptr[r + 1]
        local = src[S.indices[lo:hi]] - r * M_TINY
        assert np.all((local >= 1) & (local < M_TINY))   # its own copy, never itself
        out[r, local - 1] = S.data[lo:hi]
    return out


def test_visit_counts_follow_the_walk_law():
    """W = 2 walks of length 3 from vertex 0 of each of 2000 disjoint copies of
    the tiny graph (one minibatch, 3 epochs): the joint law of the four visit
    counts is the exact one (chi-square, ALPHA).  Two walks keyed alike would
    give doubled single-walk vectors, far from the law of two independent ones."""
    R, W, L = 2000, 2, 3
    A = tiny_copies(R)
    seeds = np.arange(R) * M_TINY
    sampler = RandomWalkNeighbourhood(A, tops=[sampling.ALL_NEIGHBORS], walks=W, length=L)
    seen = Counter()
    for epoch in range(3):
        mb, = sampler.sample([seeds], seed=11, epoch=epoch)
        seen.update(map(tuple, count_vectors(mb, R).tolist()))
    law = walks_law(W, L)
    assert set(seen) <= set(law)
    N = sum(seen.values())
    outcomes = sorted(law, key=lambda o: -law[o])
    big = [o for o in outcomes if law[o] * N >= 5]
    obs = [seen[o] for o in big] + [N - sum(seen[o] for o in big)]
    exp = [float(law[o]) * N for o in big] + [N * (1 - float(sum(law[o] for o in big)))]
    if exp[-1] < 1e-9:
        obs, exp = obs[:-1], exp[:-1]
    p = stats.chisquare(obs, exp).pvalue
    assert len(big) >= 8 and p > ALPHA, f"p-value {p:.3g}"


def test_top_t_keeps_the_most_visited_ties_by_smaller_id():
    """The same seed with top = 2 keeps, of the full neighbourhood (top = -1,
    the same draws), the two largest counts, ties to the smaller vertex."""
    R = 400
    A = tiny_copies(R)
    seeds = np.arange(R) * M_TINY
    full, = RandomWalkNeighbourhood(A, [-1], walks=3, length=3).sample([seeds], seed=5)
    kept, = RandomWalkNeighbourhood(A, [2], walks=3, length=3).sample([seeds], seed=5)
    counts, got = count_vectors(full, R), count_vectors(kept, R)
    for c, g in zip(counts, got):
        order = np.lexsort((np.arange(c.size), -c))[:2]          # by count, then id
        want = np.zeros_like(c)
        want[order] = c[order]
        want[c == 0] = 0                                         # unvisited: not kept
        assert_array_equal(g, want)


# --------------------------------------------------------------------------
# The contract of a sampler, on Cora

def reach_within(A, vertices, steps):
    """Boolean (len(vertices), n): reachable from each vertex in <= steps steps."""
    R = sp.csr_matrix((np.ones(len(vertices)), (np.arange(len(vertices)), vertices)),
                      shape=(len(vertices), A.shape[0]))
    out = R.copy()
    for _ in range(steps):
        R = (R @ A).astype(bool).astype(np.float64)
        out = out + R
    return out.toarray() > 0


def check_minibatch(A, mb, seeds, tops, W, L):
    blocks = mb.blocks
    assert len(blocks) == len(tops)
    assert_array_equal(np.asarray(mb.seeds), seeds)
    for l, (b, top) in enumerate(zip(blocks, reversed(tops))):
        dst, src = np.asarray(b.dst_nodes), np.asarray(b.src_nodes)
        assert_array_equal(src[:dst.size], dst)
        assert np.unique(src).size == src.size
        if l > 0:
            assert_array_equal(src, np.asarray(blocks[l - 1].dst_nodes))
        S = b.to_scipy()
        assert np.all(np.diff(S.indptr) <= top)
        assert np.all(S.data >= 1) and np.all(S.data == np.round(S.data))
        assert np.all(np.asarray(S.sum(axis=1)).ravel() <= W * L)
        rows = np.repeat(np.arange(dst.size), np.diff(S.indptr))
        cols = src[S.indices]
        assert np.all(cols != dst[rows])                       # no visit home
        assert np.all(reach_within(A, dst, L)[rows, cols])      # at most L steps away


def test_invariants_on_cora(cora):
    A = cora.A.to_scipy()
    tops, W, L = [6, 3], 5, 3
    batches = [cora.train_idx[:10], cora.train_idx[10:13], cora.train_idx[13:40]]
    sampler = RandomWalkNeighbourhood(cora.A, tops, walks=W, length=L)
    for seed in range(2):
        for mb, b in zip(sampler.sample(batches, seed=seed, epoch=1), batches):
            check_minibatch(A, mb, b, tops, W, L)


def test_bulk_equals_one_at_a_time_and_reproducible(cora):
    sampler = RandomWalkNeighbourhood(cora.A, [5, 5], walks=4, length=2)
    batches = [cora.train_idx[:20], cora.train_idx[20:21], cora.train_idx[21:60]]
    bulk = sampler.sample(batches, seed=3, epoch=1, batch_ids=[4, 0, 9])
    for i, b in zip([4, 0, 9], batches):
        alone, = sampler.sample([b], seed=3, epoch=1, batch_ids=[i])
        assert alone == bulk[[4, 0, 9].index(i)]
    assert bulk == sampler.sample(batches, seed=3, epoch=1, batch_ids=[4, 0, 9])
    other = sampler.sample(batches, seed=3, epoch=2, batch_ids=[4, 0, 9])
    assert all(a != b for a, b in zip(bulk, other) if a.batch_size > 1)


def test_layers_draw_independently(cora):
    """Each layer walks on streams of its own: the seeds, destinations of both
    layers, get fresh neighbourhoods in the inner layer (were the streams
    shared, every seed's two rows would be identical)."""
    sampler = RandomWalkNeighbourhood(cora.A, [8, 8], walks=5, length=3)
    seeds = cora.train_idx[:100]
    mb, = sampler.sample([seeds], seed=1)
    inner, outer = mb.blocks
    deg = np.diff(cora.A.to_scipy().indptr)[seeds]

    def row(b, r):
        S = b.to_scipy()
        lo, hi = S.indptr[r], S.indptr[r + 1]
        return dict(zip(np.asarray(b.src_nodes)[S.indices[lo:hi]].tolist(), S.data[lo:hi]))

    busy = np.flatnonzero(deg >= 3)
    same = [row(inner, r) == row(outer, r) for r in busy]
    assert busy.size >= 20 and np.mean(same) < 0.5, np.mean(same)


def test_same_minibatches_on_a_distmatrix(cora):
    """On a DistMatrix (one rank here) the rows come from the collective fetch
    ``Sampler._rows``: the minibatches are those of the local graph."""
    batches = [cora.train_idx[:12], cora.train_idx[12:30]]
    local = RandomWalkNeighbourhood(cora.A, [4, 4], walks=3, length=3)
    dist = RandomWalkNeighbourhood(spla.distribute(cora.A), [4, 4], walks=3, length=3)
    assert dist.D is not None
    assert dist.sample(batches, seed=9) == local.sample(batches, seed=9)


def test_refused_arguments(cora):
    f = "^RandomWalkNeighbourhood: argument "
    with pytest.raises(spla.InvalidValue, match=f + "'tops' must be a non-empty list"):
        RandomWalkNeighbourhood(cora.A, [])
    with pytest.raises(spla.InvalidValue, match=f + r"'tops\[1\]' must be a positive "
                                                    r"integer or -1 \(all neighbours\); got 0$"):
        RandomWalkNeighbourhood(cora.A, [3, 0])
    with pytest.raises(spla.InvalidValue, match=f + "'walks' must be an integer >= 1; got 0"):
        RandomWalkNeighbourhood(cora.A, [3], walks=0)
    with pytest.raises(spla.InvalidValue,
                       match=f + r"'length' must be at most 85 steps for 3 layers \(layers "
                             r"\* length <= 256 streams per epoch\); got 86$"):
        RandomWalkNeighbourhood(cora.A, [3, 3, 3], length=86)
    RandomWalkNeighbourhood(cora.A, [3, 3, 3], length=85)        # the limit itself is fine
    s = RandomWalkNeighbourhood(cora.A, [3], walks=2 ** 20)
    n = cora.A.nrows
    huge = 2 ** 63 // (n * 2 ** 20)                               # (huge + 1) * n * W > 2**63
    with pytest.raises(spla.InvalidValue,
                       match=r"^RandomWalkNeighbourhood.sample: argument 'batch_ids' must be "
                             r"ids with \(id \+ 1\)"):
        s.sample([cora.train_idx[:2]], seed=0, batch_ids=[huge])


def test_example_script_runs(capsys):
    runpy.run_path(str(EXAMPLES / "random_walk_sampler.py"), run_name="__main__")
    assert "visit counts of seed 0's neighbourhood" in capsys.readouterr().out
