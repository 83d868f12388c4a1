"""Per-group column relabelling and extraction, CUDA.

Twin of ``kernels.cpu.groups`` (see there for the contract).  Both
operations run fused, in a few kernels over hash tables and one blocking
read each (``kernels.cuda.layer_groups``).  ``compact_groups`` keys its
table by ``group * ncols + column``; when that would pass 62 bits (column
spaces near 2**62) it falls back to sorting, as follows: each group's
sequence (its ``first`` columns, then its entries' columns, row by row) is
laid out as the CPU kernel lays it out; a stable sort by (group, column)
gathers the occurrences of a column, the head of each run is the column's
first appearance, and ordering the run heads by sequence position gives
every group's kept columns in the CPU order.  A repeat among a group's
``first`` columns is a run element past the head that came from ``first``.
Rows are then sorted by output column with a stable (row, column) sort;
columns are distinct within a row, so the order is the CPU one.

Both return their group pointers on the host (numpy): the sizes are read
once anyway, and every caller needs them there.
"""

import numpy as np
from numba import cuda

from kernels.common import index_dtype
from kernels.cuda import layer_groups as fused
from kernels.cuda._util import host_int, launch, scan, stable_order, to_host, _xp


@cuda.jit(cache=True)
def _seq_first(first, first_ptr, f_grp, base, seq_grp, seq_col, seq_src):
    """Each group's leading columns at the head of its sequence segment.

    One thread per column, not per group: a group's leading columns are a
    whole frontier (a GraphSAGE hop's destinations), and a thread per group
    copied them alone while the others idled.
    """
    f0 = first_ptr[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for u in range(start, f_grp.size, stride):
        t = f0 + u
        g = f_grp[u]
        s = base[g] + (t - first_ptr[g])
        seq_grp[s] = g
        seq_col[s] = first[t]
        seq_src[s] = -1 - t  # negative: a position in ``first``


@cuda.jit(cache=True)
def _seq_entries(ptr, idx, row_ptr, row_grp, row_of, first_ptr, base, seq_grp,
                 seq_col, seq_src):
    """Entries of each row after their group's leading columns (one thread
    per entry)."""
    r0 = row_ptr[0]
    e0 = ptr[r0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for u in range(start, row_of.size, stride):
        g = row_grp[row_of[u]]
        e = e0 + u
        s = (base[g] + (first_ptr[g + 1] - first_ptr[g])
             + (e - ptr[row_ptr[g]]))
        seq_grp[s] = g
        seq_col[s] = idx[e]
        seq_src[s] = e


def _owners(xp, ptr, lo, hi):
    """Segment of every position ``lo = ptr[0] .. hi - 1 = ptr[-1] - 1`` of a
    CSR-like pointer (empty segments own nothing); the callers have read
    ``lo`` and ``hi`` already.  A search rather than ``repeat``, which cupy
    only takes with host-side counts."""
    pos = xp.arange(lo, hi, dtype=np.int64)
    return (xp.searchsorted(ptr, pos, side="right") - 1).astype(np.int64)


def _row_sort(xp, row_of, out_idx, n_rows, n_cols):
    """Stable (row, column) order of a row-grouped expansion."""
    return stable_order(xp, row_of, out_idx, n_rows, n_cols)


def _pointer(xp, p):
    """(device int64 copy or view, host int64 copy) of a group pointer; a
    device pointer costs one read, a host one an upload."""
    if _xp(p) is np:
        host = np.asarray(p, np.int64)
        return xp.asarray(host), host
    return p.astype(np.int64, copy=False), to_host(p).astype(np.int64, copy=False)


def _entry_range(xp, ptr, r0, r1):
    """``(ptr[r0], ptr[r1])`` as Python ints, in one read."""
    if _xp(ptr) is np:
        return int(ptr[r0]), int(ptr[r1])
    lo, hi = to_host(ptr[xp.asarray(np.array([r0, r1], np.int64))]).tolist()
    return int(lo), int(hi)


def compact_groups(ptr, idx, row_ptr, first, first_ptr, ncols, with_perm=True, check=True):
    """Relabel the columns of each row group; see ``kernels.cpu.groups``.

    Returns (out_idx, perm, kept, kept_ptr, first_dup), ``out_idx`` in the
    CPU kernel's index type and ``perm`` empty unless ``with_perm``.
    ``row_ptr`` and ``first_ptr`` may be host arrays (no read for their
    ends); ``check=False`` skips looking for a repeat among a group's
    ``first`` columns (``first_dup`` is then -1), for callers whose
    ``first`` are distinct by construction.
    """
    xp = _xp(ptr)
    G = row_ptr.size - 1
    row_ptr, rp = _pointer(xp, row_ptr)
    first_ptr, fp = _pointer(xp, first_ptr)
    if G > 0 and fused.fits_compact(G, ncols):
        return fused.compact_groups(ptr, idx, rp, first.astype(np.int64, copy=False), fp,
                                    ncols, with_perm, check)
    r0, r1 = int(rp[0]), int(rp[G])
    nnz_base, nnz_end = _entry_range(xp, ptr, r0, r1)
    n_entries = nnz_end - nnz_base
    f0 = int(fp[0])
    n_first = int(fp[G]) - f0
    L = n_first + n_entries
    empty = xp.zeros(0, np.int64)
    out_type = index_dtype(L)
    if G <= 0 or L == 0:
        return (empty.astype(out_type), empty.copy(), empty.copy(),
                np.zeros(max(G, 0) + 1, np.int64), -1)
    base = ((first_ptr[:-1] - f0) + (ptr[row_ptr[:-1]].astype(np.int64) - nnz_base))
    seq_grp = xp.empty(L, np.int64)
    seq_col = xp.empty(L, np.int64)
    seq_src = xp.empty(L, np.int64)
    if n_first:
        launch(_seq_first, n_first, first, first_ptr, _owners(xp, first_ptr, f0, f0 + n_first),
               base, seq_grp, seq_col, seq_src)
    row_grp = _owners(xp, row_ptr, r0, r1)
    # Row of every entry (relative to r0): the entries' kernel and the final
    # (row, column) sort both need it.
    row_of = (_owners(xp, ptr[r0:r1 + 1].astype(np.int64), nnz_base, nnz_base + n_entries)
              if n_entries else None)
    if n_entries:
        launch(_seq_entries, n_entries, ptr, idx, row_ptr, row_grp, row_of,
               first_ptr, base, seq_grp, seq_col, seq_src)
    # Runs of one column within one group, in sequence order.
    order = stable_order(xp, seq_grp, seq_col, G, ncols)
    sg = seq_grp[order]
    sc = seq_col[order]
    ssrc = seq_src[order]
    new = xp.empty(L, np.bool_)
    new[0] = True
    new[1:] = (sg[1:] != sg[:-1]) | (sc[1:] != sc[:-1])
    starts = xp.flatnonzero(new)
    first_dup = _first_repeat(xp, new, ssrc) if check else -1
    # Kept columns: run heads in order of first appearance.
    head_pos = order[starts]
    by_pos = xp.argsort(head_pos)
    R = starts.size
    gid = xp.empty(R, np.int64)
    gid[by_pos] = xp.arange(R, dtype=np.int64)
    kept = sc[starts][by_pos]
    kept_ptr = xp.zeros(G + 1, np.int64)
    kept_ptr[1:] = xp.bincount(sg[starts], minlength=G)
    kept_ptr = to_host(scan(xp, kept_ptr))
    if n_entries == 0:
        return empty.astype(out_type), empty.copy(), kept, kept_ptr, first_dup
    # Each entry's new column, then rows sorted by it: the leading columns'
    # positions go to a spare last slot, a scatter that needs no count.
    run_of = xp.cumsum(new) - 1
    local = xp.empty(n_entries + 1, np.int64)
    local[xp.where(ssrc >= 0, ssrc - nnz_base, n_entries)] = gid[run_of]
    local = local[:n_entries]
    o = _row_sort(xp, row_of, local, r1 - r0, R)
    perm = o + nnz_base if with_perm else empty.copy()
    return local[o].astype(out_type), perm, kept, kept_ptr, first_dup


def _first_repeat(xp, new, ssrc):
    """Earliest position in ``first`` of a leading column repeated in its group,
    or -1: a run element past the head that came from ``first``.  The CPU
    kernel reports the earliest such position (-1 - src is decreasing in the
    position, hence the max)."""
    rep = xp.where(~new & (ssrc < 0), ssrc, np.iinfo(np.int64).min)
    top = host_int(rep.max())
    return -1 - top if top != np.iinfo(np.int64).min else -1


def extract_groups(ptr, idx, rows, row_ptr, cols, col_ptr, ncols, check=True,
                   with_host_ptr=False):
    """Block-diagonal extraction: block g is ``A[rows_g, cols_g]``;
    returns ``(indptr, indices, src, first_dup)`` and, with
    ``with_host_ptr``, a host copy of ``indptr`` (read anyway for the
    size), see ``kernels.cpu.groups``.

    ``row_ptr`` and ``col_ptr`` may be host arrays (no read for them);
    ``check=False`` skips looking for a repeated column within a group
    (``first_dup`` is then -1), for columns distinct by construction.  The
    fused kernels of ``kernels.cuda.layer_groups`` do the work.
    """
    xp = _xp(ptr)
    _, rp = _pointer(xp, row_ptr)
    _, cp = _pointer(xp, col_ptr)
    return fused.extract_groups(ptr, idx, rows.astype(np.int64, copy=False), rp,
                                cols.astype(np.int64, copy=False), cp, ncols, check,
                                with_host_ptr)
