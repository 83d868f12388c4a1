"""Fused node-wise hops on the CPU: sample and relabel in one pass (uniform draws).

The CPU twin of ``kernels.cuda.hops`` for the common node-wise hop: every
frontier vertex draws ``k`` distinct neighbours uniformly (or takes all of
them), and each group (minibatch) gets its own column space, its frontier
first, then the new vertices in order of first appearance (row by row,
ascending column within a row).  The composition
(``sample_gather``, ``take``, ``compact_groups``) writes the picks'
positions, gathers their columns, then relabels them in a second pass over
the group; here a worker draws a row's picks into a few words of scratch,
looks each column up in its group's map at once and writes the local ids,
so the picks are touched once, while they are in cache, and no array of
positions or columns is made.  Rows draw with the same keys and the same
``sample_one_row_cpu`` as ``sample_gather``, so the blocks equal the
composition's, entry for entry.

Most rows of a node-wise hop are short, and what a short row costs is
mostly branches mispredicted on its length and on coin tosses: the draws
of a row of at most ``WORD_ROW`` entries keep their picks as the bits of a
word (``_word_picks``), a chunk's picks are relabelled through the tag map
in one branch-free pass (``_chunk_by_tags``), and rows are sorted by
networks or by rank (``_sort_row``) (``docs/design.rst``, "The CPU hop on
locality-ordered graphs").

Groups are shared out among the workers (a group is relabelled in order by
one worker, as ``compact_groups`` does); scratch is per worker and sized by
its groups' work: a tag array over the columns when that work is within
``DENSE_FACTOR`` of the column count, else a hash table.
"""

import numba
import numpy as np
from numba import prange

from numba.cpython.unsafe.numbers import trailing_zeros

from kernels.common import (BAD_REPEAT, BadSeeds, Finished, probe, row_key, sort_range,
                            table_bits, uniform01)
from kernels.cpu.group_scratch import dense_map, group_bounds, start_group
from kernels.its import uniform_picks
from kernels.parallel import over_rows, parallel_kernel

#: Tags are 32 bits (half the lines an int64 tag array spans): a column's tag
#: is ``tag_base + local id + 1``; the array is refilled when the count of a
#: worker's columns would pass this.
TAG_LIMIT = 2 ** 32 - 1
#: Rows a worker takes through each pass at a time: their picks and
#: columns (16 bytes a pick) stay in cache between the passes.
CHUNK = 256


#: Graphs of more vertices keep the composition: there a worker's column
#: map (4 bytes a vertex) no longer fits in cache, and the composition's
#: passes over the whole bulk, each shared out by rows, hide more of the
#: misses than a worker drawing and relabelling its own groups
#: (``docs/design.rst``, "Fused uniform hops on the CPU").
FUSED_MAX_VERTICES = 1 << 19


#: These hops find a seed repeated within its group as they relabel (raising
#: ``kernels.common.BadSeeds``), but read past the graph for a seed outside
#: ``[0, n)``: the caller checks the range first (a minimum and a maximum).
CHECKS_SEED_REPEATS = True
CHECKS_SEED_RANGE = False


def fusable(ks, replace=False, weighted=False, n=0):
    """Whether hops drawing ``ks`` picks per row of an ``n``-vertex graph run
    fused on the CPU.

    Uniform draws without replacement, each k at least 1 or -1 (every
    entry), on graphs of at most ``FUSED_MAX_VERTICES`` vertices.  Weighted
    draws keep the composition, whose batched searches overlap their cache
    misses (``kernels.cpu.sample``); draws with replacement keep it too
    (their picks fold into counts).

    Examples
    --------
    >>> fusable([15, 10, 5]), fusable([-1, 2]), fusable([5], replace=True)
    (True, True, False)
    >>> fusable([15, 10, 5], n=2 ** 20)
    False
    """
    return (not replace and not weighted and n <= FUSED_MAX_VERTICES
            and all(k >= 1 or k == -1 for k in ks))


#: Rows of at most this many entries keep their draws' positions as the bits
#: of one word (``_word_picks``).
WORD_ROW = 64


