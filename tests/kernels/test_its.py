"""The CPU twin of the row sampler makes the same picks as the documented algorithm.

``kernels.its.sample_one_row`` (allocation-free, what the CUDA kernels run)
and ``sample_one_row_cpu`` (hash set of the picks, running sums in the
second phase; what ``kernels.cpu.sample`` runs) are both compared with
``reference_row`` below: a plain-Python transcription of the algorithm in
``kernels/its.py``'s docstring (bisect for the searches, Python sets and
float sums for the rest).  Only the counter-based draws ``uniform01`` /
``row_key`` are shared, since bit-identical picks are the point.
"""

import bisect

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernels import its
from kernels.common import EMPTY_KEY, row_key, set_add, sort_range, table_bits, uniform01
from kernels.cpu.sample import (GATHER_BLOCK_ROWS, row_guide, row_prefix, sample_csr,
                                sample_gather)

# uint64, as spla passes them: the kernels then run the signatures the
# library compiled (and cached) instead of compiling int64 ones of their own.
SEED, STREAM = np.uint64(11), np.uint64(3)


def _scale(top):
    if top >= 2.0 ** 900:
        return 2.0 ** -128
    if 0.0 < top < 2.0 ** -960:
        return 2.0 ** 960
    return 1.0


def reference_row(w, cnt, key, replace):
    """(sorted picks, whether the exact second phase ran) for one row of weights ``w``."""
    w = [float(x) for x in w]
    d = len(w)
    positive = [j for j in range(d) if w[j] > 0.0]
    if not replace and cnt >= len(positive):
        return positive, False
    u = lambda n: float(uniform01(key, n))  # noqa: E731
    uniform = w[0] > 0.0 and all(x == w[0] for x in w)
    scale = _scale(max(w))
    prefix, acc = [], 0.0
    for x in w:
        if scale == 1.0:
            acc += x
        elif x > 0.0:
            acc += x * scale
        prefix.append(acc)
    total = prefix[-1]

    def search(x):
        j = bisect.bisect_right(prefix, x)
        return j if j < d else bisect.bisect_left(prefix, total)

    if replace:
        if uniform:
            return sorted(min(int(u(t) * d), d - 1) for t in range(cnt)), False
        return sorted(search(u(t) * total) for t in range(cnt)), False
    if uniform:  # Floyd
        picks = set()
        for n, t in enumerate(range(d - cnt, d)):
            r = min(int(u(n) * (t + 1)), t)
            picks.add(t if r in picks else r)
        return sorted(picks), False
    picks, n = set(), 0
    while len(picks) < cnt and n < 16 * cnt + 16 + d // 16:
        picks.add(search(u(n) * total))
        n += 1
    fallback = len(picks) < cnt
    while len(picks) < cnt:
        free = [j for j in positive if j not in picks]
        rem = 0.0
        for j in free:
            rem += w[j] * scale
        x = u(n) * rem
        n += 1
        acc, pick = 0.0, free[-1]
        for j in free:
            acc += w[j] * scale
            if acc > x:
                pick = j
                break
        picks.add(pick)
    return sorted(picks), fallback


@numba.njit(cache=True)
def _device_path(vals, cnt, key, replace):
    d = vals.size
    prefix = np.empty(d, np.float64)
    p, m = its.row_stats(0, d, vals, True, prefix, True)
    out = np.empty(cnt, np.int64)
    its.sample_one_row(out, 0, cnt, 0, d, vals, True, prefix, m, p, key, replace)
    return out


def _both_paths(w, k, row_id, replace):
    """Picks of the CPU kernel (sample_csr) and of the allocation-free path."""
    w = np.asarray(w)
    ptr = np.array([0, w.size], np.int64)
    rid = np.array([row_id], np.int64)
    out_ptr, cpu = sample_csr(ptr, w, True, k, np.zeros(0, np.int64), rid, SEED, STREAM,
                              replace)
    key = np.uint64(row_key(SEED, STREAM, np.int64(row_id)))
    return cpu, _device_path(w, int(out_ptr[1]), key, replace), key, int(out_ptr[1])


