"""Row-wise ITS sampling kernels (CPU).

Two entry points share ``kernels.its.sample_one_row``:

* ``sample_csr``: sample the rows of a materialised CSR matrix P.
* ``sample_gather``: sample the rows of ``Q @ A`` where every row of Q has at
  most one entry, straight from A's rows (the fused path): the picks are the
  ones ``sample_csr`` makes on the materialised product.

Both return ``(indptr, positions)``: ``positions`` index the entries of the
sampled matrix (P, or A for the fused path).  With replacement a row may hold
repeated positions; ``dedup_sorted_rows`` folds them into counts.
"""

import numba
import numpy as np
from numba import prange

from kernels.common import row_key, search_prefix, uniform01
from kernels.its import (GUIDE_EXACT, SET_MIN, UNIFORM, accept_batch, fill_row_guide,
                         finish_guided, finish_rejected, gather_row_slots, guide_bucket,
                         guide_pays, guide_scale, has_guide_length, k_of,
                         rejection_budget, rid_of, row_stats, sample_one_row_cpu,
                         search_ahead, search_first_draws, slots)
from kernels.parallel import over_rows, parallel_kernel


@numba.njit(cache=True, nogil=True)
def _exclusive_scan_into(counts):
    """counts[0] must be 0 and counts[1:] the per-row sizes; scan in place."""
    for i in range(1, counts.size):
        counts[i] += counts[i - 1]


def _sample_csr_work(indptr, values, has_values, k_scalar, k_arr, *rest):
    # Every entry is scanned (weights) or the picks dominate (structural).
    rows = int(indptr.size) - 1
    return over_rows(rows, int(indptr[-1]) if has_values
                     else min(int(indptr[-1]), rows * max(1, int(k_scalar))))


@parallel_kernel(_sample_csr_work, inputs=("indptr", "values", "k_arr", "row_ids"))
def sample_csr(indptr, values, has_values, k_scalar, k_arr, row_ids, seed,
               stream, replace):
    """Sample every row of a CSR matrix; see the module docstring."""
    n = indptr.size - 1
    nnz = indptr[n]
    prefix = np.empty(nnz if has_values else 0, np.float64)
    positives = np.empty(n, np.int64)
    modes = np.empty(n, np.uint8)
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        p, m = row_stats(indptr[i], indptr[i + 1], values, has_values,
                         prefix, has_values)
        positives[i] = p
        modes[i] = m
        out_ptr[i + 1] = slots(k_of(k_scalar, k_arr, i), p, replace)
    _exclusive_scan_into(out_ptr)
    out = np.empty(out_ptr[n], np.int64)
    # Guides only for the rows whose draws pay for them (``guide_pays``):
    # the others bisect their prefix, and their part of ``guide`` stays unset.
    none = np.zeros(0, np.uint32)
    guide = np.empty(nnz if has_values else 0, np.uint32)
    for i in prange(n):
        cnt = out_ptr[i + 1] - out_ptr[i]
        if cnt:
            key = row_key(seed, stream, rid_of(row_ids, i))
            lo = indptr[i]
            hi = indptr[i + 1]
            g = none
            if has_values and guide_pays(modes[i], cnt, positives[i], hi - lo, replace):
                fill_row_guide(prefix, lo, hi, guide)
                g = guide
            sample_one_row_cpu(out, out_ptr[i], cnt, lo, hi, values, has_values, prefix, g,
                               modes[i], positives[i], key, replace, False)
    return out_ptr, out


def sample_csr_with_host_ptr(indptr, values, has_values, k_scalar, k_arr, row_ids, seed,
                             stream, replace):
    """``sample_csr`` and its row pointer on the host: here the same array
    (the CUDA twin reads it back in the read it makes anyway)."""
    out_ptr, out = sample_csr(indptr, values, has_values, k_scalar, k_arr, row_ids, seed,
                              stream, replace)
    return out_ptr, out, out_ptr


def sample_gather_with_host_ptr(*args):
    """``sample_gather`` and its row pointer on the host (the same array)."""
    out_ptr, out = sample_gather(*args)
    return out_ptr, out, out_ptr


@parallel_kernel(lambda indptr, values: int(indptr[-1]), inputs=("indptr", "values"))
def row_prefix(indptr, values):
    """Per-row inclusive prefix sums (float64), positive counts and modes.

    This is what the fused path caches on a weighted matrix: the same scan
    ``sample_csr`` does on the fly, so both paths see identical prefixes.
    """
    n = indptr.size - 1
    prefix = np.empty(indptr[n], np.float64)
    positives = np.empty(n, np.int64)
    modes = np.empty(n, np.uint8)
    for i in prange(n):
        p, m = row_stats(indptr[i], indptr[i + 1], values, True, prefix, True)
        positives[i] = p
        modes[i] = m
    return prefix, positives, modes