@numba.njit(cache=True, inline="always")
def _word_picks(out, o, cnt, lo, hi, key):
    """``uniform_picks`` of a row of at most ``WORD_ROW`` entries: the same
    draws (Floyd's, ``kernels.its``), the picks ascending into ``out[o:o+cnt]``.

    The picks made so far are the set bits of one word: a draw's "taken?"
    is a bit test instead of a scan of the picks, and the set bits read out
    in ascending order, so the picks need no sort.  Most rows a node-wise
    hop draws from are short, and the scan, the sort and their branches
    were most of a short row's draw."""
    d = hi - lo
    taken = np.uint64(0)
    j = 0
    for t in range(d - cnt, d):
        r = min(np.int64(uniform01(key, j) * (t + 1)), t)
        j += 1
        bit = np.uint64(1) << np.uint64(r)
        if taken & bit:
            bit = np.uint64(1) << np.uint64(t)
        taken |= bit
    f = o
    while taken:
        out[f] = lo + np.int64(trailing_zeros(taken))
        taken &= taken - np.uint64(1)
        f += 1


@numba.njit(cache=True, nogil=True)
def _chunk_columns(c0, c1, a_ptr, a_idx, nodes, optr, gptr, gids, seed, stream, lo_s, pos,
                   cols):
    """The picks of rows ``c0:c1`` as columns, ascending per row, into ``cols``
    (from ``optr[c0]``).  Row ``i`` of group ``g`` draws with the id
    ``gids[g] * n + nodes[i]``.

    In passes, each with nothing between its loads: the rows' extents,
    the draws, then the picks' columns, so a pass's cache misses (rows and
    picks scattered over a large graph) are in flight together instead of
    one after another.  ``lo_s``: the rows' first entries."""
    e0 = optr[c0]
    n = a_ptr.size - 1
    for i in range(c0, c1):
        lo_s[i - c0] = a_ptr[nodes[i]]
    g = np.searchsorted(gptr, c0, side="right") - 1
    for i in range(c0, c1):
        while gptr[g + 1] <= i:
            g += 1
        o = optr[i] - e0
        c = optr[i + 1] - optr[i]
        lo = lo_s[i - c0]
        hi = a_ptr[nodes[i] + 1]
        if c >= hi - lo:
            for t in range(c):
                pos[o + t] = lo + t
        elif hi - lo <= WORD_ROW:
            _word_picks(pos, o, c, lo, hi, row_key(seed, stream, gids[g] * n + nodes[i]))
        elif c > 0:
            uniform_picks(pos, o, c, lo, hi, row_key(seed, stream, gids[g] * n + nodes[i]))
    for t in range(optr[c1] - e0):
        cols[t] = a_idx[pos[t]]


@numba.njit(cache=True, inline="always")
def _find(col, dense, tags, tag_base, table, bits):
    """``(seen, id)`` of ``col`` in the group's map; for an unseen column the
    hash table's free slot in place of the id (``_add`` puts it there)."""
    if dense:
        tg = np.int64(tags[col]) - np.int64(tag_base)
        return tg > 0, tg - 1
    s = probe(table, col, bits)
    if table[2 * s] == col:
        return True, table[2 * s + 1]
    return False, s


@numba.njit(cache=True, inline="always")
def _add(col, m, slot, dense, tags, tag_base, table):
    """Give ``col`` the id ``m`` (``slot``: its free slot in the hash table)."""
    if dense:
        tags[col] = np.uint32(tag_base + np.uint64(m) + np.uint64(1))
    else:
        table[2 * slot] = col
        table[2 * slot + 1] = m


