"""Block-per-row kernels for long rows (kernels/cuda/long_rows.py) against
their CPU twins (``kernels.its_search.row_stats`` / ``blocked_prefix``),
under the CUDA simulator (``test_sim_*``) and on a real GPU (``gpu``)."""

import numpy as np
import pytest

from sim_marks import IN_SIM, sim


def _rows(lengths, rng, zeros=False, equal_row=None):
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    vals = rng.random(ptr[-1])
    if zeros:
        vals[rng.random(vals.size) < 0.3] = 0.0
    if equal_row is not None:
        vals[ptr[equal_row]:ptr[equal_row + 1]] = 0.5
    return ptr, vals


def _cpu(ptr, vals, leaf, long_min):
    from kernels.its_search import blocked_prefix, row_max, row_scale, row_stats
    n = ptr.size - 1
    prefix = np.full(vals.size, np.nan)
    pos = np.full(n, -1, np.int64)
    modes = np.full(n, 255, np.uint8)
    for i in range(n):
        lo, hi = ptr[i], ptr[i + 1]
        if hi - lo <= long_min:
            continue
        pos[i], modes[i] = row_stats(lo, hi, vals, True, np.empty(0), False)
        blocked_prefix(lo, hi, vals, row_scale(row_max(lo, hi, vals, True)), prefix, leaf)
    return prefix, pos, modes


def _gpu(xp, ptr, vals, leaf, long_min, has_values=True):
    from kernels.cuda.long_rows import long_row_stats
    n = ptr.size - 1
    prefix = xp.full(vals.size, np.nan)
    pos = xp.full(n, -1, np.int64)
    modes = xp.full(n, 255, np.uint8)
    long_row_stats(xp.asarray(ptr), xp.asarray(vals), has_values, True, prefix, pos, modes,
                   leaf=leaf, long_min=long_min)
    get = getattr(xp, "asnumpy", np.asarray)
    return get(prefix), get(pos), get(modes)


def _check(xp, ptr, vals, leaf, long_min):
    got = _gpu(xp, ptr, vals, leaf, long_min)
    exp = _cpu(ptr, vals, leaf, long_min)
    for g, e in zip(got, exp):
        np.testing.assert_array_equal(g, e)
    return got


@sim
@pytest.mark.parametrize("leaf", [2, 3])
def test_sim_long_row_stats_equal_cpu(leaf):
    rng = np.random.default_rng(leaf)
    ptr, vals = _rows([5, 100, 0, 40, 3, 70], rng, zeros=True, equal_row=3)
    prefix, pos, modes = _check(np, ptr, vals, leaf, long_min=8)
    assert np.isnan(prefix[:5]).all() and pos[0] == -1  # short rows left alone
    assert modes[3] == 0 and modes[1] == 1  # equal row UNIFORM, others WEIGHTED
    # the levels make the order differ from the sequential sum
    assert not np.array_equal(prefix[5:105], np.cumsum(vals[5:105]))


@sim
def test_sim_long_row_stats_production_leaf_equals_row_stats():
    from kernels.its_search import row_stats
    rng = np.random.default_rng(7)
    ptr, vals = _rows([90, 2], rng)
    prefix, pos, modes = _gpu(np, ptr, vals, None, long_min=8)
    ref = np.empty(90)
    p, m = row_stats(0, 90, vals, True, ref, True)
    np.testing.assert_array_equal(prefix[:90], ref)
    assert (pos[0], modes[0]) == (p, m)


@sim
def test_sim_long_row_stats_structural_and_zero_rows():
    rng = np.random.default_rng(1)
    ptr, vals = _rows([20, 30], rng)
    vals[20:] = 0.0
    _check(np, ptr, vals, 2, long_min=4)
    _, pos, modes = _gpu(np, ptr, vals, 2, 4, has_values=False)
    assert pos.tolist() == [20, 30] and modes.tolist() == [0, 0]


def _cupy():
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy
    except Exception:  # noqa: BLE001 - no cupy or no device: skip
        pass
    return None


@pytest.mark.gpu
def test_gpu_long_row_stats_equal_cpu_on_a_long_row():
    cp = _cupy()
    if cp is None or IN_SIM:
        pytest.skip("needs cupy and a GPU")
    from kernels.its_search import LEAF
    rng = np.random.default_rng(0)
    ptr, vals = _rows([10 ** 5, 17, 3 * 10 ** 4], rng, zeros=True)
    _check(cp, ptr, vals, LEAF, long_min=1024)


