"""sample_rows: invariants, exact laws, counter-based invariance, fused path.

Statistical tests
-----------------
Every distribution test draws from a FIXED seed (``MASTER_SEED`` plus a
per-test offset), so its outcome is deterministic: it either always passes
or always fails.  Each compares observed counts with the exact law by a
chi-square goodness-of-fit test (``scipy.stats.chisquare``; bins expected
below 5 are pooled, and a pooled bin expected below 5 gets an exact binomial
test instead) and/or exact two-sided binomial tests of per-entry inclusion
counts.  The p-values of one test are combined by Bonferroni (the smallest
times their number) and compared with ``ALPHA = 1e-4``.

Why a false failure is negligible: under a correct sampler the chance that a
given test's seed lands in its rejection region is at most ``ALPHA``; this
file holds fewer than 50 such tests (``N_STAT_TESTS`` bounds it), so by
Bonferroni the chance that the fixed seeds make *any* of them fail is below
``50 * 1e-4 = 0.5 %`` -- and since the seeds are fixed, a pass is a pass for
good.  The power is large: each test draws 20,000-40,000 independent rows
(one call on a matrix of identical rows, each row id an independent draw),
and ``test_statistics_reject_wrong_laws`` shows the same machinery rejects
the plausible wrong laws by a huge margin.

Sampling without replacement must follow the *sequential* law: the first
pick is ``j`` with probability ``w_j / W``, the next one is drawn from the
remaining mass, and so on.  The tests enumerate all ordered ``k``-tuples of
small rows (``d <= 6``) to get the exact law of the picked ``k``-subset.
"""

import itertools
import re
import math

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import kernels.cpu.sample as cpu_sample
import spla
from spla import Matrix

try:
    from strategies import (SETTINGS, assert_canonical, make_twin, masks, rows_dict,
                            uniform_rows_matrix)
except ImportError:  # collected as a package
    from tests.strategies import (SETTINGS, assert_canonical, make_twin, masks, rows_dict,
                                  uniform_rows_matrix)

MASTER_SEED = 0x5EED_0F_5A3B1E
ALPHA = 1e-4
N_STAT_TESTS = 50  # upper bound on the statistical tests below (see module doc)

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


# ---------------------------------------------------------------------------
# exact laws and test statistics
# ---------------------------------------------------------------------------

def sequential_subset_law(w, k):
    """Exact law of the k-subset picked by sequential sampling without
    replacement, by enumerating every ordered k-tuple of positive entries.

    Returns ``{sorted tuple of positions: probability}``.
    """
    w = [float(x) for x in w]
    total = sum(w)
    law = {}
    for tup in itertools.permutations([j for j, x in enumerate(w) if x > 0], k):
        p, rem = 1.0, total
        for j in tup:
            p *= w[j] / rem
            rem -= w[j]
        key = tuple(sorted(tup))
        law[key] = law.get(key, 0.0) + p
    assert abs(sum(law.values()) - 1.0) < 1e-12
    return law


def inclusion_probabilities(law, d):
    pi = np.zeros(d)
    for subset, p in law.items():
        pi[list(subset)] += p
    return pi


def multinomial_pvalue(counts, probs):
    """p-value of observed category counts against category probabilities."""
    counts = np.asarray(counts, np.float64)
    probs = np.asarray(probs, np.float64)
    assert counts.shape == probs.shape
    n = counts.sum()
    exp = n * probs
    small = exp < 5
    if not small.any():
        return stats.chisquare(counts, exp).pvalue
    pooled_obs, pooled_exp = counts[small].sum(), exp[small].sum()
    if pooled_exp >= 5:
        obs = np.append(counts[~small], pooled_obs)
        e = np.append(exp[~small], pooled_exp)
        return stats.chisquare(obs, e).pvalue
    # The rare categories together are expected less than 5 times: exact
    # binomial test of their total, chi-square of the rest given that total.
    p_rare = stats.binomtest(int(pooled_obs), int(n), min(1.0, pooled_exp / n)).pvalue
    rest_obs, rest_exp = counts[~small], exp[~small]
    if rest_obs.size < 2:
        return p_rare
    rest_exp = rest_exp * rest_obs.sum() / rest_exp.sum()
    return min(1.0, 2 * min(p_rare, stats.chisquare(rest_obs, rest_exp).pvalue))


def binomial_pvalues(counts, n, probs):
    """Exact two-sided binomial p-value of every count (probability in (0, 1))."""
    out = []
    for c, p in zip(counts, probs):
        if p >= 1.0:
            assert c == n
            continue
        if p <= 0.0:
            assert c == 0
            continue
        out.append(stats.binomtest(int(c), int(n), float(p)).pvalue)
    return out