@parallel_kernel(lambda indptr, prefix, positives, modes: int(indptr[-1]),
                 inputs=("indptr", "prefix", "positives", "modes"))
def row_guide(indptr, prefix, positives, modes):
    """The guide tables of ``kernels.its.search_guided`` for ``row_prefix``'s prefixes.

    uint32 row offsets, one per entry, filled for the rows that weighted
    draws search by the guide (weighted mode, a positive entry, a length
    ``kernels.its.has_guide_length`` accepts); the other entries are never
    read and are left unset.  Cached beside the prefixes by the fused path:
    4 bytes per entry.
    """
    n = indptr.size - 1
    guide = np.empty(indptr[n], np.uint32)
    for i in prange(n):
        lo = indptr[i]
        hi = indptr[i + 1]
        if modes[i] != UNIFORM and positives[i] > 0 and has_guide_length(hi - lo):
            fill_row_guide(prefix, lo, hi, guide)
    return guide


#: Rows per block of ``sample_gather``: a block's weighted searches run in
#: passes over the block, small enough that what one pass reads is still in
#: cache for the next.
GATHER_BLOCK_ROWS = 64


@numba.njit(cache=True, inline="always")
def _searches_ahead(i, out_ptr, row_lo, row_hi, row_p, row_m, replace):
    """Whether row ``i`` of ``sample_gather`` runs its first searches ahead."""
    cnt = out_ptr[i + 1] - out_ptr[i]
    return cnt > 0 and search_ahead(row_m[i], cnt, row_p[i], row_hi[i] - row_lo[i], replace)


@numba.njit(cache=True, inline="always")
def _guided_ahead(i, out_ptr, row_lo, row_hi, row_p, row_m, replace):
    """``_searches_ahead`` for a row searched by its guide."""
    return (has_guide_length(row_hi[i] - row_lo[i])
            and _searches_ahead(i, out_ptr, row_lo, row_hi, row_p, row_m, replace))


@numba.njit(cache=True, inline="always")
def _start_block(r0, r1, out, out_ptr, row_lo, row_hi, row_p, row_m, prefix, guide, seed,
                 stream, row_ids, replace, filled, batch):
    """``_search_block``'s first step: the unguided rows that search ahead run
    ``search_first_draws`` now; each guided one gets its first batch
    (``batch``) of draws, picks so far 0 (``filled``).  Returns whether any
    row has a batch."""
    guided = guide.size > 0
    more = False
    for i in range(r0, r1):
        if _searches_ahead(i, out_ptr, row_lo, row_hi, row_p, row_m, replace):
            o = out_ptr[i]
            cnt = out_ptr[i + 1] - o
            if guided and has_guide_length(row_hi[i] - row_lo[i]):
                filled[i - r0] = 0
                batch[i - r0] = cnt
                more = True
            else:
                key = row_key(seed, stream, rid_of(row_ids, i))
                search_first_draws(out, o, cnt, row_lo[i], row_hi[i], prefix, guide, key)
    return more


@numba.njit(cache=True, inline="always")
def _read_guides(r0, r1, out, out_ptr, row_lo, row_hi, row_t, prefix, guide, seed, stream,
                 row_ids, filled, used, batch, first, f0):
    """The loads of a round's batches, pass by pass: each draw's guide bucket,
    the guide entry there (into ``out``), then the prefix it points to (into
    ``first``; an exact bucket reads ``prefix[0]``: a select, not a branch,
    so the loads of the draws after it still issue)."""
    for i in range(r0, r1):
        b = batch[i - r0]
        if b > 0:
            o = out_ptr[i] + filled[i - r0]
            n = used[i - r0]
            d = row_hi[i] - row_lo[i]
            total = row_t[i]
            scale = guide_scale(d, total)
            key = row_key(seed, stream, rid_of(row_ids, i))
            for t in range(b):
                out[o + t] = row_lo[i] + guide_bucket(uniform01(key, n + t) * total, scale, d)
    for i in range(r0, r1):
        o = out_ptr[i] + filled[i - r0]
        for s in range(o, o + batch[i - r0]):
            out[s] = guide[out[s]]
    for i in range(r0, r1):
        o = out_ptr[i] + filled[i - r0]
        lo = row_lo[i]
        for s in range(o, o + batch[i - r0]):
            g = out[s]
            first[s - f0] = prefix[lo + g if g < GUIDE_EXACT else 0]