@numba.njit(cache=True, inline="always")
def _row_split(out, o, c, cols, t0, new, m, tmp, off, dense, tags, tag_base, table, bits):
    """Row ``out[o:o+c]`` from its ascending columns ``cols[t0:t0+c]``; returns
    the group's column count.

    A row's new columns are numbered in column order after every column the
    group has seen, so its ids are its seen columns' ids, sorted, then the
    new ones, ascending: only the seen ids need sorting.  Seen ids go to the
    front, new columns aside (a row's columns are distinct), stored on both
    sides and counted by selects, not a branch on a coin toss."""
    ns = np.int64(0)
    nn = np.int64(0)
    for t in range(t0, t0 + c):
        seen, idv = _find(cols[t], dense, tags, tag_base, table, bits)
        out[o + ns] = idv
        new[nn] = cols[t]
        ns += np.int64(seen)
        nn += np.int64(not seen)
    sort_range(out, o, o + ns)
    for j in range(nn):
        # A column's free slot is found again: an earlier one of the row may
        # have taken the one found above.
        _, slot = _find(new[j], dense, tags, tag_base, table, bits)
        _add(new[j], m, slot, dense, tags, tag_base, table)
        tmp[off + m] = new[j]
        out[o + ns + j] = m
        m += 1
    return m


@numba.njit(cache=True, nogil=True)
def _chunk_by_tags(out, e0, e, cols, m, tmp, off, tags, tag_base):
    """The ids of a chunk's picks ``cols[:e]`` into ``out[e0:e0+e]``, in pick
    order (the caller sorts each row), by the group's tags; returns the
    group's column count.

    One pass over the chunk's picks, not a loop per row, and no branch on
    whether a column is new: a new column takes the next id, its tag and
    its place in ``tmp`` are stored either way (a seen column's tag is
    stored back unchanged, and ``tmp[off + m]`` is overwritten until a new
    column keeps it).  The rows are short: a loop per row and a branch per
    pick mispredicted about once a row each.  Rows' columns ascend, so new
    columns are numbered in order of first appearance, as ``_row_split``
    numbers them."""
    base = np.int64(tag_base)
    for t in range(e):
        col = cols[t]
        tg = np.int64(tags[col]) - base
        seen = tg > 0
        idv = tg - 1 if seen else m
        tags[col] = np.uint32(base + idv + 1)
        tmp[off + m] = col
        m += np.int64(not seen)
        out[e0 + t] = idv
    return m


#: Rows of at most this many picks are sorted by rank (``_sort_row``).
RANK_ROW = 16


@numba.njit(cache=True, inline="always")
def _cx(a, i, j):
    """Compare-exchange of ``a[i]`` and ``a[j]`` (by min and max, no branch)."""
    x = a[i]
    y = a[j]
    a[i] = min(x, y)
    a[j] = max(x, y)


@numba.njit(cache=True, inline="always")
def _sort_row(a, lo, hi, buf):
    """Sort a row's distinct ids ``a[lo:hi]``; ``buf``: ``RANK_ROW`` words of scratch.

    The rows of a node-wise hop are short and of every length up to k, and
    a sort whose loops run a number of times set by the row's length
    mispredicts their exits once or more a row, which cost more than the
    comparisons.  Rows of up to 5 ids take a fixed network each (no loop),
    rows of up to ``RANK_ROW`` are placed by rank (each id's count of
    smaller ones: loops of one length per row, no branch on the ids), longer
    rows ``sort_range``."""
    c = hi - lo
    if c == 2:
        _cx(a, lo, lo + 1)
    elif c == 3:
        _cx(a, lo, lo + 1)
        _cx(a, lo + 1, lo + 2)
        _cx(a, lo, lo + 1)
    elif c == 4:
        _cx(a, lo, lo + 1)
        _cx(a, lo + 2, lo + 3)
        _cx(a, lo, lo + 2)
        _cx(a, lo + 1, lo + 3)
        _cx(a, lo + 1, lo + 2)
    elif c == 5:
        for i, j in ((0, 1), (3, 4), (2, 4), (2, 3), (1, 4), (0, 3), (0, 2), (1, 3), (1, 2)):
            _cx(a, lo + i, lo + j)
    elif c <= RANK_ROW:
        for t in range(c):
            buf[t] = a[lo + t]
        for t in range(c):
            r = np.int64(0)
            for j in range(c):
                r += np.int64(buf[j] < buf[t])
            a[lo + r] = buf[t]
    else:
        sort_range(a, lo, hi)


