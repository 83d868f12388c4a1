"""Kernels are safe to call from several Python threads, bounded in memory, and
take column spaces far larger than their work.

* Concurrency: the samplers and the column operators give, from 4 Python
  threads at once, exactly what they give one call at a time (a kernel
  scratch shared between calls corrupted minibatches).
* Memory: a column compaction over 2**26 columns leaves nothing behind, and
  operators on a 4 x 2**40 matrix run (any allocation of the column count
  would be 8 TiB) and agree with a plain Python reference.
* Both paths of each column-space switch (dense / hashed maps and
  accumulators, serial / parallel twins) give identical outputs.
* The kernels' limit error reaches users as spla's ``InvalidValue``.

New kernel APIs are imported inside the tests, so the concurrency and
memory tests also run against older kernels (that is how they were seen to
fail).
"""

import gc
import itertools
import os
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spla

N_THREADS = 4


# --------------------------------------------------------------------------
# Concurrency

def _cora():
    import sampling.datasets
    return sampling.datasets.load("cora").A


def _flatten_minibatches(mbs):
    """Every array of a sampler's output, in order (adjacency and node ids)."""
    out = []
    for mb in mbs:
        for b in mb.blocks:
            out += [b.adj.indptr, b.adj.indices, b.dst_nodes, b.src_nodes]
            if b.adj.values is not None:
                out.append(b.adj.values)
        out.append(np.asarray(mb.index))
    return [np.asarray(a) for a in out]


def _flatten(result):
    if isinstance(result, spla.Matrix):
        out = [result.indptr, result.indices]
        return [np.asarray(a) for a in out] + ([] if result.values is None
                                                else [np.asarray(result.values)])
    out = []
    for r in result:
        out += _flatten(r) if isinstance(r, (spla.Matrix, tuple)) else [np.asarray(r)]
    return out


def _jobs(G):
    """Named closures over Cora, each returning a list of arrays."""
    import sampling
    rng = np.random.default_rng(7)
    n = G.nrows
    batches = [rng.choice(n, 64, replace=False) for _ in range(3)]
    sage = sampling.GraphSAGE(G, fanouts=[5, 5])
    ladies = sampling.LADIES(G, layer_sizes=[64, 64])
    fastgcn = sampling.FastGCN(G, layer_sizes=[64, 64])
    rows = np.concatenate(batches)
    row_ptr = np.array([0, 64, 128, 192])
    sub = spla.extract(G, rows=rows)
    cols = np.concatenate([rng.choice(n, 300, replace=False) for _ in range(3)])
    col_ptr = np.array([0, 300, 600, 900])
    jobs = {}
    for s in (0, 1):
        jobs[f"sage{s}"] = lambda s=s: _flatten_minibatches(sage.sample(batches, seed=s))
        jobs[f"ladies{s}"] = lambda s=s: _flatten_minibatches(ladies.sample(batches, seed=s))
        jobs[f"fastgcn{s}"] = lambda s=s: _flatten_minibatches(fastgcn.sample(batches, seed=s))
    jobs["compact_blockwise"] = lambda: _flatten(
        spla.compact_columns_blockwise(sub, row_ptr, first=rows, first_ptr=row_ptr))
    jobs["compact"] = lambda: _flatten(spla.compact_columns(sub))
    jobs["extract"] = lambda: _flatten(spla.extract(G, rows=rows, cols=cols))
    jobs["extract_blockwise"] = lambda: _flatten(
        spla.extract_blockwise(G, rows, row_ptr, cols, col_ptr))
    return jobs


def _same(a, b):
    return len(a) == len(b) and all(x.dtype == y.dtype and np.array_equal(x, y)
                                    for x, y in zip(a, b))


