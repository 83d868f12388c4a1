"""Per-group column relabelling and extraction, CPU (the bulk samplers' hot path).

Rows of a matrix are split into consecutive *groups* (one group = one
minibatch of a bulk).  Both kernels give each group its own column space and
lay the groups out block-diagonally:

* ``compact_groups``: the columns a group uses, its ``first`` columns (its
  destination vertices) leading in the order given, then the others in order
  of first appearance (row by row, ascending column within a row).  Entries
  get the column ``kept_ptr[g] + local id``.
* ``extract_groups``: block ``g`` is ``A[rows_g, cols_g]``.

Groups are processed in parallel.  Each group relabels its columns through
its own open-addressing hash table (column -> local id), sized to a power of
two at least twice the group's work (its leading columns plus its entries,
or its selected columns), so the table is at most half full and fits in
cache.  Both kernels give a worker whose groups are large next to the
column space (work >= ncols / DENSE_FACTOR; for ``extract_groups`` the work
is the entries of the group's rows, which it scans) a tag array over the
columns instead, filled once per call.  Either way scratch is bounded by the
work, not by the column count times the threads, nothing outlives the call,
and concurrent calls from several Python threads share nothing.
Output rows are sorted by column (canonical CSR); ``perm`` tells where each
output entry came from so values can be gathered by the caller.
"""

import numba
import numpy as np
from numba import prange

from kernels.common import EMPTY_KEY as _EMPTY
from kernels.common import KernelLimitError, index_dtype
from kernels.common import clear_table as _clear
from kernels.common import probe as _probe
from kernels.common import table_bits as _table_bits
from kernels.common import get_bit, set_bit, sort_pairs, sort_range, zero_bitmap
from kernels.cpu.group_scratch import DENSE_FACTOR  # noqa: F401 - re-exported
from kernels.cpu.group_scratch import dense_map as _dense
from kernels.cpu.group_scratch import group_bounds as _group_bounds
from kernels.cpu.group_scratch import order_row as _order_row
from kernels.cpu.group_scratch import scratch as _scratch
from kernels.cpu.group_scratch import start_group as _start_group
from kernels.parallel import over_rows, parallel_kernel

#: A group may hold fewer distinct columns than this (local ids and the
#: hash tables' slots are counted in 64 bits, but a table for 2**32 columns
#: would take 128 GiB: such a group is an error, not a workload).
GROUP_LIMIT = 2 ** 32


@numba.njit(cache=True, inline="always")
def _row_at(ptr, r_lo, r_hi, e):
    """The first row of ``r_lo:r_hi`` whose entries start at or after ``e``."""
    return r_lo + np.searchsorted(ptr[r_lo:r_hi], e)


#: The largest tag of ``compact_groups``' dense map (they are uint32).
TAG_LIMIT = 2 ** 32 - 1


