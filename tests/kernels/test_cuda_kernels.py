"""The numba.cuda kernels (``kernels.cuda``) against their CPU twins.

Every CUDA kernel must return exactly what its ``kernels.cpu`` twin returns:
same arrays, same dtypes, values bit-identical, sample picks identical.

The CUDA simulator is switched on by ``NUMBA_ENABLE_CUDASIM=1``, which must be
set before ``numba.cuda`` is first imported.  The main suite imports numba
normally, so ``test_cuda_kernels_under_simulator`` runs this file again in a
child process with the simulator on; there (``SPLA_IN_CUDASIM=1``) the
``test_sim_*`` tests run, elsewhere they skip.  The simulator is ~1000x
slower than a GPU: inputs stay tiny (<= 40 rows, <= 200 entries).

Each CPU kernel is compiled once per argument-type signature (~10 s for a
parallel kernel on a slow core, then cached on disk), so the inputs come in
two type families, int64 indices with float64 values and int32 indices with
float32 values, and the combinations of the other parameters are walked
through (``cyc``) rather than multiplied out.

The ``gpu`` tests run the same checks on cupy arrays on a real GPU, and skip
without one.
"""

import itertools
import os
import subprocess
import sys
import time

import numba
import numpy as np
import pytest

from kernels import semiring_ops as ops

from sim_marks import IN_SIM, sim
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --------------------------------------------------------------------------
# The parent: run the simulator tests in a child process.

# Warm numba caches: about a minute on 2 slow cores.  The first run ever
# also compiles the CPU reference kernels for every signature used here
# (several minutes), hence the generous limits.
CHILD_TIMEOUT_S = 900

#: Other files whose ``test_sim_*`` tests run in the same simulator child.
SIM_FILES = ("kernels/test_topk_cuda.py", "sampling/test_gpu_path.py",
             "sampling/test_gpu_queued.py", "kernels/test_spmm_cuda.py",
             "kernels/test_masked_cuda.py", "kernels/test_gather_cuda.py",
             "sampling/test_device_cache.py", "kernels/test_long_rows_cuda.py",
             "kernels/test_spgemm_hash_cuda.py", "kernels/test_layer_groups.py",
             "spla/test_layer_values.py", "spla/test_layer_ops.py",
             "spla/test_layer_trusted.py", "spla/test_layer_sums.py",
             "kernels/test_layer_rows.py", "kernels/test_random_cuda.py",
             "spla/test_importance_layer.py")


@pytest.mark.slow
@pytest.mark.cudasim
@pytest.mark.timeout(CHILD_TIMEOUT_S + 60)
def test_cuda_kernels_under_simulator():
    if IN_SIM:
        pytest.skip("this is the simulator child process itself")
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1", "SPLA_IN_CUDASIM": "1"}
    t0 = time.perf_counter()
    # One child runs every file's simulator tests: starting the simulator and
    # loading the kernels is most of a child's time.
    files = [os.path.abspath(__file__)] + [os.path.join(ROOT, "tests", f) for f in SIM_FILES]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-n", "0",
         *files, "-k", "sim"],
        env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=CHILD_TIMEOUT_S)
    took = time.perf_counter() - t0
    assert proc.returncode == 0, (
        f"simulator tests failed (rc={proc.returncode}, {took:.0f} s):\n"
        f"{proc.stdout}\n{proc.stderr}")
    # The other files' checks must have run in the child, not been skipped.
    for f in SIM_FILES:
        ran = [ln for ln in proc.stdout.splitlines() if ln.startswith(f"tests/{f}::test_sim_")]
        assert ran and all("PASSED" in ln for ln in ran), "\n".join(ran) or proc.stdout


# --------------------------------------------------------------------------
# Helpers.

#: The two type families: (index dtype, value dtype).
TYPES = ((np.int64, np.float64), (np.int32, np.float32))


