"""Per-group column relabelling and extraction, CPU (the bulk samplers' hot path).

Rows of a matrix are split into consecutive *groups* (one group = one
minibatch of a bulk).  Both kernels give each group its own column space and
lay the groups out block-diagonally:

* ``compact_groups``: the columns a group uses, its ``first`` columns (its
  destination vertices) leading in the order given, then the others in order
  of first appearance (row by row, ascending column within a row).  Entries
  get the column ``kept_ptr[g] + local id``.
* ``extract_groups``: block ``g`` is ``A[rows_g, cols_g]``.

Groups are processed in parallel; each worker owns a tag array over the
input columns holding, in one 64-bit word, the last group that saw the
column (high 32 bits) and the column's local id in that group (low 32
bits), so marking is one random read per entry with no hashing and no
clearing between groups.  Output rows are sorted by column
(canonical CSR); ``perm`` tells where each output entry came from so values
can be gathered by the caller.
"""

import numba
import numpy as np
from numba import prange


#: Group stamps live in the high 32 bits of a tag: at most this many groups
#: between two refills of the tag arrays.
_STAMP_LIMIT = 2 ** 31 - 1
#: Local ids live in the low 32 bits: a group may hold fewer columns.
GROUP_LIMIT = 2 ** 32


class _Scratch:
    """Per-thread tag arrays over the input columns, kept between calls.

    Each call uses fresh group stamps (a running base), so the arrays are
    filled once, not on every call (at 2**20 columns a fresh fill costs more
    than relabelling a small bulk).
    """

    def __init__(self):
        self.tags = None
        self.base = 0

    def take(self, parts, ncols, n_groups):
        if self.tags is None or self.tags.shape != (parts, ncols) or \
                self.base + n_groups >= _STAMP_LIMIT:
            self.tags = np.full((parts, ncols), -1, np.int64)
            self.base = 0
        base = self.base
        self.base += n_groups
        return self.tags, base


_scratch = _Scratch()


def _parts():
    return numba.get_num_threads()


@numba.njit(cache=True, inline="always")
def _sort_row(cols, perm, lo, hi):
    """Sort cols[lo:hi] ascending, permuting perm alongside."""
    if hi - lo <= 32:
        for i in range(lo + 1, hi):
            c = cols[i]
            p = perm[i]
            j = i - 1
            while j >= lo and cols[j] > c:
                cols[j + 1] = cols[j]
                perm[j + 1] = perm[j]
                j -= 1
            cols[j + 1] = c
            perm[j + 1] = p
    else:
        order = np.argsort(cols[lo:hi])
        cols[lo:hi] = cols[lo:hi][order]
        perm[lo:hi] = perm[lo:hi][order]


@numba.njit(cache=True)
def _group_bounds(n_groups, parts):
    parts = max(1, min(n_groups, parts))
    b = np.empty(parts + 1, np.int64)
    for c in range(parts + 1):
        b[c] = (n_groups * c) // parts
    return b


@numba.njit(cache=True, inline="always")
def _tag(stamp, lid):
    return (stamp << 32) | lid


@numba.njit(cache=True, inline="always")
def _lid(tag):
    return tag & 0xFFFFFFFF


@numba.njit(parallel=True, cache=True)
def _compact(ptr, idx, row_ptr, first, first_ptr, ncols, tags_all, base):
    G = row_ptr.size - 1
    nnz_base = ptr[row_ptr[0]]
    f_base = first_ptr[0]
    tmp = np.empty((first_ptr[G] - f_base) + (ptr[row_ptr[G]] - nnz_base), np.int64)
    local = np.empty(ptr[row_ptr[G]] - nnz_base, np.int64)
    cnt = np.zeros(G + 1, np.int64)
    dup = np.full(G, -1, np.int64)
    bounds = _group_bounds(G, tags_all.shape[0])
    for c in prange(bounds.size - 1):
        tags = tags_all[c]
        for g in range(bounds[c], bounds[c + 1]):
            sg = np.int64(base + g)
            off = (first_ptr[g] - f_base) + (ptr[row_ptr[g]] - nnz_base)
            n = np.int64(0)
            for t in range(first_ptr[g], first_ptr[g + 1]):
                v = first[t]
                if (tags[v] >> 32) == sg:
                    if dup[g] < 0:
                        dup[g] = t
                    continue
                tags[v] = _tag(sg, n)
                tmp[off + n] = v
                n += 1
            for e in range(ptr[row_ptr[g]], ptr[row_ptr[g + 1]]):
                v = idx[e]
                tg = tags[v]
                if (tg >> 32) != sg:
                    tg = _tag(sg, n)
                    tags[v] = tg
                    tmp[off + n] = v
                    n += 1
                local[e - nnz_base] = _lid(tg)
            cnt[g + 1] = n
    for g in range(G):
        cnt[g + 1] += cnt[g]
    kept = np.empty(cnt[G], np.int64)
    for g in prange(G):
        base = (first_ptr[g] - f_base) + (ptr[row_ptr[g]] - nnz_base)
        for t in range(cnt[g + 1] - cnt[g]):
            kept[cnt[g] + t] = tmp[base + t]
    # Block-diagonal columns, rows sorted.
    out_idx = np.empty(local.size, np.int64)
    perm = np.empty(local.size, np.int64)
    for g in prange(G):
        for r in range(row_ptr[g], row_ptr[g + 1]):
            lo = ptr[r] - nnz_base
            hi = ptr[r + 1] - nnz_base
            for t in range(lo, hi):
                out_idx[t] = cnt[g] + local[t]
                perm[t] = t + nnz_base
            _sort_row(out_idx, perm, lo, hi)
    first_dup = -1
    for g in range(G):
        if dup[g] >= 0:
            first_dup = dup[g]
            break
    return out_idx, perm, kept, cnt, first_dup