@numba.njit(cache=True, inline="always")
def _relabel_groups(g0, g1, ptr, idx, row_ptr, first, first_ptr, ncols, tag_limit, nnz_base,
                    f_base, tmp, local, cnt, dup):
    """``_compact``'s first pass over groups ``g0:g1`` (one worker's): each
    group's distinct columns in order of first appearance into ``tmp``, every
    entry's local id into ``local``, the counts into ``cnt[g + 1]``."""
    # Scratch per worker, sized by its largest group: a hash table cleared
    # per group (clearing costs what the group's work costs), or, for
    # groups large next to the column space, a tag array over the columns.
    most = np.int64(0)
    for g in range(g0, g1):
        w = (first_ptr[g + 1] - first_ptr[g]) + (ptr[row_ptr[g + 1]] - ptr[row_ptr[g]])
        most = max(most, w)
    dense = _dense(most, ncols)
    # Tags are 32 bits, half the lines an int64 tag array spans (this
    # pass misses in it at every hop's first touch of a column): a
    # column's tag is ``tag_base + local id + 1``, where ``tag_base`` counts the
    # columns of the worker's earlier groups, so a tag above ``tag_base``
    # means "seen in this group" and the array is filled once, not per
    # group, until the counts would pass 2**32.
    tags = np.zeros(ncols if dense else 0, np.uint32)
    table = np.empty(0 if dense else np.int64(2) << _table_bits(most), np.int64)
    tag_base = np.uint64(0)
    for g in range(g0, g1):
        w = (first_ptr[g + 1] - first_ptr[g]) + (ptr[row_ptr[g + 1]] - ptr[row_ptr[g]])
        bits, tag_base = _start_group(dense, tags, table, w, tag_base, tag_limit)
        off = (first_ptr[g] - f_base) + (ptr[row_ptr[g]] - nnz_base)
        n = np.int64(0)
        for t in range(first_ptr[g], first_ptr[g + 1]):
            v = first[t]
            if dense:
                seen = np.uint64(tags[v]) > tag_base
            else:
                s = _probe(table, v, bits)
                seen = table[2 * s] == v
            if seen:
                if dup[g] < 0:
                    dup[g] = t
                continue
            if dense:
                tags[v] = np.uint32(tag_base + np.uint64(n) + np.uint64(1))
            else:
                table[2 * s] = v
                table[2 * s + 1] = n
            tmp[off + n] = v
            n += 1
        for e in range(ptr[row_ptr[g]], ptr[row_ptr[g + 1]]):
            v = idx[e]
            if dense:
                # Selects, not a branch: whether a column is new is a
                # coin toss the branch predictor loses, and each miss
                # would also cancel the tag reads in flight behind it.
                tg = np.uint64(tags[v])
                new = tg <= tag_base
                tg = (tag_base + np.uint64(n) + np.uint64(1)) if new else tg
                tags[v] = np.uint32(tg)
                tmp[off + n] = v
                n += np.int64(new)
                local[e - nnz_base] = np.uint32(tg - tag_base - np.uint64(1))
            else:
                s = _probe(table, v, bits)
                if table[2 * s] != v:
                    table[2 * s] = v
                    table[2 * s + 1] = n
                    tmp[off + n] = v
                    n += 1
                local[e - nnz_base] = np.uint32(table[2 * s + 1])
        cnt[g + 1] = n
        tag_base += np.uint64(n)


@numba.njit(cache=True, inline="always")
def _copy_kept(g, ptr, row_ptr, first_ptr, f_base, nnz_base, cnt, tmp, kept):
    """Group ``g``'s distinct columns from ``_relabel_groups``' scratch to ``kept``."""
    base = (first_ptr[g] - f_base) + (ptr[row_ptr[g]] - nnz_base)
    for t in range(cnt[g + 1] - cnt[g]):
        kept[cnt[g] + t] = tmp[base + t]


def _compact_work(ptr, idx, row_ptr, first, first_ptr, ncols, parts, *rest):
    return over_rows(int(row_ptr[-1] - row_ptr[0]),
                     int(ptr[row_ptr[-1]] - ptr[row_ptr[0]]) + int(first.size))