# A hang guard, not a speed check: on a cold numba cache the sequential
# warm-up compiles every job's kernels (90 s on 2 cores alone, twice that
# beside the CUDA-simulator child under xdist).
@pytest.mark.timeout(400)
def test_concurrent_calls_match_sequential_ones():
    G = _cora()
    jobs = _jobs(G)
    want = {name: job() for name, job in jobs.items()}   # sequential, and warm-up
    names = sorted(jobs)
    reps = 16
    bad = []
    errors = []
    start = threading.Barrier(N_THREADS)

    def worker(t):
        rng = np.random.default_rng(t)
        start.wait()
        for _ in range(reps):
            for name in rng.permutation(names):
                try:
                    got = jobs[name]()
                except Exception as exc:   # a corrupt kernel output fails a check
                    errors.append(f"{name}: {type(exc).__name__}: {exc}")
                    continue
                if not _same(got, want[name]):
                    bad.append(name)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(N_THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    total = N_THREADS * reps * len(names)
    assert not errors and not bad, (
        f"of {total} concurrent calls, {len(bad)} gave results that differ from the "
        f"sequential ones ({sorted(set(bad))[:5]}) and {len(errors)} raised ({errors[:2]})")


# --------------------------------------------------------------------------
# Memory

def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("op", ["compact_columns", "compact_columns_blockwise",
                                "extract_blockwise"])
def test_wide_column_operations_leave_no_memory_behind(op):
    ncols = 2 ** 26
    A = spla.Matrix.from_coo([0, 1], [5, ncols - 1], [1.0, 2.0], shape=(2, ncols))
    small = spla.Matrix.from_coo([0, 1], [1, 2], [1.0, 2.0], shape=(2, 8))

    def run(M):
        if op == "compact_columns":
            return spla.compact_columns(M)
        if op == "compact_columns_blockwise":
            return spla.compact_columns_blockwise(M, [0, 1, 2])
        return spla.extract_blockwise(M, [0, 1], [0, 1, 2], [5, M.ncols - 1], [0, 1, 2])

    run(small)   # kernels loaded or compiled before the first reading
    gc.collect()
    before = _rss_bytes()
    out = run(A)
    del out
    gc.collect()
    grown = _rss_bytes() - before
    assert grown < 50 * 2 ** 20, f"{op} over 2**26 columns left RSS {grown / 2**20:.0f} MiB higher"


HUGE = 2 ** 40


def _huge():
    """4 x 2**40, 3 entries: no operator may allocate anything of the column count."""
    rows = np.array([0, 0, 2])
    cols = np.array([HUGE - 1, 3, 2 ** 33 + 7])
    vals = np.array([1.5, 2.0, -1.0])
    return spla.Matrix.from_coo(rows, cols, vals, shape=(4, HUGE)), rows, cols, vals


def _entries(M):
    """{(row, col): value} of a matrix."""
    ptr = np.asarray(M.indptr)
    idx = np.asarray(M.indices)
    val = np.ones(idx.size) if M.values is None else np.asarray(M.values)
    return {(i, int(idx[t])): float(val[t]) for i in range(M.nrows)
            for t in range(ptr[i], ptr[i + 1])}


def test_huge_column_space_compact_columns():
    A, rows, cols, vals = _huge()
    M, kept = spla.compact_columns(A)
    want_kept = sorted(set(cols.tolist()))
    assert np.asarray(kept).tolist() == want_kept
    assert _entries(M) == {(int(r), want_kept.index(int(c))): float(v)
                           for r, c, v in zip(rows, cols, vals)}
    M, kept, kept_ptr = spla.compact_columns_blockwise(A, [0, 2, 4], first=[HUGE - 2],
                                                       first_ptr=[0, 1, 1])
    # Group 0 (rows 0-1): its first column, then row 0's columns ascending;
    # group 1 (rows 2-3): its one column.
    assert np.asarray(kept).tolist() == [HUGE - 2, 3, HUGE - 1, 2 ** 33 + 7]
    assert np.asarray(kept_ptr).tolist() == [0, 3, 4]
    assert _entries(M) == {(0, 1): 2.0, (0, 2): 1.5, (2, 3): -1.0}


def test_huge_column_space_extract():
    A, rows, cols, vals = _huge()
    sel = np.array([2 ** 33 + 7, HUGE - 1, 5, HUGE - 1])
    E = spla.extract(A, cols=sel)
    want = {}
    for r, c, v in zip(rows, cols, vals):
        for t, s in enumerate(sel):
            if s == c:
                want[(int(r), t)] = float(v)
    assert E.shape == (4, sel.size) and _entries(E) == want
    B = spla.extract_blockwise(A, [0, 2], [0, 1, 2], [HUGE - 1, 3, 2 ** 33 + 7], [0, 2, 3])
    assert _entries(B) == {(0, 0): 1.5, (0, 1): 2.0, (1, 2): -1.0}


def test_huge_column_space_mxm():
    B, rows, cols, vals = _huge()
    # Two entries in a row of A: the general (symbolic + numeric) product.
    A = spla.Matrix.from_coo([0, 0, 1, 3], [0, 2, 2, 0], [2.0, 3.0, 1.0, -1.0], shape=(4, 4))
    C = spla.mxm(A, B).new()
    a = _entries(A)
    b = _entries(B)
    want = {}
    for (i, k), av in a.items():
        for (k2, j), bv in b.items():
            if k == k2:
                want[(i, j)] = want.get((i, j), 0.0) + av * bv
    assert C.shape == (4, HUGE) and _entries(C) == want


def test_huge_column_space_spgemm_twins():
    """Both compiled twins of each SpGEMM pass over 2**40 columns.  numba's
    parfor pass hoists an allocation of loop-invariant size out of a prange
    body, out of an untaken branch too: a bitmap over the columns written
    inline there made the parallel twin fail its allocation, which numba
    then reported as a SystemError or, worse, as an all-zero row count."""
    from kernels.cpu import spgemm as S
    from kernels.semiring_ops import ADD_PLUS, MUL_TIMES
    B, _, _, _ = _huge()
    a_ptr, a_idx = np.array([0, 2, 3, 3, 4]), np.array([0, 2, 2, 0])
    a_val = np.array([2.0, 3.0, 1.0, -1.0])
    one = np.ones(1)
    want_ptr = [0, 3, 4, 4, 6]
    for twin in ("serial", "parallel"):
        factor = np.int64(S.DENSE_ACC_FACTOR)
        ptr = S._symbolic.call_twin(twin, a_ptr, a_idx, B.indptr, B.indices, HUGE, factor, 2)
        assert ptr.tolist() == want_ptr, twin
        # Rows: 2 B[0] + 3 B[2], B[2], (empty), -B[0]; columns ascending.
        want_idx = [3, 2 ** 33 + 7, HUGE - 1, 2 ** 33 + 7, 3, HUGE - 1]
        want_val = [4.0, -3.0, 3.0, -1.0, -2.0, -1.5]
        idx, val, counts = S._numeric.call_twin(
            twin, a_ptr, a_idx, a_val, True, B.indptr, B.indices, B.values, True, HUGE, ptr,
            ADD_PLUS, MUL_TIMES, one, np.empty(0, np.int64), True, factor, 2)
        assert idx.tolist() == want_idx and val.tolist() == want_val, twin
        assert counts.tolist() == np.diff(want_ptr).tolist(), twin
        # spgemm's one pass: rows filled at their products' bounds, then
        # packed; B's two rows share their columns, so row 0's bound is loose.
        b_ptr, b_idx = np.array([0, 2, 4]), np.array([3, HUGE - 1, 3, HUGE - 1])
        b_val = np.array([1.0, 2.0, 3.0, 4.0])
        ub = S._row_bounds.call_twin(twin, np.array([0, 2, 3]), np.array([0, 1, 1]), b_ptr,
                                     HUGE)
        assert ub.tolist() == [0, 4, 6], twin
        parts = S._numeric.call_twin(
            twin, np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([1.0, 2.0, 1.0]), True,
            b_ptr, b_idx, b_val, True, HUGE, ub, ADD_PLUS, MUL_TIMES, one,
            np.empty(0, np.int64), True, factor, 2)
        assert parts[2].tolist() == [2, 2], twin
        p, idx, val = S._pack.call_twin(twin, ub, parts[2], parts[0], parts[1])
        assert p.tolist() == [0, 2, 4] and idx.tolist() == [3, HUGE - 1] * 2, twin
        assert val.tolist() == [7.0, 10.0, 3.0, 4.0], twin


# --------------------------------------------------------------------------
# Both sides of every switch give the same output

def _rand_csr(rng, nrows, ncols, per_row, spread):
    """Rows of up to ``per_row`` distinct columns among ``spread`` ids scattered
    over ``[0, ncols)``."""
    ids = np.sort(rng.choice(ncols, spread, replace=False))
    ptr = [0]
    idx = []
    for _ in range(nrows):
        k = int(rng.integers(0, per_row + 1))
        idx += sorted(rng.choice(ids, k, replace=False).tolist())
        ptr.append(len(idx))
    return np.array(ptr, np.int64), np.array(idx, np.int64), ids


def _assert_same(a, b, what):
    assert len(a) == len(b), what
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and np.array_equal(x, y), what


@pytest.mark.parametrize("ncols", [300, 2 ** 20])
def test_extract_cols_dense_and_hashed_maps_agree(monkeypatch, ncols):
    from kernels import common
    from kernels.cpu import extract as K
    rng = np.random.default_rng(ncols)
    ptr, idx, ids = _rand_csr(rng, 50, ncols, 12, 200)
    val = rng.random(idx.size)
    cols = np.concatenate([rng.choice(ids, 60), rng.integers(0, ncols, 10)])
    monkeypatch.setattr(common, "DENSE_MAP_FACTOR", 2 ** 40)
    dense = K.extract_cols(ptr, idx, val, True, cols, ncols)
    monkeypatch.setattr(common, "DENSE_MAP_FACTOR", 0)
    hashed = K.extract_cols(ptr, idx, val, True, cols, ncols)
    _assert_same(dense, hashed, "extract_cols")


@pytest.mark.parametrize("twin", ["serial", "parallel"])
def test_extract_cols_of_distinct_columns_matches_the_general_path(twin):
    """Columns selected once each take the branch-free kernel: it must give
    the general kernel's output, also where a row's selected entries come
    first (its later writes go past the row: to a spare slot, never into
    the next row, which the other thread fills)."""
    import scipy.sparse as sp
    from kernels.cpu import extract as K
    rng = np.random.default_rng(3)
    ncols = 3000
    ptr, idx, ids = _rand_csr(rng, 400, ncols, 12, 600)
    # Rows whose one selected column (0) comes before the unselected ones;
    # enough of them that both threads run at once (a stray write of the
    # first thread's last row would land after the second filled its first).
    early = np.repeat(np.array([[0, 5, 6, 7, 8, 9, 10, 11]]), 200_000, axis=0)
    # int32 column ids, as a matrix of 3,000 columns holds them, and the twins
    # called with the library's read-only inputs (``call_twin``): the
    # signatures the library's extractions compile anyway.
    rows = [(ptr, idx.astype(np.int32)),
            (np.arange(0, early.size + 1, 8, dtype=np.int64), early.ravel().astype(np.int32))]
    for p, ix in rows:
        val = rng.random(ix.size)
        for cols in (rng.permutation(ids)[:150], np.array([0, 4, 3], np.int64),
                     np.array([11, 0], np.int64), np.zeros(0, np.int64)):
            cols = np.asarray(cols, np.int64)
            map_ptr, map_pos = K.column_map(cols, ncols)
            sel, distinct = K.selected_bitmap(cols, ncols)
            assert distinct
            got = K._extract_distinct_cols.call_twin(twin, p, ix, val, True, map_ptr, map_pos,
                                                     sel)
            want = K._extract_cols.call_twin(twin, p, ix, val, True, cols, map_ptr, map_pos,
                                             False, np.zeros(0, np.int64), 0, sel)
            _assert_same(got, want, f"extract_cols {twin} {cols[:3]}")
            ref = sp.csr_matrix((val, ix, p), shape=(p.size - 1, ncols))[:, cols]
            ref.has_sorted_indices = False   # scipy keeps the input's entry order
            ref.sort_indices()
            assert got[0].tolist() == ref.indptr.tolist()
            assert got[1].tolist() == ref.indices.tolist()
            assert got[2].tolist() == ref.data.tolist()
    # A repeat turns the branch-free kernel off.
    assert not K.selected_bitmap(np.array([3, 1, 3], np.int64), 10)[1]


@pytest.mark.parametrize("ncols", [300, 2 ** 20])
def test_spgemm_dense_and_hash_accumulators_agree(monkeypatch, ncols):
    from kernels.cpu import spgemm as K
    from kernels import semiring_ops as ops
    rng = np.random.default_rng(ncols + 1)
    a_ptr, a_idx, _ = _rand_csr(rng, 40, 60, 8, 60)
    b_ptr, b_idx, _ = _rand_csr(rng, 60, ncols, 10, 150)
    a_val = rng.random(a_idx.size)
    b_val = rng.random(b_idx.size)
    one = np.ones(1)
    outs = []
    for factor in (2 ** 40, 0):
        monkeypatch.setattr(K, "DENSE_ACC_FACTOR", factor)
        ptr = K.spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols)
        for add, mul in ((ops.ADD_PLUS, ops.MUL_TIMES), (ops.ADD_MIN, ops.MUL_PLUS)):
            outs.append((factor, add, (ptr,) + tuple(K.spgemm_numeric(
                a_ptr, a_idx, a_val, True, b_ptr, b_idx, b_val, True, ncols, ptr, add,
                mul, one))))
    half = len(outs) // 2
    for (_, add, dense), (_, _, hashed) in zip(outs[:half], outs[half:]):
        _assert_same(dense, hashed, f"spgemm add={add}")



