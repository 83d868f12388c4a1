"""One layer of a layer-wise sampler assembled from its draws in one kernel, CPU.

``spla.layer_ops.importance_layer`` states the composition this kernel
computes; for group ``g`` (a minibatch: row ``g`` of the draws ``S`` and the
destinations ``dst[dst_ptr[g]:dst_ptr[g+1]]``):

* its columns ``src_g``: the destinations, then the drawn columns that are
  not among them, ascending (``compact_columns_blockwise``);
* each column's probability ``p_j``: ``W[w_rows[g], j]`` divided by that
  row's blocked sum (1 where it sums to 0), or ``p[j]`` when ``p`` is given;
* its scale ``c_j = 1 / (s p_j)`` where ``p_j > 0``, else 0, computed in
  ``p``'s dtype and rounded to A's;
* the block ``A[dst_g, src_g]`` (``extract_blockwise``), each entry times
  its column's scale (one rounding) and each row divided by its blocked
  sum unless that is 0 (``normalize_scaled_rows``).

Every step is the operator's own arithmetic in the operator's dtype and
order (the row sums by ``kernels.its_search.blocked_sum``, as the row
reduction sums), so the blocks equal the composition's bit for bit.  What
fusing saves is one pass over the group's columns and rows instead of
five operators, each with its own pass, arrays and call: a layer of one
minibatch took about 0.2 ms of fixed cost in the composition on PubMed.

Groups are shared out among the workers, and a group's rows among several
when there are fewer groups than workers (one minibatch per call).  A
worker maps its group's columns to their local ids through a tag array over
all columns when the group's rows hold many entries next to the column
count, else through a hash table sized by the group (at most half full), as
``kernels.cpu.groups`` does; scratch is bounded by the work and nothing
outlives the call.
"""

import numba
import numpy as np
from numba import prange

from kernels.common import (EMPTY_KEY, KernelLimitError, clear_table, get_bit, index_dtype,
                            lower_bound, probe, set_bit, table_bits, zero_bitmap)
from kernels.cpu.group_scratch import dense_map, group_bounds, order_row
from kernels.its_search import LEAF, blocked_sum
from kernels.parallel import over_rows, parallel_kernel