def assert_bonferroni(pvalues, what):
    pvalues = list(pvalues)
    assert pvalues, "no test statistic"
    worst = min(pvalues) * len(pvalues)
    assert worst >= ALPHA, f"{what}: Bonferroni p = {worst:.3g} < {ALPHA} ({pvalues})"


# ---------------------------------------------------------------------------
# drawing many independent samples of one row
# ---------------------------------------------------------------------------

def sample_identical_rows(w, k, n, seed, *, replace=False, structural=False,
                          dtype=F64, path="materialised", return_counts=False):
    """``sample_rows`` of ``n`` identical rows of weights ``w``.

    Every row has its own row id (its position), hence an independent draw.
    ``path='fused'`` samples a lazy ``Q @ A`` (A holds the row once, Q selects
    it ``n`` times) instead of the materialised matrix.
    """
    if path == "materialised":
        P = uniform_rows_matrix(w, n, dtype=dtype, structural=structural)
    else:
        A = uniform_rows_matrix(w, 1, dtype=dtype, structural=structural)
        Q = Matrix.from_coo(np.arange(n), np.zeros(n, np.int64), shape=(n, 1))
        P = Q @ A
        assert isinstance(P, spla.MxmExpr)
    return spla.sample_rows(P, k, seed=seed, replace=replace, return_counts=return_counts)


def subset_counts(S, k, law):
    """Counts of the picked k-subsets, in the order of ``law``'s keys."""
    deg = np.diff(S.indptr)
    assert np.all(deg == k), "every row must hold exactly k picks"
    picks = np.asarray(S.indices, np.int64).reshape(-1, k)
    keys = list(law)
    index = {key: t for t, key in enumerate(keys)}
    counts = np.zeros(len(keys), np.int64)
    for row in map(tuple, picks):
        assert row in index, f"picked subset {row} has probability 0"
        counts[index[row]] += 1
    return counts, np.array([law[key] for key in keys])


# ---------------------------------------------------------------------------
# exact laws: with replacement
# ---------------------------------------------------------------------------

REPLACE_CASES = [
    # id, weights, dtype, structural
    ("uniform-structural", np.ones(7), F64, True),
    ("uniform-valued-float32", np.full(5, 2.5), F32, False),
    ("skewed-float64", np.array([1, 2, 4, 8, 16, 0, 0.5]), F64, False),
    ("skewed-float32", np.array([0.1, 3, 0.2, 7, 0, 1]), F32, False),
    ("skewed-int64", np.array([1, 0, 5, 2, 9]), np.dtype(np.int64), False),
    ("heavy", np.array([1000, 1, 1, 1, 1]), F64, False),
]


def _paths(cases, dtype_of):
    """(case, path) pairs: both paths, integer weights on the materialised one."""
    out = []
    for c in cases:
        for path in ("materialised", "fused"):
            if path == "fused" and np.dtype(dtype_of(c)).kind == "i":
                continue  # keeps compilations down; the fused path is
                #           compared with the materialised one exactly below
            out.append(pytest.param(c, path, id=f"{c[0]}-{path}"))
    return out


@pytest.mark.parametrize("case, path", _paths(REPLACE_CASES, lambda c: c[2]))
def test_with_replacement_pick_law(case, path):
    name, w, dtype, structural = case
    n, k = 20000, 3
    seed = MASTER_SEED + 101 + [c[0] for c in REPLACE_CASES].index(name)
    S, counts = sample_identical_rows(w, k, n, seed, replace=True, structural=structural,
                                      dtype=dtype, path=path, return_counts=True)
    assert_canonical(S)
    # each row holds k draws, folded into distinct entries with counts
    per_row = np.add.reduceat(counts, np.asarray(S.indptr[:-1])) if S.nnz else counts
    np.testing.assert_array_equal(per_row, np.full(n, k))
    assert np.all(counts >= 1)
    totals = np.bincount(np.asarray(S.indices), weights=counts, minlength=w.size)
    wf = w.astype(np.float64)
    assert np.all(totals[wf == 0] == 0), "a zero-weight entry was drawn"
    pos = wf > 0
    assert_bonferroni([multinomial_pvalue(totals[pos], wf[pos] / wf.sum())], name)


@pytest.mark.parametrize("w, law", [
    ([1.0, 1.0], {(0, 0): 0.25, (0, 1): 0.5, (1, 1): 0.25}),
    ([1.0, 3.0], {(0, 0): 1 / 16, (0, 1): 6 / 16, (1, 1): 9 / 16}),
], ids=["uniform", "skewed"])
def test_with_replacement_draws_within_a_row_are_independent(w, law):
    # k = 2 draws of a 2-entry row: the multiset {first, second} has the law
    # of two independent draws (not visible in the marginals).
    n = 20000
    S, counts = spla.sample_rows(uniform_rows_matrix(w, n), 2, seed=MASTER_SEED + 201,
                                 replace=True, return_counts=True)
    obs = {key: 0 for key in law}
    deg = np.diff(S.indptr)
    for i in range(n):
        lo = int(S.indptr[i])
        if deg[i] == 1:
            j = int(S.indices[lo])
            assert counts[lo] == 2
            obs[(j, j)] += 1
        else:
            assert deg[i] == 2 and counts[lo] == counts[lo + 1] == 1
            obs[(0, 1)] += 1
    keys = list(law)
    assert_bonferroni([multinomial_pvalue([obs[key] for key in keys],
                                          [law[key] for key in keys])], str(w))


