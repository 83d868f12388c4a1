"""Per-group relabelling and extraction on the GPU in a few kernels and one read.

Fused twins of ``kernels.cpu.groups``' ``compact_groups`` and
``extract_groups`` (the same outputs, see there for the contract): the
layer-wise samplers call both once per layer, where a composition of sorts
and array operations would cost dozens of device operations and several
blocking reads.  Here each is a handful of grid-stride kernels over hash
tables, sized from what the host knows (the group pointers, the input's
entry count), and one blocking read for the output's size.

* ``compact_groups``: a group's *sequence* is its ``first`` columns, then
  its rows' entries, row by row (``kernels.cpu.groups``' order).  Every
  occurrence of ``(group, column)`` goes into one open-addressing table
  whose slot keeps the earliest sequence position (an atomic maximum of
  ``TOP - position``); an occurrence whose position is its slot's is the
  column's first appearance (a *head*).  One inclusive scan over the
  sequence numbers the heads: the groups' sequences lie one after the other,
  so the scan gives every kept column its id within the whole bulk, in the
  CPU order.  Rows are then sorted by their new columns.
* ``extract_groups``: each group's columns go into a region of one table
  (column -> its latest position, as the CPU kernel's map keeps it); each
  output row's entries found there are counted, a scan makes the row
  pointer, and the same walk writes them, sorted by output column.

The kernels that walk or sort a row give a row of at most
``layer_rows.LONG_ROW`` entries a thread and a longer one (a hub of a
power-law graph) a block, in the same launch (see ``kernels.cuda.layer_rows``).

Sequence positions fit the 48 bits below ``TOP``; ``compact_groups`` keys
its table by ``group * ncols + column``, so ``fits_compact`` says when that
key fits in 62 bits (the sort-based driver handles the rest).
"""

import numpy as np
from numba import cuda

from kernels.common import hash_slot as _hash_slot
from kernels.common import index_dtype
from kernels.common import lower_bound as _lower_bound
from kernels.common import sort_pairs_inplace as _sort_pairs
from kernels.common import sort_range as _sort_range
from kernels.cuda._util import BLOCK, _xp, device, full, launch, scan, to_host, upload
from kernels.cuda.layer_rows import (SORT_MAX, block_scan, block_sort_pairs, block_total,
                                     long_row_for, share)

hash_slot = device(_hash_slot)
lower_bound = device(_lower_bound)
sort_pairs = device(_sort_pairs)
sort_range = device(_sort_range)

#: A free key slot (keys are columns or ``group * ncols + column``, never negative).
EMPTY = np.int64(-1)
#: Positions are kept as ``TOP - position`` under an atomic maximum (the
#: tables start at -1 everywhere, one fill for keys and positions alike).
TOP = np.int64(2 ** 62)


def fits_compact(n_groups, ncols):
    """Whether ``compact_groups``' keys ``group * ncols + column`` fit in 62 bits."""
    return int(n_groups) * max(int(ncols), 1) < (1 << 62)


def _bits_for(n):
    """Table bits for ``n`` keys: at least twice as many slots, at least 2."""
    bits = 1
    while (1 << bits) < 2 * n:
        bits += 1
    return bits


@cuda.jit(device=True)
def _group_of(gp, i):
    """The group holding item ``i`` (``gp`` a group pointer; empty groups skipped)."""
    return lower_bound(gp, 0, gp.size, i + 1) - 1


@cuda.jit(device=True)
def _claim(table, stride, base, bits, key):
    """Absolute slot of ``key`` in the region ``[base, base + 2**bits)`` of a
    table of ``stride`` int64 per slot, taken for it if free; -1 if full."""
    mask = (np.int64(1) << bits) - 1
    s = hash_slot(key, bits)
    for _ in range(mask + 1):
        k = cuda.atomic.cas(table, (base + s) * stride, EMPTY, key)
        if k == EMPTY or k == key:
            return base + s
        s = (s + 1) & mask
    return -1


@cuda.jit(device=True)
def _find(table, stride, base, bits, key):
    """Absolute slot holding ``key`` in a region (see ``_claim``), or -1."""
    if bits == 0:
        return -1
    mask = (np.int64(1) << bits) - 1
    s = hash_slot(key, bits)
    for _ in range(mask + 1):
        k = table[(base + s) * stride]
        if k == key:
            return base + s
        if k == EMPTY:
            return -1
        s = (s + 1) & mask
    return -1