# The per-chunk steps (``_chunk_columns``, ``_chunk_by_tags``, ``_sort_rows``)
# are functions of their own, called once a chunk: numba types an inlined
# body again at every call site (two here, in both twins of ``_hop``), and
# inlined, they would multiply the kernel's first compilation for a few
# percent of its run time.  Per-row and per-pick steps stay inlined.
@numba.njit(cache=True, nogil=True)
def _sort_rows(out, optr, c0, c1, buf):
    """``_sort_row`` of rows ``c0:c1``."""
    for i in range(c0, c1):
        _sort_row(out, optr[i], optr[i + 1], buf)


@numba.njit(cache=True, inline="always")
def _row_in_order(out, o, c, cols, t0, m, tmp, off, dense, tags, tag_base, table, bits):
    """Row ``out[o:o+c]`` from its ascending columns ``cols[t0:t0+c]``, ids left
    in column order (the caller sorts them); returns the group's column count."""
    for t in range(c):
        col = cols[t0 + t]
        seen, idv = _find(col, dense, tags, tag_base, table, bits)
        if not seen:
            _add(col, m, idv, dense, tags, tag_base, table)
            tmp[off + m] = col
            idv = m
            m += 1
        out[o + t] = idv
    return m


@numba.njit(cache=True, inline="always")
def _scratch(g0, g1, gptr, optr, n):
    """A worker's column map (``dense``, tags, hash table) for its largest
    group's work, and the widest row and widest chunk of its groups."""
    most = np.int64(0)
    widest = np.int64(1)
    span = np.int64(1)
    for g in range(g0, g1):
        most = max(most, (gptr[g + 1] - gptr[g]) + (optr[gptr[g + 1]] - optr[gptr[g]]))
        for i in range(gptr[g], gptr[g + 1]):
            widest = max(widest, optr[i + 1] - optr[i])
        for c0 in range(gptr[g], gptr[g + 1], CHUNK):
            span = max(span, optr[min(c0 + CHUNK, gptr[g + 1])] - optr[c0])
    dense = dense_map(most, n)
    tags = np.zeros(n if dense else 0, np.uint32)
    table = np.empty(0 if dense else np.int64(2) << table_bits(most), np.int64)
    return dense, tags, table, widest, span


@numba.njit(cache=True, inline="always")
def _worker(g0, g1, a_ptr, a_idx, nodes, gptr, gids, n, optr, seed, stream, tmp, cnt, out,
            drawn, rep):
    """Groups ``g0:g1`` (one worker's): every row's picks, relabelled, into
    ``out``; each group's columns in order into ``tmp`` (at the group's
    offset ``gptr[g] + optr[gptr[g]]``), their count into ``cnt[g + 1]``.

    Rows are drawn here, a chunk at a time, and leave sorted; or, when the
    caller drew them (``drawn``: every row's columns, ascending), their ids
    are left in column order for the caller to sort.  A frontier vertex
    met twice in its group (a repeated seed) sets ``rep[0]`` (the blocks
    are then not to be used).
    """
    dense, tags, table, widest, span = _scratch(g0, g1, gptr, optr, n)
    pre = drawn.size > 0
    lo_s = np.empty(CHUNK, np.int64)
    pos = np.empty(0 if pre else span, np.int64)
    cols = drawn if pre else np.empty(span, np.int64)
    new = np.empty(widest, np.int64)
    buf = np.empty(RANK_ROW, np.int64)
    tag_base = np.uint64(0)
    for g in range(g0, g1):
        w = (gptr[g + 1] - gptr[g]) + (optr[gptr[g + 1]] - optr[gptr[g]])
        bits, tag_base = start_group(dense, tags, table, w, tag_base, TAG_LIMIT)
        off = gptr[g] + optr[gptr[g]]
        # The frontier leads, in its order (its vertices are distinct, or
        # the seeds were not: flagged, for the caller's check).
        m = np.int64(0)
        for i in range(gptr[g], gptr[g + 1]):
            seen, slot = _find(nodes[i], dense, tags, tag_base, table, bits)
            if seen:
                rep[0] = 1
                continue
            _add(nodes[i], m, slot, dense, tags, tag_base, table)
            tmp[off + m] = nodes[i]
            m += 1
        for c0 in range(gptr[g], gptr[g + 1], CHUNK):
            c1 = min(c0 + CHUNK, gptr[g + 1])
            if pre and dense:
                # The drawn columns, a chunk in one branch-free pass (the
                # caller sorts the rows).
                m = _chunk_by_tags(out, optr[c0], optr[c1] - optr[c0], cols[optr[c0]:], m,
                                   tmp, off, tags, tag_base)
                continue
            if pre:
                for i in range(c0, c1):
                    m = _row_in_order(out, optr[i], optr[i + 1] - optr[i], cols, optr[i], m,
                                      tmp, off, dense, tags, tag_base, table, bits)
                continue
            _chunk_columns(c0, c1, a_ptr, a_idx, nodes, optr, gptr, gids, seed, stream, lo_s,
                           pos, cols)
            if dense:
                m = _chunk_by_tags(out, optr[c0], optr[c1] - optr[c0], cols, m, tmp, off, tags,
                                   tag_base)
                _sort_rows(out, optr, c0, c1, buf)
                continue
            for i in range(c0, c1):
                m = _row_split(out, optr[i], optr[i + 1] - optr[i], cols, optr[i] - optr[c0],
                               new, m, tmp, off, dense, tags, tag_base, table, bits)
        cnt[g + 1] = m
        tag_base += np.uint64(m)