# ---------------------------------------------------------------------------
# exact laws: without replacement (enumerated sequential law)
# ---------------------------------------------------------------------------

NOREPLACE_CASES = [
    # id, weights, k, dtype
    ("d6-k2", [1, 2, 3, 4, 5, 6], 2, F64),
    ("d6-k3", [1, 2, 3, 4, 5, 6], 3, F64),
    ("zeros-d6-k2", [0.5, 3, 0, 1, 7, 0], 2, F64),
    ("d4-k3", [10, 1, 1, 5], 3, F64),
    ("float32-d5-k2", [0.25, 1.5, 0.75, 3.0, 0.5], 2, F32),
    ("int64-d6-k3", [3, 1, 4, 1, 5, 9], 3, np.dtype(np.int64)),
    # heavy rows: rejection stalls and the linear-scan fallback of
    # kernels/its.py makes the last picks
    ("heavy-equal-tail", [1000, 1, 1, 1, 1], 3, F64),
    ("heavy-skewed-tail", [1000, 1, 2, 3, 4], 3, F64),
    ("two-heavy", [300, 200, 1, 2, 1, 3], 3, F32),
]


@pytest.mark.parametrize("case, path", _paths(NOREPLACE_CASES, lambda c: c[3]))
def test_without_replacement_follows_sequential_law(case, path):
    name, w, k, dtype = case
    n = 30000
    seed = MASTER_SEED + 301 + [c[0] for c in NOREPLACE_CASES].index(name)
    S = sample_identical_rows(np.array(w), k, n, seed, dtype=dtype, path=path)
    assert_canonical(S)
    law = sequential_subset_law(w, k)
    counts, probs = subset_counts(S, k, law)
    # distribution over k-subsets
    pvals = [multinomial_pvalue(counts, probs)]
    # per-entry inclusion: Binomial(n, pi_j) exactly (rows are independent)
    inc = np.bincount(np.asarray(S.indices), minlength=len(w))
    pvals += binomial_pvalues(inc, n, inclusion_probabilities(law, len(w)))
    assert_bonferroni(pvals, name)
    # values are those of the picked entries
    np.testing.assert_array_equal(S.values, np.asarray(w, dtype)[np.asarray(S.indices)])


UNIFORM_CASES = [
    # id, d, k, structural
    ("structural-d6-k3", 6, 3, True),
    ("structural-d7-k4", 7, 4, True),
    ("valued-d5-k2", 5, 2, False),
    ("structural-d6-k1", 6, 1, True),
]


@pytest.mark.parametrize("path", ["materialised", "fused"])
@pytest.mark.parametrize("case", UNIFORM_CASES, ids=[c[0] for c in UNIFORM_CASES])
def test_without_replacement_uniform_rows_give_uniform_subsets(case, path):
    name, d, k, structural = case
    n = 30000
    seed = MASTER_SEED + 401 + [c[0] for c in UNIFORM_CASES].index(name)
    S = sample_identical_rows(np.full(d, 0.75), k, n, seed, structural=structural, path=path)
    law = {subset: 1 / math.comb(d, k) for subset in itertools.combinations(range(d), k)}
    counts, probs = subset_counts(S, k, law)
    inc = np.bincount(np.asarray(S.indices), minlength=d)
    assert_bonferroni([multinomial_pvalue(counts, probs)]
                      + binomial_pvalues(inc, n, np.full(d, k / d)), name)


def test_statistics_reject_wrong_laws():
    # Power check of the machinery above: on a sample of the sequential law,
    # the conditional-Poisson law (subset probability proportional to the
    # product of its weights) and "inclusion proportional to weight" are
    # plausible wrong answers; both must be rejected far below ALPHA.
    w, k, n = [1, 2, 3, 4, 5, 6], 3, 30000
    S = sample_identical_rows(np.array(w, float), k, n, MASTER_SEED + 501)
    law = sequential_subset_law(w, k)
    counts, probs = subset_counts(S, k, law)
    assert multinomial_pvalue(counts, probs) >= ALPHA
    cps = np.array([np.prod([w[j] for j in key]) for key in law])
    assert multinomial_pvalue(counts, cps / cps.sum()) < ALPHA * 1e-6
    inc = np.bincount(np.asarray(S.indices), minlength=len(w))
    naive = np.minimum(1.0, k * np.array(w) / sum(w))
    assert min(binomial_pvalues(inc, n, naive)) < ALPHA * 1e-6


