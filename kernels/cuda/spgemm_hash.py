"""Row-wise hash SpGEMM over a semiring, CUDA (the rows whose products fit a table).

One thread block per output row ``i`` (grid-stride over a list of rows).
The block walks A's entries of the row **in order** (``p`` ascending) and,
for each ``p``, its threads take B's row ``a_idx[p]`` in tiles of one entry
a thread.  Column keys go to an open-addressing table in shared memory
(insert by compare-and-swap: different columns may collide); a column
occurs once in a row of B, so within one ``p`` the slot of a column has a
single writer, and the block synchronises between tiles: each slot's value
is ``add(value, a_ip * b_pc)`` in ascending ``p``, the CPU kernel's order,
with no atomics on values.  Results are bit-identical to
``kernels.cpu.spgemm``.

Products are staged through global memory and a barrier before they are
added: a store, ``syncthreads`` and a load cannot be folded back into
``acc + a * b``, so the compiler cannot contract them into a fused
multiply-add the CPU does not do.

Values live in a per-block slice of a global scratch (typed like the
output: shared arrays need their dtype at compile time, the output's is a
runtime choice); the keys, the hot part of the probing, are in shared
memory.  Each row's occupied slots are compacted, then ranked (a rank sort:
rows here have at most ``CAP`` entries) and written sorted by column.

The table has ``TABLE`` slots and takes rows of at most ``CAP = TABLE // 2``
products (an upper bound of the row's entries): the load factor stays at
most one half, and probing always ends.  Longer rows are the caller's
(``kernels.cuda.spgemm`` sends them to the ESC passes).
"""

import numba
import numpy as np
from numba import cuda, int32, int64

from kernels.cuda._util import SIM, argsort_stable, device, launch_grid, to_host
from kernels.semiring_ops import add_op as _add_op
from kernels.semiring_ops import mul_op as _mul_op

add_op = device(_add_op)
mul_op = device(_mul_op)

#: Slots of a block's shared table (a power of two).
TABLE = 16 if SIM else 2048
#: Most products a row may have to take the hash path.
CAP = TABLE // 2
#: Threads per block (one row each block at a time).
HBLOCK = 8 if SIM else 128
#: Most blocks per launch: each holds ``TABLE`` values of global scratch.
HMAX_BLOCKS = 2 if SIM else 1024
_EMPTY = -1


@numba.njit(cache=True, inline="always")
def home_slot(col, size):
    """Home slot of column ``col`` in a table of ``size`` (a power of two) slots."""
    # Fold the high word in, then a multiplicative hash on 32 bits whose
    # product stays below 2**63 (no signed overflow, on the device or here).
    h = (col ^ (col >> 32)) & 0xFFFFFFFF
    return ((h * 0x7FEB352D) >> 15) & (size - 1)


_home = device(home_slot)


@cuda.jit(device=True)
def _insert(keys, col):
    """Slot of ``col`` in ``keys`` (inserted when absent) and whether it is new."""
    s = _home(col, TABLE)
    while True:
        old = cuda.atomic.cas(keys, s, _EMPTY, col)
        if old == _EMPTY:
            return s, True
        if old == col:
            return s, False
        s = (s + 1) & (TABLE - 1)


@cuda.jit(device=True)
def _clear(keys, cnt, tid, nt):
    for s in range(tid, TABLE, nt):
        keys[s] = _EMPTY
    if tid == 0:
        cnt[0] = 0
    cuda.syncthreads()


@cuda.jit(cache=True)
def _hash_count(rows, a_ptr, a_idx, b_ptr, b_idx, counts):
    """``counts[i + 1]``: the entries of row ``i``, for each ``i`` in ``rows``."""
    keys = cuda.shared.array(TABLE, int64)
    cnt = cuda.shared.array(1, int64)
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    for r in range(cuda.blockIdx.x, rows.size, cuda.gridDim.x):
        i = rows[r]
        _clear(keys, cnt, tid, nt)
        # Order does not matter for the count: no barrier between p.
        mine = 0
        for p in range(a_ptr[i], a_ptr[i + 1]):
            k = a_idx[p]
            for q in range(b_ptr[k] + tid, b_ptr[k + 1], nt):
                _, new = _insert(keys, int64(b_idx[q]))
                if new:
                    mine += 1
        if mine:
            cuda.atomic.add(cnt, 0, mine)
        cuda.syncthreads()
        if tid == 0:
            counts[i + 1] = cnt[0]
        cuda.syncthreads()


@cuda.jit(device=True)
def _accumulate(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul, add,
                onev, keys, scr, base, stage, sbase, tid, nt):
    """Row ``i``'s terms into the table, in ascending ``p`` then tile order."""
    for p in range(a_ptr[i], a_ptr[i + 1]):
        k = a_idx[p]
        av = a_val[p] if a_hv else onev
        for q0 in range(b_ptr[k], b_ptr[k + 1], nt):
            q = q0 + tid
            s = -1
            new = False
            if q < b_ptr[k + 1]:
                s, new = _insert(keys, int64(b_idx[q]))
                bv = b_val[q] if b_hv else onev
                stage[sbase + tid] = mul_op(mul, av, bv, onev)
            cuda.syncthreads()
            if s >= 0:
                if new:
                    scr[base + s] = stage[sbase + tid]
                else:
                    scr[base + s] = add_op(add, scr[base + s], stage[sbase + tid])
            cuda.syncthreads()


