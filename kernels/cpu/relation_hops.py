"""A fused heterogeneous hop on the CPU: every relation out of one source type,
sampled and relabelled in one pass (uniform draws without replacement).

The heterogeneous twin of ``kernels.cpu.hops``.  The relations sharing a
source type are stacked into one CSR matrix (relation ``j``'s rows at
``row_off[j]``); a hop visits *blocks*, one per (minibatch, relation),
minibatch-major and relation-minor, and the rows of block ``b`` are the
destination frontier ``nodes[seg[b]:seg[b] + rows]`` of its relation.  Row
``v`` of block ``b`` draws with the id ``key_base[b] + v`` and the same
``uniform_picks`` as ``sample_gather``, and every minibatch's columns
(its ``first`` vertices, then the new ones in order of first appearance,
row by row, ascending column within a row) are numbered by one worker in
block order: the composition (``sample_rows`` per relation, then one
``compact_columns_blockwise`` of the rows in that order) gives the same
blocks, entry for entry.

The column maps and the per-row relabelling are ``kernels.cpu.hops``' own
(``_find``, ``_add``, ``_row_split``, ``_row_in_order``, and for short rows
``_word_picks``, ``_chunk_by_tags``, ``_sort_rows``), imported, not
copied, so both fused hops number columns by one rule.
"""

import numba
import numpy as np
from numba import prange

from kernels.common import row_key, table_bits
from kernels.cpu.group_scratch import dense_map, group_bounds, start_group
from kernels.cpu.hops import (CHUNK, RANK_ROW, TAG_LIMIT, WORD_ROW, _add, _chunk_by_tags,
                              _find, _row_in_order, _row_split, _sort_rows, _word_picks)
from kernels.its import uniform_picks
from kernels.parallel import over_rows, parallel_kernel


@numba.njit(cache=True, inline="always")
def _chunk_columns(c0, c1, a_ptr, a_idx, nodes, s0, roff, kbase, optr, r0, seed, stream,
                   lo_s, pos, cols):
    """The picks of a block's rows ``c0:c1`` (its vertices ``nodes[s0 + i]``,
    output rows ``r0 + i``) as columns, ascending per row, into ``cols``.

    In passes, as ``kernels.cpu.hops._chunk_columns``: the rows' extents,
    the draws, then the picks' columns, so that each pass's cache misses
    are in flight together."""
    e0 = optr[r0 + c0]
    for i in range(c0, c1):
        lo_s[i - c0] = a_ptr[roff + nodes[s0 + i]]
    for i in range(c0, c1):
        o = optr[r0 + i] - e0
        c = optr[r0 + i + 1] - optr[r0 + i]
        lo = lo_s[i - c0]
        v = nodes[s0 + i]
        hi = a_ptr[roff + v + 1]
        if c >= hi - lo:
            for t in range(c):
                pos[o + t] = lo + t
        elif hi - lo <= WORD_ROW:
            _word_picks(pos, o, c, lo, hi, row_key(seed, stream, kbase + v))
        elif c > 0:
            uniform_picks(pos, o, c, lo, hi, row_key(seed, stream, kbase + v))
    for t in range(optr[r0 + c1] - e0):
        cols[t] = a_idx[pos[t]]


@numba.njit(cache=True, inline="always")
def _scratch(g0, g1, J, bp, fptr, optr, n):
    """A worker's column map for its largest minibatch's work, and the
    widest row and widest chunk of its blocks."""
    most = np.int64(0)
    widest = np.int64(1)
    span = np.int64(1)
    for g in range(g0, g1):
        most = max(most, (fptr[g + 1] - fptr[g]) + (optr[bp[(g + 1) * J]] - optr[bp[g * J]]))
        for r in range(bp[g * J], bp[(g + 1) * J]):
            widest = max(widest, optr[r + 1] - optr[r])
        for b in range(g * J, (g + 1) * J):
            for c0 in range(bp[b], bp[b + 1], CHUNK):
                span = max(span, optr[min(c0 + CHUNK, bp[b + 1])] - optr[c0])
    dense = dense_map(most, n)
    tags = np.zeros(n if dense else 0, np.uint32)
    table = np.empty(0 if dense else np.int64(2) << table_bits(most), np.int64)
    return dense, tags, table, widest, span