@pytest.mark.parametrize("structural", [True, False])
def test_consecutive_row_ids_are_independent(structural):
    # Rows 2i and 2i+1 are sampled with adjacent row ids: the pair of picks
    # must be uniform over the d*d combinations (a weak row-key mixer would
    # correlate them).
    d, n = 3, 30000
    w = np.ones(d) if structural else np.array([1.0, 2.0, 3.0])
    S = spla.sample_rows(uniform_rows_matrix(w, n, structural=structural), 1,
                         seed=MASTER_SEED + 601)
    picks = np.asarray(S.indices, np.int64).reshape(-1, 2)
    obs = np.bincount(picks[:, 0] * d + picks[:, 1], minlength=d * d)
    p = w / w.sum()
    assert_bonferroni([multinomial_pvalue(obs, np.outer(p, p).ravel())], "pairs")


def test_adjacent_seeds_and_streams_are_independent():
    d, n = 4, 20000
    P = uniform_rows_matrix(np.ones(d), n, structural=True)
    a = np.asarray(spla.sample_rows(P, 1, seed=MASTER_SEED + 701).indices, np.int64)
    b = np.asarray(spla.sample_rows(P, 1, seed=MASTER_SEED + 702).indices, np.int64)
    c = np.asarray(spla.sample_rows(P, 1, seed=MASTER_SEED + 701, stream=1).indices,
                   np.int64)
    uniform = np.full(d * d, 1 / d**2)
    assert_bonferroni([multinomial_pvalue(np.bincount(a * d + b, minlength=d * d), uniform),
                       multinomial_pvalue(np.bincount(a * d + c, minlength=d * d), uniform)],
                      "seed/stream pairs")


# ---------------------------------------------------------------------------
# invariants (property based)
# ---------------------------------------------------------------------------

WEIGHTS = st.sampled_from([0.0, 0.0, 0.5, 1.0, 1.0, 2.0, 3.0, 1000.0])


@st.composite
def sample_inputs(draw):
    nrows, ncols = draw(st.integers(0, 8)), draw(st.integers(0, 8))
    mask = draw(masks((nrows, ncols)))
    idt = draw(st.sampled_from([np.int32, np.int64]))
    vdt = draw(st.sampled_from([None, F32, F64, np.dtype(np.int64)]))
    vals = None
    if vdt is not None:
        vals = np.array(draw(st.lists(WEIGHTS, min_size=int(mask.sum()),
                                      max_size=int(mask.sum()))), dtype=vdt)
    P = make_twin(mask, vals, vdt, idt).M
    if draw(st.booleans()):
        k = draw(st.integers(1, 5))
    else:
        k = np.array(draw(st.lists(st.integers(0, 5), min_size=nrows, max_size=nrows)),
                     np.int64)
    return P, k, draw(st.booleans()), draw(st.integers(0, 2**64 - 1))


@SETTINGS
@given(sample_inputs())
def test_sample_invariants(inp):
    P, k, replace, seed = inp
    S, counts = spla.sample_rows(P, k, seed=seed, replace=replace, return_counts=True)
    assert_canonical(S)
    assert S.shape == P.shape and S.dtype == P.dtype
    assert counts.shape == (S.nnz,) and counts.dtype.kind == "i"
    if not replace:
        np.testing.assert_array_equal(counts, 1)
    p_rows, s_rows = rows_dict(P), rows_dict(S)
    ks = np.broadcast_to(k, (P.nrows,))
    for i in range(P.nrows):
        prow, srow = p_rows[i], s_rows[i]
        positive = {j for j, v in prow.items() if v > 0}
        kk = int(ks[i])
        # every pick is an entry of P, with P's value, of positive weight
        for j, v in srow.items():
            assert j in prow and v == prow[j]
            assert j in positive, f"row {i}: picked {j} of weight 0"
        row_counts = counts[int(S.indptr[i]):int(S.indptr[i + 1])]
        if not positive or kk == 0:
            assert not srow, f"row {i}: picks from a zero-total row or k = 0"
        elif replace:
            assert len(srow) <= min(kk, len(positive))
            assert int(row_counts.sum()) == kk and np.all(row_counts >= 1)
        else:
            # distinct picks (canonical rows), exactly min(k, positives) of them
            assert len(srow) == min(kk, len(positive))
            if len(positive) <= kk:
                assert set(srow) == positive
    # deterministic
    again = spla.sample_rows(P, k, seed=seed, replace=replace)
    assert again.isequal(S)


