"""Masked products, CPU: ``C<M> = A ⊕.⊗ B`` and masked ``mxv`` / ``vxm``.

``masked_spgemm`` (push) and ``masked_dot`` compute only the entries of
the mask's pattern.  ``masked_spgemm``: each
output row owns the mask row's slots (``m_ptr``/``m_idx``), and each product
``A[i, k] B[k, j]`` is looked up among them, by binary search when B's row
is short next to the mask row, by a merge of the two sorted rows otherwise.
Memory is the mask's entries: the unmasked product (for triangle counting,
all wedges of the graph) is never formed.  ``masked_dot`` computes each
allowed slot (i, j) as the merge of A's row i with Bᵀ's row j (the caller
passes Bᵀ in CSR): cheaper when B's rows are long next to the mask's rows,
as in triangle counting's L·Lᵀ.  ``m_ok`` says which mask slots
let a result through (a value mask's zeros do not); the caller compacts the
slots that got a value (``hit``).

``mxv_pull`` computes ``w<allow> = A u`` one output row at a time from a
dense copy of u (``u_val``/``u_has``, an empty ``u_has`` for a u with every
entry): rows in parallel, each folded by one thread in its own order, so
the values do not depend on the thread count.  Given Aᵀ it is also the pull
step of ``vxm`` (``flip``), which a BFS takes once the frontier's edges are
many: an output row checks its mask flag first and an ``any`` monoid stops
at the first hit.  ``vxm_push`` computes ``w<allow> = u A`` from u's
entries, scattering into a dense output: the step for a small frontier,
whose work is the frontier's edges.  ``allow`` is a dense boolean per output
position (an empty array lets everything through); a complemented mask is
its negation, so a BFS never visits the rows it has already reached.

Values arrive cast to the output dtype; ``one`` (a length-1 array) is the
implicit value of structural operands.
"""

import numba
import numpy as np
from numba import prange

from kernels.parallel import parallel_kernel
from kernels.semiring_ops import (ADD_ANY, ADD_PLUS, MUL_PAIR, add_op, dot_row, dot_slot,
                                  find_sorted, masked_row, mul_op, pull_row)


#: Blocks of rows of ``mxv_pull`` and ``masked_spgemm``, of about equal
#: entry counts: a graph in BFS order holds most entries in its first rows,
#: where halves of the rows (a static split of a row loop over two threads)
#: would leave one thread most of the work.
ROW_BLOCKS = 64