def _gathered(w, k, row_id, replace, guided=True):
    """Picks of the fused kernel (sample_gather: first searches in a pass of
    their own, guided unless ``guided`` is false), as positions in the row."""
    w = np.asarray(w)
    ptr = np.array([0, w.size], np.int64)
    prefix, positives, modes = row_prefix(ptr, w)
    guide = (row_guide(ptr, prefix, positives, modes) if guided
             else np.zeros(0, np.uint32))
    q = np.zeros(1, np.int64)
    _, out = sample_gather(np.array([0, 1], np.int64), q, np.zeros(0, np.float64), ptr, w,
                           True, prefix, guide, positives, modes, k, np.zeros(0, np.int64),
                           np.array([row_id], np.int64), SEED, STREAM, replace)
    return out


def _weights(rng, d, kind):
    if kind == 0:
        return rng.random(d)
    if kind == 1:   # heavy tail with zeros: the rejection budget runs out
        return rng.pareto(0.7, d) * (rng.random(d) < 0.8)
    if kind == 2:
        return np.full(d, 0.25)
    if kind == 3:
        return np.exp(rng.normal(0.0, 6.0, d)).astype(np.float32)
    if kind == 4:   # huge weights: rows rescaled by row_scale
        return rng.random(d) * 2.0 ** 1000
    return rng.random(d) * 2.0 ** -1040  # subnormal weights


def test_cpu_twin_and_device_path_match_the_reference_on_many_rows():
    rng = np.random.default_rng(5)
    seen = {"fallback": 0, "hashed": 0, "hashed_fallback": 0, "floyd_hashed": 0,
            "scan_fallback": 0, "running_sum_fallback": 0, "guided_ahead": 0,
            "guided_in_row_pass": 0}
    for trial in range(600):
        d = int(rng.integers(1, 260))
        k = int(rng.integers(1, d + 3))
        kind = trial % 6
        w = _weights(rng, d, kind)
        for replace in (False, True):
            cpu, dev, key, cnt = _both_paths(w, k, trial, replace)
            want, fallback = reference_row(w, cnt, key, replace)
            assert cpu.tolist() == want, (trial, d, k, kind, replace)
            assert dev.tolist() == want, (trial, d, k, kind, replace)
            assert _gathered(w, k, trial, replace).tolist() == want, (trial, d, k, kind)
            if not replace:
                seen["fallback"] += fallback
                hashed = its.SET_MIN < cnt < int(np.count_nonzero(w > 0))
                seen["hashed"] += hashed
                seen["hashed_fallback"] += hashed and fallback
                seen["floyd_hashed"] += hashed and kind == 2
                seen["scan_fallback"] += fallback and d <= its.SCAN_MAX_D
                seen["running_sum_fallback"] += fallback and d > its.SCAN_MAX_D
                if kind != 2 and d >= its.GUIDE_MIN_D and cnt < np.count_nonzero(w > 0):
                    # The fused kernel's guided searches, in the pass ahead or not.
                    seen["guided_ahead" if cnt * cnt <= d else "guided_in_row_pass"] += 1
    # Every branch of the CPU twin was compared, not only the easy ones.
    assert min(seen.values()) >= 5, seen


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_cpu_twin_matches_the_reference_on_drawn_rows(data):
    d = data.draw(st.integers(1, 200), label="d")
    # k near the degree (where rejection stalls) as often as small k.
    k = data.draw(st.one_of(st.integers(1, d + 2), st.integers(max(1, d - 3), d + 2)),
                  label="k")
    w = np.array(data.draw(st.lists(
        st.one_of(st.just(0.0), st.floats(1e-6, 1.0), st.floats(1.0, 1e12)),
        min_size=d, max_size=d), label="w"))
    row_id = data.draw(st.integers(0, 2 ** 40), label="row_id")
    for replace in (False, True):
        cpu, dev, key, cnt = _both_paths(w, k, row_id, replace)
        want, _ = reference_row(w, cnt, key, replace)
        assert cpu.tolist() == want
        assert dev.tolist() == want
        assert _gathered(w, k, row_id, replace).tolist() == want
        assert _gathered(w, k, row_id, replace, guided=False).tolist() == want