@pytest.mark.parametrize("ncols", [150, 2 ** 20])
def test_spgemm_one_pass_equals_two_passes(monkeypatch, ncols):
    """``spgemm`` with and without its counting pass, on both accumulators and
    with shared columns (loose row bounds to pack), gives the same arrays."""
    from kernels.cpu import spgemm as K
    from kernels import semiring_ops as ops
    rng = np.random.default_rng(ncols + 7)
    a_ptr, a_idx, _ = _rand_csr(rng, 40, 60, 8, 60)
    b_ptr, b_idx, _ = _rand_csr(rng, 60, ncols, 10, 150)
    a_val = rng.random(a_idx.size)
    b_val = rng.random(b_idx.size)
    for add, mul in ((ops.ADD_PLUS, ops.MUL_TIMES), (ops.ADD_MIN, ops.MUL_PLUS)):
        for dense in (2 ** 40, 0):
            monkeypatch.setattr(K, "DENSE_ACC_FACTOR", dense)
            outs = []
            for one_pass in (0, 2 ** 40):
                monkeypatch.setattr(K, "ONE_PASS_FACTOR", one_pass)
                outs.append(K.spgemm(a_ptr, a_idx, a_val, True, b_ptr, b_idx, b_val, True,
                                     ncols, add, mul, np.ones(1)))
            ptr = K.spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols)
            assert int(ptr[-1]) < int(K._row_bounds(a_ptr, a_idx, b_ptr, ncols)[-1])
            _assert_same(outs[0], outs[1], f"spgemm add={add} dense={dense}")