@cuda.jit(cache=True)
def _hash_fill(rows, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul, add,
               one, out_ptr, scr, stage, out_idx, out_val):
    """Row ``i`` of the product (each ``i`` in ``rows``), sorted by column."""
    keys = cuda.shared.array(TABLE, int64)
    ck = cuda.shared.array(CAP, int64)
    cs = cuda.shared.array(CAP, int32)
    cnt = cuda.shared.array(1, int64)
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    base = cuda.blockIdx.x * TABLE
    sbase = cuda.blockIdx.x * nt
    onev = one[0]
    for r in range(cuda.blockIdx.x, rows.size, cuda.gridDim.x):
        i = rows[r]
        _clear(keys, cnt, tid, nt)
        _accumulate(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul, add,
                    onev, keys, scr, base, stage, sbase, tid, nt)
        for s in range(tid, TABLE, nt):
            if keys[s] != _EMPTY:
                j = cuda.atomic.add(cnt, 0, 1)
                ck[j] = keys[s]
                cs[j] = s
        cuda.syncthreads()
        m = cnt[0]
        o = out_ptr[i]
        for j in range(tid, m, nt):
            key = ck[j]
            rank = 0
            for t in range(m):
                if ck[t] < key:
                    rank += 1
            out_idx[o + rank] = key
            out_val[o + rank] = scr[base + cs[j]]
        cuda.syncthreads()


def _grid(nrows):
    return max(1, min(int(nrows), HMAX_BLOCKS))


def hash_count(rows, a_ptr, a_idx, b_ptr, b_idx, counts):
    """Write ``counts[i + 1]`` (entries of row ``i`` of ``A @ B``) for ``i`` in ``rows``.

    Every row in ``rows`` must have at most ``CAP`` products.
    """
    if rows.size:
        launch_grid(_hash_count, _grid(rows.size), HBLOCK, rows, a_ptr, a_idx, b_ptr, b_idx,
                    counts)


def hash_fill(xp, rows, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul, add,
              one, out_ptr, out_idx, out_val):
    """Fill the rows ``rows`` of ``A @ B`` into ``out_idx`` / ``out_val`` at ``out_ptr``.

    Every row in ``rows`` must have at most ``CAP`` products; ``out_ptr`` is
    the exact row pointer (``hash_count`` then a scan).
    """
    if not rows.size:
        return
    g = _grid(rows.size)
    scr = xp.empty(g * TABLE, out_val.dtype)
    stage = xp.empty(g * HBLOCK, out_val.dtype)
    launch_grid(_hash_fill, g, HBLOCK, rows, a_ptr, a_idx, a_val, bool(a_hv), b_ptr, b_idx,
                b_val, bool(b_hv), mul, add, one, out_ptr, scr, stage, out_idx, out_val)


# Rows too long for the shared table, when the columns are few enough to
# index directly: a dense accumulator over the columns per block (global
# memory), each slot stamped with the row that last wrote it, so it needs
# no clearing between rows.  Its output comes out sorted by scanning the
# columns in tiles, with a block prefix sum placing each tile's entries.

#: A row longer than ``CAP`` takes the dense path while ``ncols <= DENSE_FACTOR *
#: products``: the column scan then costs at most that factor times the row's work.
DENSE_FACTOR = 64
#: Most bytes of dense scratch (stamps and values) for one launch.
DENSE_BYTES = 1 << 30
#: Fewest rows the dense path takes: it gives a row one block, which scans
#: every column, so a handful of huge rows (LADIES' one probability row per
#: minibatch over all n columns) would leave most of the GPU idle, where ESC
#: spreads their products over every thread.  Twice an H100's or H200's 132
#: multiprocessors; on an H200 LADIES' product of 16 such rows took 48.5 ms
#: on the dense path (benchmarks/results/gpu_h200.md).
DENSE_MIN_ROWS = 1 if SIM else 256


@cuda.jit(device=True)
def _dense_accumulate(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul, add,
                      onev, fill, stamp, scr, base, stage, sbase, tid, nt):
    """Row ``i``'s terms into the dense slots, ascending ``p``; its new columns."""
    mine = 0
    for p in range(a_ptr[i], a_ptr[i + 1]):
        k = a_idx[p]
        av = a_val[p] if a_hv else onev
        for q0 in range(b_ptr[k], b_ptr[k + 1], nt):
            q = q0 + tid
            c = -1
            new = False
            if q < b_ptr[k + 1]:
                c = int64(b_idx[q])
                new = stamp[base + c] != i
                if new:
                    stamp[base + c] = i
                    mine += 1
                if fill:
                    bv = b_val[q] if b_hv else onev
                    stage[sbase + tid] = mul_op(mul, av, bv, onev)
            cuda.syncthreads()
            if fill and c >= 0:
                if new:
                    scr[base + c] = stage[sbase + tid]
                else:
                    scr[base + c] = add_op(add, scr[base + c], stage[sbase + tid])
            cuda.syncthreads()
    return mine


