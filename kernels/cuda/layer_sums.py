"""Sums of groups of rows on the GPU in nine launches and two reads.

Twin of ``kernels.cpu.layer_sums`` (the CPU SpGEMM of a structural group
selection Q with A): row g of the output is the sum of A's rows
``rows[row_ptr[g]:row_ptr[g+1]]``, each column's terms added in ascending
row order onto -0, in A's value dtype, so the values are the CPU's bit for
bit.  LADIES' probability rows are these sums (one group per minibatch).

1. The products (every entry of every selected row) are counted and
   scanned; one read sizes them.
2. Each product (a thread each) claims its ``(group, column)`` key in an
   open-addressing table and counts itself there.  A claimed slot is
   numbered when it is claimed, from a counter kept after the table, and
   its key listed under that number, so the claimed slots need no pass
   over the table to be found; the counter is the second read (the
   output's size).  The listed keys are sorted (the output's order: the
   numbering depends on the threads' timing, the sorted keys do not), and
   each product is scattered to its output entry's segment.
3. A thread per output entry sorts its segment by row id and adds it up in
   that order; the same launch writes the row pointer.

The scatter walks the selected rows of A: a thread per row of at most
``layer_rows.LONG_ROW`` entries, a block per longer row (in the same
launch).  A segment holds one term per row of the group having the column,
so its length is at most the group's row count, summed by one thread in
ascending row order (the order that makes the sums the CPU's).
"""

import numpy as np
from numba import cuda

from kernels.common import hash_slot as _hash_slot
from kernels.common import index_dtype
from kernels.common import lower_bound as _lower_bound
from kernels.common import sort_pairs_inplace as _sort_pairs
from kernels.cuda._util import BLOCK, _xp, argsort_stable, device, full, launch, scan, to_host
from kernels.cuda.layer_rows import LONG_ROW

hash_slot = device(_hash_slot)
lower_bound = device(_lower_bound)
sort_pairs = device(_sort_pairs)

EMPTY = np.int64(-1)


@cuda.jit(device=True)
def _group_of(gp, i):
    return lower_bound(gp, 0, gp.size, i + 1) - 1


@cuda.jit(cache=True)
def _degrees(a_ptr, rows, deg):
    """``deg[r + 1]``: products of selected row r (``deg[0] = 0``)."""
    start = cuda.grid(1)
    if start == 0:
        deg[0] = 0
    for r in range(start, rows.size, cuda.gridsize(1)):
        deg[r + 1] = a_ptr[rows[r] + 1] - a_ptr[rows[r]]


@cuda.jit(device=True)
def _claim_slot(table, mask, bits, key):
    """``key``'s slot (claimed if new) and whether this call claimed it."""
    s = hash_slot(key, bits)
    for _ in range(mask + 1):
        k = cuda.atomic.cas(table, 2 * s, EMPTY, key)
        if k == EMPTY:
            return s, True
        if k == key:
            break
        s = (s + 1) & mask
    return s, False