def _spgemm_reference(a_ptr, a_idx, a_val, b_ptr, b_idx, b_val):
    """Plain-Python plus_times: each column's terms summed in product order,
    the first term taken as is (so signed zeros and NaNs are exact)."""
    ptr, idx, val = [0], [], []
    for i in range(a_ptr.size - 1):
        row = {}
        for p in range(a_ptr[i], a_ptr[i + 1]):
            k = a_idx[p]
            for q in range(b_ptr[k], b_ptr[k + 1]):
                term = a_val[p] * b_val[q]
                j = int(b_idx[q])
                row[j] = term if j not in row else row[j] + term
        for j in sorted(row):
            idx.append(j)
            val.append(row[j])
        ptr.append(len(idx))
    return np.array(ptr, np.int64), np.array(idx, np.int64), np.array(val, a_val.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("seed", range(4))
def test_spgemm_plus_times_is_bit_exact_in_every_chunk(monkeypatch, dtype, seed):
    """The branch-free plus_times loop (slots start at -0, each row writes one
    column past its end while full) gives the plain-Python sums bit for bit:
    signed zeros, infinities, NaNs and wrapping integers included, with rows
    that end chunks, empty rows between full ones, and both twins; for a
    valued A and for a structural one (a sampler's Q), whose terms are B's
    values times one.

    Column ids are int32, as a matrix of 70 columns holds them, and the
    twins are called with the library's read-only inputs: the signatures
    the library's products compile anyway (each new one costs the suite
    tens of seconds)."""
    from kernels.cpu import spgemm as K
    from kernels import semiring_ops as ops
    rng = np.random.default_rng(seed)
    n, nb, ncols = 64, 40, 70
    a_ptr, a_idx, _ = _rand_csr(rng, n, nb, 6, nb)
    a_idx = a_idx.astype(np.int32)
    # Empty rows in runs, so rows before them end at the same offset.
    keep = np.repeat(rng.random(n // 4) < 0.6, 4)
    deg = np.where(keep, np.diff(a_ptr), 0)
    a_idx = np.concatenate([a_idx[a_ptr[i]:a_ptr[i] + deg[i]] for i in range(n)])
    a_ptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    b_ptr, b_idx, _ = _rand_csr(rng, nb, ncols, 12, 20)
    b_idx = b_idx.astype(np.int32)
    if np.dtype(dtype).kind == "f":
        pool = np.array([-0.0, 0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 3e-30, -7.0], dtype)
    else:
        # Products and sums past 2**63 wrap around.
        pool = np.array([0, 1, 3, -1, 7, 2 ** 62 + 3, -2 ** 63, 2 ** 40 + 1], dtype)
    b_val = rng.choice(pool, b_idx.size)
    one = np.ones(1, dtype)
    for a_hv, factor in itertools.product((True, False), (2 ** 40, 0)):
        # Dense (branch-free) and hashed accumulators.
        a_val = rng.choice(pool, a_idx.size) if a_hv else np.ones(a_idx.size, dtype)
        with np.errstate(all="ignore"):     # inf * 0 and integer wrap-around are meant
            want = _spgemm_reference(a_ptr, a_idx, a_val, b_ptr, b_idx, b_val)
        if not a_hv:
            a_val = one     # never read: a structural A's terms use ``one``
        monkeypatch.setattr(K, "DENSE_ACC_FACTOR", factor)
        ptr = K.spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols)
        assert np.array_equal(ptr, want[0])
        # Rows at the exact row pointer, and (spgemm's one pass) at the
        # products' bounds, then packed.
        ub = K._row_bounds(a_ptr, a_idx, b_ptr, ncols)
        assert ub[-1] > ptr[-1]
        for parts in (1, 3, 7, 64):
            for twin in ("serial", "parallel"):
                for at in (ptr, ub):
                    idx, val, counts = K._numeric.call_twin(
                        twin, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, True, ncols, at,
                        ops.ADD_PLUS, ops.MUL_TIMES, one, np.empty(0, np.int32),
                        np.dtype(dtype).kind in "iuf", np.int64(factor), parts)
                    got_ptr, idx, val = K._pack(at, counts, idx, val)
                    assert np.array_equal(got_ptr, want[0]), (factor, parts)
                    assert np.array_equal(idx, want[1]), (factor, parts)
                    bits = f"u{val.itemsize}"
                    assert np.array_equal(val.view(bits), want[2].view(bits)), (factor, parts)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 60), st.integers(1, 40), st.integers(1, 12), st.integers(0, 2 ** 31))