def assert_same(got, want, what=""):
    """Exact equality of kernel outputs (tuples, arrays or scalars)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), what
        for t, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{what}[{t}]")
        return
    if isinstance(want, np.ndarray):
        g = _host(got)
        assert isinstance(g, np.ndarray), f"{what}: got {type(got)}"
        assert g.dtype == want.dtype, f"{what}: dtype {g.dtype} != {want.dtype}"
        assert g.shape == want.shape, f"{what}: shape {g.shape} != {want.shape}"
        # Byte equality: bit-identical floats (and -0.0 != 0.0).
        assert g.tobytes() == want.tobytes(), f"{what}:\n got {g}\nwant {want}"
        return
    assert not isinstance(got, np.ndarray) and int(got) == int(want), (
        f"{what}: {got!r} != {want!r}")


def _host(a):
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "get"):
        return a.get()
    return a


def _values(rs, k, dtype):
    """Values of mixed sign and magnitude (so summation order shows)."""
    if np.dtype(dtype).kind == "f":
        v = rs.standard_normal(k) * 10.0 ** rs.randint(-3, 4, k)
        return v.astype(dtype)
    # Small integers: no overflow (whose wrapping the simulator, running
    # kernels as Python, would not reproduce).
    return rs.randint(-3, 4, k).astype(dtype)


def _maybe(rs, k, dtype, hv):
    return _values(rs, k, dtype) if hv else np.zeros(0, dtype)


def rand_csr(rs, nrows, ncols, max_row=6, idx_dtype=np.int64,
             val_dtype=np.float64, empty_frac=0.3):
    """A canonical CSR matrix (sorted, distinct columns; some empty rows)."""
    ptr = np.zeros(nrows + 1, np.int64)
    cols = [np.zeros(0, np.int64)]
    for i in range(nrows):
        k = 0
        if ncols and rs.rand() >= empty_frac:
            k = rs.randint(1, min(max_row, ncols) + 1)
            cols.append(np.sort(rs.choice(ncols, k, replace=False)))
        ptr[i + 1] = ptr[i] + k
    idx = np.concatenate(cols).astype(idx_dtype)
    return ptr, idx, _values(rs, idx.size, val_dtype)


#: (nrows, ncols, type family): empty matrices, a single row, empty rows.
SHAPES = [(0, 0, 0), (0, 5, 1), (5, 0, 0), (1, 12, 1), (7, 9, 1), (25, 18, 0),
          (40, 30, 0), (33, 21, 1)]


def cases(seed, **kw):
    """(name, rs, ptr, idx, val, ncols) over SHAPES."""
    rs = np.random.RandomState(seed)
    for nrows, ncols, fam in SHAPES:
        idt, vdt = TYPES[fam]
        ptr, idx, val = rand_csr(rs, nrows, ncols, idx_dtype=idt, val_dtype=vdt,
                                 **kw)
        yield (f"{nrows}x{ncols}/{np.dtype(idt)}/{np.dtype(vdt)}", rs, ptr, idx,
               val, ncols)


def cyc(*seq):
    """Endless cycle: combinations are walked through, not multiplied out."""
    return itertools.cycle(seq)


HVS = ((True, True), (False, True), (True, False), (False, False))

SEMIRINGS = [
    (ops.ADD_PLUS, ops.MUL_TIMES),
    (ops.ADD_MIN, ops.MUL_PLUS),
    (ops.ADD_MAX, ops.MUL_MIN),
    (ops.ADD_ANY, ops.MUL_FIRST),
    (ops.ADD_PLUS, ops.MUL_PAIR),
    (ops.ADD_TIMES, ops.MUL_SECOND),
    (ops.ADD_MAX, ops.MUL_MAX),
]


# --------------------------------------------------------------------------
# Checks, each run on "device" arrays made by ``dev`` (numpy under the
# simulator, cupy on a GPU) and compared with the CPU kernel on numpy arrays.

def check_csr(C, G, dev):
    rs = np.random.RandomState(1)
    for nrows, ncols, nnz, fam, hv in [(0, 0, 0, 0, True), (4, 3, 0, 1, True),
                                       (1, 5, 9, 1, True), (6, 4, 30, 0, True),
                                       (40, 12, 200, 0, False),
                                       (30, 200, 120, 1, True),
                                       (12, 6, 60, 0, True), (20, 3, 80, 1, False)]:
        idt, vdt = TYPES[fam]
        rows = rs.randint(0, max(nrows, 1), nnz).astype(idt)
        cols = rs.randint(0, max(ncols, 1), nnz).astype(idt)
        vals = _maybe(rs, nnz, vdt, hv)
        for sd in (True, False):
            want = C.csr.coo_to_csr(rows, cols, vals, hv, nrows, sd)
            got = G.csr.coo_to_csr(dev(rows), dev(cols), dev(vals), hv, nrows, sd)
            assert_same(got, want, f"coo_to_csr {nrows}x{ncols} nnz={nnz} "
                        f"{np.dtype(idt)} {np.dtype(vdt)} hv={hv} sum={sd}")
    # first_unsorted: canonical, then with defects planted.
    for name, _, ptr, idx, _, _ in cases(2):
        assert_same(G.csr.first_unsorted(dev(ptr), dev(idx)),
                    C.csr.first_unsorted(ptr, idx), f"first_unsorted {name}")
        for t in range(1, idx.size, 11):
            bad = idx.copy()
            bad[t] = bad[t - 1]  # a repeat (or a drop across a row boundary)
            assert_same(G.csr.first_unsorted(dev(ptr), dev(bad)),
                        C.csr.first_unsorted(ptr, bad), f"first_unsorted {name} t={t}")
            bad = idx.copy()
            bad[t - 1], bad[t] = bad[t], bad[t - 1]
            assert_same(G.csr.first_unsorted(dev(ptr), dev(bad)),
                        C.csr.first_unsorted(ptr, bad), f"first_unsorted swap {name} t={t}")


def _numeric_case(C, G, dev, rs, a_ptr, a_idx, b_ptr, b_idx, p, ptr, dt, add, mul,
                  a_hv, b_hv, what):
    a_val = _maybe(rs, a_idx.size, dt, a_hv)
    b_val = _maybe(rs, b_idx.size, dt, b_hv)
    one = np.ones(1, dt)
    want = C.spgemm.spgemm_numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val,
                                   b_hv, p, ptr, add, mul, one)
    got = G.spgemm.spgemm_numeric(dev(a_ptr), dev(a_idx), dev(a_val), a_hv,
                                  dev(b_ptr), dev(b_idx), dev(b_val), b_hv, p,
                                  dev(ptr), add, mul, dev(one))
    assert_same(got, want, f"numeric {what} {np.dtype(dt)} add={add} mul={mul} "
                f"hv={a_hv},{b_hv}")
    # mxm's entry point: one pass on the CPU for products this small, two on
    # the device; the same arrays as the two passes above.
    full = C.spgemm.spgemm(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, p, add,
                           mul, one)
    assert_same(full, (ptr,) + tuple(want), f"spgemm {what} {np.dtype(dt)} add={add}")
    assert_same(G.spgemm.spgemm(dev(a_ptr), dev(a_idx), dev(a_val), a_hv, dev(b_ptr),
                                dev(b_idx), dev(b_val), b_hv, p, add, mul, dev(one)),
                full, f"spgemm twin {what} {np.dtype(dt)} add={add}")


def check_spgemm(C, G, dev):
    rs = np.random.RandomState(3)
    srs = cyc(*SEMIRINGS)
    hvs = cyc(*HVS, (True, True))
    for (n, m, p), fam in zip([(0, 0, 0), (0, 4, 3), (3, 0, 5), (1, 9, 7),
                               (8, 6, 10), (30, 20, 25), (40, 12, 40),
                               (20, 15, 12)], cyc(0, 1)):
        idt, vdt = TYPES[fam]
        a_ptr, a_idx, _ = rand_csr(rs, n, m, max_row=5, idx_dtype=idt)
        b_ptr, b_idx, _ = rand_csr(rs, m, p, max_row=5, idx_dtype=idt)
        what = f"{n}x{m}x{p} {np.dtype(idt)}"
        ptr = C.spgemm.spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, p)
        assert_same(G.spgemm.spgemm_symbolic(dev(a_ptr), dev(a_idx), dev(b_ptr),
                                             dev(b_idx), p), ptr, "symbolic " + what)
        dts = [vdt, vdt, vdt] + ([np.int64] if idt == np.int64 else [])
        for dt in dts:
            add, mul = next(srs)
            if np.dtype(dt).kind == "i" and add == ops.ADD_TIMES:
                add = ops.ADD_PLUS
            _numeric_case(C, G, dev, rs, a_ptr, a_idx, b_ptr, b_idx, p, ptr, dt,
                          add, mul, *next(hvs), what)
        if idt == np.int64:
            # A structural product: spla runs it with 1-byte bool scratch values.
            _numeric_case(C, G, dev, rs, a_ptr, a_idx, b_ptr, b_idx, p, ptr, np.bool_,
                          ops.ADD_ANY, ops.MUL_PAIR, False, False, what)
    # One long row hitting three columns twelve times each: every output is
    # a sum of twelve terms of mixed magnitudes, so the order must match.
    b_ptr = np.arange(13, dtype=np.int64) * 3
    for idt, dt in TYPES:
        a_ptr = np.array([0, 12], np.int64)
        a_idx = np.arange(12, dtype=idt)
        b_idx = np.tile(np.array([0, 2, 5], idt), 12)
        ptr = C.spgemm.spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, 6)
        assert_same(G.spgemm.spgemm_symbolic(dev(a_ptr), dev(a_idx), dev(b_ptr),
                                             dev(b_idx), 6), ptr, "symbolic long row")
        _numeric_case(C, G, dev, rs, a_ptr, a_idx, b_ptr, b_idx, 6, ptr, dt,
                      ops.ADD_PLUS, ops.MUL_TIMES, True, True, "long row")


def check_spgemm_gather(C, G, dev):
    rs = np.random.RandomState(4)
    muls = cyc(ops.MUL_TIMES, ops.MUL_PLUS, ops.MUL_PAIR, ops.MUL_SECOND,
               ops.MUL_FIRST)
    hvs = cyc(*HVS[:3])
    for (n, m, p), fam in zip([(0, 3, 3), (1, 4, 6), (12, 8, 9), (40, 25, 30),
                               (6, 0, 4), (20, 10, 12), (15, 10, 8)], cyc(0, 1)):
        idt, dt = TYPES[fam]
        structural = (n, m, p) == (15, 10, 8)
        if structural:  # as spla runs a structural product: bool scratch values
            dt = np.bool_
        a_ptr, a_idx, _ = rand_csr(rs, n, m, max_row=1, idx_dtype=idt)
        b_ptr, b_idx, _ = rand_csr(rs, m, p, max_row=6, idx_dtype=idt)
        for _ in range(3):
            mul = next(muls)
            a_hv, b_hv = next(hvs)
            if structural:
                mul, a_hv, b_hv = ops.MUL_PAIR, False, False
            a_val = _maybe(rs, a_idx.size, dt, a_hv)
            b_val = _maybe(rs, b_idx.size, dt, b_hv)
            one = np.ones(1, dt)
            want = C.spgemm.spgemm_gather(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx,
                                          b_val, b_hv, mul, one)
            got = G.spgemm.spgemm_gather(dev(a_ptr), dev(a_idx), dev(a_val), a_hv,
                                         dev(b_ptr), dev(b_idx), dev(b_val), b_hv,
                                         mul, dev(one))
            assert_same(got, want, f"gather {n}x{m}x{p} {np.dtype(dt)} mul={mul} "
                        f"hv={a_hv},{b_hv}")


def check_extract(C, G, dev):
    hvs = cyc(True, False, True)
    for name, rs, ptr, idx, val, ncols in cases(5):
        n = ptr.size - 1
        hv = next(hvs)
        v = val if hv else np.zeros(0, val.dtype)
        for rows in (np.zeros(0, np.int64), rs.randint(0, max(n, 1), 2 * n),
                     np.arange(n)[::-1]):
            rows = rows.astype(np.int64)
            want = C.extract.gather_rows(ptr, idx, v, hv, rows)
            got = G.extract.gather_rows(dev(ptr), dev(idx), dev(v), hv, dev(rows))
            assert_same(got, want, f"gather_rows {name} hv={hv} rows={rows}")
        for arr in (idx, val):
            pos = rs.randint(0, max(arr.size, 1), 3 * arr.size).astype(np.int64)
            if not arr.size:
                pos = pos[:0]
            want = C.extract.take(arr, pos)
            got = G.extract.take(dev(arr), dev(pos))
            assert_same(got, want, f"take {name} {arr.dtype}")
        for cols in (np.zeros(0, np.int64), rs.randint(0, max(ncols, 1), 2 * ncols),
                     rs.permutation(ncols)):
            cols = cols.astype(np.int64)
            want = C.extract.column_map(cols, ncols)
            got = G.extract.column_map(dev(cols), ncols)
            assert_same(got, want, f"column_map {name} cols={cols}")
            want = C.extract.extract_cols(ptr, idx, v, hv, cols, ncols)
            got = G.extract.extract_cols(dev(ptr), dev(idx), dev(v), hv, dev(cols),
                                         ncols)
            assert_same(got, want, f"extract_cols {name} hv={hv} cols={cols}")


def check_ewise(C, G, dev):
    rs = np.random.RandomState(6)
    srs = cyc(*SEMIRINGS)
    hvs = cyc(*HVS, (True, True))
    for (n, m), fam in zip([(0, 0), (0, 4), (5, 0), (1, 10), (9, 7), (40, 15),
                            (30, 12), (17, 30)], cyc(0, 1)):
        idt, dt = TYPES[fam]
        a_ptr, a_idx, _ = rand_csr(rs, n, m, max_row=7, idx_dtype=idt)
        b_ptr, b_idx, _ = rand_csr(rs, n, m, max_row=7, idx_dtype=idt)
        for _ in range(3):
            a_hv, b_hv = next(hvs)
            a_val = _maybe(rs, a_idx.size, dt, a_hv)
            b_val = _maybe(rs, b_idx.size, dt, b_hv)
            one = np.ones(1, dt)
            add, mul = next(srs)
            for union, op in ((True, add), (False, mul)):
                want = C.ewise.ewise(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val,
                                     b_hv, union, op, one)
                got = G.ewise.ewise(dev(a_ptr), dev(a_idx), dev(a_val), a_hv,
                                    dev(b_ptr), dev(b_idx), dev(b_val), b_hv, union,
                                    op, dev(one))
                assert_same(got, want, f"ewise {n}x{m} {np.dtype(dt)} union={union} "
                            f"op={op} hv={a_hv},{b_hv}")


@numba.njit
def _affine(x):
    return x * 2.0 + 1.0


@numba.njit
def _positive(x):
    return x > 0


@numba.njit
def _pred(i, j, v):
    return (i + j) % 3 == 0 or v > 0.5


def check_map_select(C, G, dev):
    # The CPU kernels taking a user function are not cached on disk: one
    # value dtype per function keeps their compilations few.
    for name, rs, ptr, idx, val, _ in cases(7):
        f = _affine if val.dtype == np.float64 else _positive
        want = C.ewise.map_values(val, f)
        got = G.ewise.map_values(dev(val), f)
        assert_same(got, want, f"map_values {name} {f.__name__}")
        if idx.dtype == np.int64:
            want = C.ewise.select_mask(ptr, idx, val, _pred)
            got = G.ewise.select_mask(dev(ptr), dev(idx), dev(val), _pred)
            assert_same(got, want, f"select_mask {name}")


def check_reduce(C, G, dev):
    idents = {ops.ADD_PLUS: 0, ops.ADD_MIN: 99, ops.ADD_MAX: -99, ops.ADD_ANY: 7,
              ops.ADD_TIMES: 1}
    hvs = cyc(True, True, False)
    for name, rs, ptr, _, val, _ in cases(8):
        dt = val.dtype
        for op, ident in idents.items():
            hv = next(hvs)
            v = _maybe(rs, val.size, dt, hv)
            identity = np.array([ident], dt)
            one = np.ones(1, dt)
            want = C.reduce.reduce_rows(ptr, v, hv, op, identity, one)
            got = G.reduce.reduce_rows(dev(ptr), dev(v), hv, op, dev(identity),
                                       dev(one))
            assert_same(got, want, f"reduce_rows {name} hv={hv} op={op}")
    # The fold's type: float32 rounds at every step (1 + 2**-24 + 2**-24 is 1
    # in float32, not the float64 sum rounded once) and int32 sums wrap.
    ptr = np.array([0, 3, 6], np.int64)
    for v, plus in ((np.array([1, 2**-24, 2**-24, 3, 1e8, -1e8], np.float32), [1, 0]),
                    (np.array([2**31 - 1, 5, 7, -2**31, -9, 4], np.int32),
                     [-2**31 + 11, -2**31 - 5 + 2**32])):
        for op in (ops.ADD_PLUS, ops.ADD_TIMES):
            args = (v, True, op, np.zeros(1, v.dtype), np.ones(1, v.dtype))
            want = C.reduce.reduce_rows(ptr, *args)
            got = G.reduce.reduce_rows(dev(ptr), *[dev(a) if isinstance(a, np.ndarray) else a
                                                   for a in args])
            assert_same(got, want, f"reduce_rows fold type {v.dtype} op={op}")
            if op == ops.ADD_PLUS:
                assert want.tolist() == plus, (v.dtype, want)


# --------------------------------------------------------------------------
# Sampling.

SKEWED_ROW = 4  # row kinds repeat every 8 rows; row 4 is "skewed"


def sample_matrix(rs, nrows=36, dtype=np.float64):
    """Rows of every kind the row sampler distinguishes (<= 200 entries)."""
    kinds = ["empty", "uniform", "random", "zeros", "skewed", "single",
             "some_zero", "long_uniform"]
    assert kinds[SKEWED_ROW] == "skewed"
    ptr = [0]
    idx = []
    val = []
    for i in range(nrows):
        kind = kinds[i % len(kinds)]
        d = {"empty": 0, "single": 1, "skewed": 16, "long_uniform": 9}.get(
            kind, rs.randint(2, 7))
        if kind == "skewed":
            w = np.ones(d)
            w[rs.randint(d)] = 1e6
        elif kind in ("uniform", "long_uniform"):
            w = np.full(d, 2.5)
        elif kind == "zeros":
            w = np.zeros(d)
        elif kind == "some_zero":
            w = rs.rand(d)
            w[rs.rand(d) < 0.5] = 0.0
        else:
            w = rs.rand(d) * 10.0 ** rs.randint(-2, 3, d)
        ptr.append(ptr[-1] + d)
        idx.append(np.sort(rs.choice(50, d, replace=False)))
        val.append(w)
    ptr = np.array(ptr, np.int64)
    idx = np.concatenate(idx).astype(np.int64)
    val = np.concatenate(val).astype(dtype)
    assert ptr[-1] <= 200
    return ptr, idx, val


def _k_choices(rs, n):
    """(k_scalar, k_arr): scalars, and per-row counts from 0 up to past
    most rows' positive counts."""
    none = np.zeros(0, np.int64)
    return [(3, none), (1, none), (5, none), (25, none),
            (0, rs.randint(0, 9, n).astype(np.int64))]