def _hop_work(a_ptr, a_idx, nodes, gptr, gids, k, *rest):
    # Picks: rows times k, or times the mean degree for every entry (an
    # estimate, as ``sample_gather``'s).  Shared out by rows, not groups:
    # with fewer groups than threads the draws and sorts are.
    rows = int(nodes.size)
    mean_degree = int(a_ptr[-1]) // max(1, int(a_ptr.size) - 1) + 1
    return over_rows(rows, rows * (min(int(k), mean_degree) if k > 0 else mean_degree))


# Always the parallel twin (threshold 0): on one thread too it ran a third
# faster than the serial twin, and one twin compiles in half the time.
@parallel_kernel(_hop_work, threshold=0, inputs=("a_ptr", "a_idx", "nodes", "gptr", "gids"))
def _hop(a_ptr, a_idx, nodes, gptr, gids, k, seed, stream, parts, out_type):
    """One fused hop of every group; returns ``(bptr, bidx, src, cnt, optr,
    repeated)``, ``repeated`` nonzero when a group's frontier repeats a vertex."""
    n = a_ptr.size - 1
    R = nodes.size
    G = gptr.size - 1
    optr = np.zeros(R + 1, np.int64)
    for i in prange(R):
        d = a_ptr[nodes[i] + 1] - a_ptr[nodes[i]]
        optr[i + 1] = d if k < 0 or k >= d else k
    for i in range(R):
        optr[i + 1] += optr[i]
    out = np.empty(optr[R], out_type.dtype)
    tmp = np.empty(R + optr[R], np.int64)
    cnt = np.zeros(G + 1, np.int64)
    bounds = group_bounds(G, parts)
    # Fewer groups than workers (one minibatch at a time): the draws,
    # independent per row, on every worker first, each group's relabelling
    # in order, then the rows' sorts on every worker again.  The arrays are
    # made once, empty when unused: numba's parallel lowering reads the
    # shape of an array reassigned in a branch from before the branch
    # (a bounds-checked build fails on the slices below), so none is.
    early = G < parts
    drawn = np.empty(optr[R] if early else 0, np.int64)
    pos = np.empty(optr[R] if early else 0, np.int64)
    if early:
        for ch in prange((R + CHUNK - 1) // CHUNK):
            c0 = ch * CHUNK
            c1 = min(R, c0 + CHUNK)
            _chunk_columns(c0, c1, a_ptr, a_idx, nodes, optr, gptr, gids, seed, stream,
                           np.empty(CHUNK, np.int64), pos[optr[c0]:], drawn[optr[c0]:])
    rep = np.zeros(1, np.int64)
    if bounds.size == 2:
        _worker(bounds[0], bounds[1], a_ptr, a_idx, nodes, gptr, gids, n, optr, seed,
                stream, tmp, cnt, out, drawn, rep)
    else:
        for c in prange(bounds.size - 1):
            _worker(bounds[c], bounds[c + 1], a_ptr, a_idx, nodes, gptr, gids, n, optr,
                    seed, stream, tmp, cnt, out, drawn, rep)
    if drawn.size:
        for ch in prange((R + CHUNK - 1) // CHUNK):
            buf = np.empty(RANK_ROW, np.int64)
            _sort_rows(out, optr, ch * CHUNK, min(R, ch * CHUNK + CHUNK), buf)
    for g in range(G):
        cnt[g + 1] += cnt[g]
    src = np.empty(cnt[G], np.int64)
    bptr = np.empty(R + G, np.int64)
    for g in prange(G):
        off = gptr[g] + optr[gptr[g]]
        for t in range(cnt[g + 1] - cnt[g]):
            src[cnt[g] + t] = tmp[off + t]
        e0 = optr[gptr[g]]
        for i in range(gptr[g], gptr[g + 1] + 1):
            bptr[i + g] = optr[i] - e0
    return bptr, out, src, cnt, optr, rep[0]


def sample_hops(a_indptr, a_indices, a_values, a_has_values, a_prefix, a_positives, a_modes,
                nodes, ptr, group_ids, ks, seed, streams, replace, value_mode, value_dtype,
                index_dtype, growth=None, kept=None):
    """Fused node-wise hops (uniform, without replacement; see ``fusable``).

    The arguments and the result are ``kernels.cuda.hops.sample_hops``'s
    (the weights' arrays, ``value_mode`` and ``value_dtype`` are unused:
    the blocks are structural; ``growth`` is ignored and None returned, as
    host arrays need no sizing ahead; ``kept`` is ignored: the workers'
    scratch is theirs, per call).

    Examples
    --------
    >>> import numpy as np
    >>> ptr, idx = np.array([0, 2, 4, 6]), np.array([1, 2, 0, 2, 0, 1])
    >>> hops, _ = sample_hops(ptr, idx, None, False, None, None, None, np.array([0, 1]),
    ...                       np.array([0, 1, 2]), np.array([0, 1]), [1], np.uint64(3),
    ...                       [np.uint64(0)], False, 0, None, np.dtype(np.int32))
    >>> bptr, bidx, bval, dst, dst_ptr, src, src_ptr, entry_ptr = hops[0]
    >>> bptr.tolist(), dst_ptr.tolist(), entry_ptr.tolist(), bval is None
    ([0, 1, 0, 1], [0, 1, 2], [0, 1, 2], True)
    """
    parts = numba.get_num_threads()
    out_type = np.empty(0, index_dtype)
    gids = np.asarray(group_ids, np.int64)
    nodes = np.asarray(nodes, np.int64)
    ptr = np.asarray(ptr, np.int64)
    hops = []
    for k, stream in zip(ks, streams):
        bptr, bidx, src, cnt, optr, repeated = _hop(a_indptr, a_indices, nodes, ptr, gids,
                                                    np.int64(k), np.uint64(seed),
                                                    np.uint64(stream), parts, out_type)
        if repeated:
            raise BadSeeds(BAD_REPEAT)
        hops.append((bptr, bidx, None, nodes, ptr, src, cnt, optr[ptr]))
        nodes, ptr = src, cnt
    return hops, None


def launch_hops(*args, **kwargs):
    """``sample_hops`` computed now, as a ``kernels.common.Finished``: the
    CPU twin of ``kernels.cuda.hops.launch_hops`` (host arrays have no
    device to wait for, so there is nothing to defer).

    Examples
    --------
    >>> import numpy as np
    >>> ptr, idx = np.array([0, 2, 4, 6]), np.array([1, 2, 0, 2, 0, 1])
    >>> h = launch_hops(ptr, idx, None, False, None, None, None, np.array([0]),
    ...                 np.array([0, 1]), np.array([0]), [1], np.uint64(3),
    ...                 [np.uint64(0)], False, 0, None, np.dtype(np.int32))
    >>> hops, growth = h.finish()
    >>> len(hops), growth is None
    (1, True)
    """
    return Finished(sample_hops(*args, **kwargs))