def test_spgemm_chunks_are_balanced_by_products(n, nb, parts, seed):
    """SpGEMM's row chunks cover the rows in order, and each holds at most
    its share of the products plus one row (hub rows clustered at the top
    must not land in one chunk)."""
    from kernels.cpu import spgemm as K
    rng = np.random.default_rng(seed)
    a_ptr, a_idx, _ = _rand_csr(rng, n, nb, min(6, nb), nb)
    # B's rows: a few hubs, mostly short (R-MAT-like skew).
    b_deg = np.where(rng.random(nb) < 0.1, rng.integers(50, 200, nb), rng.integers(0, 4, nb))
    b_ptr = np.concatenate([[0], np.cumsum(b_deg)]).astype(np.int64)
    bounds = K._chunks(a_ptr, a_idx, b_ptr, parts)
    work = np.array([b_deg[a_idx[a_ptr[i]:a_ptr[i + 1]]].sum() for i in range(n)], np.int64)
    assert bounds[0] == 0 and bounds[-1] == n and np.all(np.diff(bounds) >= 0)
    assert bounds.size == max(1, min(n, parts)) + 1
    share = work.sum() / (bounds.size - 1)
    biggest = work.max() if n else 0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        assert work[lo:hi].sum() <= share + biggest


def test_serial_and_parallel_twins_agree():
    import numba
    from kernels.cpu import groups as K
    rng = np.random.default_rng(3)
    ptr, idx, ids = _rand_csr(rng, 200, 5000, 40, 800)
    # int32 ids, as a matrix of 5,000 columns holds them, and the twins called
    # with the library's read-only inputs (call_twin): signatures the samplers
    # compile anyway.
    idx = idx.astype(np.int32)
    row_ptr = np.array([0, 50, 50, 120, 200], np.int64)
    first = np.concatenate([rng.choice(ids, 30, replace=False) for _ in range(4)])
    first_ptr = np.array([0, 30, 60, 90, 120], np.int64)
    # ncols = 5000: groups large next to the column space (tag arrays);
    # ncols = 2**40 (the same ids): hash tables.  All four must agree.
    largest = max(int(ptr[row_ptr[g + 1]] - ptr[row_ptr[g]]) + 30 for g in range(4))
    assert largest * K.DENSE_FACTOR >= 5000      # the tag-array mode is the one tested
    # The tag array is refilled when its tags would pass the limit: never
    # (the real limit), before every group of a worker but its first, or
    # some of the time; one worker for all groups, or one per thread.
    limits = (K.TAG_LIMIT, largest + 1, 2 * largest)
    for with_perm, limit, parts in itertools.product((True, False), limits,
                                                     (1, numba.get_num_threads())):
        opts = (with_perm, np.empty(0, np.int32), np.int64(limit))
        dense = (ptr, idx, row_ptr, first, first_ptr, np.int64(5000), parts) + opts
        hashed = dense[:5] + (np.int64(2 ** 40), parts) + opts
        want = K._compact.call_twin("serial", *hashed)
        _assert_same(want, K._compact.call_twin("parallel", *dense), "compact, tag arrays")
        _assert_same(want, K._compact.call_twin("serial", *dense), "compact, tag arrays, serial")
        _assert_same(want, K._compact.call_twin("parallel", *hashed),
                     "compact, hash tables, parallel")
    cols = np.concatenate([rng.choice(ids, 100, replace=False) for _ in range(4)])
    col_ptr = np.array([0, 100, 200, 300, 400], np.int64)
    rows = rng.integers(0, 200, 100)
    rptr = np.array([0, 25, 50, 75, 100], np.int64)
    # ncols = 5000: tag arrays; 2**40: hash tables (the same ids).
    args = (ptr, idx, rows, rptr, cols, col_ptr, np.int64(5000), numba.get_num_threads())
    work = max(int(np.diff(ptr)[rows[rptr[g]:rptr[g + 1]]].sum()) + 100 for g in range(4))
    assert work * K.DENSE_FACTOR >= 5000         # the tag-array mode is the one tested
    want = K._extract.call_twin("serial", *args)
    _assert_same(want, K._extract.call_twin("parallel", *args), "extract, tag arrays")
    hashed = args[:6] + (np.int64(2 ** 40), numba.get_num_threads())
    _assert_same(want, K._extract.call_twin("serial", *hashed), "extract, hash tables")
    _assert_same(want, K._extract.call_twin("parallel", *hashed),
                 "extract, hash tables, parallel")