SEED, STREAM = np.uint64(20240611), np.uint64(3)


def check_sample(C, G, dev):
    rs = np.random.RandomState(9)
    p64, _, v64 = sample_matrix(rs, 36, np.float64)
    p32, _, v32 = sample_matrix(rs, 33, np.float32)
    ps, _, _ = sample_matrix(rs, 17, np.float64)
    skew = v64[p64[SKEWED_ROW]:p64[SKEWED_ROW + 1]]
    mats = [("f64", p64, v64, True),
            ("f32", p32, v32, True),
            ("structural", ps, np.zeros(0, np.float64), False),
            ("one skewed row", np.array([0, skew.size], np.int64), skew, True),
            ("no rows", np.zeros(1, np.int64), np.zeros(0, np.float64), True)]
    for name, ptr, v, hv in mats:
        n = ptr.size - 1
        if hv:
            want = C.sample.row_prefix(ptr, v)
            got = G.sample.row_prefix(dev(ptr), dev(v))
            assert_same(got, want, f"row_prefix {name}")
        rids = cyc(np.zeros(0, np.int64), rs.randint(0, 2**40, n).astype(np.int64))
        for k_scalar, k_arr in _k_choices(rs, n):
            rid = next(rids)
            for replace in (False, True):
                want = C.sample.sample_csr(ptr, v, hv, k_scalar, k_arr, rid, SEED,
                                           STREAM, replace)
                got = G.sample.sample_csr(dev(ptr), dev(v), hv, k_scalar, dev(k_arr),
                                          dev(rid), SEED, STREAM, replace)
                what = (f"sample_csr {name} k={k_scalar}/{k_arr.size} "
                        f"rid={rid.size} replace={replace}")
                assert_same(got, want, what)
                if replace:
                    want_d = C.sample.dedup_sorted_rows(*want)
                    got_d = G.sample.dedup_sorted_rows(*got)
                    assert_same(got_d, want_d, "dedup " + what)