@cuda.jit(device=True)
def _dense_emit(i, ncols, stamp, scr, base, o, out_idx, out_val, run_sh, tid, nt):
    """Row ``i``'s stamped columns, in order, to the output at ``o``."""
    run = 0
    for c0 in range(0, ncols, nt):
        c = c0 + tid
        f = 1 if c < ncols and stamp[base + c] == i else 0
        run_sh[tid] = f
        cuda.syncthreads()
        step = 1
        while step < nt:
            v = run_sh[tid - step] if tid >= step else 0
            cuda.syncthreads()
            run_sh[tid] += v
            cuda.syncthreads()
            step *= 2
        if f:
            pos = o + run + run_sh[tid] - 1
            out_idx[pos] = c
            out_val[pos] = scr[base + c]
        run += run_sh[nt - 1]
        cuda.syncthreads()


@cuda.jit(cache=True)
def _dense_rows(rows, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul, add, one,
                ncols, fill, out_ptr, stamp, scr, stage, out_idx, out_val):
    """``fill`` False: ``out_ptr[i + 1]`` = row ``i``'s entries; True: row ``i``."""
    cnt = cuda.shared.array(1, int64)
    run_sh = cuda.shared.array(HBLOCK, int64)
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    base = cuda.blockIdx.x * ncols
    sbase = cuda.blockIdx.x * nt
    onev = one[0]
    for r in range(cuda.blockIdx.x, rows.size, cuda.gridDim.x):
        i = rows[r]
        if tid == 0:
            cnt[0] = 0
        cuda.syncthreads()
        mine = _dense_accumulate(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                                 mul, add, onev, fill, stamp, scr, base, stage, sbase, tid, nt)
        if fill:
            _dense_emit(i, ncols, stamp, scr, base, out_ptr[i], out_idx, out_val, run_sh,
                        tid, nt)
        else:
            if mine:
                cuda.atomic.add(cnt, 0, mine)
            cuda.syncthreads()
            if tid == 0:
                out_ptr[i + 1] = cnt[0]
        cuda.syncthreads()


def dense_rows(xp, rows, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul, add,
               one, ncols, fill, out_ptr, out_idx, out_val):
    """The rows ``rows`` of ``A @ B`` by a dense accumulator per block.

    ``fill`` False writes each row's entry count to ``out_ptr[i + 1]`` (the
    other arguments past ``fill`` are ignored but for ``out_ptr``); True
    fills the rows into ``out_idx`` / ``out_val`` at the exact ``out_ptr``.
    """
    if not rows.size:
        return
    vbytes = one.dtype.itemsize if fill else 0
    g = max(1, min(int(rows.size), HMAX_BLOCKS, DENSE_BYTES // (int(ncols) * (8 + vbytes))))
    stamp = xp.full(g * int(ncols), -1, np.int64)
    scr = xp.empty(g * int(ncols) if fill else 1, one.dtype)
    stage = xp.empty(g * HBLOCK, one.dtype)
    launch_grid(_dense_rows, g, HBLOCK, rows, a_ptr, a_idx, a_val, bool(a_hv), b_ptr, b_idx,
                b_val, bool(b_hv), mul, add, one, int(ncols), bool(fill), out_ptr, stamp, scr,
                stage, out_idx, out_val)


def row_paths(xp, w, ncols):
    """(hash rows, dense rows, ESC rows) of a product, from each row's products ``w``.

    The rule: a row with at most ``CAP`` products fits a block's shared
    table (hash); a longer row takes the dense accumulator while ``ncols <=
    DENSE_FACTOR * products`` and one block's dense scratch fits
    ``DENSE_BYTES``, when at least ``DENSE_MIN_ROWS`` rows qualify; the
    others (few long rows, or long rows over very many columns) take ESC,
    whose chunks bound its memory whatever the row.  Rows without products
    are empty on every path and are in none.
    """
    # Each row's path as a class (0 hash, 1 dense, 2 ESC, 3 none); a stable
    # sort by class lists each path's rows in increasing order, and the
    # classes' sizes come back in one read.
    cls = xp.where(w > CAP, 2, xp.where(w > 0, 0, 3)).astype(np.int32)
    if int(ncols) * 16 <= DENSE_BYTES:
        cls = xp.where((cls == 2) & (w * DENSE_FACTOR >= int(ncols)), np.int32(1), cls)
    counts = [int(c) for c in to_host(xp.bincount(cls, minlength=4))]
    if 0 < counts[1] < DENSE_MIN_ROWS:
        cls = xp.where(cls == 1, np.int32(2), cls)
        counts[2] += counts[1]
        counts[1] = 0
    order = argsort_stable(xp, cls)
    h, d, e = counts[0], counts[0] + counts[1], counts[0] + counts[1] + counts[2]
    return order[:h], order[h:d], order[d:e]