def test_compact_groups_order_is_first_appearance():
    from kernels.cpu import groups as K
    rng = np.random.default_rng(11)
    ptr, idx, ids = _rand_csr(rng, 60, 2 ** 36, 9, 90)
    row_ptr = np.array([0, 20, 45, 60], np.int64)
    first = np.concatenate([rng.choice(ids, 5, replace=False) for _ in range(3)])
    first_ptr = np.array([0, 5, 10, 15], np.int64)
    out_idx, perm, kept, kept_ptr, dup = K.compact_groups(ptr, idx, row_ptr, first,
                                                          first_ptr, 2 ** 36)
    assert dup == -1
    want_kept = []
    for g in range(3):
        seen = list(first[first_ptr[g]:first_ptr[g + 1]])
        for e in range(ptr[row_ptr[g]], ptr[row_ptr[g + 1]]):
            if idx[e] not in seen:
                seen.append(idx[e])
        want_kept += seen
    assert kept.tolist() == [int(v) for v in want_kept]
    # Every entry maps back to its own column.
    assert np.array_equal(kept[out_idx], idx[perm])
    # Without perm (a structural input): the same columns, in the narrow type.
    got = K.compact_groups(ptr, idx, row_ptr, first, first_ptr, 2 ** 36, with_perm=False)
    assert got[0].dtype == np.int32 and got[1].size == 0
    assert np.array_equal(got[0], out_idx) and np.array_equal(got[2], kept)
    for r in range(60):
        assert np.all(np.diff(got[0][ptr[r]:ptr[r + 1]]) > 0)


# --------------------------------------------------------------------------
# Errors

