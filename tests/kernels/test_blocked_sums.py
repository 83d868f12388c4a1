"""The blocked order of long rows' prefix sums and row sums
(``kernels.its_search.blocked_prefix`` / ``blocked_sum``), checked against a
plain-Python evaluation of the tree, for monotonicity, for the sequential
sum on short rows, and against ``math.fsum``."""

import math

import numpy as np
from hypothesis import given, settings, strategies as st

from kernels.its_search import LEAF, blocked_prefix, blocked_sum, row_stats
from kernels.cpu.reduce import reduce_rows

_LEVELS = 4  # exclusive-sum levels above the leaves; the last spans the row


def tree_prefix(ws, leaf):
    """The blocked prefix by its definition, level by level, in Python floats."""
    n = len(ws)
    v = [0.0] * n
    for j in range(n):  # level 0: sequential within each leaf chunk
        v[j] = ws[j] if j % leaf == 0 else v[j - 1] + ws[j]
    child = leaf
    for lvl in range(1, _LEVELS + 1):
        block = child * leaf if lvl < _LEVELS else max(n, 1)
        nxt = [0.0] * n
        for b0 in range(0, n, block):
            e = 0.0
            for c0 in range(b0, min(b0 + block, n), child):
                c1 = min(c0 + child, n)
                for j in range(c0, c1):
                    nxt[j] = e + v[j]
                e = nxt[c1 - 1]  # = fl(e + the child's total)
        v = nxt
        child = block
    return v


weights = st.lists(st.one_of(st.just(0.0), st.floats(0.0, 1e6, allow_subnormal=False),
                             st.floats(1e-300, 1e300)), max_size=300)


def _prefix(ws, leaf):
    vals = np.asarray(ws, np.float64)
    out = np.full(len(ws), np.nan)
    total = blocked_prefix(0, len(ws), vals, 1.0, out, leaf)
    return out, total


@settings(max_examples=60, deadline=None)
@given(weights, st.sampled_from([2, 3, 4, LEAF]))
def test_blocked_prefix_is_the_tree(ws, leaf):
    out, total = _prefix(ws, leaf)
    ref = tree_prefix(ws, leaf)
    assert out.tolist() == ref
    assert total == (ref[-1] if ws else 0.0)
    assert all(out[1:] >= out[:-1])  # monotone for non-negative weights
    if ws:
        assert math.isclose(total, math.fsum(ws), rel_tol=1e-12, abs_tol=1e-300)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1e3), max_size=LEAF))
def test_short_rows_are_sequential(ws):
    out, _ = _prefix(ws, LEAF)
    acc, seq = 0.0, []
    for w in ws:
        acc += w
        seq.append(acc)
    assert out.tolist() == seq


def test_the_tree_differs_from_sequential_on_long_rows():
    # Guards the test above against a vacuous tree: the orders must differ.
    rng = np.random.default_rng(3)
    ws = rng.random(5000).tolist()
    out, _ = _prefix(ws, LEAF)
    assert out.tolist() == tree_prefix(ws, LEAF)
    assert out.tolist() != np.cumsum(ws).tolist()


@settings(max_examples=30, deadline=None)
@given(weights)
def test_row_stats_writes_the_blocked_prefix(ws):
    vals = np.asarray(ws, np.float64)
    prefix = np.full(len(ws), np.nan)
    pos, _ = row_stats(0, len(ws), vals, True, prefix, True)
    assert pos == sum(w > 0 for w in ws)
    top = max(ws, default=0.0)
    if top == 0.0 or 2.0 ** -960 <= top < 2.0 ** 900:  # unscaled: the weights' own tree
        assert prefix.tolist() == tree_prefix(ws, LEAF)


@settings(max_examples=30, deadline=None)
@given(weights, st.sampled_from([np.float64, np.float32]))
def test_plus_reduction_is_the_tree(ws, dt):
    vals = np.clip(np.asarray(ws, np.float64), 0.0, 1e30).astype(dt)
    ptr = np.array([0, len(ws) // 3, len(ws)], np.int64)
    out = reduce_rows(ptr, vals, True, 0, np.zeros(1, dt), np.ones(1, dt))
    for i in range(2):
        row = vals[ptr[i]:ptr[i + 1]]
        exp = np.zeros(1, dt)
        if row.size:
            blocked_sum(row, 0, row.size, True, dt(1), dt(0), LEAF, exp, 0)
        exp = exp[0]
        assert out[i] == exp
        if dt is np.float64 and row.size:
            assert out[i] == tree_prefix(row.tolist(), LEAF)[-1]


def test_plus_reduction_structural_and_sequential_short():
    ptr = np.array([0, 5, 5 + 3 * LEAF], np.int64)
    vals = np.linspace(0.1, 3.0, 5 + 3 * LEAF)
    out = reduce_rows(ptr, vals, False, 0, np.zeros(1), np.ones(1))
    assert out.tolist() == [5.0, 3.0 * LEAF]
    out = reduce_rows(ptr, vals, True, 0, np.zeros(1), np.ones(1))
    acc = 0.0
    for w in vals[:5]:
        acc += w
    assert out[0] == acc