def compact_groups(ptr, idx, row_ptr, first, first_ptr, ncols):
    """Relabel the columns of each row group; see the module docstring.

    Parameters
    ----------
    ptr, idx : CSR structure of the input (all rows).
    row_ptr : int64, groups of rows: group g is rows ``row_ptr[g]:row_ptr[g+1]``.
    first, first_ptr : int64, the leading columns of each group (CSR-like).
    ncols : number of input columns.

    Returns
    -------
    out_idx : int64, block-diagonal column of every entry of rows
        ``row_ptr[0]:row_ptr[-1]`` (rows sorted).
    perm : int64, input entry position of every output entry.
    kept, kept_ptr : int64, original column ids of each group's columns.
    first_dup : position in ``first`` of the first repeated leading column
        within a group, or -1.
    """
    _check_group_sizes("compact_groups", first_ptr, np.diff(ptr[row_ptr]))
    tags, base = _scratch.take(_parts(), ncols, row_ptr.size - 1)
    return _compact(ptr, idx, row_ptr, first, first_ptr, ncols, tags, base)


@numba.njit(parallel=True, cache=True)
def _extract(ptr, idx, rows, row_ptr, cols, col_ptr, ncols, tags_all, base):
    G = row_ptr.size - 1
    nr = rows.size
    # Upper bound per output row: the input row's length.
    ub = np.zeros(nr + 1, np.int64)
    for i in prange(nr):
        ub[i + 1] = ptr[rows[i] + 1] - ptr[rows[i]]
    for i in range(nr):
        ub[i + 1] += ub[i]
    tmp_idx = np.empty(ub[nr], np.int64)
    tmp_src = np.empty(ub[nr], np.int64)
    cnt = np.zeros(nr + 1, np.int64)
    dup = np.full(G, -1, np.int64)
    bounds = _group_bounds(G, tags_all.shape[0])
    for c in prange(bounds.size - 1):
        tags = tags_all[c]
        for g in range(bounds[c], bounds[c + 1]):
            sg = np.int64(base + g)
            for t in range(col_ptr[g], col_ptr[g + 1]):
                v = cols[t]
                if (tags[v] >> 32) == sg and dup[g] < 0:
                    dup[g] = t
                tags[v] = _tag(sg, t - col_ptr[g])
            for i in range(row_ptr[g], row_ptr[g + 1]):
                r = rows[i]
                f = ub[i]
                for e in range(ptr[r], ptr[r + 1]):
                    tg = tags[idx[e]]
                    if (tg >> 32) == sg:
                        tmp_idx[f] = col_ptr[g] + _lid(tg)
                        tmp_src[f] = e
                        f += 1
                cnt[i + 1] = f - ub[i]
                _sort_row(tmp_idx, tmp_src, ub[i], f)
    for i in range(nr):
        cnt[i + 1] += cnt[i]
    out_idx = np.empty(cnt[nr], np.int64)
    src = np.empty(cnt[nr], np.int64)
    for i in prange(nr):
        for t in range(cnt[i + 1] - cnt[i]):
            out_idx[cnt[i] + t] = tmp_idx[ub[i] + t]
            src[cnt[i] + t] = tmp_src[ub[i] + t]
    first_dup = -1
    for g in range(G):
        if dup[g] >= 0:
            first_dup = dup[g]
            break
    return cnt, out_idx, src, first_dup


def extract_groups(ptr, idx, rows, row_ptr, cols, col_ptr, ncols):
    """Block-diagonal extraction: block g is ``A[rows_g, cols_g]``.

    Returns ``(indptr, indices, src, first_dup)``: output column of block g's
    entry is ``col_ptr[g] + position in cols_g``; ``src`` indexes A's entries;
    ``first_dup`` is the position in ``cols`` of the first column repeated
    within a group, or -1 (repeats are not allowed).
    """
    _check_group_sizes("extract_groups", col_ptr, None)
    tags, base = _scratch.take(_parts(), ncols, row_ptr.size - 1)
    return _extract(ptr, idx, rows, row_ptr, cols, col_ptr, ncols, tags, base)


def _check_group_sizes(func, first_ptr, entries):
    """Local ids are 32-bit: refuse (never wrap) a group with 2**32 columns or more."""
    most = np.diff(first_ptr)
    if entries is not None:
        most = most + entries
    if most.size and int(most.max()) >= GROUP_LIMIT:
        from spla.exceptions import InvalidValue
        raise InvalidValue(f"{func}: a group may hold fewer than 2**32 distinct columns; "
                            f"got one with up to {int(most.max())}")
