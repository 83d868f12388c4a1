"""The laws of the samplers' draws, tested by chi-square.

Each test compares many independent draws of the library with a law that
does not come from the library: an exact law enumerated here (uniform
subsets, sequential sampling without replacement, the multinomial), the
papers' probability vectors computed by ``reference_samplers``, or the draws
of the plain reference samplers (two-sample tests).

Independent draws: the library's randomness is counter-based, keyed by
(seed, epoch, layer, minibatch id, vertex).  So every (epoch, minibatch id)
is an independent draw of a minibatch, and two vertices of one minibatch
whose rows differ draw independently too.  We get many draws from one bulk
call: k copies of a minibatch under ids 0..k-1 (layer-wise samplers), or one
minibatch holding the centres of R disjoint copies of a star (node-wise).

Significance: every test runs at ALPHA = 1e-3; a test that makes m
comparisons gives each ALPHA / m (Bonferroni), so each test falsely rejects
a correct sampler with probability at most 1e-3, and the whole file (about
25 tests) with probability at most about 2.5% (Bonferroni over the tests).
The master seed is fixed, so the outcome is deterministic: a correct
implementation that passes once passes always.
"""

import itertools
from collections import Counter

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

import spla
from sampling import FastGCN, GraphSAGE, LADIES
from sampling.datasets import load

import reference_samplers as ref

ALPHA = 1e-3
MASTER_SEED = 0x5EED_2024
MIN_EXPECTED = 5.0   # categories with a smaller expected count are pooled


# ---------------------------------------------------------------------------
# Chi-square helpers
# ---------------------------------------------------------------------------

def gof_statistic(counts, law):
    """(statistic, degrees of freedom) of observed ``counts`` against ``law``.

    ``counts``: category -> observed count; ``law``: category -> probability
    (every category with positive probability).  Categories with an expected
    count below MIN_EXPECTED are pooled into one; an observed category
    outside the law makes the statistic infinite.
    """
    n = sum(counts.values())
    outside = set(counts) - {c for c, p in law.items() if p > 0}
    if outside:
        return np.inf, 1
    obs, exp = [], []
    pooled_o, pooled_e = 0.0, 0.0
    for c, p in law.items():
        if p <= 0:
            continue
        e = n * p
        if e < MIN_EXPECTED:
            pooled_o += counts.get(c, 0)
            pooled_e += e
        else:
            obs.append(counts.get(c, 0))
            exp.append(e)
    if pooled_e > 0:
        obs.append(pooled_o)
        exp.append(pooled_e)
    obs, exp = np.array(obs, float), np.array(exp, float)
    if obs.size < 2:
        return 0.0, 0
    return float(((obs - exp) ** 2 / exp).sum()), obs.size - 1


def gof_pvalue(counts, law):
    stat, df = gof_statistic(counts, law)
    if df == 0:
        return 1.0
    return float(stats.chi2.sf(stat, df))


def two_sample_pvalue(a, b):
    """Chi-square test of homogeneity of two samples of categories (Counters)."""
    cats = sorted(set(a) | set(b), key=repr)
    rows, pooled = [], np.zeros(2)
    for c in cats:
        pair = np.array([a.get(c, 0), b.get(c, 0)], float)
        if pair.sum() < 2 * MIN_EXPECTED:
            pooled += pair
        else:
            rows.append(pair)
    if pooled.sum() > 0:
        rows.append(pooled)
    table = np.array(rows).T
    if table.shape[1] < 2:
        return 1.0
    return float(stats.chi2_contingency(table, correction=False)[1])


def assert_fits(p, alpha=ALPHA, what=""):
    assert p > alpha, f"{what}: p-value {p:.3g} <= {alpha:.3g}"


# ---------------------------------------------------------------------------
# Draw generators
# ---------------------------------------------------------------------------

def star_forest(R, weights):
    """R disjoint stars ``centre -> d leaves`` (directed), leaf weights shared.

    Centre r is vertex ``r (d + 1)``, its leaves the d vertices after it.
    """
    d = len(weights)
    n = R * (d + 1)
    centres = np.arange(R, dtype=np.int64) * (d + 1)
    indptr = np.zeros(n + 1, np.int64)
    indptr[centres + 1] = d
    indptr = np.cumsum(indptr)
    indices = (centres[:, None] + 1 + np.arange(d)[None, :]).ravel()
    values = np.tile(np.asarray(weights, np.float64), R)
    return spla.Matrix.from_csr(indptr, indices, values, (n, n)), centres