def check_sample_gather(C, G, dev):
    rs = np.random.RandomState(10)
    seed, stream = np.uint64(77), np.uint64(0)
    weights = cyc(np.float32, None, np.float64)
    replaces = cyc(False, True, True)
    for nq, a_rows in ((0, 5), (1, 9), (30, 36), (25, 20)):
        q_ptr = np.zeros(nq + 1, np.int64)
        q_ptr[1:] = np.cumsum(rs.rand(nq) < 0.8)
        q_idx = rs.randint(0, a_rows, int(q_ptr[-1])).astype(np.int64)
        zero_some = rs.rand(q_idx.size)
        zero_some[rs.rand(q_idx.size) < 0.3] = 0.0
        for q_scale in (np.zeros(0, np.float64), zero_some):
            wdt = next(weights)
            a_ptr, _, a_val = sample_matrix(rs, a_rows, wdt or np.float64)
            if wdt is not None:  # weighted: A's values and cached prefixes
                prefix, positives, modes = C.sample.row_prefix(a_ptr, a_val)
                guide = C.sample.row_guide(a_ptr, prefix, positives, modes)
                args = (a_val, True, prefix, guide, positives, modes)
            else:  # structural (or non-times) A, as spla passes it
                args = (np.zeros(0, np.float64), False, np.zeros(0, np.float64),
                        np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(0, np.uint8))
            rids = cyc(np.zeros(0, np.int64), rs.randint(0, 2**40, nq).astype(np.int64))
            for k_scalar, k_arr in _k_choices(rs, nq):
                rid = next(rids)
                replace = next(replaces)
                want = C.sample.sample_gather(q_ptr, q_idx, q_scale, a_ptr, *args,
                                              k_scalar, k_arr, rid, seed, stream,
                                              replace)
                got = G.sample.sample_gather(
                    dev(q_ptr), dev(q_idx), dev(q_scale), dev(a_ptr), dev(args[0]),
                    args[1], *map(dev, args[2:]), k_scalar, dev(k_arr), dev(rid),
                    seed, stream, replace)
                assert_same(got, want, f"sample_gather nq={nq} scale={q_scale.size} "
                            f"weights={wdt} k={k_scalar}/{k_arr.size} "
                            f"rid={rid.size} replace={replace}")