@sim
@pytest.mark.parametrize("leaf", [2, 3])
@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_sim_long_row_sums_equal_blocked_sum(leaf, dt):
    from kernels.cuda.long_rows import long_row_sums
    from kernels.its_search import blocked_sum
    rng = np.random.default_rng(leaf)
    ptr, vals = _rows([5, 100, 0, 40, 70], rng, zeros=True)
    vals = (vals * 1e3).astype(dt)
    ident, one = np.zeros(1, dt), np.ones(1, dt)
    out = np.full(ptr.size - 1, -1, dt)
    long_row_sums(ptr, vals, ident, one, out, leaf=leaf, long_min=8)
    exp = np.full(ptr.size - 1, -1, dt)
    for i in range(ptr.size - 1):
        if ptr[i + 1] - ptr[i] > 8:
            blocked_sum(vals, ptr[i], ptr[i + 1], True, dt(1), dt(0), leaf, exp, i)
    np.testing.assert_array_equal(out, exp)
    assert out[0] == -1 and out[2] == -1  # short rows left alone


@sim
def test_sim_reduce_rows_long_and_short_equal_cpu():
    from kernels.cpu.reduce import reduce_rows as cpu_reduce
    from kernels.cuda.reduce import reduce_rows as gpu_reduce
    rng = np.random.default_rng(5)
    ptr, vals = _rows([3, 90, 0, 50, 20], rng, zeros=True)
    for dt, op in ((np.float64, 0), (np.float32, 0), (np.float64, 2), (np.int64, 0)):
        v = (vals * 100).astype(dt)
        ident = np.zeros(1, dt) if op == 0 else np.full(1, -np.inf, dt)
        for hv in (True, False):
            exp = cpu_reduce(ptr, v, hv, op, ident, np.ones(1, dt))
            got = gpu_reduce(ptr, v, hv, op, ident, np.ones(1, dt))
            np.testing.assert_array_equal(got, exp)


@pytest.mark.gpu
def test_gpu_reduce_rows_equal_cpu_on_long_rows():
    cp = _cupy()
    if cp is None or IN_SIM:
        pytest.skip("needs cupy and a GPU")
    from kernels.cpu.reduce import reduce_rows as cpu_reduce
    from kernels.cuda.reduce import reduce_rows as gpu_reduce
    rng = np.random.default_rng(2)
    ptr, vals = _rows([10 ** 5, 9, 4 * 10 ** 4], rng, zeros=True)
    for dt in (np.float64, np.float32):
        v = vals.astype(dt)
        exp = cpu_reduce(ptr, v, True, 0, np.zeros(1, dt), np.ones(1, dt))
        got = gpu_reduce(cp.asarray(ptr), cp.asarray(v), True, 0, cp.zeros(1, dt), cp.ones(1, dt))
        np.testing.assert_array_equal(cp.asnumpy(got), exp)


# -- The draws of long rows: a block per row (kernels.cuda.long_rows.sample_long_row) --

#: Block path for rows of more than 8 entries asking at most 40 picks, so the
#: simulator's 8-thread blocks take rows of ~100 entries (8 draws per round).
SMALL = {"long_min": 8, "max_k": 40, "batch": 8}
SEED, STREAM = np.uint64(11), np.uint64(2)


def _draw_rows(rng):
    """Rows covering every case of ``sample_one_row``, long and short in one matrix:
    weighted, heavy (a few entries hold nearly all the mass: the rejection
    budget runs out), with zeros, uniform (equal weights), few positives
    (take-all), short, empty."""
    lengths = [90, 120, 5, 100, 80, 0, 60, 12, 100]
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    vals = rng.random(ptr[-1])
    r = [slice(ptr[i], ptr[i + 1]) for i in range(len(lengths))]
    vals[r[1]] = 1e-12
    vals[ptr[1] + np.array([3, 50, 77])] = 1.0                # heavy row
    vals[r[3]] *= rng.random(100) < 0.5                         # zeros
    vals[r[4]] = 0.25                                           # uniform
    vals[r[6]] = 0.0
    vals[ptr[6] + np.array([1, 7, 30, 59])] = 2.0               # 4 positives: take-all
    vals[r[8]] = rng.random(100) ** 8                           # skewed
    return ptr, vals


def _budget_ran_out(ptr, vals, i, k):
    """Whether row ``i``'s rejection draws (``kernels.its._reject``) run out."""
    from kernels.common import row_key
    from kernels.its import _reject
    from kernels.cpu.sample import row_prefix
    prefix, pos, _ = row_prefix(ptr, vals)
    out = np.zeros(k, np.int64)
    key = np.uint64(row_key(SEED, STREAM, i))
    filled, _ = _reject(out, 0, k, ptr[i], ptr[i + 1], prefix, key, out, 0)
    return filled < k