def star_draws(weights, fanout, *, replace, weighted, R=5000, epochs=4):
    """Per draw (R x epochs of them): the picked leaf subset or count vector."""
    A, centres = star_forest(R, weights)
    sampler = GraphSAGE(A, [fanout], replace=replace, weighted=weighted)
    d = len(weights)
    keys = []
    for epoch in range(epochs):
        mb, = sampler.sample([centres], seed=MASTER_SEED, epoch=epoch)
        S = mb.blocks[0].to_scipy()
        src = np.asarray(mb.blocks[0].src_nodes)
        rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
        leaf = src[S.indices] - centres[rows] - 1
        assert np.all((0 <= leaf) & (leaf < d))
        if replace:   # the count vector, as base-(fanout + 1) digits
            code = np.rint(S.data).astype(np.int64) * (fanout + 1) ** leaf
        else:         # the subset, as a bit mask
            code = np.left_shift(1, leaf)
        keys.append(np.bincount(rows, weights=code, minlength=S.shape[0]).astype(np.int64))
    return Counter(np.concatenate(keys).tolist())


def subset_code(subset):
    return sum(1 << j for j in subset)


def counts_code(counts, fanout):
    return sum(c * (fanout + 1) ** j for j, c in enumerate(counts))


def minibatch_draws(sampler, batch, key, *, k=5000, epochs=4):
    """Categories ``key(mb)`` of k x epochs independent draws of one minibatch."""
    out = Counter()
    for epoch in range(epochs):
        for mb in sampler.sample([batch] * k, seed=MASTER_SEED, epoch=epoch):
            out[key(mb)] += 1
    return out


# ---------------------------------------------------------------------------
# GraphSAGE
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("degree,fanout", [(6, 2), (6, 3), (5, 4)])
def test_graphsage_uniform_without_replacement(degree, fanout):
    """Every fanout-subset of the neighbours equally likely; hence each
    neighbour is included with probability fanout / degree."""
    counts = star_draws([1.0] * degree, fanout, replace=False, weighted=False)
    n = sum(counts.values())
    subsets = list(itertools.combinations(range(degree), fanout))
    law = {subset_code(s): 1.0 / len(subsets) for s in subsets}
    # two comparisons (the subset law, then the d inclusion frequencies)
    assert_fits(gof_pvalue(counts, law), ALPHA / 2, "subset law")
    for j in range(degree):
        hits = sum(c for code, c in counts.items() if code >> j & 1)
        p = stats.binomtest(hits, n, fanout / degree).pvalue
        assert_fits(p, ALPHA / 2 / degree, f"inclusion of neighbour {j}")


def test_graphsage_uniform_inclusion_on_cora():
    """On Cora, with several seeds per minibatch: P(u sampled by v) = f / deg(v)."""
    data = load("cora")
    deg = np.asarray(data.A.row_degrees())
    seeds = np.array([v for v in data.train_idx if 5 <= deg[v] <= 12][:6], np.int64)
    assert seeds.size == 6
    fanout = 4
    sampler = GraphSAGE(data.A, [fanout])
    hits = Counter()
    k, epochs = 3000, 2
    for epoch in range(epochs):
        for mb in sampler.sample([seeds] * k, seed=MASTER_SEED, epoch=epoch):
            b = mb.blocks[0]
            S = b.to_scipy()
            rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))
            src = np.asarray(b.src_nodes)
            hits.update(zip(seeds[rows].tolist(), src[S.indices].tolist()))
    A = data.A.to_scipy()
    pairs = [(int(v), int(u)) for v in seeds for u in A[v].indices]
    assert set(hits) <= set(pairs)
    n = k * epochs
    for v, u in pairs:
        p = stats.binomtest(hits[(v, u)], n, fanout / deg[v]).pvalue
        assert_fits(p, ALPHA / len(pairs), f"inclusion of {u} among the neighbours of {v}")


WEIGHTS = {
    "light": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    # one dominant neighbour: the kernel's rejection budget runs out and the
    # exact linear-scan fallback makes the remaining picks
    "heavy": [60.0, 1.0, 1.0, 2.0, 0.5, 3.0],
    "zeros": [0.0, 1.0, 2.5, 0.0, 3.0, 1.5],
}


@pytest.mark.parametrize("fanout", [2, 3])
@pytest.mark.parametrize("name", sorted(WEIGHTS))
def test_graphsage_weighted_without_replacement_exact_law(name, fanout):
    """The picked set follows sequential sampling without replacement exactly
    (law enumerated over ordered picks)."""
    w = WEIGHTS[name]
    counts = star_draws(w, fanout, replace=False, weighted=True)
    law = {subset_code(s): p for s, p in ref.subset_law(w, fanout).items()}
    assert_fits(gof_pvalue(counts, law), ALPHA, f"subset law for weights {w}")