def test_group_limit_is_a_kernel_error_and_an_invalid_value(monkeypatch):
    from kernels.common import KernelLimitError
    from kernels.cpu import groups as K
    e0 = np.zeros(1, np.int64)
    with pytest.raises(KernelLimitError, match="fewer than 2\\*\\*32"):
        # Refused from the group sizes alone, before any array is read.
        K.compact_groups(e0, np.zeros(0, np.int64), np.array([0, 0]), np.zeros(0, np.int64),
                         np.array([0, 2 ** 32]), 2 ** 40)
    monkeypatch.setattr(K, "GROUP_LIMIT", 4)
    A = spla.Matrix.from_coo([0, 0, 0, 0, 0], [1, 3, 5, 7, 9], shape=(1, 10))
    with pytest.raises(spla.InvalidValue,
                       match="^compact_columns_blockwise: argument 'row_ptr' must be groups "
                             "of fewer than 2\\*\\*2 distinct columns; got one with up to 5$"):
        spla.compact_columns_blockwise(A, [0, 1])
    with pytest.raises(spla.InvalidValue,
                       match="^extract_blockwise: argument 'col_ptr' must be groups of fewer "
                             "than 2\\*\\*2 distinct columns; got one with up to 5$"):
        spla.extract_blockwise(A, [0], [0, 1], [1, 3, 5, 7, 9], [0, 5])


def test_work_estimates_read_their_kernels_own_arguments():
    # A work estimate that names the wrong positional argument (say B's row
    # pointer where the kernel passes A's values) silently sends large calls
    # to the serial twin; numeric SpGEMM once ran serially that way.
    import importlib
    import inspect

    from kernels.parallel import ParallelKernel
    seen = 0
    for name in ("csr", "ewise", "extract", "groups", "reduce", "sample", "spgemm", "topk", "positions"):
        module = importlib.import_module(f"kernels.cpu.{name}")
        for attr, obj in vars(module).items():
            if not isinstance(obj, ParallelKernel):
                continue
            seen += 1
            kernel = list(inspect.signature(obj.py_func).parameters)
            work = [p.name for p in inspect.signature(obj.work).parameters.values()
                    if p.kind != p.VAR_POSITIONAL]
            assert kernel[:len(work)] == work, (f"{name}.{attr}", kernel, work)
    assert seen >= 10


def test_numeric_spgemm_of_a_large_structural_product_runs_in_parallel():
    from kernels.cpu import spgemm
    from kernels.parallel import SERIAL_WORK
    from spla.generators import random_csr
    A = random_csr(2000, 2000, 16, seed=1).structure()
    args = (A.indptr, A.indices, np.zeros(0), False, A.indptr, A.indices)
    assert spgemm._numeric.work(*args) >= SERIAL_WORK



def test_a_single_row_runs_serially_however_large():
    """Kernels whose threads share out rows run one huge row on the serial
    twin (a parallel region could only add its wake-up), and two rows of
    the same work in parallel."""
    from kernels.cpu import groups, sample, spgemm
    from kernels.parallel import SERIAL_WORK
    big = 10 * SERIAL_WORK
    for rows in (1, 2):
        ptr = np.array([0] + [big] * rows, np.int64)
        idx = np.zeros(big, np.int64)
        want = 0 if rows == 1 else big
        assert sample.sample_csr.work(ptr, np.zeros(big), True, 5, None) == want
        q_ptr = np.arange(rows + 1, dtype=np.int64)
        a_ptr = np.array([0, big], np.int64)  # A's rows hold the big picks
        assert sample.sample_gather.work(q_ptr, None, None, a_ptr, None, None, None, None,
                                         None, None, big) == (0 if rows == 1 else 2 * big)
        # A fanout of -1 ("every entry") counts as A's mean degree, not 2**62 picks
        tiny = np.array([0, 3], np.int64)
        assert sample.sample_gather.work(q_ptr, None, None, tiny, None, None, None, None,
                                         None, None, 2 ** 62) < SERIAL_WORK
        assert sample.dedup_sorted_rows.work(ptr, idx) == want
        assert (spgemm._numeric.work(ptr, idx, None, None, ptr) > 0) == (rows == 2)
        assert (spgemm._symbolic.work(ptr, idx, ptr) > 0) == (rows == 2)
        assert spgemm._row_bounds.work(ptr, idx, ptr, 1) == want
        assert spgemm._pack.work(ptr, np.zeros(rows), None, None) == want
        assert (groups._extract.work(ptr, idx, np.zeros(rows, np.int64), None, np.zeros(0),
                                     None, None, None) > 0) == (rows == 2)
        assert (groups._compact.work(ptr, idx, np.array([0, rows]), np.zeros(0), None, None,
                                     None) > 0) == (rows == 2)


def _pending_interrupt_reported(levels):
    """What CPython raises when compiled code returns with a KeyboardInterrupt
    pending ``levels`` calls deep: SystemErrors, each caused by the one below."""
    def call(*args):
        exc = KeyboardInterrupt()
        for _ in range(levels):
            try:
                raise exc
            except BaseException as inner:
                try:
                    raise SystemError("returned a result with an exception set") from inner
                except SystemError as outer:
                    exc = outer
        raise exc
    return call