@sim
@pytest.mark.parametrize("replace", [False, True])
def test_sim_sample_csr_long_rows_equal_cpu(replace):
    from kernels.cpu import sample as C
    from kernels.cuda import sample as G
    rng = np.random.default_rng(4)
    ptr, vals = _draw_rows(rng)
    e = np.zeros(0, np.int64)
    # per-row k: the heavy row asks 5 of its 3 heavy entries (its budget runs
    # out), one row asks more than max_k (one-thread path), the take-all row
    # 10 of its 4 positives
    k = np.array([20, 5, 3, 25, 17, 5, 10, 4, 50], np.int64)
    if not replace:
        assert _budget_ran_out(ptr, vals, 1, 5)
    want = C.sample_csr(ptr, vals, True, 0, k, e, SEED, STREAM, replace)
    got = G.sample_csr(ptr, vals, True, 0, k, e, SEED, STREAM, replace, **SMALL)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@sim
@pytest.mark.parametrize("batch", [1, 3])
def test_sim_sample_csr_long_rows_small_batches(batch):
    from kernels.cpu import sample as C
    from kernels.cuda import sample as G
    rng = np.random.default_rng(8)
    ptr = np.array([0, 30, 33], np.int64)
    vals = rng.random(33) ** 3
    e = np.zeros(0, np.int64)
    want = C.sample_csr(ptr, vals, True, 6, e, e, SEED, STREAM, False)
    got = G.sample_csr(ptr, vals, True, 6, e, e, SEED, STREAM, False,
                       long_min=8, max_k=40, batch=batch)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


@sim
@pytest.mark.parametrize("replace", [False, True])
def test_sim_sample_gather_long_rows_equal_cpu(replace):
    from kernels.cpu import sample as C
    from kernels.cuda import sample as G
    rng = np.random.default_rng(6)
    a_ptr, a_val = _draw_rows(rng)
    prefix, positives, modes = C.row_prefix(a_ptr, a_val)
    guide = C.row_guide(a_ptr, prefix, positives, modes)
    # Q selects rows of A (the heavy row twice, the second time asking more
    # than max_k picks), with an empty Q row and a zero scale
    q_ptr = np.array([0, 1, 2, 3, 3, 4, 5, 6, 7, 8], np.int64)
    q_idx = np.array([1, 0, 3, 4, 8, 6, 2, 1], np.int64)
    q_scale = np.array([1.0, 2.0, 1.0, 0.0, 1.0, 1.0, 3.0, 1.0])
    rid = np.arange(9, dtype=np.int64) * 7 + 1
    k = np.array([5, 20, 15, 9, 9, 12, 12, 4, 50], np.int64)
    want = C.sample_gather(q_ptr, q_idx, q_scale, a_ptr, a_val, True, prefix, guide,
                           positives, modes, 0, k, rid, SEED, STREAM, replace)
    got = G.sample_gather(q_ptr, q_idx, q_scale, a_ptr, a_val, True, prefix, guide,
                          positives, modes, 0, k, rid, SEED, STREAM, replace, **SMALL)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    assert np.diff(got[0]).tolist()[3] == 0  # the empty Q row


@pytest.mark.gpu
@pytest.mark.parametrize("replace", [False, True])
def test_gpu_sample_long_rows_equal_cpu(replace):
    cp = _cupy()
    if cp is None or IN_SIM:
        pytest.skip("needs cupy and a GPU")
    from kernels.cpu import sample as C
    from kernels.cuda import sample as G
    rng = np.random.default_rng(3)
    lengths = [10 ** 5, 40, 2 * 10 ** 4, 10 ** 5, 3000, 2 * 10 ** 5]
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    vals = rng.random(ptr[-1]) ** 4
    heavy = slice(ptr[2], ptr[3])          # three entries hold the mass: the budget runs out
    vals[heavy] = 1e-12
    vals[ptr[2] + np.array([5, 900, 19000])] = 1.0
    vals[ptr[3]:ptr[4]] = 0.5              # uniform
    k = np.array([512, 10, 64, 512, 1024, 2000], np.int64)  # 2000 > MAX_K: one thread
    e = np.zeros(0, np.int64)
    d = cp.asarray
    want = C.sample_csr(ptr, vals, True, 0, k, e, SEED, STREAM, replace)
    got = G.sample_csr(d(ptr), d(vals), True, 0, d(k), d(e), SEED, STREAM, replace)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(cp.asnumpy(g), w)
    prefix, positives, modes = C.row_prefix(ptr, vals)
    q_ptr = np.arange(7, dtype=np.int64)
    q_idx = np.array([2, 0, 1, 3, 4, 5], np.int64)
    kq = k[q_idx]
    rid = np.arange(6, dtype=np.int64) + 100
    want = C.sample_gather(q_ptr, q_idx, np.zeros(0), ptr, vals, True, prefix,
                           np.zeros(0, np.uint32), positives, modes, 0, kq, rid, SEED,
                           STREAM, replace)
    got = G.sample_gather(d(q_ptr), d(q_idx), cp.zeros(0), d(ptr), d(vals), True, d(prefix),
                          cp.zeros(0, np.uint32), d(positives), d(modes), 0, d(kq), d(rid),
                          SEED, STREAM, replace)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(cp.asnumpy(g), w)