@numba.njit(cache=True)
def _guided_searches(prefix, xs):
    d = prefix.size
    guide = np.empty(d, np.uint32)
    its.fill_row_guide(prefix, 0, d, guide)
    scale = its.guide_scale(d, prefix[d - 1])
    out = np.empty(xs.size, np.int64)
    for t in range(xs.size):
        out[t] = its.search_guided(prefix, guide, 0, d, xs[t], scale)
    return out, guide


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_guided_search_finds_what_bisection_finds(data):
    """Every ``x`` below the total, the prefix values themselves and their
    neighbours included, is found where ``bisect`` finds it."""
    d = data.draw(st.integers(1, 120), label="d")
    kind = data.draw(st.sampled_from(["any", "equal", "huge", "tiny", "one heavy"]), label="kind")
    if kind == "equal":
        w = [0.25] * d
    elif kind == "one heavy":
        w = [1e-9] * d
        w[data.draw(st.integers(0, d - 1))] = 1.0
    else:
        lo, hi = {"any": (1e-6, 1e6), "huge": (2.0 ** 1000, 2.0 ** 1010),
                  "tiny": (2.0 ** -1070, 2.0 ** -1040)}[kind]
        w = data.draw(st.lists(st.one_of(st.just(0.0), st.floats(lo, hi)),
                               min_size=d, max_size=d), label="w")
    if max(w) == 0.0:
        w[-1] = 1.0
    prefix = np.empty(d, np.float64)
    its.row_stats(0, d, np.array(w), True, prefix, True)
    total = prefix[-1]
    xs = {0.0, np.nextafter(total, 0.0)}
    for p in prefix:
        xs.update(x for x in (np.nextafter(p, 0.0), p, np.nextafter(p, np.inf)) if x < total)
    us = data.draw(st.lists(st.floats(0.0, 1.0, exclude_max=True), max_size=30), label="u")
    xs.update(x for x in (u * total for u in us) if x < total)
    xs = np.array(sorted(xs), np.float64)
    got, guide = _guided_searches(prefix, xs)
    want = [bisect.bisect_right(prefix.tolist(), x) for x in xs]
    assert got.tolist() == want
    # A bucket marked exact answers without reading the prefix: its answer
    # must be the bisection's for every x in it, which the above checks only
    # if some exact buckets were hit; equal weights make half of them so.
    if kind == "equal" and d > 2:
        assert (guide >= its.GUIDE_EXACT).any()


def test_long_rows_past_the_rejection_budget():
    """Rows of thousands of entries with a few heavy ones: the second phase
    draws hundreds of picks (the LADIES case the running sums are for)."""
    rng = np.random.default_rng(8)
    for trial in range(4):
        d = 3000
        w = rng.random(d) * 1e-3
        w[rng.choice(d, 40, replace=False)] = 1e3
        k = 400
        cpu, dev, key, cnt = _both_paths(w, k, 77 + trial, False)
        want, fallback = reference_row(w, cnt, key, False)
        assert fallback
        assert cpu.tolist() == want and dev.tolist() == want


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(-2 ** 62, 2 ** 62), max_size=200), st.integers(0, 5))
def test_sort_range_sorts_the_slice_only(xs, cut):
    a = np.array(xs + [7] * cut, np.int64)
    lo, hi = min(cut, a.size), a.size - min(cut, a.size // 2)
    lo = min(lo, hi)
    want = a.copy()
    want[lo:hi] = np.sort(want[lo:hi])
    sort_range(a, lo, hi)
    assert a.tolist() == want.tolist()


def test_sort_range_every_short_length():
    # Each length of the three methods (network, insertion, heap) and their
    # borders, with repeats, in int64 and int32 arrays.
    rng = np.random.default_rng(5)
    for n in range(0, 41):
        for dt in (np.int64, np.int32):
            for _ in range(20):
                a = rng.integers(-3, 4 if _ % 2 else 10 ** 9, n + 4).astype(dt)
                want = a.copy()
                want[2:n + 2] = np.sort(want[2:n + 2])
                sort_range(a, 2, n + 2)
                assert a.tolist() == want.tolist(), (n, dt)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2 ** 62), max_size=300))