@pytest.mark.parametrize("levels", [1, 3])
@pytest.mark.parametrize("twin", ["serial", "parallel"])
def test_ctrl_c_in_a_kernel_is_a_keyboard_interrupt(monkeypatch, twin, levels):
    # Seen under load: Ctrl-C while numba's code called back into Python
    # surfaced as "SystemError: CPUDispatcher(...) returned a result with an
    # exception set" instead of stopping the caller's loop.
    from kernels.parallel import ParallelKernel

    def add_one(a):
        for i in range(a.size):
            a[i] += 1

    kernel = ParallelKernel(add_one, lambda a: 0 if twin == "serial" else 1 << 30, cache=False)
    monkeypatch.setattr(kernel, twin, _pending_interrupt_reported(levels))
    with pytest.raises(KeyboardInterrupt) as info:
        kernel(np.zeros(3))
    assert info.value.__suppress_context__

    def failing(*args):
        raise SystemError("a genuine bug")

    monkeypatch.setattr(kernel, twin, failing)
    with pytest.raises(SystemError, match="genuine bug"):
        kernel(np.zeros(3))


# --------------------------------------------------------------------------
# One compiled signature per dtype, whatever the caller's arrays' flags

def test_fresh_and_read_only_inputs_share_one_compiled_signature():
    # numba types a read-only array apart from a writable one: before the
    # kernels passed their inputs read-only, a matrix's arrays (read-only
    # views) and a caller's fresh ones compiled, and cached, every kernel
    # twice per dtype (about a quarter of the compile time of a fresh run).
    from kernels.cpu import csr, extract
    fresh = np.arange(5, dtype=np.int16)
    pos = np.array([4, 0, 2], np.int64)
    frozen = [a.view() for a in (fresh, pos)]
    for a in frozen:
        a.flags.writeable = False
    for arr, p in ((fresh, pos), tuple(frozen)):
        assert extract.take(arr, p).tolist() == [4, 0, 2]
    assert fresh.flags.writeable and pos.flags.writeable, "the caller's arrays were changed"
    mine = [sig for sig in extract.take.serial.signatures if str(sig[0].dtype) == "int16"]
    assert len(mine) == 1 and not any(t.mutable for t in mine[0]), mine
    rows, cols = np.array([1, 0, 1]), np.array([0, 1, 0])
    csr.coo_to_csr(rows, cols, np.ones(3, np.int16), True, 2, True)
    sigs = [s for s in csr._coo_to_csr.signatures if str(s[2].dtype) == "int16"]
    assert len(sigs) == 1 and not any(t.mutable for t in sigs[0][:3]), sigs


def test_a_twin_called_directly_gets_the_library_calls_signature():
    # Tests comparing the twins call them through ``call_twin``: called
    # straight on fresh arrays, each twin compiled a writable-array signature
    # of its own (tens of seconds per kernel and dtype in CI).
    from numba import prange
    from kernels.parallel import ParallelKernel

    def products(a, b, out):
        for i in prange(a.size):
            out[i] = a[i] * b[i]
        return out

    kernel = ParallelKernel(products, lambda a, b, out: 0, cache=False, inputs=("a", "b"))
    a, b = np.arange(4.0), np.full(4, 2.0)
    for twin in ("serial", "parallel"):
        out = kernel.call_twin(twin, a, b, np.zeros(4))
        assert out.tolist() == [0.0, 2.0, 4.0, 6.0] and out.flags.writeable, twin
        assert kernel(a, b, np.zeros(4)).tolist() == [0.0, 2.0, 4.0, 6.0]
        sigs = getattr(kernel, twin).signatures
        assert len(sigs) == 1, (twin, sigs)
        assert [t.mutable for t in sigs[0]] == [False, False, True], (twin, sigs)
    assert a.flags.writeable and b.flags.writeable, "the caller's arrays were changed"
    with pytest.raises(ValueError, match="^ParallelKernel.call_twin: argument 'twin' must be "
                                         "'serial' or 'parallel', got 'fast'$"):
        kernel.call_twin("fast", a, b, np.zeros(4))


def test_declared_inputs_are_the_kernels_parameters_and_never_written():
    import numba
    from kernels.parallel import ParallelKernel, parallel_kernel

    def add_one(a, b):
        for i in range(a.size):
            a[i] += b[i]

    with pytest.raises(ValueError, match="^parallel_kernel: argument 'inputs' of .*add_one: "
                                         "expected parameter names of the kernel, got \\['c'\\]$"):
        parallel_kernel(lambda a, b: 0, cache=False, inputs=("b", "c"))(add_one)
    a = np.zeros(3)
    ParallelKernel(add_one, lambda a, b: 0, cache=False, inputs=("b",))(a, np.ones(3))
    assert a.tolist() == [1.0, 1.0, 1.0]
    # Declaring an array the kernel writes fails loudly when it compiles.
    wrong = ParallelKernel(add_one, lambda a, b: 0, cache=False, inputs=("a", "b"))
    with pytest.raises(numba.core.errors.TypingError, match="readonly"):
        wrong(np.zeros(3), np.ones(3))