@numba.njit(cache=True, inline="always")
def _finish_batches(r0, r1, out, out_ptr, row_lo, row_hi, row_t, prefix, seed, stream,
                    row_ids, replace, filled, used, batch, first, f0):
    """Answer a round's draws from what ``_read_guides`` loaded, accept each
    row's batch and size its next one; returns whether any row has one."""
    more = False
    for i in range(r0, r1):
        b = batch[i - r0]
        if b == 0:
            continue
        o = out_ptr[i]
        cnt = out_ptr[i + 1] - o
        f = filled[i - r0]
        n = used[i - r0]
        lo = row_lo[i]
        hi = row_hi[i]
        total = row_t[i]
        key = row_key(seed, stream, rid_of(row_ids, i))
        for t in range(b):
            x = uniform01(key, n + t) * total
            s = o + f + t
            if x < total:
                out[s] = finish_guided(prefix, lo, out[s], first[s - f0], x)
            else:
                out[s] = search_prefix(prefix, lo, hi, x)
        batch[i - r0] = 0
        if replace or cnt > SET_MIN:
            filled[i - r0] = -1
            continue
        f = accept_batch(out, o, f, b, out, 0)
        n += b
        filled[i - r0] = f
        used[i - r0] = n
        budget = rejection_budget(cnt, hi - lo)
        if f < cnt and n < budget:
            batch[i - r0] = min(cnt - f, budget - n)
            more = True
    return more


@numba.njit(cache=True, inline="always")
def _search_block(r0, r1, out, out_ptr, row_lo, row_hi, row_p, row_m, row_t, prefix,
                  guide, seed, stream, row_ids, replace):
    """``search_first_draws`` of the rows ``[r0, r1)`` that search ahead, and
    the later batches of the guided ones drawing without replacement.

    Returns ``(filled, used)`` per row of the block: for a row whose
    rejection draws ran here, its distinct picks and draws so far (what
    ``_reject_batched`` returns), for the caller to finish
    (``finish_rejected``); -1 for the other rows.

    A guided search is two dependent cache misses (the guide entry, then the
    prefix it points to) and a branch on the values read.  Done one draw at
    a time, the branch waits for both misses, and a mispredicted one cancels
    the loads of the draws after it: the processor had a few misses in
    flight.  Here each step is a pass over the block's draws with nothing
    between its loads: the guide entries' addresses, the guide reads, the
    prefix reads, and only then the comparisons, on values already in
    cache.  The answers are ``search_guided``'s (``finish_guided``).

    Without replacement, a row whose batch repeats a pick draws another
    (``_reject_batched``); one row at a time, each batch is a chain of
    dependent misses.  Here the rows' batches are accepted after the passes
    (``accept_batch``) and the next batches of the rows that need them
    searched in another round of the passes, so their misses overlap too.
    Rows of more than ``SET_MIN`` picks (a hash set of picks) and rows with
    replacement leave after their first batch, for ``sample_one_row_cpu``.
    """
    m = r1 - r0
    # Per guided row: the slot of its batch's first draw (its picks so far),
    # the draws it has used, and the batch the next round searches.
    filled = np.full(m, -1, np.int64)
    used = np.zeros(m, np.int64)
    batch = np.zeros(m, np.int64)
    more = _start_block(r0, r1, out, out_ptr, row_lo, row_hi, row_p, row_m, prefix, guide,
                        seed, stream, row_ids, replace, filled, batch)
    # Blocks without a guided row (short rows, uniform rows, no guide) skip
    # the rounds below and their scratch.
    if not more:
        return filled, used
    f0 = out_ptr[r0]
    first = np.empty(out_ptr[r1] - f0, np.float64)
    while more:
        _read_guides(r0, r1, out, out_ptr, row_lo, row_hi, row_t, prefix, guide, seed, stream,
                     row_ids, filled, used, batch, first, f0)
        more = _finish_batches(r0, r1, out, out_ptr, row_lo, row_hi, row_t, prefix, seed,
                               stream, row_ids, replace, filled, used, batch, first, f0)
    return filled, used


def _sample_gather_work(q_indptr, q_indices, q_scale, a_indptr, a_values, a_has_values,
                        a_prefix, a_guide, a_positives, a_modes, k_scalar, *rest):
    # Picks: rows times k.  A per-row k array's mean would need a pass over
    # it, so the scalar k (at least 1) stands for it: an estimate suffices.
    # A row yields at most its entries, so a k past A's mean degree (every
    # entry: fanout -1) counts as that mean: a few rows taking all their
    # entries are little work, not 2**62 picks.
    rows = int(q_indptr.size) - 1
    mean_degree = int(a_indptr[-1]) // max(1, int(a_indptr.size) - 1) + 1
    return over_rows(rows, rows * max(1, min(int(k_scalar), mean_degree)))