def test_small_rows_keep_exactly_their_positive_entries():
    P = Matrix.from_csr([0, 3, 5, 5, 8], [0, 2, 5, 1, 3, 0, 4, 5],
                        np.array([2.0, 0.0, 1.0, 5.0, 5.0, 0.0, 0.0, 0.0]), shape=(4, 6))
    S = spla.sample_rows(P, 2, seed=MASTER_SEED)
    assert rows_dict(S) == {0: {0: 2.0, 5: 1.0}, 1: {1: 5.0, 3: 5.0}, 2: {}, 3: {}}
    S1 = spla.sample_rows(P, [1, 0, 3, 3], seed=MASTER_SEED)
    np.testing.assert_array_equal(S1.row_degrees(), [1, 0, 0, 0])
    R, c = spla.sample_rows(P, 4, seed=MASTER_SEED, replace=True, return_counts=True)
    np.testing.assert_array_equal(np.add.reduceat(c, [0, int(R.indptr[1])]), [4, 4])
    np.testing.assert_array_equal(R.row_degrees()[2:], [0, 0])


def test_structural_matrix_gives_structural_sample():
    P = Matrix.from_coo([0, 0, 0, 1], [0, 1, 2, 2], shape=(2, 3))
    S = spla.sample_rows(P, 2, seed=1)
    assert S.is_structural
    np.testing.assert_array_equal(S.row_degrees(), [2, 1])
    assert set(np.asarray(S.indices[:2]).tolist()) <= {0, 1, 2}
    assert int(S.indices[2]) == 2


# ---------------------------------------------------------------------------
# counter-based randomness: invariance and sensitivity
# ---------------------------------------------------------------------------

def random_weighted(n, ncols, seed, *, dtype=F32, structural=False, max_deg=9):
    rng = np.random.default_rng(seed)
    deg = rng.integers(0, max_deg + 1, n)
    deg[::7] = 0
    rows, cols = [], []
    for i, d in enumerate(deg):
        c = np.sort(rng.choice(ncols, size=min(d, ncols), replace=False))
        rows += [i] * c.size
        cols += c.tolist()
    vals = None
    if not structural:
        vals = rng.choice([0.0, 0.5, 1.0, 2.0, 3.0, 40.0, 1000.0], size=len(rows)).astype(dtype)
        vals[::5] = 1.0  # some ties
    return Matrix.from_coo(rows, cols, vals, shape=(n, ncols))


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("structural", [False, True])
def test_same_picks_one_at_a_time_together_or_shuffled(replace, structural):
    P = random_weighted(60, 12, 1, structural=structural)
    seed, k = MASTER_SEED + 11, 3
    S, c = spla.sample_rows(P, k, seed=seed, replace=replace, return_counts=True)
    s_rows = rows_dict(S)
    # one row at a time, each with its own row id
    for i in range(P.nrows):
        Si, ci = spla.sample_rows(spla.extract_rows(P, [i]), k, seed=seed, row_ids=[i],
                                  replace=replace, return_counts=True)
        assert rows_dict(Si)[0] == s_rows[i], f"row {i}"
        np.testing.assert_array_equal(ci, c[int(S.indptr[i]):int(S.indptr[i + 1])])
    # shuffled (with repeats), passing the ids along
    perm = np.random.default_rng(2).permutation(np.r_[np.arange(P.nrows), [5, 5, 17]])
    Sp = spla.sample_rows(spla.extract_rows(P, perm), k, seed=seed, row_ids=perm,
                          replace=replace)
    assert Sp.isequal(spla.extract_rows(S, perm))
    # in two batches
    top = spla.sample_rows(spla.extract_rows(P, np.arange(25)), k, seed=seed,
                           replace=replace)
    bottom = spla.sample_rows(spla.extract_rows(P, np.arange(25, 60)), k, seed=seed,
                              row_ids=np.arange(25, 60), replace=replace)
    assert spla.vstack([top, bottom]).isequal(S)
    # default row ids are positions
    assert spla.sample_rows(P, k, seed=seed, replace=replace,
                            row_ids=np.arange(P.nrows)).isequal(S)
    # the fused path with the same ids gives the same picks
    Q = Matrix.from_coo(np.arange(perm.size), perm, shape=(perm.size, P.nrows))
    E = spla.mxm(Q, P, "any_pair" if structural else "plus_times")
    Sf = spla.sample_rows(E, k, seed=seed, row_ids=perm, replace=replace)
    assert Sf.isequal(spla.extract_rows(S, perm))


def test_per_row_k_matches_scalar_k_row_by_row():
    P = random_weighted(40, 10, 3)
    ks = np.random.default_rng(4).integers(0, 6, P.nrows)
    S = spla.sample_rows(P, ks, seed=MASTER_SEED + 12)
    rows = rows_dict(S)
    for i in range(P.nrows):
        if ks[i] == 0:
            assert rows[i] == {}
            continue
        Si = spla.sample_rows(spla.extract_rows(P, [i]), int(ks[i]), seed=MASTER_SEED + 12,
                              row_ids=[i])
        assert rows_dict(Si)[0] == rows[i], f"row {i}"