@numba.njit(cache=True, inline="always")
def _entry_block_start(a_ptr, b, nblk):
    """First row of block b of ``nblk`` blocks cut at equal shares of the entries."""
    n = a_ptr.size - 1
    if b == 0:
        return 0
    if b >= nblk:
        return n
    return np.searchsorted(a_ptr[:n], a_ptr[n] * b // nblk)


def _spgemm_work(a_ptr, a_idx, a_val, a_hv, b_ptr, *rest):
    return int(a_idx.size) * 8


@parallel_kernel(_spgemm_work,
                 inputs=("a_ptr", "a_idx", "a_val", "b_ptr", "b_idx", "b_val", "m_ptr", "m_idx",
                         "m_ok"))
def masked_spgemm(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, m_ptr, m_idx,
                  m_ok, add, mul, one):
    """(out_val, hit): one slot per mask entry; ``hit`` marks the computed ones."""
    n = a_ptr.size - 1
    out_val = np.empty(m_idx.size, one.dtype)
    hit = np.zeros(m_idx.size, np.bool_)
    onev = one[0]
    nblk = min(n, ROW_BLOCKS)
    for b in prange(nblk):  # blocks of about equal shares of A's entries
        for i in range(_entry_block_start(a_ptr, b, nblk), _entry_block_start(a_ptr, b + 1, nblk)):
            masked_row(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, m_ptr, m_idx,
                       m_ok, add, mul, onev, out_val, hit)
    return out_val, hit


def _dot_work(a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_ptr, m_idx, *rest):
    return int(m_idx.size) * 8


#: Blocks of rows of ``masked_dot``: each owns one position table, so the
#: tables made (and zeroed) are this many at most, whatever the rows.
DOT_BLOCKS = 64
#: Rows of A at least this long use the position table: a short row's merge
#: walks few entries, in order, where table reads land anywhere in the
#: table (a cache miss each on a large graph).
TABLE_ROW = 16
#: ... unless the k range is at most this: the table (int32) then stays in a
#: core's cache, a read costs less than a merge's compare whose outcome
#: the branch predictor cannot guess, and every row with two or more slots
#: uses it (a small graph such as PubMed).
SMALL_K = 1 << 16


# Once per row, so not inlined: inlining it into both twins of the kernel
# cost far more compile time than the call costs (docs/design.rst).
@numba.njit(cache=True, nogil=True)
def _table_row(i, a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_ptr, m_idx,
               m_ok, add, mul, onev, out_val, hit, where):
    """Mask slots of row i with A's row i scattered into ``where`` (k -> position).

    A slot then reads Bᵀ's row j once, one table read per entry, where a
    merge also walks A's row for every slot: a row with many slots (a hub's)
    pays for its own length once, not once per slot.  Bᵀ rows over 8 times
    longer than A's are still searched (``dot_slot``).  Terms meet in
    increasing k either way, so values equal the merge's.
    """
    lo = a_ptr[i]
    hi = a_ptr[i + 1]
    for p in range(lo, hi):
        where[a_idx[p]] = p - lo
    for s in range(m_ptr[i], m_ptr[i + 1]):
        if not m_ok[s]:
            continue
        j = m_idx[s]
        if 8 * (hi - lo) < bt_ptr[j + 1] - bt_ptr[j]:
            dot_slot(s, i, a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_idx,
                     add, mul, onev, out_val, hit)
            continue
        acc = onev
        found = False
        for q in range(bt_ptr[j], bt_ptr[j + 1]):
            off = where[bt_idx[q]]
            if off < 0:
                continue
            p = lo + off
            t = mul_op(mul, a_val[p] if a_hv else onev, bt_val[q] if bt_hv else onev, onev)
            acc = add_op(add, acc, t) if found else t
            found = True
            if add == ADD_ANY:
                break
        if found:
            out_val[s] = acc
            hit[s] = True
    for p in range(lo, hi):
        where[a_idx[p]] = -1


@numba.njit(cache=True, inline="always")
def _use_table(i, a_ptr, m_ptr, min_row):
    return m_ptr[i + 1] - m_ptr[i] >= 2 and a_ptr[i + 1] - a_ptr[i] >= min_row


#: A ``plus`` fold of this many ones or more is redone one term at a time
#: (``_pair_value``): below it every value type holds the count exactly.
EXACT_COUNT = 1 << 24


@numba.njit(cache=True, inline="always")
def _pair_value(c, add, onev):
    """The fold of c > 0 terms equal to ``onev``: the count for ``plus``,
    ``onev`` for every other monoid (c = 0: a value no one reads).  A float32 sum of ones stops growing at
    2**24, so large counts repeat the fold the general path does (its cost
    is of the order of the c table reads that found them)."""
    if add != ADD_PLUS:
        return onev
    if c < EXACT_COUNT:
        return c
    acc = onev
    for _ in range(c - 1):
        acc = add_op(ADD_PLUS, acc, onev)
    return acc


@numba.njit(cache=True, inline="always")
def _count_common(x_idx, p, pe, y_idx, q, qe):
    """Ids common to the sorted runs ``x_idx[p:pe]`` and ``y_idx[q:qe]``:
    each of x's ids searched in y's run (x's run the shorter by far), or a
    merge when the runs are alike in length."""
    c = 0
    if 8 * (pe - p) < qe - q:
        while p < pe and q < qe:
            q = find_sorted(y_idx, q, qe, x_idx[p])
            if q < qe and y_idx[q] == x_idx[p]:
                c += 1
                q += 1
            p += 1
        return c
    while p < pe and q < qe:
        kx = x_idx[p]
        ky = y_idx[q]
        c += kx == ky
        p += kx <= ky
        q += ky <= kx
    return c


# A block at a time, so not inlined: compiled once, called by both twins
# of ``masked_dot`` once per block (docs/design.rst, "Working on the kernels").
@numba.njit(cache=True, nogil=True)
def _pair_rows(r0, r1, a_ptr, a_idx, bt_ptr, bt_idx, m_ptr, m_idx, m_ok, add, min_row, nk,
               onev, out_val, hit):
    """Rows r0 .. r1 - 1 of ``masked_dot`` for a ``pair`` multiply.

    Every term is ``onev``, so a slot's value depends only on how many
    terms it has (``_pair_value``): no values are read, and a row in the
    position table counts a Bᵀ row's entries found there without a branch
    per entry.  The table serves the rows that ``_use_table`` picks, and
    every row when the k range ``nk`` is at most ``SMALL_K`` (a search
    instead when A's row is 8 times shorter than Bᵀ's); other rows merge
    or search (``_count_common``).  The table is made when the block first
    needs it.
    """
    where = np.empty(0, np.int32)
    for i in range(r0, r1):
        lo = a_ptr[i]
        hi = a_ptr[i + 1]
        if lo == hi:
            continue
        # A small k range's table stays in cache: even a one-slot row
        # reads it faster than it merges.
        table = min_row == 1 or _use_table(i, a_ptr, m_ptr, min_row)
        if table:
            if where.size == 0:
                where = np.full(nk, -1, np.int32)
            for p in range(lo, hi):
                where[a_idx[p]] = p - lo
        for s in range(m_ptr[i], m_ptr[i + 1]):
            if not m_ok[s]:
                continue
            j = m_idx[s]
            q0 = bt_ptr[j]
            q1 = bt_ptr[j + 1]
            if table and 8 * (hi - lo) >= q1 - q0:
                c = 0
                for q in range(q0, q1):
                    c += where[bt_idx[q]] >= 0
            elif 8 * (q1 - q0) < hi - lo:
                c = _count_common(bt_idx, q0, q1, a_idx, lo, hi)
            else:
                c = _count_common(a_idx, lo, hi, bt_idx, q0, q1)
            # Stored whatever c, with no branch on it: a hit is a coin toss
            # to the branch predictor.
            out_val[s] = _pair_value(c, add, onev)
            hit[s] = c > 0
        if table:
            for p in range(lo, hi):
                where[a_idx[p]] = -1


@numba.njit(cache=True, inline="always")
def _dot_blocks(a_ptr, bt_ptr, m_ptr, m_idx, nblk, min_row):
    """Row bounds of ``nblk`` blocks of about equal estimated work.

    Equal row counts would not do: the rows of a lower triangle grow with
    the row id, and a graph numbered in BFS order puts its dense rows
    first, so one thread's half of the rows can hold nearly all the work.
    A row costs its Bᵀ rows' lengths plus A's row once (table) or once per
    slot (merge); rows of ``min_row`` entries or more with two slots or
    more use a table (``_use_table``).
    """
    n = a_ptr.size - 1
    cum = np.zeros(n + 1, np.int64)
    for i in prange(n):
        lo = m_ptr[i]
        hi = m_ptr[i + 1]
        t = (hi - lo) + (a_ptr[i + 1] - a_ptr[i]) * (
            1 if _use_table(i, a_ptr, m_ptr, min_row) else hi - lo)
        for s in range(lo, hi):
            j = m_idx[s]
            t += bt_ptr[j + 1] - bt_ptr[j]
        cum[i + 1] = t
    for i in range(n):
        cum[i + 1] += cum[i]
    bounds = np.empty(nblk + 1, np.int64)
    for b in range(nblk + 1):
        bounds[b] = np.searchsorted(cum, cum[n] * b // max(nblk, 1))
    bounds[0] = 0
    bounds[nblk] = n
    return bounds


@parallel_kernel(_dot_work,
                 inputs=("a_ptr", "a_idx", "a_val", "bt_ptr", "bt_idx", "bt_val", "m_ptr",
                         "m_idx", "m_ok"))
def masked_dot(a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_ptr, m_idx, m_ok,
               add, mul, one):
    """(out_val, hit) as ``masked_spgemm``, from Bᵀ's rows (``bt_*``), by dot products.

    Rows with two or more mask slots and ``TABLE_ROW`` entries or more (any
    entries at all when the k range is at most ``SMALL_K``) go through a
    position table of A's row (``_table_row``); others merge or search
    (``dot_row``).  A ``pair`` multiply only counts terms (``_pair_rows``).
    The rows are cut into ``DOT_BLOCKS`` blocks of about equal work
    (``_dot_blocks``); a block makes one table, of the size of the k
    range, when it first needs one.
    """
    n = a_ptr.size - 1
    out_val = np.empty(m_idx.size, one.dtype)
    hit = np.zeros(m_idx.size, np.bool_)
    onev = one[0]
    nk = 0  # the k range: A's column ids and Bᵀ's column ids
    if a_idx.size:
        nk = max(nk, a_idx.max() + 1)
    if bt_idx.size:
        nk = max(nk, bt_idx.max() + 1)
    min_row = 1 if nk <= SMALL_K else TABLE_ROW
    nblk = min(n, DOT_BLOCKS)
    bounds = _dot_blocks(a_ptr, bt_ptr, m_ptr, m_idx, nblk, min_row)
    for b in prange(nblk):
        if mul == MUL_PAIR:
            _pair_rows(bounds[b], bounds[b + 1], a_ptr, a_idx, bt_ptr, bt_idx, m_ptr, m_idx,
                       m_ok, add, min_row, nk, onev, out_val, hit)
            continue
        # Offsets in A's row (int32: half an int64 table's cache), made when
        # the block first meets a long row: short-row blocks never pay for it.
        where = np.empty(0, np.int32)
        for i in range(bounds[b], bounds[b + 1]):
            if _use_table(i, a_ptr, m_ptr, min_row):
                if where.size == 0:
                    where = np.full(nk, -1, np.int32)
                _table_row(i, a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_ptr,
                           m_idx, m_ok, add, mul, onev, out_val, hit, where)
            else:
                dot_row(i, a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_ptr,
                        m_idx, m_ok, add, mul, onev, out_val, hit)
    return out_val, hit


@numba.njit(cache=True, nogil=True)
def hit_positions(m_ptr, hit):
    """(ptr, pos): the row pointer of the slots marked in ``hit`` (rows cut
    by ``m_ptr``) and their positions, ascending: what a masked product's
    result gathers its column ids and values with.  One pass, a store per
    slot and the count advanced by its flag: whether a slot was hit is a
    coin toss to the branch predictor.
    """
    n = m_ptr.size - 1
    ptr = np.empty(n + 1, np.int64)
    pos = np.empty(hit.size, np.int64)
    f = 0
    ptr[0] = 0
    for i in range(n):
        for s in range(m_ptr[i], m_ptr[i + 1]):
            pos[f] = s
            f += hit[s]
        ptr[i + 1] = f
    return ptr, pos[:f]


@parallel_kernel(lambda a_ptr, a_idx, *rest: int(a_idx.size),
                 inputs=("a_ptr", "a_idx", "a_val", "u_val", "u_has", "allow"))
def mxv_pull(a_ptr, a_idx, a_val, a_hv, u_val, u_has, allow, add, mul, one, flip):
    """(w, w_has) dense: ``w[i] = ⊕_k A[i, k] ⊗ u[k]`` for the allowed rows.

    ``flip`` computes ``u[k] ⊗ A[i, k]`` instead (``vxm`` on A's transpose).
    """
    n = a_ptr.size - 1
    w = np.empty(n, one.dtype)
    w_has = np.zeros(n, np.bool_)
    onev = one[0]
    everything = allow.size == 0
    nblk = min(n, ROW_BLOCKS)
    for b in prange(nblk):
        for i in range(_entry_block_start(a_ptr, b, nblk), _entry_block_start(a_ptr, b + 1, nblk)):
            if everything or allow[i]:
                pull_row(i, a_ptr, a_idx, a_val, a_hv, u_val, u_has, add, mul, onev, flip,
                         w, w_has)
    return w, w_has


@numba.njit(cache=True, nogil=True)
def vxm_push(u_idx, u_val, u_hv, a_ptr, a_idx, a_val, a_hv, allow, m_keys, m_mode, n, add,
             mul, one):
    """(w_idx, w_val): ``w[j] = ⊕_k u[k] ⊗ A[k, j]`` for allowed j, compacted
    (sorted int64 positions and their values): the caller gets the result's
    entries, not arrays of size n to search for them.

    ``m_mode`` 0: j is allowed where ``allow[j]`` (an empty ``allow``: every
    j); 1: where j is among the sorted ``m_keys``; 2: where it is not (a
    complemented mask).  Modes 1 and 2 search per edge: for frontiers with
    far fewer edges than the mask has keys, whose flags would cost more.
    """
    w = np.empty(n, one.dtype)
    w_has = np.zeros(n, np.bool_)
    onev = one[0]
    if add == ADD_ANY and m_mode == 0:
        count = _push_first(u_idx, u_val, u_hv, a_ptr, a_idx, a_val, a_hv, allow, mul, onev,
                            w, w_has)
    else:
        count = _push_fold(u_idx, u_val, u_hv, a_ptr, a_idx, a_val, a_hv, allow, m_keys,
                           m_mode, add, mul, onev, w, w_has)
    return _compact(w, w_has, count)


@numba.njit(cache=True, inline="always")
def _push_first(u_idx, u_val, u_hv, a_ptr, a_idx, a_val, a_hv, allow, mul, onev, w, w_has):
    """The push of an ``any`` monoid under flags: the first term of an output
    wins.  The writes are selects, not branches: on a BFS's large levels
    whether a target is allowed and not yet reached is a coin toss to the
    branch predictor.  Returns the outputs reached."""
    free = np.ones(w.size, np.bool_) if allow.size == 0 else allow.copy()
    count = 0
    for p in range(u_idx.size):
        k = u_idx[p]
        uv = u_val[p] if u_hv else onev
        for q in range(a_ptr[k], a_ptr[k + 1]):
            j = a_idx[q]
            t = mul_op(mul, uv, a_val[q] if a_hv else onev, onev)
            ok = free[j]
            w[j] = t if ok else w[j]
            free[j] = False
            w_has[j] = w_has[j] | ok
            count += ok
    return count


@numba.njit(cache=True, inline="always")
def _push_fold(u_idx, u_val, u_hv, a_ptr, a_idx, a_val, a_hv, allow, m_keys, m_mode, add, mul,
               onev, w, w_has):
    """The push of any monoid, terms folded in u's order; returns the outputs reached."""
    everything = allow.size == 0
    nk = m_keys.size
    count = 0
    for p in range(u_idx.size):
        k = u_idx[p]
        uv = u_val[p] if u_hv else onev
        for q in range(a_ptr[k], a_ptr[k + 1]):
            j = a_idx[q]
            if m_mode != 0:
                s = find_sorted(m_keys, 0, nk, j)
                if (s < nk and m_keys[s] == j) != (m_mode == 1):
                    continue
            elif not everything and not allow[j]:
                continue
            if w_has[j]:
                if add != ADD_ANY:
                    w[j] = add_op(add, w[j], mul_op(mul, uv, a_val[q] if a_hv else onev, onev))
            else:
                w[j] = mul_op(mul, uv, a_val[q] if a_hv else onev, onev)
                w_has[j] = True
                count += 1
    return count


@numba.njit(cache=True, inline="always")
def _compact(w, w_has, count):
    """(positions, values) of the ``count`` set flags of ``w_has``, in order.
    Many outputs: a store per position, the index advanced by the flag (no
    branch to mispredict); few: a branch per position, stopping at the last."""
    n = w.size
    w_idx = np.empty(count + 1, np.int64)
    w_val = np.empty(count + 1, w.dtype)
    f = 0
    if 8 * count < n:
        for j in range(n):
            if f == count:
                break
            if w_has[j]:
                w_idx[f] = j
                w_val[f] = w[j]
                f += 1
    else:
        for j in range(n):
            w_idx[f] = j
            w_val[f] = w[j]
            f += w_has[j]
    return w_idx[:count], w_val[:count]