def _work(a_ptr, a_idx, a_val, s_ptr, s_idx, dst, *rest):
    # The destinations' entries are scanned (rows times the mean row
    # length), shared out by rows: a group's rows are split among workers.
    n = max(1, int(a_ptr.size) - 1)
    return over_rows(int(dst.size),
                     int(dst.size) * max(1, int(a_ptr[-1]) // n) + int(s_idx.size))


@parallel_kernel(_work, inputs=("a_ptr", "a_idx", "a_val", "s_ptr", "s_idx", "dst", "dst_ptr",
                                "w_ptr", "w_idx", "w_val", "w_rows", "p"))
def _layer(a_ptr, a_idx, a_val, s_ptr, s_idx, dst, dst_ptr, w_ptr, w_idx, w_val, w_rows, p,
           s_p, one_p, one_a, ncols, out_type, parts):
    G = dst_ptr.size - 1
    R = dst.size
    # Upper bounds: a group's columns (its destinations and draws); a row's
    # kept entries (its length, and no more than its group's columns) plus
    # one slot, which the branch-free scan writes and may not keep.
    col_ub = np.zeros(G + 1, np.int64)
    for g in range(G):
        col_ub[g + 1] = col_ub[g] + (dst_ptr[g + 1] - dst_ptr[g]) + (s_ptr[g + 1] - s_ptr[g])
    row_ub = np.zeros(R + 1, np.int64)
    scanned = np.zeros(R + 1, np.int64)
    for g in prange(G):
        m = col_ub[g + 1] - col_ub[g]
        for i in range(dst_ptr[g], dst_ptr[g + 1]):
            d = a_ptr[dst[i] + 1] - a_ptr[dst[i]]
            row_ub[i + 1] = min(d, m) + 1
            scanned[i + 1] = d
    for i in range(R):
        row_ub[i + 1] += row_ub[i]
        scanned[i + 1] += scanned[i]
    src_tmp = np.empty(col_ub[G], np.int64)
    scale = np.empty(col_ub[G], a_val.dtype)
    n_src = np.zeros(G + 1, np.int64)
    for g in prange(G):
        m = _group_columns(g, dst, dst_ptr, s_ptr, s_idx, col_ub, src_tmp)
        n_src[g + 1] = m
        _group_scales(g, src_tmp, col_ub[g], m, w_ptr, w_idx, w_val, w_rows, p, s_p, one_p,
                      scale)
    loc_tmp = np.empty(row_ub[R], np.int64)
    val_tmp = np.empty(row_ub[R], a_val.dtype)
    pos_tmp = np.empty(row_ub[R], np.int64)
    n_row = np.zeros(R + 1, np.int64)
    # With fewer groups than workers (one minibatch per call) a group's rows
    # are cut into pieces of about equal entries, each worker mapping the
    # group's columns itself: that costs the columns, little next to the
    # rows' entries.
    per = (parts + G - 1) // G if 0 < G < parts else 1
    bounds = group_bounds(G * per, parts)
    for c in prange(bounds.size - 1):
        _worker(bounds[c], bounds[c + 1], per, ncols, a_ptr, a_idx, a_val, dst, dst_ptr, scanned,
                row_ub, col_ub, n_src, src_tmp, scale, one_a, loc_tmp, pos_tmp, val_tmp, n_row)
    for g in range(G):
        n_src[g + 1] += n_src[g]
    for i in range(R):
        n_row[i + 1] += n_row[i]
    src = np.empty(n_src[G], np.int64)
    out_idx = np.empty(n_row[R], out_type.dtype)
    out_val = np.empty(n_row[R], a_val.dtype)
    for g in prange(G):
        for t in range(n_src[g + 1] - n_src[g]):
            src[n_src[g] + t] = src_tmp[col_ub[g] + t]
        for i in range(dst_ptr[g], dst_ptr[g + 1]):
            for t in range(n_row[i + 1] - n_row[i]):
                out_idx[n_row[i] + t] = n_src[g] + loc_tmp[row_ub[i] + t]
                out_val[n_row[i] + t] = val_tmp[row_ub[i] + t]
    return n_row, out_idx, out_val, src, n_src


@numba.njit(cache=True, inline="always")
def _piece(r0, r1, q, per, scanned):
    """Rows ``[lo, hi)``, piece ``q`` of ``per`` of rows ``r0:r1``, cut where
    their entries (``scanned``, an exclusive scan) reach ``q / per``."""
    e0 = scanned[r0]
    e1 = scanned[r1]
    lo = r0 + np.searchsorted(scanned[r0:r1], e0 + (e1 - e0) * q // per)
    hi = r1 if q == per - 1 else r0 + np.searchsorted(scanned[r0:r1],
                                                      e0 + (e1 - e0) * (q + 1) // per)
    return lo, hi


@numba.njit(cache=True, inline="always")
def _group_columns(g, dst, dst_ptr, s_ptr, s_idx, col_ub, src_tmp):
    """Group ``g``'s columns into ``src_tmp`` at ``col_ub[g]``: its
    destinations, then its drawn columns (ascending) not among them.
    Returns their count."""
    base = col_ub[g]
    nd = dst_ptr[g + 1] - dst_ptr[g]
    bits = table_bits(nd)
    seen = np.empty(np.int64(2) << bits, np.int64)
    clear_table(seen, bits)
    for t in range(nd):
        v = dst[dst_ptr[g] + t]
        src_tmp[base + t] = v
        seen[2 * probe(seen, v, bits)] = v
    m = nd
    for q in range(s_ptr[g], s_ptr[g + 1]):
        v = s_idx[q]
        if seen[2 * probe(seen, v, bits)] != v:
            src_tmp[base + m] = v
            m += 1
    return m


@numba.njit(cache=True, inline="always")
def _worker(t0, t1, per, ncols, a_ptr, a_idx, a_val, dst, dst_ptr, scanned, row_ub, col_ub,
            n_src, src_tmp, scale, one_a, loc_tmp, pos_tmp, val_tmp, n_row):
    """Tasks ``t0:t1`` (one worker's; task ``t`` is piece ``t % per`` of
    group ``t // per``'s rows): each destination's entries in its group's
    columns (local ids, positions, normalised scaled values) at
    ``row_ub[i]``, their count into ``n_row[i + 1]``.

    The columns map to their local ids through a tag array over all columns
    when the worker's largest group's work (its rows' entries) is within
    ``DENSE_FACTOR`` of the column count, else through a hash table sized
    by its largest group; either is made once per worker.  With the tag
    array a row is scanned branch-free against a bitmap of the group's
    columns (every entry written, kept only if a member: a hub row keeps
    few of its entries, a coin toss the branch predictor loses), only the
    kept entries read a tag, and the bitmap is cleared group by group.
    """
    most = np.int64(0)
    work = np.int64(0)
    for t in range(t0, t1):
        g = t // per
        most = max(most, n_src[g + 1])
        work = max(work, scanned[dst_ptr[g + 1]] - scanned[dst_ptr[g]] + n_src[g + 1])
    dense = dense_map(work, ncols)
    member = zero_bitmap(ncols if dense else 0)
    tags = np.empty(ncols if dense else 0, np.uint32)
    table = np.empty(np.int64(2) << table_bits(0 if dense else most), np.int64)
    placed = np.empty(most, np.int64)
    marks = zero_bitmap(most)
    total = np.empty(1, a_val.dtype)
    for t in range(t0, t1):
        g = t // per
        cols = src_tmp[col_ub[g]:col_ub[g] + n_src[g + 1]]
        bits = table_bits(0 if dense else cols.size)
        clear_table(table, bits)
        for j in range(cols.size):
            if dense:
                set_bit(member, cols[j])
                tags[cols[j]] = j
            else:
                slot = probe(table, cols[j], bits)
                table[2 * slot] = cols[j]
                table[2 * slot + 1] = j
        lo, hi = _piece(dst_ptr[g], dst_ptr[g + 1], t % per, per, scanned)
        for i in range(lo, hi):
            r = dst[i]
            f = row_ub[i]
            if dense:
                # Unsigned positions: numba then adds no negative-index
                # wraparound to the loads, the scan's whole cost.
                for e in range(np.uint64(a_ptr[r]), np.uint64(a_ptr[r + 1])):
                    pos_tmp[f] = e
                    f += get_bit(member, a_idx[e])
                for q in range(row_ub[i], f):
                    loc_tmp[q] = tags[a_idx[pos_tmp[q]]]
            else:
                for e in range(a_ptr[r], a_ptr[r + 1]):
                    slot = probe(table, a_idx[e], bits)
                    if table[2 * slot] != EMPTY_KEY:
                        loc_tmp[f] = table[2 * slot + 1]
                        pos_tmp[f] = e
                        f += 1
            if f - row_ub[i] > 1:   # most rows keep one entry or none
                order_row(loc_tmp, pos_tmp, row_ub[i], f, cols.size, placed, marks)
            _normalized_row(row_ub[i], f, loc_tmp, pos_tmp, a_val, scale[col_ub[g]:], one_a,
                            total, val_tmp)
            n_row[i + 1] = f - row_ub[i]
        if dense:
            for j in range(cols.size):
                member[np.uint64(cols[j]) >> np.uint64(6)] = np.uint64(0)


@numba.njit(cache=True, inline="always")
def _group_scales(g, src_tmp, base, m, w_ptr, w_idx, w_val, w_rows, p, s_p, one_p, scale):
    """``c_j = 1 / (s p_j)`` (0 where ``p_j`` is not positive) of group
    ``g``'s ``m`` columns, computed in ``p``'s dtype (``one_p``'s) and
    rounded to A's (``scale``'s, written at ``base``), as the composition's
    array expressions round."""
    lookup = p.size == 0
    lo = np.int64(0)
    hi = np.int64(0)
    safe = one_p
    if lookup:
        wr = w_rows[g]
        lo = w_ptr[wr]
        hi = w_ptr[wr + 1]
        total = np.empty(1, w_val.dtype)
        if hi > lo:
            blocked_sum(w_val, lo, hi, True, one_p, one_p - one_p, LEAF, total, 0)
        else:
            total[0] = one_p - one_p
        if total[0] != 0:
            safe = total[0]
    for t in range(m):
        j = src_tmp[base + t]
        if lookup:
            q = lower_bound(w_idx, lo, hi, j)
            raw = w_val[q] if q < hi and w_idx[q] == j else one_p - one_p
            pj = raw / safe
        else:
            pj = p[j]
        scale[base + t] = one_p / (s_p * pj) if pj > 0 else one_p - one_p


@numba.njit(cache=True, inline="always")
def _normalized_row(lo, hi, loc, pos, a_val, scale, one_a, total, out):
    """Row ``[lo, hi)``: each entry's value times its column's scale, then
    divided by the row's blocked sum (from +0, as the row reduction sums;
    ``total`` is its one-slot scratch) unless that is 0."""
    for f in range(lo, hi):
        out[f] = a_val[pos[f]] * scale[loc[f]]
    if hi > lo:
        blocked_sum(out, lo, hi, True, one_a, one_a - one_a, LEAF, total, 0)
        if total[0] != 0:
            for f in range(lo, hi):
                out[f] = out[f] / total[0]


def importance_layer(a_ptr, a_idx, a_val, s_ptr, s_idx, dst, dst_ptr, w_ptr, w_idx, w_val,
                     w_rows, p, s, ncols=None, s_host_ptr=None):
    """One layer's blocks and columns; see the module docstring.

    Parameters
    ----------
    a_ptr, a_idx, a_val : arrays
        A's CSR arrays (float values).
    s_ptr, s_idx : arrays
        The draws: row ``g`` holds group ``g``'s drawn columns, ascending.
    dst, dst_ptr : int64 arrays
        Each group's destinations (rows of A), distinct within a group.
    w_ptr, w_idx, w_val, w_rows : arrays
        The weights ``W`` (float values) and the row of each group; unused
        when ``p`` is not empty.
    p : 1-D float array
        Each column's probability, or empty (then ``W``'s rows give them).
    s : int
        Draws per group (the layer size).
    ncols : int, optional
        A's column count (default: its row count, a square graph).
    s_host_ptr : array, optional
        A host copy of ``s_ptr``: unused here (the CUDA twin sizes its
        tables from it and saves a read).

    Raises
    ------
    KernelLimitError
        2**32 destinations and draws or more (local ids are 32-bit tags).

    Returns
    -------
    indptr, indices, values : arrays
        The blocks, block-diagonally: a row per destination, group ``g``'s
        columns at ``src_ptr[g]`` on; ``indices`` int32 when the
        destinations and draws number fewer than 2**31, else int64.
    src, src_ptr : int64 arrays
        Each group's columns (original ids).
    host_indptr : int64 numpy array
        ``indptr`` on the host (here ``indptr`` itself; the CUDA twin's
        reads it back with the block's size).
    src_host : int64 numpy array or None
        ``src`` on the host (here ``src`` itself; the CUDA twin's comes
        back in its read given ``s_host_ptr``, else None).

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.cpu.layer_blocks import importance_layer
    >>> ptr, idx = np.array([0, 2, 4]), np.array([0, 1, 0, 1])
    >>> val = np.array([0.5, 0.5, 0.25, 0.75])
    >>> e = np.zeros(0, np.int64)
    >>> out = importance_layer(ptr, idx, val, np.array([0, 1]), np.array([1]), np.array([0]),
    ...                        np.array([0, 1]), e, e, np.zeros(0), e, np.array([0.5, 0.5]), 1)
    >>> [a.tolist() for a in out]
    [[0, 2], [0, 1], [0.5, 0.5], [0, 1], [0, 2], [0, 2], [0, 1]]
    """
    if int(dst.size) + int(s_idx.size) >= 2 ** 32:
        # Tags are 32 bits: a group's local ids must fit (no workload nears it).
        raise KernelLimitError("importance_layer", "S", "fewer than 2**32 columns in all",
                               f"up to {int(dst.size) + int(s_idx.size)}")
    pd = p.dtype if p.size else w_val.dtype
    # Every probability in one dtype: an empty p of another would make numba
    # unify the two kinds of p_j in the wider one, and compute the scales
    # in it, which the composition does not.
    p = p.astype(pd, copy=False)
    if p.size:
        w_val = np.zeros(0, pd)   # unused, and of p's dtype for the same reason
    s_p = np.asarray(s).astype(pd)[()]
    # Column ids in the narrowest type the block's columns allow (an upper
    # bound: every destination and draw a column of its own).
    out_type = np.empty(0, index_dtype(int(dst.size) + int(s_idx.size)))
    args = (a_ptr, a_idx, a_val, s_ptr, s_idx, dst, dst_ptr, w_ptr, w_idx, w_val, w_rows, p, s_p,
            pd.type(1), a_val.dtype.type(1), np.int64(a_ptr.size - 1 if ncols is None else ncols),
            out_type)
    indptr, indices, values, src, src_ptr = _layer(*args, _layer.parts(*args))
    return indptr, indices, values, src, src_ptr, indptr, src