def test_thread_count_does_not_change_picks():
    P = random_weighted(500, 30, 5, max_deg=20)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = [spla.sample_rows(P, 4, seed=9, replace=r) for r in (False, True)]
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = [spla.sample_rows(P, 4, seed=9, replace=r) for r in (False, True)]
    finally:
        numba.set_num_threads(before)
    assert one[0].isequal(many[0]) and one[1].isequal(many[1])


@pytest.mark.parametrize("replace", [False, True])
def test_different_seeds_streams_and_row_ids_give_different_picks(replace):
    # Uniform rows of degree 10, k = 3: two independent draws of a row agree
    # with probability 1/120 without replacement (about 0.01 with), so of
    # 400 rows about 3-4 agree; more than 40 would mean the key is ignored.
    n = 400
    P = uniform_rows_matrix(np.ones(10), n, structural=True)
    base = spla.sample_rows(P, 3, seed=MASTER_SEED, replace=replace)

    def agreeing_rows(S):
        a, b = rows_dict(base), rows_dict(S)
        return sum(a[i] == b[i] for i in range(n))

    variants = {
        "seed": spla.sample_rows(P, 3, seed=MASTER_SEED + 1, replace=replace),
        "stream": spla.sample_rows(P, 3, seed=MASTER_SEED, stream=1, replace=replace),
        "row_ids": spla.sample_rows(P, 3, seed=MASTER_SEED, row_ids=np.arange(n) + n,
                                    replace=replace),
        "big seed": spla.sample_rows(P, 3, seed=MASTER_SEED + 2**63, replace=replace),
    }
    for name, S in variants.items():
        assert not S.isequal(base), name
        assert agreeing_rows(S) < 40, name
    # and identical rows with distinct ids are not sampled alike
    rows = rows_dict(base)
    assert sum(rows[i] == rows[i + 1] for i in range(n - 1)) < 40


# ---------------------------------------------------------------------------
# fused Q @ A versus the materialised product
# ---------------------------------------------------------------------------

# times/pair semirings take the fused path on a row selection (a single term
# per output entry: the monoid never acts); min_plus must not (its product
# q + a is not a scaled row of A) and is sampled materialised either way.
FUSED_SEMIRINGS = ["plus_times", "any_pair", "plus_pair", "max_times", "min_times",
                   "min_plus"]
FUSED_WEIGHTS = st.sampled_from([0.0, 0.5, 1.0, 1.0, 1.0, 2.0, 3.0, 7.25, 1000.0])


@st.composite
def fused_inputs(draw, q_values=(1.0,)):
    na, ncols = draw(st.integers(1, 6)), draw(st.integers(0, 8))
    mask = draw(masks((na, ncols)))
    a_dt = draw(st.sampled_from([None, F32, F64]))
    vals = None
    if a_dt is not None:
        vals = np.array(draw(st.lists(FUSED_WEIGHTS, min_size=int(mask.sum()),
                                      max_size=int(mask.sum()))), a_dt)
    A = make_twin(mask, vals, a_dt, np.int32).M
    nq = draw(st.integers(0, 12))
    sel = draw(st.lists(st.one_of(st.none(), st.integers(0, na - 1)),
                        min_size=nq, max_size=nq))
    rows = [i for i, r in enumerate(sel) if r is not None]
    cols = [r for r in sel if r is not None]
    q_dt = draw(st.sampled_from([None, F64]))
    q_vals = None
    if q_dt is not None:
        q_vals = np.array(draw(st.lists(st.sampled_from(q_values), min_size=len(rows),
                                        max_size=len(rows))), q_dt)
    Q = Matrix.from_coo(rows, cols, q_vals, shape=(nq, na))
    # k mostly below the row degrees (picks then depend on the row's key),
    # sometimes above (take-all rows)
    if draw(st.booleans()):
        k = draw(st.integers(1, 3) | st.integers(1, 9))
    else:
        k = np.array(draw(st.lists(st.integers(0, 4), min_size=nq, max_size=nq)), np.int64)
    row_ids = None
    if draw(st.booleans()):
        row_ids = draw(st.lists(st.integers(0, 2**40), min_size=nq, max_size=nq))
    return dict(Q=Q, A=A, k=k, row_ids=row_ids, replace=draw(st.booleans()),
                semiring=draw(st.sampled_from(FUSED_SEMIRINGS)),
                seed=draw(st.integers(0, 2**64 - 1)), stream=draw(st.integers(0, 3)))


def _fused_and_materialised(case):
    E = spla.mxm(case["Q"], case["A"], case["semiring"])
    assert E.is_row_selection()
    kw = dict(seed=case["seed"], stream=case["stream"], replace=case["replace"],
              row_ids=case["row_ids"], return_counts=True)
    fused, fc = spla.sample_rows(E, case["k"], **kw)
    mat, mc = spla.sample_rows(E.new(), case["k"], **kw)
    return fused, fc, mat, mc