# -- compact_groups -----------------------------------------------------------

@cuda.jit(device=True)
def _item(u, n_first, first, first_ptr, ptr, idx, row_ptr, r0, r1, nnz_base, ncols):
    """(key, sequence position, column, entry or -1 - position in first) of item ``u``:
    the ``first`` columns come first, then the entries."""
    f0 = first_ptr[0]
    if u < n_first:
        t = f0 + u
        g = _group_of(first_ptr, t)
        base = (first_ptr[g] - f0) + (ptr[row_ptr[g]] - nnz_base)
        c = np.int64(first[t])
        return g * ncols + c, base + (t - first_ptr[g]), c, -1 - t
    e = nnz_base + (u - n_first)
    r = lower_bound(ptr, r0, r1 + 1, e + 1) - 1
    g = _group_of(row_ptr, r)
    base = (first_ptr[g] - f0) + (ptr[row_ptr[g]] - nnz_base)
    c = np.int64(idx[e])
    sp = base + (first_ptr[g + 1] - first_ptr[g]) + (e - ptr[row_ptr[g]])
    return g * ncols + c, sp, c, e


@cuda.jit(cache=True)
def _compact_mark(first, first_ptr, ptr, idx, row_ptr, r0, r1, nnz_base, ncols, n_first,
                  n_items, table, bits):
    """Every occurrence into the table; its slot keeps the earliest position."""
    start = cuda.grid(1)
    for u in range(start, n_items, cuda.gridsize(1)):
        key, sp, _c, _e = _item(u, n_first, first, first_ptr, ptr, idx, row_ptr, r0, r1,
                                nnz_base, ncols)
        s = _claim(table, 2, 0, bits, key)
        cuda.atomic.max(table, 2 * s + 1, TOP - sp)


@cuda.jit(cache=True)
def _compact_flags(first, first_ptr, ptr, idx, row_ptr, r0, r1, nnz_base, ncols, n_first,
                   n_items, table, bits, check, flags, head, tail):
    """Head flag and head position of every sequence position; with ``check``,
    the earliest repeated leading column into ``tail[-1]``."""
    start = cuda.grid(1)
    for u in range(start, n_items, cuda.gridsize(1)):
        key, sp, _c, e = _item(u, n_first, first, first_ptr, ptr, idx, row_ptr, r0, r1,
                               nnz_base, ncols)
        h = TOP - table[2 * _find(table, 2, 0, bits, key) + 1]
        head[sp] = h
        flags[sp] = 1 if h == sp else 0
        if check != 0 and e < 0 and h != sp:
            cuda.atomic.max(tail, tail.size - 1, TOP - (-1 - e))