@parallel_kernel(_sample_gather_work,
                 inputs=("q_indptr", "q_indices", "q_scale", "a_indptr", "a_values", "a_prefix",
                         "a_guide", "a_positives", "a_modes", "k_arr", "row_ids"))
def sample_gather(q_indptr, q_indices, q_scale, a_indptr, a_values,
                  a_has_values, a_prefix, a_guide, a_positives, a_modes, k_scalar,
                  k_arr, row_ids, seed, stream, replace):
    """Sample the rows of ``Q @ A`` for a Q with at most one entry per row.

    ``q_scale`` holds Q's values as float64 (size 0 for a structural Q).  A
    zero scale empties the row, as it would in the product; the caller has
    rejected negative ones.  ``a_guide`` is ``row_guide``'s output for A's
    prefixes, or empty (bisection; the same picks).  Positions returned
    index A's entries.
    """
    n = q_indptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    # What the sampling loop needs of A's row is read here, where the loop
    # body is short enough for the reads of many rows to be in flight at
    # once, and kept: read in the sampling loop, each would be a cache miss
    # waiting on the previous row's draws.
    row_lo = np.empty(n, np.int64)
    row_hi = np.empty(n, np.int64)
    weighted = n if a_has_values else 0
    row_p = np.empty(weighted, np.int64)
    row_m = np.empty(weighted, np.uint8)
    row_t = np.empty(weighted if a_guide.size else 0, np.float64)
    for i in prange(n):
        out_ptr[i + 1] = gather_row_slots(i, q_indptr, q_indices, q_scale, a_indptr,
                                          a_has_values, a_positives, k_scalar, k_arr,
                                          replace)
        if out_ptr[i + 1]:
            r = q_indices[q_indptr[i]]
            row_lo[i] = a_indptr[r]
            row_hi[i] = a_indptr[r + 1]
            if a_has_values:
                row_p[i] = a_positives[r]
                row_m[i] = a_modes[r]
                if row_t.size:
                    row_t[i] = a_prefix[row_hi[i] - 1]
    _exclusive_scan_into(out_ptr)
    out = np.empty(out_ptr[n], np.int64)
    blocks = (n + GATHER_BLOCK_ROWS - 1) // GATHER_BLOCK_ROWS
    for b in prange(blocks):
        r0 = b * GATHER_BLOCK_ROWS
        r1 = min(n, r0 + GATHER_BLOCK_ROWS)
        filled = np.full(0, -1, np.int64)
        used = filled
        if a_has_values:
            # The weighted rows' searches, in passes of their own (see
            # ``search_first_draws``, ``_search_block`` and docs/design.rst).
            filled, used = _search_block(r0, r1, out, out_ptr, row_lo, row_hi, row_p, row_m,
                                         row_t, a_prefix, a_guide, seed, stream, row_ids,
                                         replace)
        for i in range(r0, r1):
            cnt = out_ptr[i + 1] - out_ptr[i]
            if cnt:
                key = row_key(seed, stream, rid_of(row_ids, i))
                lo = row_lo[i]
                hi = row_hi[i]
                if filled.size and filled[i - r0] >= 0:
                    finish_rejected(out, out_ptr[i], cnt, filled[i - r0], used[i - r0], lo,
                                    hi, a_values, a_has_values, key, out, 0)
                    continue
                if a_has_values:
                    p = row_p[i]
                    m = row_m[i]
                else:
                    p = hi - lo
                    m = UNIFORM
                ahead = a_has_values and search_ahead(m, cnt, p, hi - lo, replace)
                sample_one_row_cpu(out, out_ptr[i], cnt, lo, hi, a_values, a_has_values,
                                   a_prefix, a_guide, m, p, key, replace, ahead)
    return out_ptr, out


@parallel_kernel(lambda indptr, pos: over_rows(int(indptr.size) - 1, int(pos.size)),
                 inputs=("indptr", "pos"))
def dedup_sorted_rows(indptr, pos):
    """Fold repeats in rows of sorted positions: (indptr, positions, counts)."""
    n = indptr.size - 1
    new_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        c = 0
        for t in range(indptr[i], indptr[i + 1]):
            if t == indptr[i] or pos[t] != pos[t - 1]:
                c += 1
        new_ptr[i + 1] = c
    _exclusive_scan_into(new_ptr)
    out = np.empty(new_ptr[n], np.int64)
    counts = np.empty(new_ptr[n], np.int64)
    for i in prange(n):
        f = new_ptr[i] - 1
        for t in range(indptr[i], indptr[i + 1]):
            if t == indptr[i] or pos[t] != pos[t - 1]:
                f += 1
                out[f] = pos[t]
                counts[f] = 1
            else:
                counts[f] += 1
    return new_ptr, out, counts