@pytest.mark.parametrize("weighted", [False, True])
def test_graphsage_with_replacement_multinomial(weighted):
    """With replacement, a row's count vector is Multinomial(fanout, w / sum(w))."""
    w = [1.0, 2.0, 0.5, 4.0] if weighted else [1.0] * 4
    fanout = 3
    counts = star_draws(w, fanout, replace=True, weighted=weighted)
    law = {counts_code(c, fanout): p for c, p in ref.multinomial_law(w, fanout).items()}
    assert_fits(gof_pvalue(counts, law), ALPHA, "count-vector law")


# ---------------------------------------------------------------------------
# LADIES and FastGCN: per-layer picks against the papers' probabilities
# ---------------------------------------------------------------------------

def tiny_weighted_graph():
    """8 vertices, symmetric, uneven weights (so p is far from uniform)."""
    edges = [(0, 1, 1.0), (0, 2, 2.0), (0, 3, 0.5), (1, 2, 1.0), (3, 4, 3.0),
             (4, 5, 1.0), (2, 6, 1.5), (6, 7, 1.0), (5, 7, 2.0), (1, 7, 0.25)]
    r = [u for u, v, w in edges] + [v for u, v, w in edges]
    c = [v for u, v, w in edges] + [u for u, v, w in edges]
    w = [w for u, v, w in edges] * 2
    S = sp.csr_matrix((w, (r, c)), shape=(8, 8))
    S.sort_indices()
    return S


TINY = tiny_weighted_graph()
TINY_BATCH = np.array([0, 4], np.int64)
LAYERWISE = {"ladies": (LADIES, ref.ladies_probabilities),
             "fastgcn": (FastGCN, lambda Ahat, dst: ref.fastgcn_probabilities(Ahat))}


def new_vertices(block):
    return frozenset(np.asarray(block.src_nodes)[block.num_dst:].tolist())


def picks_law(p, s, dst):
    """Law of (the s sequential picks without replacement) minus dst."""
    law = Counter()
    for subset, prob in ref.subset_law(p, s).items():
        law[frozenset(subset) - set(dst)] += prob
    return law


@pytest.mark.parametrize("kind", sorted(LAYERWISE))
def test_layerwise_single_pick_is_exactly_p(kind):
    """s = 1 per layer: the pick is vertex j with probability exactly p_j.

    Two layers: the inner layer's law is checked conditionally on the outer
    layer's outcome (its destinations), summing the independent per-group
    chi-square statistics.  The observed category is the new source vertex,
    or none when the pick is already a destination."""
    cls, probabilities = LAYERWISE[kind]
    Ahat = ref.normalized_adjacency(TINY)
    sampler = cls(spla.Matrix.from_scipy(TINY), [1, 1])
    groups = {}
    for epoch in range(3):
        for mb in sampler.sample([TINY_BATCH] * 5000, seed=MASTER_SEED, epoch=epoch):
            for b in mb.blocks:
                dst = tuple(np.asarray(b.dst_nodes).tolist())
                groups.setdefault(dst, Counter())[new_vertices(b)] += 1
    outer = tuple(TINY_BATCH.tolist())
    assert outer in groups
    total_stat, total_df = 0.0, 0
    for dst, counts in groups.items():
        law = picks_law(probabilities(Ahat, list(dst)), 1, dst)
        stat, df = gof_statistic(counts, law)
        if dst == outer:   # the outer layer alone, exact law p
            assert_fits(stats.chi2.sf(stat, df), ALPHA / 2, f"layer of the seeds {dst}")
        total_stat += stat
        total_df += df
    assert_fits(stats.chi2.sf(total_stat, total_df), ALPHA / 2, "both layers, conditionally")


@pytest.mark.parametrize("s", [2, 3])
@pytest.mark.parametrize("kind", sorted(LAYERWISE))
def test_layerwise_picks_follow_sequential_law(kind, s):
    """s > 1: the set of new vertices follows the enumerated law of s
    sequential picks without replacement from p, minus the destinations."""
    cls, probabilities = LAYERWISE[kind]
    Ahat = ref.normalized_adjacency(TINY)
    sampler = cls(spla.Matrix.from_scipy(TINY), [s])
    counts = minibatch_draws(sampler, TINY_BATCH, lambda mb: new_vertices(mb.blocks[0]))
    law = picks_law(probabilities(Ahat, TINY_BATCH.tolist()), s, TINY_BATCH.tolist())
    assert_fits(gof_pvalue(counts, law), ALPHA, f"{kind}, s={s}")