@numba.njit(cache=True, inline="always")
def _worker(g0, g1, J, a_ptr, a_idx, nodes, bp, seg, roff, kbase, first, fptr, n, optr,
            seed, stream, tmp, cnt, out, drawn):
    """Minibatches ``g0:g1`` (one worker's): every block's rows, relabelled,
    into ``out``; each minibatch's columns in order into ``tmp`` (at
    ``fptr[g] + optr[bp[g * J]]``), their count into ``cnt[g + 1]``.

    Rows are drawn here, a chunk at a time, and leave sorted; or, when the
    caller drew them (``drawn``), their ids are left in column order for
    the caller to sort."""
    dense, tags, table, widest, span = _scratch(g0, g1, J, bp, fptr, optr, n)
    pre = drawn.size > 0
    lo_s = np.empty(CHUNK, np.int64)
    pos = np.empty(0 if pre else span, np.int64)
    cols = drawn if pre else np.empty(span, np.int64)
    new = np.empty(widest, np.int64)
    buf = np.empty(RANK_ROW, np.int64)
    tag_base = np.uint64(0)
    for g in range(g0, g1):
        e_g = optr[bp[g * J]]
        w = (fptr[g + 1] - fptr[g]) + (optr[bp[(g + 1) * J]] - e_g)
        bits, tag_base = start_group(dense, tags, table, w, tag_base, TAG_LIMIT)
        off = fptr[g] + e_g
        m = np.int64(0)
        for i in range(fptr[g], fptr[g + 1]):  # the destinations lead, in order
            _, slot = _find(first[i], dense, tags, tag_base, table, bits)
            _add(first[i], m, slot, dense, tags, tag_base, table)
            tmp[off + m] = first[i]
            m += 1
        for b in range(g * J, (g + 1) * J):
            r0 = bp[b]
            for c0 in range(0, bp[b + 1] - r0, CHUNK):
                c1 = min(c0 + CHUNK, bp[b + 1] - r0)
                if pre:
                    for r in range(r0 + c0, r0 + c1):
                        m = _row_in_order(out, optr[r], optr[r + 1] - optr[r], cols, optr[r],
                                          m, tmp, off, dense, tags, tag_base, table, bits)
                    continue
                _chunk_columns(c0, c1, a_ptr, a_idx, nodes, seg[b], roff[b], kbase[b], optr,
                               r0, seed, stream, lo_s, pos, cols)
                if dense:
                    # As kernels.cpu.hops: one branch-free pass over the
                    # chunk's picks, then each row's ids sorted.
                    e = optr[r0 + c0]
                    m = _chunk_by_tags(out, e, optr[r0 + c1] - e, cols, m, tmp, off, tags,
                                       tag_base)
                    _sort_rows(out, optr, r0 + c0, r0 + c1, buf)
                    continue
                for r in range(r0 + c0, r0 + c1):
                    m = _row_split(out, optr[r], optr[r + 1] - optr[r], cols,
                                   optr[r] - optr[r0 + c0], new, m, tmp, off, dense, tags,
                                   tag_base, table, bits)
        cnt[g + 1] = m
        tag_base += np.uint64(m)


def _hop_work(a_ptr, a_idx, nodes, bp, *rest):
    # Rows times the mean degree: an estimate, shared out by rows (blocks).
    rows = int(bp[-1])
    mean_degree = int(a_ptr[-1]) // max(1, int(a_ptr.size) - 1) + 1
    return over_rows(rows, rows * mean_degree)


# Always the parallel twin (threshold 0), as ``kernels.cpu.hops``: one
# compiled twin, and no slower on one thread.
@parallel_kernel(_hop_work, threshold=0,
                 inputs=("a_ptr", "a_idx", "nodes", "seg", "roff", "kbase", "ks", "first", "fptr"))
def relation_hop(a_ptr, a_idx, nodes, bp, seg, roff, kbase, ks, first, fptr, ncols, seed,
                 stream, parts, out_type):
    """One fused relation hop; returns ``(bptr, bidx, src, src_ptr, optr)``.

    ``bptr[r + b]`` is row ``r``'s offset in its block ``b``'s entries (a
    block's pointer is ``bptr[bp[b] + b:bp[b + 1] + b + 1]``), ``bidx`` the
    local column ids (a block's are ``bidx[optr[bp[b]]:optr[bp[b + 1]]]``),
    ``src[src_ptr[g]:src_ptr[g + 1]]`` minibatch g's columns.
    """
    G = fptr.size - 1
    J = (bp.size - 1) // max(G, 1)
    R = bp[bp.size - 1]
    optr = np.zeros(R + 1, np.int64)
    for b in prange(bp.size - 1):
        for i in range(bp[b + 1] - bp[b]):
            v = roff[b] + nodes[seg[b] + i]
            d = a_ptr[v + 1] - a_ptr[v]
            optr[bp[b] + i + 1] = d if ks[b] < 0 or ks[b] >= d else ks[b]
    for r in range(R):
        optr[r + 1] += optr[r]
    out = np.empty(optr[R], out_type.dtype)
    tmp = np.empty(fptr[G] + optr[R], np.int64)
    cnt = np.zeros(G + 1, np.int64)
    bounds = group_bounds(G, parts)
    # Fewer minibatches than workers: the draws, independent per row, on
    # every worker first, each minibatch's relabelling in order, then the
    # rows' sorts on every worker again.  The arrays are made once, empty
    # when unused, never reassigned in a branch before a parallel loop
    # (see ``kernels.cpu.hops._hop``).
    early = G < parts
    drawn = np.empty(optr[R] if early else 0, np.int64)
    pos = np.empty(optr[R] if early else 0, np.int64)
    if early:
        for b in prange(bp.size - 1):
            lo_s = np.empty(CHUNK, np.int64)
            for c0 in range(0, bp[b + 1] - bp[b], CHUNK):
                e = optr[bp[b] + c0]
                _chunk_columns(c0, min(c0 + CHUNK, bp[b + 1] - bp[b]), a_ptr, a_idx, nodes,
                               seg[b], roff[b], kbase[b], optr, bp[b], seed, stream, lo_s,
                               pos[e:], drawn[e:])
    for c in prange(bounds.size - 1):
        _worker(bounds[c], bounds[c + 1], J, a_ptr, a_idx, nodes, bp, seg, roff, kbase, first,
                fptr, ncols, optr, seed, stream, tmp, cnt, out, drawn)
    if drawn.size:
        for ch in prange((R + CHUNK - 1) // CHUNK):
            buf = np.empty(RANK_ROW, np.int64)
            _sort_rows(out, optr, ch * CHUNK, min(R, ch * CHUNK + CHUNK), buf)
    for g in range(G):
        cnt[g + 1] += cnt[g]
    src = np.empty(cnt[G], np.int64)
    bptr = np.empty(R + bp.size - 1, np.int64)
    for g in prange(G):
        off = fptr[g] + optr[bp[g * J]]
        for t in range(cnt[g + 1] - cnt[g]):
            src[cnt[g] + t] = tmp[off + t]
        for b in range(g * J, (g + 1) * J):
            for r in range(bp[b], bp[b + 1] + 1):
                bptr[r + b] = optr[r] - optr[bp[b]]
    return bptr, out, src, cnt, optr