def test_set_add_is_a_set(keys):
    bits = table_bits(max(1, len(keys)))
    table = np.full(1 << bits, EMPTY_KEY, np.int64)
    seen = set()
    for x in keys:
        assert set_add(table, bits, np.int64(x)) == (x not in seen)
        seen.add(x)
    assert sorted(int(v) for v in table if v != EMPTY_KEY) == sorted(seen)


@pytest.mark.parametrize("k", [120, 5])
@pytest.mark.parametrize("replace", [False, True])
def test_rows_of_a_bulk_sample_as_alone(replace, k):
    """Rows large and small in one call: each row's picks are its own."""
    rng = np.random.default_rng(2)
    rows = [_weights(rng, d, kind) for d, kind in ((500, 1), (40, 0), (1200, 3), (90, 2))]
    rows = [np.asarray(r, np.float64) for r in rows]
    ptr = np.concatenate([[0], np.cumsum([r.size for r in rows])]).astype(np.int64)
    rid = np.array([10, 11, 12, 13], np.int64)
    out_ptr, out = sample_csr(ptr, np.concatenate(rows), True, k, np.zeros(0, np.int64),
                              rid, SEED, STREAM, replace)
    # The fused kernel, its first searches in passes over blocks of rows, and
    # the rows taken in another order, over several blocks.
    prefix, positives, modes = row_prefix(ptr, np.concatenate(rows))
    guide = row_guide(ptr, prefix, positives, modes)
    q_idx = np.concatenate([[2, 0, 3, 1, 2], rng.integers(0, 4, 3 * GATHER_BLOCK_ROWS)])
    g_ptr, g_out = sample_gather(np.arange(q_idx.size + 1, dtype=np.int64), q_idx,
                                 np.zeros(0, np.float64), ptr, np.concatenate(rows), True,
                                 prefix, guide, positives, modes, k, np.zeros(0, np.int64),
                                 rid[q_idx], SEED, STREAM, replace)
    alone = [_both_paths(r, k, int(rid[i]), replace)[0].tolist() for i, r in enumerate(rows)]
    for i in range(len(rows)):
        assert (out[out_ptr[i]:out_ptr[i + 1]] - ptr[i]).tolist() == alone[i]
    for i, r in enumerate(q_idx):
        assert (g_out[g_ptr[i]:g_ptr[i + 1]] - ptr[r]).tolist() == alone[r]


def test_rows_dominated_by_a_few_hundred_hubs_finish_by_rejection():
    """LADIES' second layer: its sampled hubs hold most of a long row's mass.
    The budget's row-length term lets rejection draws make every pick (no
    pass over the row per pick); under a budget of 4 cnt + 16 draws alone
    this row needs the second phase.  CPU, device path and reference agree."""
    rng = np.random.default_rng(3)
    d, k = 40000, 512
    w = rng.random(d) * 1e-3
    # 200 hubs with 89 % of the mass: 3183 draws make the 512 picks.
    w[rng.choice(d, 200, replace=False)] = 0.4 + rng.random(200) * 0.8
    cpu, dev, key, cnt = _both_paths(w, k, 5, False)
    want, fallback = reference_row(w, cnt, key, False)
    assert not fallback
    assert cpu.tolist() == want and dev.tolist() == want
    # The same draws, stopped at 4 cnt + 16: short of k distinct picks.
    prefix = np.cumsum(w)
    old = {int(np.searchsorted(prefix, float(uniform01(key, t)) * prefix[-1], side="right"))
           for t in range(4 * k + 16)}
    assert len(old) < k