# --------------------------------------------------------------------------
# Groups (bulk samplers' relabelling and blockwise extraction).

def _group_ptr(rs, total, n_groups):
    cuts = np.sort(rs.randint(0, total + 1, max(n_groups - 1, 0)))
    return np.concatenate([[0], cuts, [total]]).astype(np.int64)


def check_groups(C, G, dev):
    rs = np.random.RandomState(13)
    for (nrows, ncols, n_groups, fam, dup) in [(0, 4, 1, 0, False), (1, 9, 1, 1, False),
                                              (12, 15, 3, 1, True), (30, 25, 5, 0, False),
                                              (40, 30, 4, 0, True), (8, 6, 8, 1, False),
                                              (6, 0, 2, 0, False)]:
        idt = TYPES[fam][0]
        ptr, idx, _ = rand_csr(rs, nrows, ncols, idx_dtype=idt)
        what = f"{nrows}x{ncols} groups={n_groups} {np.dtype(idt)} dup={dup}"
        # compact_groups: leading columns per group (some groups none).
        row_ptr = _group_ptr(rs, nrows, n_groups)
        firsts = []
        for g in range(n_groups):
            k = rs.randint(0, min(ncols, 4) + 1) if ncols else 0
            f = rs.choice(ncols, k, replace=False) if k else np.zeros(0, np.int64)
            if dup and k >= 2 and g % 2 == 1:
                f[-1] = f[0]
            firsts.append(f)
        first = np.concatenate([np.zeros(0, np.int64)] + firsts).astype(np.int64)
        first_ptr = np.concatenate([[0], np.cumsum([f.size for f in firsts])]).astype(np.int64)
        for fi, fp in ((first, first_ptr), (np.zeros(0, np.int64),
                                            np.zeros(n_groups + 1, np.int64))):
            for with_perm in (True, False):
                want = C.groups.compact_groups(ptr, idx, row_ptr, fi, fp, ncols, with_perm)
                got = G.groups.compact_groups(dev(ptr), dev(idx), dev(row_ptr), dev(fi),
                                              dev(fp), ncols, with_perm)
                assert_same(got, want,
                            f"compact_groups {what} first={fi.size} with_perm={with_perm}")
        # extract_groups: rows (may repeat) and distinct columns per group.
        rows = rs.randint(0, max(nrows, 1), 2 * nrows if nrows else 0).astype(np.int64)
        rptr = _group_ptr(rs, rows.size, n_groups)
        colss = []
        for g in range(n_groups):
            k = rs.randint(0, ncols + 1) if ncols else 0
            c = rs.choice(ncols, k, replace=False) if k else np.zeros(0, np.int64)
            if dup and k >= 2 and g % 2 == 0:
                c[-1] = c[0]
            colss.append(c)
        cols = np.concatenate([np.zeros(0, np.int64)] + colss).astype(np.int64)
        cptr = np.concatenate([[0], np.cumsum([c.size for c in colss])]).astype(np.int64)
        want = C.groups.extract_groups(ptr, idx, rows, rptr, cols, cptr, ncols)
        got = G.groups.extract_groups(dev(ptr), dev(idx), dev(rows), dev(rptr),
                                      dev(cols), dev(cptr), ncols)
        assert_same(got, want, f"extract_groups {what}")
        if nrows:
            # Rows before and after the groups: empty output rows.
            rows2 = np.concatenate([[nrows - 1], rows, [0, nrows // 2]]).astype(np.int64)
            want2 = C.groups.extract_groups(ptr, idx, rows2, rptr + 1, cols, cptr, ncols)
            got2 = G.groups.extract_groups(dev(ptr), dev(idx), dev(rows2), dev(rptr + 1),
                                           dev(cols), dev(cptr), ncols)
            assert_same(got2, want2, f"extract_groups {what}, rows outside the groups")
            assert int(np.diff(want2[0])[[0, -2, -1]].max()) == 0
        if dup:
            assert want[3] >= 0 or not any(c.size >= 2 for c in colss[::2])


# --------------------------------------------------------------------------
# Sparse column spaces: column ids scattered over 2**40, where the CPU
# kernels switch to hashed maps and accumulators and the CUDA ones to
# sorted maps (neither may allocate anything of the column count).

HUGE_NCOLS = 2 ** 40


def _spread(rs, ptr, idx, ncols_small):
    """The same matrix with column j renamed to the j-th of sorted huge ids."""
    k = max(ncols_small, 1)
    ids = np.unique(rs.randint(0, 2 ** 36, 4 * k, dtype=np.int64))
    while ids.size < k:   # (``choice`` without replacement would permute 2**36 ids)
        ids = np.unique(np.concatenate([ids, rs.randint(0, 2 ** 36, k, dtype=np.int64)]))
    ids = rs.permutation(ids)[:k]
    ids = np.sort(ids) * 16 + 5
    return ptr, ids[idx].astype(np.int64), ids


def check_sparse_columns(C, G, dev):
    rs = np.random.RandomState(17)
    for nrows, small, fam in ((12, 20, 0), (30, 25, 1), (5, 3, 0)):
        idt, vdt = TYPES[fam]
        ptr, idx0, val = rand_csr(rs, nrows, small, val_dtype=vdt)
        ptr, idx, ids = _spread(rs, ptr, idx0, small)
        what = f"{nrows}x2**40 ({small} used) {np.dtype(vdt)}"
        # extract_cols, selected columns repeated and some never used.
        cols = np.concatenate([rs.choice(ids, 2 * small), [7, 2 ** 39]]).astype(np.int64)
        for hv in (True, False):
            v = val if hv else np.zeros(0, vdt)
            want = C.extract.extract_cols(ptr, idx, v, hv, cols, HUGE_NCOLS)
            got = G.extract.extract_cols(dev(ptr), dev(idx), dev(v), hv, dev(cols),
                                         HUGE_NCOLS)
            assert_same(got, want, f"extract_cols {what} hv={hv}")
        # A (nrows x small, general: rows of several entries) @ B (small x 2**40).
        a_ptr, a_idx, a_val = rand_csr(rs, nrows, small, val_dtype=vdt)
        b_ptr, b_idx0, b_val = rand_csr(rs, small, small, val_dtype=vdt)
        b_ptr, b_idx, _ = _spread(rs, b_ptr, b_idx0, small)
        want_ptr = C.spgemm.spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, HUGE_NCOLS)
        got_ptr = G.spgemm.spgemm_symbolic(dev(a_ptr), dev(a_idx), dev(b_ptr), dev(b_idx),
                                           HUGE_NCOLS)
        assert_same(got_ptr, want_ptr, f"spgemm_symbolic {what}")
        one = np.ones(1, vdt)
        for add, mul in SEMIRINGS[:3]:
            want = C.spgemm.spgemm_numeric(a_ptr, a_idx, a_val, True, b_ptr, b_idx, b_val,
                                           True, HUGE_NCOLS, want_ptr, add, mul, one)
            got = G.spgemm.spgemm_numeric(dev(a_ptr), dev(a_idx), dev(a_val), True,
                                          dev(b_ptr), dev(b_idx), dev(b_val), True,
                                          HUGE_NCOLS, dev(want_ptr), add, mul, dev(one))
            assert_same(got, want, f"spgemm_numeric {what} add={add} mul={mul}")
        # Groups over the huge column space.
        row_ptr = _group_ptr(rs, nrows, 3)
        first = np.concatenate([rs.choice(ids, min(3, ids.size), replace=False)
                                for _ in range(3)]).astype(np.int64)
        first_ptr = np.arange(4, dtype=np.int64) * min(3, ids.size)
        want = C.groups.compact_groups(ptr, idx, row_ptr, first, first_ptr, HUGE_NCOLS)
        got = G.groups.compact_groups(dev(ptr), dev(idx), dev(row_ptr), dev(first),
                                      dev(first_ptr), HUGE_NCOLS)
        assert_same(got, want, f"compact_groups {what}")
        rows = rs.randint(0, nrows, 2 * nrows).astype(np.int64)
        rptr = _group_ptr(rs, rows.size, 3)
        gcols = np.concatenate([rs.choice(ids, rs.randint(0, ids.size + 1), replace=False)
                                for _ in range(3)]).astype(np.int64)
        cptr = _group_ptr(rs, gcols.size, 3)
        want = C.groups.extract_groups(ptr, idx, rows, rptr, gcols, cptr, HUGE_NCOLS)
        got = G.groups.extract_groups(dev(ptr), dev(idx), dev(rows), dev(rptr), dev(gcols),
                                      dev(cptr), HUGE_NCOLS)
        assert_same(got, want, f"extract_groups {what}")


# --------------------------------------------------------------------------
# Under the simulator (child process only).

@pytest.fixture(scope="module")
def backends():
    from kernels import cpu, cuda

    return cpu, cuda


def _np(a):
    return a


def test_numba_cuda_numpy_clash_is_a_clear_error():
    """A numpy the installed numba-cuda cannot load under is named at import,
    not met inside the first kernel compilation."""
    from kernels.cuda import _util

    def clash(name):
        assert name == "numba.cuda.cudaimpl"
        raise AttributeError("module 'numpy' has no attribute 'row_stack'")

    with pytest.raises(ImportError, match=r"numba-cuda .* numpy .*row_stack.*numpy<2\.5"):
        _util.check_numba_cuda(clash)
    _util.check_numba_cuda()  # the installed pair loads

    def elsewhere(name):
        raise ModuleNotFoundError(name)

    _util.check_numba_cuda(elsewhere)  # another layout: nothing to check here


@sim
@pytest.mark.cudasim
def test_sim_simulator_is_on():
    from numba import config

    from kernels.cuda import _util

    assert config.ENABLE_CUDASIM and _util.SIM


@sim
@pytest.mark.cudasim
def test_sim_csr(backends):
    check_csr(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_spgemm(backends):
    check_spgemm(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_spgemm_gather(backends):
    check_spgemm_gather(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_stable_order_fallback():
    """The two-sort path (dimensions too large for a combined key) agrees."""
    from kernels.cuda import _util

    rs = np.random.RandomState(11)
    major = rs.randint(0, 5, 60).astype(np.int64)
    minor = rs.randint(0, 4, 60).astype(np.int64)
    want = np.lexsort((np.arange(60), minor, major))
    assert_same(_util.stable_order(np, major, minor, 5, 4), want, "combined key")
    assert_same(_util.stable_order(np, major, minor, 5, 2**62), want, "two sorts")


@sim
@pytest.mark.cudasim
def test_sim_extract(backends):
    check_extract(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_ewise(backends):
    check_ewise(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_map_select(backends):
    check_map_select(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_reduce(backends):
    check_reduce(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_sample_csr(backends):
    check_sample(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_sample_gather(backends):
    check_sample_gather(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_groups(backends):
    check_groups(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_sparse_column_space(backends):
    check_sparse_columns(*backends, _np)


@sim
@pytest.mark.cudasim
def test_sim_skewed_rows_use_the_linear_scan():
    """The sample tests' skewed rows exhaust the rejection budget, so the
    exact linear-scan fallback of ``sample_one_row`` is compared too."""
    from kernels.common import row_key, search_prefix, uniform01
    from kernels.its import rejection_budget

    rs = np.random.RandomState(9)
    ptr, _, val = sample_matrix(rs, 36, np.float64)
    lo, hi = ptr[SKEWED_ROW], ptr[SKEWED_ROW + 1]
    prefix = np.cumsum(val[lo:hi])
    key = row_key(SEED, STREAM, np.int64(SKEWED_ROW))
    k = 5
    picks = {search_prefix(prefix, 0, hi - lo, uniform01(key, t) * prefix[-1])
             for t in range(rejection_budget(k, hi - lo))}
    assert len(picks) < k


# --------------------------------------------------------------------------
# On a real GPU (cupy arrays), in the normal process.

def _gpu():
    if IN_SIM:
        pytest.skip("the simulator child process has no real GPU")
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CUDA runtime that fails to load
        pytest.skip(f"needs cupy and a CUDA GPU (cupy not importable: {exc})")
    from numba import cuda

    if not cuda.is_available():
        pytest.skip("needs a CUDA GPU (numba.cuda.is_available() is False)")
    from kernels import cpu
    from kernels import cuda as gk

    return cpu, gk, cupy.asarray


@pytest.mark.gpu
def test_gpu_sample_csr_matches_cpu():
    C, G, dev = _gpu()
    rs = np.random.RandomState(12)
    ptr, _, val = sample_matrix(rs, 36, np.float32)
    rid = np.arange(36, dtype=np.int64) * 1009
    none = np.zeros(0, np.int64)
    for k in (3, 25):
        for replace in (False, True):
            want = C.sample.sample_csr(ptr, val, True, k, none, rid, SEED, STREAM,
                                       replace)
            got = G.sample.sample_csr(dev(ptr), dev(val), True, k, dev(none),
                                      dev(rid), SEED, STREAM, replace)
            assert_same(got, want, f"sample_csr k={k} replace={replace}")


@pytest.mark.gpu
@pytest.mark.parametrize("check", [check_csr, check_spgemm, check_spgemm_gather,
                                   check_extract, check_ewise, check_map_select,
                                   check_reduce, check_sample, check_sample_gather,
                                   check_groups, check_sparse_columns])
def test_gpu_kernel_matches_cpu(check):
    C, G, dev = _gpu()
    check(C, G, dev)