def test_ladies_inclusion_on_cora_matches_p_for_single_pick():
    """LADIES on Cora, s = 1: the pick of a real minibatch is j w.p. p_j."""
    data = load("cora")
    A = data.A.to_scipy()
    batch = np.asarray(data.train_idx[:3], np.int64)
    p = ref.ladies_probabilities(ref.normalized_adjacency(A), batch.tolist())
    law = picks_law(p, 1, batch.tolist())
    counts = minibatch_draws(LADIES(data.A, [1]), batch, lambda mb: new_vertices(mb.blocks[0]),
                             k=5000, epochs=2)
    assert_fits(gof_pvalue(counts, law), ALPHA, "LADIES s=1 on Cora")


# ---------------------------------------------------------------------------
# Library against the plain reference samplers (two-sample tests)
# ---------------------------------------------------------------------------

def layer_sets(blocks_src):
    return tuple(frozenset(np.asarray(s).tolist()) for s in blocks_src)


def graphsage_edges(blocks):
    """Per block, the set of (dst, src, value) in global ids.

    ``blocks``: (indptr, indices, values or None, dst, src) per block.
    """
    out = []
    for indptr, indices, values, dst, src in blocks:
        rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        vals = np.ones(len(indices)) if values is None else np.asarray(values, np.float64)
        out.append(frozenset(zip(np.asarray(dst)[rows].tolist(),
                                 np.asarray(src)[np.asarray(indices)].tolist(),
                                 np.round(vals, 6).tolist())))
    return tuple(out)


SMALL = tiny_weighted_graph()
SMALL_HAT = ref.normalized_adjacency(SMALL)
REFERENCE_CASES = {
    # name: (library sampler factory, reference function, key of a draw)
    "graphsage-uniform": (
        lambda: GraphSAGE(spla.Matrix.from_scipy(SMALL), [2, 2]),
        lambda rng: ref.graphsage(SMALL, [0, 4], [2, 2], rng), "edges"),
    "graphsage-weighted": (
        lambda: GraphSAGE(spla.Matrix.from_scipy(SMALL), [2, 1], weighted=True),
        lambda rng: ref.graphsage(SMALL, [0, 4], [2, 1], rng, weighted=True), "edges"),
    "graphsage-weighted-replace": (
        lambda: GraphSAGE(spla.Matrix.from_scipy(SMALL), [2, 1], replace=True, weighted=True),
        lambda rng: ref.graphsage(SMALL, [0, 4], [2, 1], rng, replace=True, weighted=True),
        "edges"),
    "ladies": (
        lambda: LADIES(spla.Matrix.from_scipy(SMALL), [2, 2]),
        lambda rng: ref.ladies(SMALL, [0, 4], [2, 2], rng, Ahat=SMALL_HAT), "sets"),
    "fastgcn": (
        lambda: FastGCN(spla.Matrix.from_scipy(SMALL), [2, 2]),
        lambda rng: ref.fastgcn(SMALL, [0, 4], [2, 2], rng, Ahat=SMALL_HAT), "sets"),
}


@pytest.mark.parametrize("name", sorted(REFERENCE_CASES))
def test_library_matches_reference_in_distribution(name):
    make, reference, key = REFERENCE_CASES[name]
    n_lib, n_ref = 8000, 8000
    if key == "edges":
        def lib_key(mb):
            return graphsage_edges([(b.adj.indptr, b.adj.indices, b.adj.values,
                                     b.dst_nodes, b.src_nodes) for b in mb.blocks])

        def ref_key(blocks):
            return tuple(frozenset((u, v, round(x, 6)) for u, v, x in b.edges())
                         for b in blocks)
    else:
        def lib_key(mb):
            return layer_sets([b.src_nodes for b in mb.blocks])

        def ref_key(blocks):
            return layer_sets([b.src for b in blocks])
    lib = minibatch_draws(make(), np.array([0, 4]), lib_key, k=n_lib // 2, epochs=2)
    rng = np.random.default_rng(MASTER_SEED)
    refd = Counter(ref_key(reference(rng)) for _ in range(n_ref))
    assert_fits(two_sample_pvalue(lib, refd), ALPHA, name)


def test_graphsage_input_size_matches_reference_on_cora():
    """Two-sample test on Cora: the law of the number of input vertices of a
    2-layer GraphSAGE minibatch (overlaps between neighbourhoods included)."""
    data = load("cora")
    A = data.A.to_scipy()
    batch = np.asarray(data.train_idx[10:14], np.int64)
    fanouts = [5, 3]
    lib = minibatch_draws(GraphSAGE(data.A, fanouts), batch,
                          lambda mb: mb.blocks[0].num_src, k=3000, epochs=2)
    rng = np.random.default_rng(MASTER_SEED + 1)
    refd = Counter(ref.graphsage(A, batch, fanouts, rng)[0].src.size for _ in range(3000))
    assert_fits(two_sample_pvalue(lib, refd), ALPHA, "input-layer size on Cora")