@cuda.jit(cache=True)
def _claim(a_ptr, a_idx, rows, gp, n, poff, table, bits, slot_of, number, keys, slots):
    """Every product's slot, counted there, a thread per product (its row
    found in ``poff``); each claimed slot numbered and listed with its key.

    The numbers come from a counter after the table (``table[-1]``, from
    -1) that each block advances once a round for all its claims, numbered
    in shared memory: one counter advanced per claim would serialise every
    claim of a large bulk on one address.  Every thread runs the same
    rounds, so the block's barriers are reached by all of them.
    """
    claims = cuda.shared.array(1, np.int64)
    base = cuda.shared.array(1, np.int64)
    mask = (np.int64(1) << bits) - 1
    total = slot_of.size
    stride = cuda.gridsize(1)
    first = cuda.grid(1)
    for t in range(first, first + (total + stride - 1) // stride * stride, stride):
        if cuda.threadIdx.x == 0:
            claims[0] = 0
        cuda.syncthreads()
        mine = -1
        key = EMPTY
        s = EMPTY
        if t < total:
            r = lower_bound(poff, 0, poff.size, t + 1) - 1
            i = rows[r]
            key = _group_of(gp, r) * n + np.int64(a_idx[a_ptr[i] + (t - poff[r])])
            s, new = _claim_slot(table, mask, bits, key)
            if new:
                mine = cuda.atomic.add(claims, 0, 1)
            cuda.atomic.add(table, 2 * s + 1, 1)
            slot_of[t] = s
        cuda.syncthreads()
        if cuda.threadIdx.x == 0 and claims[0] > 0:
            base[0] = cuda.atomic.add(table, table.size - 1, claims[0]) + 1
        cuda.syncthreads()
        if mine >= 0:
            u = base[0] + mine
            number[s] = u
            keys[u] = key
            slots[u] = s


@cuda.jit(cache=True)
def _order(order, keys, slots, table, n, skey, seg, out_idx, entry_of, cursor):
    """Output entry t (listed slot ``order[t]``): its key, column, segment
    size; each listed slot's entry; its scatter cursor zeroed (a launch
    fewer than a fill)."""
    start = cuda.grid(1)
    if start == 0:
        seg[0] = 0
    for t in range(start, order.size, cuda.gridsize(1)):
        c = order[t]
        skey[t] = keys[c]
        out_idx[t] = keys[c] % n
        seg[t + 1] = table[2 * slots[c] + 1] + 1  # counted from -1
        entry_of[c] = t
        cursor[t] = 0


@cuda.jit(device=True)
def _scatter_entries(a_val, i, a, b, step, o, slot_of, number, entry_of, segoff, cursor,
                     rk, vv):
    """Entries ``a, a + step, ..`` below ``b`` of row ``i``: each product's
    (row id, value) into its output entry's segment."""
    for e in range(a, b, step):
        t = entry_of[number[slot_of[o + e]]]
        q = segoff[t] + cuda.atomic.add(cursor, t, 1)
        rk[q] = i
        vv[q] = a_val[e]


@cuda.jit(cache=True)
def _scatter(a_ptr, a_val, rows, poff, slot_of, number, entry_of, segoff, cursor, rk, vv,
             long_row):
    """Each product into its output entry's segment: a thread per row of at
    most ``long_row`` entries, a block per longer row.  The order within a
    segment is the atomic cursor's; ``_sum`` sorts it by row id (distinct in
    a segment: a row has a column once and a group a row once)."""
    start = cuda.grid(1)
    for r in range(start, rows.size, cuda.gridsize(1)):
        i = rows[r]
        if a_ptr[i + 1] - a_ptr[i] <= long_row:
            _scatter_entries(a_val, i, a_ptr[i], a_ptr[i + 1], 1, poff[r] - a_ptr[i],
                             slot_of, number, entry_of, segoff, cursor, rk, vv)
    for r in range(cuda.blockIdx.x, rows.size, cuda.gridDim.x):
        i = rows[r]
        if a_ptr[i + 1] - a_ptr[i] > long_row:
            _scatter_entries(a_val, i, a_ptr[i] + cuda.threadIdx.x, a_ptr[i + 1], BLOCK,
                             poff[r] - a_ptr[i], slot_of, number, entry_of, segoff, cursor,
                             rk, vv)


@cuda.jit(cache=True)
def _sum(segoff, rk, vv, zero, skey, n, out_val, out_ptr):
    """Each output entry's terms in ascending row order, added onto -0; the
    row pointer (the first entry of each group's keys)."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for t in range(start, segoff.size - 1, stride):
        lo = segoff[t]
        hi = segoff[t + 1]
        sort_pairs(rk, vv, lo, hi)
        acc = zero
        for q in range(lo, hi):
            acc += vv[q]
        out_val[t] = acc
    for g in range(start, out_ptr.size, stride):
        out_ptr[g] = lower_bound(skey, 0, skey.size, g * n)


def group_row_sums(a_ptr, a_idx, a_val, rows, row_ptr, ncols, total=None):
    """(indptr, indices, values) of the group sums; see the module docstring.

    ``rows`` an int64 device array (distinct within each group), ``row_ptr``
    a host int64 array, ``a_val`` A's (float) values; ``total``, the
    products' count when the caller knows it (the selected rows' degrees
    summed on the host), saves step 1's read.  Indices come back in
    ``index_dtype(ncols)``, written so by the kernel (a cast would be a
    launch more).
    """
    xp = _xp(a_ptr)
    G = row_ptr.size - 1
    R = rows.size
    n = np.int64(max(int(ncols), 1))
    gp = xp.asarray(np.asarray(row_ptr, np.int64))
    deg = xp.empty(R + 1, np.int64)
    launch(_degrees, R, a_ptr, rows, deg)
    poff = scan(xp, deg)
    T = int(to_host(poff[R:])[0]) if total is None else int(total)
    if T == 0:
        return (xp.asarray(np.zeros(G + 1, np.int64)), xp.empty(0, index_dtype(int(n))),
                xp.empty(0, a_val.dtype))
    bits = 1
    while (1 << bits) < 2 * T:
        bits += 1
    S = 1 << bits
    # Two words a slot (key, count from -1), then the claim counter (from -1).
    table = full(xp, 2 * S + 1, -1, np.int64)
    slot_of = xp.empty(T, np.int64)
    # Written only at claimed slots and listed numbers: no fill.
    number = xp.empty(S, np.int64)
    keys = xp.empty(T, np.int64)
    slots = xp.empty(T, np.int64)
    launch(_claim, T, a_ptr, a_idx, rows, gp, n, poff, table, np.int64(bits), slot_of,
           number, keys, slots)
    D = int(to_host(table[2 * S:])[0]) + 1
    order = argsort_stable(xp, keys[:D])
    skey = xp.empty(D, np.int64)
    seg = xp.empty(D + 1, np.int64)
    out_idx = xp.empty(D, index_dtype(int(n)))
    entry_of = xp.empty(D, np.int64)
    cursor = xp.empty(D, np.int64)
    launch(_order, D, order, keys, slots, table, n, skey, seg, out_idx, entry_of, cursor)
    segoff = scan(xp, seg)
    rk = xp.empty(T, np.int64)
    vv = xp.empty(T, a_val.dtype)
    # A block per row at most, so that long rows spread over the grid.
    long_row = np.int64(LONG_ROW)
    launch(_scatter, R * BLOCK, a_ptr, a_val, rows, poff, slot_of, number, entry_of, segoff,
           cursor, rk, vv, long_row)
    out_val = xp.empty(D, a_val.dtype)
    out_ptr = xp.empty(G + 1, np.int64)
    # -0 in A's dtype, passed by value: no upload.
    zero = a_val.dtype.type(-0.0)
    launch(_sum, max(D, G + 1), segoff, rk, vv, zero, skey, n, out_val, out_ptr)
    return out_ptr, out_idx, out_val