@SETTINGS
@given(fused_inputs())
def test_fused_equals_materialised(case):
    fused, fc, mat, mc = _fused_and_materialised(case)
    assert_canonical(fused)
    assert fused.isequal(mat), (rows_dict(fused), rows_dict(mat))
    np.testing.assert_array_equal(fc, mc)


@SETTINGS
@given(fused_inputs(q_values=(0.0, 0.25, 1.0, 2.0, 4.0)))
def test_fused_equals_materialised_with_power_of_two_scales(case):
    # sample.py promises exact equality for scales that are powers of two
    # (and a zero scale empties the row, as in the product).
    fused, fc, mat, mc = _fused_and_materialised(case)
    assert fused.isequal(mat), (rows_dict(fused), rows_dict(mat))
    np.testing.assert_array_equal(fc, mc)


def test_fused_path_never_materialises(monkeypatch):
    import kernels.cpu.spgemm as cpu_spgemm
    A = random_weighted(30, 10, 6)
    Q = Matrix.from_coo(np.arange(8), np.arange(8) * 3, shape=(8, 30))
    expected = spla.sample_rows((Q @ A).new(), 3, seed=5)
    for name in ("spgemm_gather", "spgemm", "spgemm_symbolic", "spgemm_numeric"):
        monkeypatch.setattr(cpu_spgemm, name, _boom)
    assert spla.sample_rows(Q @ A, 3, seed=5).isequal(expected)


def _boom(*args, **kwargs):
    raise AssertionError("the fused sampler formed the product")


def test_lazy_non_selection_product_is_sampled_as_materialised():
    A = random_weighted(20, 8, 7)
    Q = Matrix.from_coo([0, 0, 1, 2], [1, 2, 3, 3], shape=(3, 20))  # two entries in row 0
    E = Q @ A
    assert not E.is_row_selection()
    for replace in (False, True):
        assert spla.sample_rows(E, 2, seed=3, replace=replace).isequal(
            spla.sample_rows(E.new(), 2, seed=3, replace=replace))


def test_prefix_cache_is_stored_on_A_and_reused(monkeypatch):
    A = random_weighted(30, 10, 8, dtype=F64)
    calls = []
    original = cpu_sample.row_prefix

    def counting(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(cpu_sample, "row_prefix", counting)
    assert "its_prefix" not in A._cache
    Q1 = Matrix.from_coo(np.arange(10), np.arange(10) * 2, shape=(10, 30))
    S1 = spla.sample_rows(Q1 @ A, 2, seed=1)
    assert "its_prefix" in A._cache and len(calls) == 1
    cached = A._cache["its_prefix"]
    # the cache holds A's per-row inclusive prefix sums, accumulated in float64
    prefix = np.asarray(cached[0])
    vals = np.asarray(A.values, np.float64)
    for i in range(A.nrows):
        lo, hi = int(A.indptr[i]), int(A.indptr[i + 1])
        np.testing.assert_array_equal(prefix[lo:hi], np.cumsum(vals[lo:hi]))
    # another selection, k, seed and mode: reused, not recomputed
    Q2 = Matrix.from_coo(np.arange(5), [29, 0, 3, 3, 7], np.ones(5), shape=(5, 30))
    spla.sample_rows(Q2 @ A, 4, seed=2, replace=True)
    spla.sample_rows(spla.mxm(Q1, A, "plus_times"), [1] * 10, seed=3)
    assert len(calls) == 1
    assert A._cache["its_prefix"] is cached
    assert spla.sample_rows(Q1 @ A, 2, seed=1).isequal(S1)
    # a new matrix gets its own cache
    B = A.with_values(np.asarray(A.values) * 2)
    spla.sample_rows(Q1 @ B, 2, seed=1)
    assert len(calls) == 2 and "its_prefix" in B._cache


def test_structural_A_needs_no_prefix():
    A = random_weighted(30, 10, 9, structural=True)
    Q = Matrix.from_coo(np.arange(6), np.arange(6), shape=(6, 30))
    S = spla.sample_rows(Q @ A, 2, seed=1)
    assert S.dtype == np.int64  # plus_times of two structural operands counts
    np.testing.assert_array_equal(S.values, 1)
    S2 = spla.sample_rows(spla.mxm(Q, A, "any_pair"), 2, seed=1)
    assert S2.is_structural and S2.isequal(S.structure())
    assert "its_prefix" not in A._cache


# ---------------------------------------------------------------------------
# extreme but valid weights
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["materialised", "fused"])
@pytest.mark.parametrize("replace", [True, False])
def test_weights_near_float64_max_keep_the_law(replace, path):
    # Finite, non-negative weights whose row sum overflows float64.  Either
    # the law w_j / sum(w) holds (e.g. by scaling the row) or the input is
    # rejected with an InvalidValue naming sample_rows and P.
    w = np.array([1.0e308, 1.5e308])
    try:
        S = sample_identical_rows(w, 1, 20000, MASTER_SEED + 801, replace=replace, path=path)
    except spla.InvalidValue as err:
        assert re.search(r"sample_rows: argument 'P", str(err))
        return
    counts = np.bincount(np.asarray(S.indices), minlength=2)
    assert_bonferroni([multinomial_pvalue(counts, np.array([0.4, 0.6]))], "near-max weights")