@parallel_kernel(_compact_work, inputs=("ptr", "idx", "row_ptr", "first", "first_ptr"))
def _compact(ptr, idx, row_ptr, first, first_ptr, ncols, parts, with_perm, out_type,
             tag_limit):
    G = row_ptr.size - 1
    nnz_base = ptr[row_ptr[0]]
    f_base = first_ptr[0]
    tmp = np.empty((first_ptr[G] - f_base) + (ptr[row_ptr[G]] - nnz_base), np.int64)
    # Local ids are below GROUP_LIMIT: 32 bits halve this pass's traffic.
    local = np.empty(ptr[row_ptr[G]] - nnz_base, np.uint32)
    cnt = np.zeros(G + 1, np.int64)
    dup = np.full(G, -1, np.int64)
    bounds = _group_bounds(G, parts)
    if bounds.size == 2:
        # One worker's groups (one minibatch at a time): no parallel region,
        # whose start and end barrier wake the sleeping threads for nothing.
        _relabel_groups(bounds[0], bounds[1], ptr, idx, row_ptr, first, first_ptr, ncols,
                        tag_limit, nnz_base, f_base, tmp, local, cnt, dup)
    else:
        for c in prange(bounds.size - 1):
            _relabel_groups(bounds[c], bounds[c + 1], ptr, idx, row_ptr, first, first_ptr,
                            ncols, tag_limit, nnz_base, f_base, tmp, local, cnt, dup)
    for g in range(G):
        cnt[g + 1] += cnt[g]
    kept = np.empty(cnt[G], np.int64)
    if G == 1:
        _copy_kept(0, ptr, row_ptr, first_ptr, f_base, nnz_base, cnt, tmp, kept)
    else:
        for g in prange(G):
            _copy_kept(g, ptr, row_ptr, first_ptr, f_base, nnz_base, cnt, tmp, kept)
    # Block-diagonal columns, rows sorted; written in the caller's index
    # type, and without ``perm`` when there are no values to carry.
    # Tasks are runs of rows of about equal entries, not groups: a bulk of
    # fewer groups than threads (one minibatch at a time) sorts on every
    # thread too.
    out_idx = np.empty(local.size, out_type.dtype)
    perm = np.empty(local.size if with_perm else 0, np.int64)
    r_lo = row_ptr[0]
    r_hi = row_ptr[G]
    tasks = max(np.int64(1), min(r_hi - r_lo, 4 * np.int64(parts)))
    for c in prange(tasks):
        r0 = _row_at(ptr, r_lo, r_hi, nnz_base + (local.size * c) // tasks)
        r1 = _row_at(ptr, r_lo, r_hi, nnz_base + (local.size * (c + 1)) // tasks)
        if c == tasks - 1:
            r1 = r_hi
        g = np.searchsorted(row_ptr, r0, side="right") - 1
        for r in range(r0, r1):
            while row_ptr[g + 1] <= r:
                g += 1
            lo = ptr[r] - nnz_base
            hi = ptr[r + 1] - nnz_base
            for t in range(lo, hi):
                out_idx[t] = cnt[g] + np.int64(local[t])
            if with_perm:
                for t in range(lo, hi):
                    perm[t] = t + nnz_base
                sort_pairs(out_idx, perm, lo, hi)
            else:
                sort_range(out_idx, lo, hi)
    first_dup = -1
    for g in range(G):
        if dup[g] >= 0:
            first_dup = dup[g]
            break
    return out_idx, perm, kept, cnt, first_dup


def compact_groups(ptr, idx, row_ptr, first, first_ptr, ncols, with_perm=True, check=True):
    """Relabel the columns of each row group; see the module docstring.

    Parameters
    ----------
    ptr, idx : array
        CSR structure of the input (all rows).
    row_ptr : int64 array
        Groups of rows: group g is rows ``row_ptr[g]:row_ptr[g+1]``.
    first, first_ptr : int64 arrays
        The leading columns of each group (CSR-like).
    ncols : int
        Number of input columns: a worker whose largest group's work is at
        least ``ncols / DENSE_FACTOR`` relabels through a tag array over the
        columns (so its memory is still bounded by the work), the others
        through hash tables sized by their groups.
    with_perm : bool, optional
        Return ``perm`` (default); False for a structural input, whose
        entries have no values to follow the sort.
    check : bool, optional
        Accepted for the CUDA twin's signature: this kernel finds a repeated
        leading column as it goes, at no extra cost, and always reports it.

    Returns
    -------
    out_idx : int array
        Block-diagonal column of every entry of rows
        ``row_ptr[0]:row_ptr[-1]`` (rows sorted): int32 when the leading
        columns and entries together number fewer than 2**31 (so every
        output column does), else int64.
    perm : int64 array
        Input entry position of every output entry (empty unless
        ``with_perm``).
    kept, kept_ptr : int64 arrays
        Original column ids of each group's columns.
    first_dup : int
        Position in ``first`` of the first repeated leading column within a
        group, or -1.

    Raises
    ------
    KernelLimitError
        A group that may hold ``GROUP_LIMIT`` columns or more.
    """
    G = row_ptr.size - 1
    bound = (int(first_ptr[G]) - int(first_ptr[0])) + (int(ptr[row_ptr[G]])
                                                        - int(ptr[row_ptr[0]]))
    if bound >= GROUP_LIMIT:
        # No group holds more than all of them: only then look per group.
        _check_group_sizes("compact_groups", "row_ptr", first_ptr, np.diff(ptr[row_ptr]))
    head = (ptr, idx, row_ptr, first, first_ptr, np.int64(ncols))
    tail = (bool(with_perm), np.empty(0, index_dtype(bound)), np.int64(TAG_LIMIT))
    # The twin's workers: the serial one shares its groups and sorts out to
    # one, not to numba's thread count.
    return _compact(*head, _compact.parts(*head, 0, *tail), *tail)


@numba.njit(cache=True, inline="always")
def _scan_members(e0, e1, idx, member, out, f, end):
    """Write the entries ``e0:e1`` whose column is set in ``member`` to
    ``out[f:end]``; returns ``(f, over)``, ``over`` when one more was found
    with ``out`` full (a repeated column).

    Branch-free: every entry is written at ``out[f]`` and kept (``f``
    advanced) only if a member, over runs no longer than the free slots, so
    no write passes ``end``.  A group keeps a small, random share of its
    rows' entries (LADIES' second layer), a coin toss the branch predictor
    loses.
    """
    e = e0
    while e < e1 and f < end:
        stop = min(e1, e + (end - f))
        for q in range(np.uint64(e), np.uint64(stop)):
            out[f] = q
            f += get_bit(member, idx[q])
        e = stop
    for q in range(e, e1):
        if get_bit(member, idx[q]):
            return f, True
    return f, False


def _extract_work(ptr, idx, rows, row_ptr, cols, col_ptr, ncols, parts):
    # The rows' entries are scanned: rows times the mean row length (O(1)).
    n = max(1, int(ptr.size) - 1)
    return over_rows(int(rows.size), int(rows.size) * max(1, int(ptr[-1]) // n) + int(cols.size))


@numba.njit(cache=True, inline="always")
def _split_tasks(ptr, rows, row_ptr, parts):
    """Tasks of ``_extract``: ``(per, t_g, t_r0, t_r1)``, ``per`` pieces of each
    group's rows.

    With fewer groups than workers (one minibatch at a time) a group's rows
    are split so every worker scans some; each worker builds the column map
    of the groups it meets, which costs the group's columns, little next to
    its rows' entries.  The cuts fall where the rows' entries (the scan's
    work) reach ``q / per`` of the group's: hub rows make row counts a poor
    measure.
    """
    G = row_ptr.size - 1
    per = np.int64(1)
    if 0 < G < parts:
        per = (parts + G - 1) // G
    T = G * per
    t_g = np.empty(T, np.int64)
    t_r0 = np.empty(T, np.int64)
    t_r1 = np.empty(T, np.int64)
    for g in range(G):
        for q in range(per):
            t_g[g * per + q] = g
        t_r0[g * per] = row_ptr[g]
        t_r1[g * per + per - 1] = row_ptr[g + 1]
        if per > 1:
            total = np.int64(0)
            for i in range(row_ptr[g], row_ptr[g + 1]):
                total += ptr[rows[i] + 1] - ptr[rows[i]]
            acc = np.int64(0)
            q = 1
            for i in range(row_ptr[g], row_ptr[g + 1]):
                while q < per and acc * per >= total * q:
                    t_r1[g * per + q - 1] = i
                    t_r0[g * per + q] = i
                    q += 1
                acc += ptr[rows[i] + 1] - ptr[rows[i]]
            while q < per:
                t_r1[g * per + q - 1] = row_ptr[g + 1]
                t_r0[g * per + q] = row_ptr[g + 1]
                q += 1
    return per, t_g, t_r0, t_r1


@numba.njit(cache=True, inline="always")
def _tasks_size(t0, t1, t_g, t_r0, t_r1, ptr, rows, col_ptr):
    """``(work, most)`` of tasks ``[t0, t1)``: the largest task's entries plus
    columns, and the largest group's columns (what sizes a worker's scratch)."""
    most = np.int64(0)
    work = np.int64(0)
    for t in range(t0, t1):
        g = t_g[t]
        most = max(most, col_ptr[g + 1] - col_ptr[g])
        w = np.int64(0)
        for i in range(t_r0[t], t_r1[t]):
            w += ptr[rows[i] + 1] - ptr[rows[i]]
        work = max(work, w + (col_ptr[g + 1] - col_ptr[g]))
    return work, most


@numba.njit(cache=True, inline="always")
def _load_group(g, cols, col_ptr, dense, member, tags, table, report, dup):
    """Map group ``g``'s columns to their local ids (the tag array and the
    member bitmap, or the hash table); returns the table's bits.

    A repeated column maps to its last position (as the CUDA twin's search
    does); with ``report``, the first repeat's position goes to ``dup[g]``
    (the caller refuses repeats).
    """
    bits = _table_bits(col_ptr[g + 1] - col_ptr[g])
    if not dense:
        _clear(table, bits)
    for t in range(col_ptr[g], col_ptr[g + 1]):
        v = cols[t]
        if dense:
            # The bitmap holds this group's columns so far.
            if report and get_bit(member, v) and dup[g] < 0:
                dup[g] = t
            set_bit(member, v)
            tags[v] = np.uint32(t - col_ptr[g])
        else:
            s = _probe(table, v, bits)
            if report and table[2 * s] == v and dup[g] < 0:
                dup[g] = t
            table[2 * s] = v
            table[2 * s + 1] = t - col_ptr[g]
    return bits


@numba.njit(cache=True, inline="always")
def _scan_row(e0, e1, idx, dense, member, tags, table, bits, tmp_idx, tmp_src, f, end):
    """Keep the entries ``e0:e1`` whose column is in the current group: their
    local ids to ``tmp_idx[f:]``, their positions to ``tmp_src[f:]``, at most
    up to ``end``.  Returns ``(f, over)``, ``over`` when an entry did not fit
    (the row repeats a column)."""
    if dense:
        f0 = f
        f, over = _scan_members(e0, e1, idx, member, tmp_src, f, end)
        # The member bitmap holds the current group's columns only, so every
        # kept entry's tag is this group's.
        for t in range(f0, f):
            tmp_idx[t] = tags[idx[tmp_src[t]]]
        return f, over
    for e in range(e0, e1):
        s = _probe(table, idx[e], bits)
        if table[2 * s] != _EMPTY:
            if f == end:
                return f, True
            tmp_idx[f] = table[2 * s + 1]
            tmp_src[f] = e
            f += 1
    return f, False


@numba.njit(cache=True, inline="always")
def _first_dup(dup):
    for g in range(dup.size):
        if dup[g] >= 0:
            return dup[g]
    return np.int64(-1)


@parallel_kernel(_extract_work, inputs=("ptr", "idx", "rows", "row_ptr", "col_ptr"))
def _extract(ptr, idx, rows, row_ptr, cols, col_ptr, ncols, parts):
    G = row_ptr.size - 1
    nr = rows.size
    # Upper bound per output row: the input row's length, and no more than
    # the group's columns (a canonical row holds a column once), so a hub
    # row selected by many groups does not size the scratch by its degree.
    ub = np.zeros(nr + 1, np.int64)
    for g in prange(G):
        m = col_ptr[g + 1] - col_ptr[g]
        for i in range(row_ptr[g], row_ptr[g + 1]):
            ub[i + 1] = min(ptr[rows[i] + 1] - ptr[rows[i]], m)
    for i in range(nr):
        ub[i + 1] += ub[i]
    # Set when a row repeats a column (not canonical): more entries would
    # be kept than its bound allows, so the caller raises instead.
    repeats = np.zeros(1, np.int64)
    # Local column ids (< GROUP_LIMIT = 2**32) in 4 bytes: the bound above
    # is loose (a hub row bounded by its group's columns keeps a few of
    # them), so this scratch is large, and the fewer bytes a slot the more
    # often the allocator can hand the same pages to the next call instead
    # of mapping fresh ones (docs/design.rst, "Measurements behind the
    # kernels' choices").
    tmp_idx = np.empty(ub[nr], np.uint32)
    tmp_src = np.empty(ub[nr], np.int64)
    cnt = np.zeros(nr + 1, np.int64)
    dup = np.full(G, -1, np.int64)
    per, t_g, t_r0, t_r1 = _split_tasks(ptr, rows, row_ptr, parts)
    bounds = _group_bounds(t_g.size, parts)
    for c in prange(bounds.size - 1):
        # As in _compact: a hash table of the group's columns, or, when a
        # task's work (its rows' entries) is large next to the column space,
        # a tag array over the columns holding the local id, one load per
        # entry instead of a hashed probe.
        work, most = _tasks_size(bounds[c], bounds[c + 1], t_g, t_r0, t_r1, ptr, rows, col_ptr)
        dense, tags, table, slot, marks = _scratch(work, most, ncols)
        # With the tag array, a bitmap of the current group's columns too:
        # ncols / 8 bytes stay in cache where the tags (4 ncols) do not, and
        # most scanned entries are not kept, so only the kept ones read a tag.
        member = zero_bitmap(ncols if dense else 0)
        cur = np.int64(-1)
        bits = 0
        for task in range(bounds[c], bounds[c + 1]):
            g = t_g[task]
            if g != cur:
                if dense and cur >= 0:
                    # Every set bit is one of the previous group's columns.
                    for t in range(col_ptr[cur], col_ptr[cur + 1]):
                        member[np.uint64(cols[t]) >> np.uint64(6)] = np.uint64(0)
                cur = g
                # Only the group's first piece reports a repeated column
                # (no two workers write dup[g]).
                bits = _load_group(g, cols, col_ptr, dense, member, tags, table,
                                   task % per == 0, dup)
            for i in range(t_r0[task], t_r1[task]):
                r = rows[i]
                f, over = _scan_row(ptr[r], ptr[r + 1], idx, dense, member, tags, table, bits,
                                    tmp_idx, tmp_src, ub[i], ub[i + 1])
                if over:
                    repeats[0] = 1
                cnt[i + 1] = f - ub[i]
                _order_row(tmp_idx, tmp_src, ub[i], f, col_ptr[g + 1] - col_ptr[g], slot,
                           marks)
    for i in range(nr):
        cnt[i + 1] += cnt[i]
    out_idx = np.empty(cnt[nr], np.int64)
    src = np.empty(cnt[nr], np.int64)
    for g in prange(G):
        base = col_ptr[g]
        for i in range(row_ptr[g], row_ptr[g + 1]):
            for t in range(cnt[i + 1] - cnt[i]):
                out_idx[cnt[i] + t] = base + np.int64(tmp_idx[ub[i] + t])
                src[cnt[i] + t] = tmp_src[ub[i] + t]
    return cnt, out_idx, src, _first_dup(dup), repeats[0]


def extract_groups(ptr, idx, rows, row_ptr, cols, col_ptr, ncols, check=True,
                   with_host_ptr=False):
    """Block-diagonal extraction: block g is ``A[rows_g, cols_g]``.

    Parameters
    ----------
    ptr, idx : array
        CSR structure of the input.
    rows, row_ptr : int64 arrays
        Rows of each group (CSR-like; rows may repeat).
    cols, col_ptr : int64 arrays
        Columns of each group (CSR-like; distinct within a group).
    ncols : int
        Number of input columns: a worker whose largest group's work (its
        rows' entries) is at least ``ncols / DENSE_FACTOR`` looks columns up
        in a tag array over the columns, the others in hash tables.
    check : bool, optional
        Accepted for the CUDA twin's signature: this kernel finds a repeated
        column as it goes and always reports it.
    with_host_ptr : bool, optional
        Also return the output's row pointer on the host (here: itself; the
        CUDA twin's copy costs no read beyond the one that sizes the output).

    Returns
    -------
    indptr, indices, src : int64 arrays
        The output: block g's entry has column ``col_ptr[g] + position in
        cols_g``; ``src`` indexes A's entries.
    first_dup : int
        Position in ``cols`` of the first column repeated within a group, or
        -1 (repeats are not allowed).
    host_indptr : int64 numpy array
        Only with ``with_host_ptr``: ``indptr`` on the host.

    Raises
    ------
    KernelLimitError
        A group of ``GROUP_LIMIT`` columns or more.
    """
    if int(col_ptr[-1]) - int(col_ptr[0]) >= GROUP_LIMIT:
        _check_group_sizes("extract_groups", "col_ptr", col_ptr, None)
    args = (ptr, idx, rows, row_ptr, cols, col_ptr, np.int64(ncols))
    cnt, out_idx, src, first_dup, repeats = _extract(*args, _extract.parts(*args, 0))
    if repeats:
        raise KernelLimitError("extract_groups", "idx", "rows without repeated columns",
                               "a selected row holding a column twice")
    if with_host_ptr:
        return cnt, out_idx, src, first_dup, cnt
    return cnt, out_idx, src, first_dup


def _check_group_sizes(func, arg, first_ptr, entries):
    """Refuse a group that may hold ``GROUP_LIMIT`` columns or more."""
    most = np.diff(first_ptr)
    if entries is not None:
        most = most + entries
    if most.size and int(most.max()) >= GROUP_LIMIT:
        limit = GROUP_LIMIT
        shown = f"2**{limit.bit_length() - 1}" if limit & (limit - 1) == 0 else str(limit)
        raise KernelLimitError(func, arg, f"groups of fewer than {shown} distinct columns",
                               f"one with up to {int(most.max())}")