@cuda.jit(cache=True)
def _compact_emit(first, first_ptr, ptr, idx, row_ptr, r0, r1, nnz_base, ncols, n_first,
                  n_items, head, incl, kept, local, tail):
    """Kept columns (heads, by their scanned ids), every entry's new column,
    and the groups' pointer into ``tail[:G + 1]``."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for u in range(start, n_items, stride):
        _k, sp, c, e = _item(u, n_first, first, first_ptr, ptr, idx, row_ptr, r0, r1,
                             nnz_base, ncols)
        h = head[sp]
        nid = incl[h] - 1
        if h == sp:
            kept[nid] = c
        if e >= 0:
            local[e - nnz_base] = nid
    G = row_ptr.size - 1
    f0 = first_ptr[0]
    for g in range(start, G + 1, stride):
        b = (first_ptr[g] - f0) + (ptr[row_ptr[g]] - nnz_base)
        tail[g] = incl[b - 1] if b > 0 else 0


@cuda.jit(cache=True)
def _compact_rows(ptr, r0, r1, nnz_base, local, perm, with_perm, out, long_row):
    """Each row's entries sorted by new column (with their entry ids when
    ``with_perm``), written to ``out`` in its index type: a thread per row
    of at most ``long_row`` entries, a block per longer row."""
    sh_k = cuda.shared.array(SORT_MAX, np.int64)
    sh_v = cuda.shared.array(SORT_MAX, np.int64)
    start = cuda.grid(1)
    for r in range(r0 + start, r1, cuda.gridsize(1)):
        lo = ptr[r] - nnz_base
        hi = ptr[r + 1] - nnz_base
        if hi - lo > long_row:
            continue
        if with_perm != 0:
            for q in range(lo, hi):
                perm[q] = q + nnz_base
            sort_pairs(local, perm, lo, hi)
        else:
            sort_range(local, lo, hi)
        for q in range(lo, hi):
            out[q] = local[q]
    t = cuda.threadIdx.x
    for r in range(r0 + cuda.blockIdx.x, r1, cuda.gridDim.x):
        lo = ptr[r] - nnz_base
        hi = ptr[r + 1] - nnz_base
        if hi - lo <= long_row:
            continue
        if with_perm != 0:
            for q in range(lo + t, hi, BLOCK):
                perm[q] = q + nnz_base
        cuda.syncthreads()
        block_sort_pairs(local, perm, with_perm, lo, hi - lo, sh_k, sh_v)
        for q in range(lo + t, hi, BLOCK):
            out[q] = local[q]


def _entry_range(xp, ptr, idx, r0, r1):
    """``(ptr[r0], ptr[r1])``: free for the whole of a canonical CSR (``ptr[0]``
    is 0 and ``ptr[-1]`` the entry count), one read otherwise."""
    if _xp(ptr) is np:
        return int(ptr[r0]), int(ptr[r1])
    if r0 == 0 and r1 == ptr.size - 1:
        return 0, int(idx.size)
    lo, hi = to_host(ptr[xp.asarray(np.array([r0, r1], np.int64))]).tolist()
    return int(lo), int(hi)


def _first_appearances(xp, ptr, idx, row_ptr, first, first_ptr, ncols, check):
    """The kept columns of ``compact_groups`` on the device: ``(kept, local,
    tail, n_entries, L, nnz_base)`` (``local`` each entry's new column,
    ``tail`` the groups' pointer and the repeat, not yet read), or None
    when there is nothing to keep."""
    G = row_ptr.size - 1
    r0, r1 = int(row_ptr[0]), int(row_ptr[G])
    nnz_base, nnz_end = _entry_range(xp, ptr, idx, r0, r1)
    n_entries = nnz_end - nnz_base
    n_first = int(first_ptr[G]) - int(first_ptr[0])
    L = n_first + n_entries
    if L == 0:
        return None
    bits = _bits_for(L)
    S = 1 << bits
    # Keys and positions, then the groups' pointer and the repeat: one fill.
    table = full(xp, 2 * S + G + 2, -1, np.int64)
    tail = table[2 * S:]
    rp, fp = upload(xp, row_ptr, first_ptr)
    args = (first, fp, ptr, idx, rp, np.int64(r0), np.int64(r1), np.int64(nnz_base),
            np.int64(ncols), np.int64(n_first), np.int64(L))
    launch(_compact_mark, L, *args, table, np.int64(bits))
    flags = xp.empty(L, np.int64)
    head = xp.empty(L, np.int64)
    launch(_compact_flags, L, *args, table, np.int64(bits), np.int64(check), flags, head, tail)
    incl = scan(xp, flags)
    kept = xp.empty(L, np.int64)
    local = xp.empty(max(n_entries, 1), np.int64)
    launch(_compact_emit, max(L, G + 1), *args, head, incl, kept, local, tail)
    return kept, local, tail, n_entries, L, nnz_base


def kept_columns(ptr, idx, row_ptr, first, first_ptr, ncols):
    """``compact_groups``' kept columns and their pointer only (the rows are
    not relabelled), for callers that need no more: ``(kept, kept_ptr)``,
    ``kept_ptr`` on the host (one read).  The leading columns must be
    distinct within their group (not checked)."""
    kept, dev_ptr = kept_columns_unread(ptr, idx, row_ptr, first, first_ptr, ncols)
    kept_ptr = np.asarray(to_host(dev_ptr), np.int64)
    return kept[:int(kept_ptr[-1])], kept_ptr


def kept_columns_unread(ptr, idx, row_ptr, first, first_ptr, ncols):
    """``kept_columns`` without its read: ``(kept, kept_ptr)`` both on the
    device, ``kept`` holding at least ``kept_ptr[-1]`` columns (the rest
    unset), for a caller that reads the pointer later with other sizes."""
    xp = _xp(ptr)
    G = row_ptr.size - 1
    found = _first_appearances(xp, ptr, idx, row_ptr, first, first_ptr, ncols, False)
    if found is None:
        return xp.zeros(0, np.int64), xp.asarray(np.zeros(G + 1, np.int64))
    return found[0], found[2][:G + 1]


def compact_groups(ptr, idx, row_ptr, first, first_ptr, ncols, with_perm=True, check=True):
    """Relabel the columns of each row group; see ``kernels.cpu.groups``.

    ``row_ptr`` and ``first_ptr`` as host int64 arrays; ``ptr`` a canonical
    CSR pointer (``ptr[0] == 0``, ``ptr[-1] == idx.size``) when the groups
    cover every row, else its ends cost one read.  Returns ``(out_idx, perm,
    kept, kept_ptr, first_dup)`` with ``kept_ptr`` on the host: one read
    brings it (and ``first_dup`` with ``check``).
    """
    xp = _xp(ptr)
    G = row_ptr.size - 1
    found = _first_appearances(xp, ptr, idx, row_ptr, first, first_ptr, ncols, check)
    if found is None:
        empty = xp.zeros(0, np.int64)
        return (empty.astype(index_dtype(0)), empty.copy(), empty.copy(),
                np.zeros(G + 1, np.int64), -1)
    kept, local, tail, n_entries, L, nnz_base = found
    r0, r1 = int(row_ptr[0]), int(row_ptr[G])
    perm = xp.empty(n_entries if with_perm else 0, np.int64)
    out = xp.empty(n_entries, index_dtype(L))
    if n_entries:
        # A block per row at most, so that long rows spread over the grid.
        launch(_compact_rows, (r1 - r0) * BLOCK, ptr, np.int64(r0), np.int64(r1),
               np.int64(nnz_base), local, perm if with_perm else local, np.int64(with_perm),
               out, long_row_for(L))
    host = np.asarray(to_host(tail), np.int64)
    kept_ptr = host[:G + 1].copy()
    first_dup = int(TOP - host[-1]) if check and host[-1] >= 0 else -1
    return out, perm, kept[:int(kept_ptr[G])], kept_ptr, first_dup


# -- extract_groups -----------------------------------------------------------

@cuda.jit(cache=True)
def _extract_fill(cols, col_ptr, toff, tbits, table, check):
    """Each group's columns into its region: the latest position of each
    (and, with ``check``, the earliest, kept as ``TOP - position``)."""
    c0 = col_ptr[0]
    n = col_ptr[col_ptr.size - 1] - c0
    start = cuda.grid(1)
    for u in range(start, n, cuda.gridsize(1)):
        t = c0 + u
        g = _group_of(col_ptr, t)
        s = _claim(table, 3, toff[g], tbits[g], np.int64(cols[t]))
        cuda.atomic.max(table, 3 * s + 1, t)
        if check != 0:
            cuda.atomic.max(table, 3 * s + 2, TOP - t)


@cuda.jit(cache=True)
def _extract_repeats(cols, col_ptr, toff, tbits, table, dup):
    """The earliest position of a column repeated within its group (as
    ``TOP - position`` into ``dup[0]``)."""
    c0 = col_ptr[0]
    n = col_ptr[col_ptr.size - 1] - c0
    start = cuda.grid(1)
    for u in range(start, n, cuda.gridsize(1)):
        t = c0 + u
        g = _group_of(col_ptr, t)
        s = _find(table, 3, toff[g], tbits[g], np.int64(cols[t]))
        if TOP - table[3 * s + 2] != t:
            cuda.atomic.max(dup, 0, TOP - t)


@cuda.jit(device=True)
def _row_group(row_ptr, i):
    """Group of output row ``i``, or -1 outside every group."""
    G = row_ptr.size - 1
    if i < row_ptr[0] or i >= row_ptr[G]:
        return -1
    return _group_of(row_ptr, i)


@cuda.jit(cache=True)
def _extract_count(ptr, idx, rows, row_ptr, toff, tbits, table, cnt, src_a, dst_a, src_b,
                   dst_b, long_row):
    """``cnt[i + 1]``: entries of output row ``i`` whose column its group
    selects (``cnt[0] = 0``: the scan makes the row pointer).  A thread per
    row of at most ``long_row`` entries, a block per longer row.  Also
    copies ``src_a`` into ``dst_a`` and ``src_b`` into ``dst_b`` (launches
    fewer than copies)."""
    sh = cuda.shared.array(BLOCK, np.int64)
    start = cuda.grid(1)
    if start == 0:
        cnt[0] = 0
    for g in range(start, src_a.size, cuda.gridsize(1)):
        dst_a[g] = src_a[g]
    for g in range(start, src_b.size, cuda.gridsize(1)):
        dst_b[g] = src_b[g]
    for i in range(start, rows.size, cuda.gridsize(1)):
        r = rows[i]
        if ptr[r + 1] - ptr[r] > long_row:
            continue
        g = _row_group(row_ptr, i)
        c = 0
        if g >= 0 and tbits[g] > 0:
            for e in range(ptr[r], ptr[r + 1]):
                if _find(table, 3, toff[g], tbits[g], np.int64(idx[e])) >= 0:
                    c += 1
        cnt[i + 1] = c
    for i in range(cuda.blockIdx.x, rows.size, cuda.gridDim.x):
        r = rows[i]
        if ptr[r + 1] - ptr[r] <= long_row:
            continue
        g = _row_group(row_ptr, i)
        c = 0
        if g >= 0 and tbits[g] > 0:
            for e in range(ptr[r] + cuda.threadIdx.x, ptr[r + 1], BLOCK):
                if _find(table, 3, toff[g], tbits[g], np.int64(idx[e])) >= 0:
                    c += 1
        total = block_total(sh, c)
        if cuda.threadIdx.x == 0:
            cnt[i + 1] = total


@cuda.jit(device=True)
def _emit_walk(ptr, idx, r, a, b, g, toff, tbits, table, out_idx, src, o):
    """Entries ``[a, b)`` of row ``r`` found in group ``g``'s region, written
    from ``o`` on (output column, input entry); returns the next position."""
    for e in range(a, b):
        s = _find(table, 3, toff[g], tbits[g], np.int64(idx[e]))
        if s >= 0:
            out_idx[o] = table[3 * s + 1]
            src[o] = e
            o += 1
    return o


@cuda.jit(cache=True)
def _extract_emit(ptr, idx, rows, row_ptr, toff, tbits, table, out_ptr, out_idx, src,
                  long_row):
    """Each output row's entries (output column, input entry), sorted by
    column: a thread per row of at most ``long_row`` entries, a block per
    longer row (each thread a contiguous share, placed by a block scan)."""
    sh = cuda.shared.array(BLOCK, np.int64)
    sh_k = cuda.shared.array(SORT_MAX, np.int64)
    sh_v = cuda.shared.array(SORT_MAX, np.int64)
    start = cuda.grid(1)
    for i in range(start, rows.size, cuda.gridsize(1)):
        r = rows[i]
        lo = out_ptr[i]
        if lo == out_ptr[i + 1] or ptr[r + 1] - ptr[r] > long_row:
            continue
        g = _row_group(row_ptr, i)
        o = _emit_walk(ptr, idx, r, ptr[r], ptr[r + 1], g, toff, tbits, table, out_idx,
                       src, lo)
        sort_pairs(out_idx, src, lo, o)
    for i in range(cuda.blockIdx.x, rows.size, cuda.gridDim.x):
        r = rows[i]
        lo = out_ptr[i]
        m = out_ptr[i + 1] - lo
        if m == 0 or ptr[r + 1] - ptr[r] <= long_row:
            continue
        g = _row_group(row_ptr, i)
        a, b = share(ptr[r], ptr[r + 1])
        c = 0
        for e in range(a, b):
            if _find(table, 3, toff[g], tbits[g], np.int64(idx[e])) >= 0:
                c += 1
        sh[cuda.threadIdx.x] = c
        before, _total = block_scan(sh)
        _emit_walk(ptr, idx, r, a, b, g, toff, tbits, table, out_idx, src, lo + before)
        cuda.syncthreads()
        block_sort_pairs(out_idx, src, 1, lo, m, sh_k, sh_v)


def extract_groups(ptr, idx, rows, row_ptr, cols, col_ptr, ncols, check=True,
                   with_host_ptr=False):
    """Block-diagonal extraction, block g ``A[rows_g, cols_g]``; see
    ``kernels.cpu.groups``.  ``row_ptr`` and ``col_ptr`` as host int64 arrays.

    Returns ``(indptr, indices, src, first_dup)``, and a host copy of
    ``indptr`` with ``with_host_ptr``.  One read (the output's row pointer:
    its size and, for the caller, its blocks' entry ranges), two with
    ``check`` (the repeat too).
    """
    xp = _xp(ptr)
    col_ptr = np.asarray(col_ptr, np.int64)
    out_ptr, out_idx, src, first_dup, host_ptr, _ = _extract(
        xp, ptr, idx, rows, row_ptr, cols, xp.asarray(col_ptr), np.diff(col_ptr),
        int(col_ptr[-1]), ncols, check, False)
    if with_host_ptr:
        return out_ptr, out_idx, src, first_dup, host_ptr
    return out_ptr, out_idx, src, first_dup


def extract_groups_unread_cols(ptr, idx, rows, row_ptr, cols, col_ptr, col_bound, ncols):
    """``extract_groups`` (columns distinct within each group, not checked)
    with the columns and their pointer still on the device, as
    ``kept_columns_unread`` leaves them: the groups' tables are sized by
    ``col_bound`` (host, each group's most columns; ``cols`` holds at least
    their sum), and the one read brings back both pointers and the columns.

    Returns ``(indptr, indices, src, host indptr, host col_ptr, host cols)``,
    the host columns ``host col_ptr[-1]`` long.
    """
    xp = _xp(ptr)
    bound = np.asarray(col_bound, np.int64)
    out_ptr, out_idx, src, _, host_ptr, tail = _extract(
        xp, ptr, idx, rows, row_ptr, cols, col_ptr, bound, int(bound.sum()), ncols, False,
        True)
    G = row_ptr.size - 1
    host_col_ptr = tail[:G + 1]
    return out_ptr, out_idx, src, host_ptr, host_col_ptr, tail[G + 1:G + 1 + host_col_ptr[G]]


def _extract(xp, ptr, idx, rows, row_ptr, cols, cp, sizes, last, ncols, check, read_cols):
    """The kernels of the two drivers above: ``cp`` the device column
    pointer, ``sizes`` each group's (most) columns on the host, ``last`` at
    least ``cp[-1]``; with ``read_cols`` the read brings ``cp`` back too."""
    G = row_ptr.size - 1
    nr = rows.size
    # A region of 2**bits slots per group, none for a group without columns.
    bits = np.array([_bits_for(int(m)) if m else 0 for m in sizes], np.int64)
    span = np.where(sizes > 0, np.left_shift(np.int64(1), bits), 0)
    toff = np.zeros(G, np.int64)
    np.cumsum(span[:-1], out=toff[1:])
    S = int(span.sum())
    table = full(xp, 3 * S + 1, -1, np.int64)
    dtoff, dbits, rp = upload(xp, toff, bits, row_ptr)
    first_dup = -1
    n_cols = int(sizes.sum())
    if S:
        launch(_extract_fill, n_cols, cols, cp, dtoff, dbits, table, np.int64(check))
        if check:
            dup = table[3 * S:]
            launch(_extract_repeats, n_cols, cols, cp, dtoff, dbits, table, dup)
            d = int(to_host(dup)[0])
            first_dup = int(TOP - d) if d >= 0 else -1
    cnt = xp.empty(nr + 1, np.int64)
    # The row pointer, then (with ``read_cols``) copies of the column
    # pointer and the columns: one read brings all three.
    both = xp.empty(nr + 1 + (G + 1 + n_cols if read_cols else 0), np.int64)
    # A block per row at most, so that long rows spread over the grid.
    long_row = long_row_for(last)
    copies = ((cp, both[nr + 1:nr + G + 2], cols[:n_cols], both[nr + G + 2:]) if read_cols
              else (cp[:0], both[:0], cols[:0], both[:0]))
    launch(_extract_count, nr * BLOCK, ptr, idx, rows, rp, dtoff, dbits, table, cnt, *copies,
           long_row)
    out_ptr = scan(xp, cnt, out=both[:nr + 1])
    host = np.asarray(to_host(both), np.int64)
    host_ptr = host[:nr + 1]
    T = int(host_ptr[nr])
    out_idx = xp.empty(T, np.int64)
    src = xp.empty(T, np.int64)
    if T:
        launch(_extract_emit, nr * BLOCK, ptr, idx, rows, rp, dtoff, dbits, table, out_ptr,
               out_idx, src, long_row)
    return out_ptr, out_idx, src, first_dup, host_ptr, host[nr + 1:]