@pytest.mark.parametrize("path", ["materialised", "fused"])
def test_subnormal_weights_keep_the_law(path):
    w = np.array([5e-324, 1e-323])
    S = sample_identical_rows(w, 1, 30000, MASTER_SEED + 802, replace=True, path=path)
    counts = np.bincount(np.asarray(S.indices), minlength=2)
    assert_bonferroni([multinomial_pvalue(counts, np.array([1 / 3, 2 / 3]))],
                      "subnormal weights")


@pytest.mark.parametrize("path", ["materialised", "fused"])
def test_subnormal_weights_in_the_exact_fallback_keep_the_law(path):
    # Entry 0 dominates (2**40 times the others), so the rejection draws of a
    # 2-subset keep hitting it and the second pick comes from the linear-scan
    # fallback over entries 1 and 2, whose weights are subnormal: the scan
    # must use the same rescaled weights as the prefix (law 1/3, 2/3).
    tiny = 5e-324
    w = np.array([tiny * 2.0 ** 40, tiny, 2 * tiny])
    S = sample_identical_rows(w, 2, 30000, MASTER_SEED + 803, replace=False, path=path)
    picks = np.asarray(S.indices, np.int64).reshape(-1, 2)
    assert np.all(picks[:, 0] == 0), "the dominant entry is always picked"
    counts = np.bincount(picks[:, 1] - 1, minlength=2)
    assert_bonferroni([multinomial_pvalue(counts, np.array([1 / 3, 2 / 3]))],
                      "subnormal weights, fallback scan")


def test_rescaled_rows_leave_ordinary_rows_alone():
    # The power-of-two rescaling applies only to rows with extreme weights:
    # a row of ordinary weights draws exactly as before (same picks as the
    # same row scaled by 2**-64, which is rescaled by no factor either).
    rng = np.random.default_rng(5)
    w = rng.random(40) + 0.01
    a = sample_identical_rows(w, 5, 200, MASTER_SEED + 804)
    b = sample_identical_rows(w * 2.0 ** -64, 5, 200, MASTER_SEED + 804)
    np.testing.assert_array_equal(a.indices, b.indices)
    # and an extreme row (here its total overflows float64) draws the same
    # picks as its ordinary twin
    c = sample_identical_rows(w * 2.0 ** 1020, 5, 200, MASTER_SEED + 804)
    d = sample_identical_rows(w * 2.0 ** -1030, 5, 200, MASTER_SEED + 804)
    np.testing.assert_array_equal(a.indices, c.indices)
    np.testing.assert_array_equal(a.indices, d.indices)


# --------------------------------------------------------------------------
# Absurd sizes: a clear error naming k, never a segfault, a wrapped indptr or
# a silent attempt at an allocation larger than the machine.

def _ones(n):
    return Matrix.from_dense(np.ones((n, n)))


@pytest.mark.parametrize("k", [2 ** 62, 2 ** 63, 2 ** 70])
def test_huge_k_with_replacement_is_refused_naming_k(k):
    with pytest.raises(spla.InvalidValue, match=r"sample_rows: argument 'k'.*64-bit"):
        spla.sample_rows(_ones(4), k, seed=1, replace=True)


def test_k_beyond_memory_with_replacement_is_refused_before_allocating():
    A = _ones(4)
    Q = Matrix.from_coo([0, 1], [2, 3], shape=(2, 4))
    for P in (A, Q @ A):   # materialised and fused paths
        with pytest.raises(spla.InvalidValue, match=r"argument 'k'.*memory.*with replacement"):
            spla.sample_rows(P, 10 ** 12, seed=1, replace=True)


@pytest.mark.parametrize("k", [2 ** 62, 2 ** 63, 2 ** 64 + 5, 10 ** 30])
def test_huge_k_without_replacement_takes_every_entry(k):
    A = _ones(4)
    S = spla.sample_rows(A, k, seed=1)
    assert S.isequal(A) and int(S.indptr.min()) >= 0
    Q = Matrix.from_coo([0, 1], [2, 3], shape=(2, 4))
    assert spla.sample_rows(Q @ A, k, seed=1).isequal((Q @ A).new())
    per_row = np.array([2 ** 64 - 1, 1, 0, 2], np.uint64)
    assert spla.sample_rows(A, per_row, seed=1).row_degrees().tolist() == [4, 1, 0, 2]
