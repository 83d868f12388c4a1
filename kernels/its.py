"""Row-level inverse-transform sampling, shared by every sample kernel.

One function, ``sample_one_row``, decides which entries of one row are
picked.  The CPU kernels (materialised and fused) and the CUDA kernels all
call it, so a row's picks are a pure function of the row's weights and of
``(seed, stream, row id)`` whichever path or backend runs it.

The algorithm, per row of ``d`` stored entries of which ``m`` have positive
weight, drawing ``cnt`` slots:

* **take all** (without replacement, ``m <= k``): every positive entry.
* **uniform rows** (all weights equal): with replacement, draw ``n`` picks
  offset ``floor(u * d)``; without replacement, Floyd's algorithm (exactly
  ``cnt`` draws, uniform over ``cnt``-subsets).
* **weighted rows**: with replacement, binary search of ``u * total`` in the
  row's inclusive prefix sum.  Without replacement, the same draws with
  repeats rejected (this *is* sequential sampling without replacement: a draw
  conditioned on not being a previous pick has law ``w_j / remaining``); after
  a budget of draws (``rejection_budget``: set by the picks and the row's
  length) the remaining picks are made directly from the remaining mass by a
  linear scan, so heavy entries cannot stall a row.

``sample_one_row`` allocates nothing, so the CUDA kernels call it as a
device function.  The CPU kernels call ``sample_one_row_cpu``, which runs
the same draw sequence with scratch of its own (a hash set of the picks,
running sums for the second phase) and makes the same picks.

Picks are written as entry positions, sorted ascending (rows of a canonical
CSR matrix are sorted by column, so this is column order too).

Weights are used as given except at the two ends of the float64 range: a
row whose largest weight is huge (>= 2**900, where the row total could
overflow) or tiny (< 2**-960, where ``u * total`` would fall among the
subnormals and round to a few representable values) is rescaled by an exact
power of two (``row_scale``) before its prefix sum is formed.  Every other
row is sampled from its raw weights, so the rescaling changes no other pick.

The row's statistics and the searches of a draw (bisection, guide table) are
in ``kernels.its_search``; this module re-exports their names.

Helpers called once per draw are ``inline="always"`` (a call per draw costs
as much as the draw); the steps called once per row (``_reject``,
``_reject_batched``, ``finish_rejected``, ``fill_by_scan``) are functions of
their own.  numba inlines at the level of its own IR and types every copy
again, so inlining the per-row steps into every kernel that samples
multiplied the compile time (tens of seconds per signature) for no gain at
run time; ``_floyd`` stays inlined because ``uniform_picks`` relies on it
being specialised for a constant ``bits`` (see docs/design.rst, "Working
on the kernels").
"""

import numba
import numpy as np

from kernels.common import (EMPTY_KEY, contains, search_prefix, set_add, set_slot,
                            sort_range, table_bits, uniform01)
from kernels.its_search import (  # noqa: F401 - re-exported: callers import them from here
    GUIDE_EXACT, GUIDE_MAX_D, GUIDE_MIN_D, UNIFORM, WEIGHTED, fill_row_guide, finish_guided,
    guide_bucket, guide_pays, guide_scale, has_guide_length, row_max, row_scale, row_stats,
    search_ahead, search_below_total, search_draw, search_first_draws, search_guided,
    weight_at)


@numba.njit(cache=True, inline="always")
def rejection_budget(cnt, d):
    """Draws tried by rejection before switching to the exact linear scan.

    ``cnt`` picks from a row of ``d`` entries.  A rejection draw is a search
    (a guided one, or a bisection: O(log d)); a pick of the second phase is
    a pass over the row (O(d)).  So the budget grows with both.  ``16 cnt``:
    in rows where the first picks take most of the mass (LADIES' probability
    rows, whose sampled hubs hold nearly all of it) each of the last picks
    needs many draws, and a smaller budget sends a large share of the picks
    to the far costlier second phase.  ``d / 16`` more for a long row: in the
    rows where rejection stalls for good (a few entries hold nearly all the
    mass) they cost about as much as a few second-phase picks, and in long
    rows they save many passes over the row.  The measurements are in
    docs/design.rst, "Measurements behind the kernels' choices".
    """
    return 16 * cnt + 16 + d // 16


#: Picks per row above which the CPU twin looks picks up in a hash set
#: rather than by a scan of the picks so far (a scan of a few words is
#: cheaper than hashing; beyond, the scans cost O(k^2) per row).
SET_MIN = 32
#: Rows of at most this many entries finish the second phase by the scans of
#: ``fill_by_scan`` (no scratch to allocate), longer ones by running sums.
SCAN_MAX_D = 64


@numba.njit(cache=True, inline="always")
def _is_new(out, o, filled, seen, bits, j):
    """Whether position ``j`` is not among the picks ``out[o:o+filled]``.

    ``bits == 0``: a linear scan of the picks.  Otherwise ``seen`` is a hash
    set of ``2**bits`` slots holding exactly those picks, and ``j`` is added
    to it when new.  Both answer the same question, so the draws that follow
    are the same either way.
    """
    if bits == 0:
        return not contains(out, o, o + filled, j)
    return set_add(seen, bits, j)


@numba.njit(cache=True, inline="always")
def _floyd(out, o, cnt, lo, hi, key, seen, bits):
    """Uniform without replacement: Floyd's algorithm, picks left unsorted."""
    d = hi - lo
    # For t = d-cnt .. d-1 pick r in [0, t]; if taken, take t (never taken:
    # every earlier pick is below t).
    f = o
    n = 0
    for t in range(d - cnt, d):
        r = np.int64(uniform01(key, n) * (t + 1))
        n += 1
        if r > t:
            r = t
        if not _is_new(out, o, f - o, seen, bits, lo + r):
            r = t
            if bits:
                set_add(seen, bits, lo + t)
        out[f] = lo + r
        f += 1


@numba.njit(cache=True, nogil=True)
def _reject(out, o, cnt, lo, hi, prefix, key, seen, bits):
    """Weighted without replacement, first phase: draws with repeats rejected.

    Returns ``(filled, n)``: the distinct picks made (unsorted, in
    ``out[o:o+filled]``) and the draws used, at most ``rejection_budget(cnt, hi - lo)``.
    """
    total = prefix[hi - 1]
    filled = 0
    n = 0
    budget = rejection_budget(cnt, hi - lo)
    while filled < cnt and n < budget:
        j = search_prefix(prefix, lo, hi, uniform01(key, n) * total)
        n += 1
        if _is_new(out, o, filled, seen, bits, j):
            out[o + filled] = j
            filled += 1
    return filled, n


@numba.njit(cache=True, nogil=True)
def _reject_batched(out, o, cnt, lo, hi, prefix, guide, key, seen, bits, searched):
    """``_reject`` for the CPU twin: the same draws, searched a batch at a time.

    A row's draws are independent until their repeats are rejected, so the
    searches of the next ``cnt - filled`` draws run first (into the free
    slots), then are accepted in draw order.  A batch never outlasts the
    budget and ends with the ``cnt``-th pick at the earliest, so the picks
    and the draws used are ``_reject``'s.  The point: a weighted search of
    a graph row is a cache miss or two, and independent searches let the
    processor wait for several at once.  ``searched``: the first batch (the
    draws ``0 .. cnt-1``) is already in ``out[o:o+cnt]`` (``search_first_draws``).
    """
    total = prefix[hi - 1]
    scale = guide_scale(hi - lo, total)
    filled = 0
    n = 0
    budget = rejection_budget(cnt, hi - lo)
    while filled < cnt and n < budget:
        b = min(cnt - filled, budget - n)
        if n > 0 or not searched:
            for t in range(b):
                x = uniform01(key, n + t) * total
                out[o + filled + t] = search_draw(prefix, guide, lo, hi, x, total, scale)
        filled = accept_batch(out, o, filled, b, seen, bits)
        n += b
    return filled, n


@numba.njit(cache=True, inline="always")
def accept_batch(out, o, filled, b, seen, bits):
    """Accept, in draw order, the ``b`` searched draws at ``out[o+filled:]``;
    returns the picks made so far.

    The rejection step of ``_reject_batched``: a draw repeating a pick is
    dropped, a new one moves to the next free slot (at or before its own).
    Kernels that search a batch of many rows' draws in passes of their own
    accept each row's batch here, so they make the same picks.
    """
    f0 = filled
    for t in range(b):
        j = out[o + f0 + t]
        if _is_new(out, o, filled, seen, bits, j):
            out[o + filled] = j
            filled += 1
    return filled


@numba.njit(cache=True, nogil=True)
def finish_rejected(out, o, cnt, filled, n, lo, hi, values, has_values, key, seen, bits):
    """A weighted row's picks after its rejection draws: ``filled`` distinct
    picks in ``out[o:o+filled]`` from ``n`` draws.  The remaining picks by
    the exact second phase, then all of them sorted (``sample_one_row_cpu``'s
    tail, shared with kernels that run the rejection draws themselves)."""
    if filled < cnt:
        if hi - lo <= SCAN_MAX_D:
            # A short row: two scans per pick cost less than scratch.
            sort_range(out, o, o + filled)
            fill_by_scan(out, o, cnt, filled, n, lo, hi, values, has_values, key)
        else:
            _fill_by_running_sum(out, o, cnt, filled, n, lo, hi, values, has_values, key,
                                 seen, bits)
    sort_range(out, o, o + cnt)


@numba.njit(cache=True, nogil=True)
def fill_by_scan(out, o, cnt, filled, n, lo, hi, values, has_values, key):
    """Second phase: the remaining picks, each drawn exactly from the mass not
    yet picked by a linear scan of the row.  ``out[o:o+filled]`` must be
    sorted; it stays sorted.  No scratch (the CUDA kernels' path)."""
    # The same weights the prefix sum was formed from.
    scale = row_scale(row_max(lo, hi, values, has_values))
    while filled < cnt:
        # Picks stay sorted so one merge-like pass skips them.
        rem = 0.0
        p = o
        for j in range(lo, hi):
            if p < o + filled and out[p] == j:
                p += 1
                continue
            w = weight_at(values, has_values, j)
            if w > 0.0:
                rem += w * scale
        x = uniform01(key, n) * rem
        n += 1
        acc = 0.0
        pick = -1
        last = -1
        p = o
        for j in range(lo, hi):
            if p < o + filled and out[p] == j:
                p += 1
                continue
            w = weight_at(values, has_values, j)
            if w > 0.0:
                # ``last`` is a positive entry even if its scaled weight
                # underflowed, so a pick always exists (filled < positives).
                acc += w * scale
                last = j
                if acc > x:
                    pick = j
                    break
        if pick < 0:
            pick = last
        # Insert keeping the filled part sorted.
        q = o + filled
        while q > o and out[q - 1] > pick:
            out[q] = out[q - 1]
            q -= 1
        out[q] = pick
        filled += 1


@numba.njit(cache=True, nogil=True)
def _fill_by_running_sum(out, o, cnt, filled, n, lo, hi, values, has_values,
                         key, seen, bits):
    """CPU twin of ``fill_by_scan``: the same picks, cheaper.

    ``fill_by_scan`` sums the unpicked mass in row order, then scans again
    to the first running sum above ``u * rem``.  Here the running sums are
    kept in scratch (``run``) over the weights with picked ones zeroed
    (``wk``): adding ``+0.0`` to a non-negative sum changes no bit, so
    ``run`` holds exactly the scan's partial sums, ``run[-1]`` its ``rem``,
    and the first ``run[t] > x`` is the scan's pick (the sum only rises at
    an unpicked positive entry).  A pick at ``t`` leaves the sums before
    ``t`` unchanged, so only ``run[t:]`` is summed again, and the pick is a
    binary search.  Picks are left unsorted.
    """
    d = hi - lo
    scale = row_scale(row_max(lo, hi, values, has_values))
    wk = np.empty(d, np.float64)
    run = np.empty(d, np.float64)
    for t in range(d):
        w = weight_at(values, has_values, lo + t)
        wk[t] = w * scale if w > 0.0 else 0.0
    for q in range(o, o + filled):
        wk[out[q] - lo] = 0.0
    start = 0
    while filled < cnt:
        acc = run[start - 1] if start > 0 else 0.0
        for t in range(start, d):
            acc += wk[t]
            run[t] = acc
        x = uniform01(key, n) * acc
        n += 1
        a = 0
        b = d
        while a < b:
            m = (a + b) >> 1
            if run[m] > x:
                b = m
            else:
                a = m + 1
        if a == d:
            # Rounding put x at the total: the scan's ``last``, the last
            # unpicked entry of positive weight.
            a = d - 1
            while a > 0 and not (weight_at(values, has_values, lo + a) > 0.0
                                 and not _in_picks(out, o, filled, seen, bits,
                                                   lo + a)):
                a -= 1
        out[o + filled] = lo + a
        filled += 1
        if bits:
            set_add(seen, bits, lo + a)
        wk[a] = 0.0
        start = a


@numba.njit(cache=True, inline="always")
def _in_picks(out, o, filled, seen, bits, j):
    """Whether ``j`` is among the picks (read only, unlike ``_is_new``)."""
    if bits == 0:
        return contains(out, o, o + filled, j)
    return seen[set_slot(seen, bits, j)] == j


@numba.njit(cache=True, nogil=True)
def sample_one_row(out, o, cnt, lo, hi, values, has_values, prefix, mode,
                   positives, key, replace):
    """Write ``cnt`` picked entry positions of row ``[lo, hi)`` to ``out[o:]``.

    Allocates nothing (the CUDA kernels call it as a device function); the
    CPU kernels call ``sample_one_row_cpu``, which makes the same picks with
    scratch of its own.

    Parameters
    ----------
    out : int64 array
        Receives positions (indices into ``values``/``prefix``).
    o, cnt : int
        First slot and number of slots for this row.
    lo, hi : int
        The row's entries.
    values : array
        Weights (any real dtype); ignored when ``has_values`` is false.
    has_values : bool
        False for a structural row (every weight is 1).
    prefix : float64 array
        Inclusive prefix sum of the row's weights times ``row_scale`` (as
        written by ``row_stats``), restarted at ``lo``; read only for
        weighted rows.
    mode : int
        ``UNIFORM`` or ``WEIGHTED``.
    positives : int
        Number of entries of positive weight in the row.
    key : uint64
        The row's random key (``row_key(seed, stream, row_id)``).
    replace : bool
        Draw with replacement (``out`` may then hold repeats).
    """
    if cnt <= 0:
        return
    d = hi - lo
    if not replace and cnt >= positives:
        f = o
        for j in range(lo, hi):
            if weight_at(values, has_values, j) > 0.0:
                out[f] = j
                f += 1
        return
    if replace:
        if mode == UNIFORM:
            for t in range(cnt):
                r = np.int64(uniform01(key, t) * d)
                if r > d - 1:
                    r = d - 1
                out[o + t] = lo + r
        else:
            total = prefix[hi - 1]
            for t in range(cnt):
                out[o + t] = search_prefix(prefix, lo, hi, uniform01(key, t) * total)
        sort_range(out, o, o + cnt)
        return
    # ``out`` stands in for the unused hash set (bits == 0: linear scans).
    if mode == UNIFORM:
        _floyd(out, o, cnt, lo, hi, key, out, 0)
        sort_range(out, o, o + cnt)
        return
    filled, n = _reject(out, o, cnt, lo, hi, prefix, key, out, 0)
    sort_range(out, o, o + filled)
    fill_by_scan(out, o, cnt, filled, n, lo, hi, values, has_values, key)


@numba.njit(cache=True, nogil=True)
def sample_one_row_cpu(out, o, cnt, lo, hi, values, has_values, prefix, guide, mode,
                       positives, key, replace, searched):
    """``sample_one_row`` for the CPU kernels: the same picks, faster.

    Rows drawing more than ``SET_MIN`` picks without replacement look picks
    up in a hash set sized by ``cnt`` instead of scanning them, and a row
    of more than ``SCAN_MAX_D`` entries whose rejection draws run out
    finishes by ``_fill_by_running_sum`` (scratch sized by the row) instead
    of the linear scans.  The draw
    sequence (``_floyd``, ``_reject``) is the one ``sample_one_row`` runs,
    and both membership tests and both second phases give the same answers,
    so the picks are identical (tests/kernels/test_its.py checks it).

    ``guide`` holds the guides of ``row_guide`` (size 0: none) for the
    weighted draws' searches (``search_guided``); they find the entry the
    bisection finds, so the picks do not depend on it.  ``searched``: if the
    row draws by weighted searches, ``search_first_draws`` has already run on it
    (the caller's ``search_ahead``).
    """
    if cnt <= 0:
        return
    if replace and mode != UNIFORM:
        if not searched:
            search_first_draws(out, o, cnt, lo, hi, prefix, guide, key)
        sort_range(out, o, o + cnt)
        return
    if replace or cnt >= positives:
        sample_one_row(out, o, cnt, lo, hi, values, has_values, prefix, mode,
                       positives, key, replace)
        return
    if mode == UNIFORM:
        uniform_picks(out, o, cnt, lo, hi, key)
        return
    bits = 0
    seen = out
    if cnt > SET_MIN:
        bits = table_bits(cnt)
        seen = np.full(np.int64(1) << bits, EMPTY_KEY, np.int64)
    filled, n = _reject_batched(out, o, cnt, lo, hi, prefix, guide, key, seen, bits,
                                searched)
    finish_rejected(out, o, cnt, filled, n, lo, hi, values, has_values, key, seen, bits)


@numba.njit(cache=True, inline="always")
def uniform_picks(out, o, cnt, lo, hi, key):
    """``sample_one_row_cpu``'s uniform picks without replacement of a row of
    more than ``cnt`` entries, ascending, into ``out[o:o+cnt]``."""
    if cnt <= SET_MIN:
        # The common node-wise row, on a path of its own: with the picks
        # scanned (``bits`` known to be 0) the compiler specialises the
        # draw loop, which the path below, with a hash set, cannot (see
        # docs/design.rst for the gain).
        _floyd(out, o, cnt, lo, hi, key, out, 0)
    else:
        bits = table_bits(cnt)
        _floyd(out, o, cnt, lo, hi, key, np.full(np.int64(1) << bits, EMPTY_KEY, np.int64),
               bits)
    sort_range(out, o, o + cnt)


# -- Rows of a fused row selection ``Q @ A``: the per-row steps both backends
# -- call (the CUDA kernels as device functions), so they pick alike.

@numba.njit(cache=True, inline="always")
def k_of(k_scalar, k_arr, i):
    """Picks asked of row ``i``: the scalar k, or ``k_arr[i]`` when given per row."""
    if k_arr.size:
        return np.int64(k_arr[i])
    return np.int64(k_scalar)


@numba.njit(cache=True, inline="always")
def rid_of(row_ids, i):
    """Row ``i``'s id for its random key: ``row_ids[i]``, or ``i`` when none are given."""
    if row_ids.size:
        return row_ids[i]
    return np.int64(i)


@numba.njit(cache=True, inline="always")
def slots(k, positives, replace):
    """Output slots of a row of ``positives`` drawable entries asked for ``k`` picks."""
    if positives <= 0:
        return np.int64(0)
    if replace or k < positives:
        return np.int64(k)
    return np.int64(positives)


@numba.njit(cache=True, inline="always")
def gather_row_slots(i, q_indptr, q_indices, q_scale, a_indptr, a_has_values,
                     a_positives, k_scalar, k_arr, replace):
    """Output slots of row ``i`` of a row-selection ``Q @ A`` (0: empty or zero scale)."""
    if q_indptr[i + 1] == q_indptr[i]:
        return np.int64(0)
    if q_scale.size and q_scale[q_indptr[i]] == 0.0:
        return np.int64(0)
    r = q_indices[q_indptr[i]]
    if a_has_values:
        p = a_positives[r]
    else:
        p = a_indptr[r + 1] - a_indptr[r]
    return slots(k_of(k_scalar, k_arr, i), p, replace)


@numba.njit(cache=True, inline="always")
def row_draw_params(r, a_indptr, a_has_values, a_positives, a_modes):
    """(lo, hi, positives, mode) of row ``r`` of A as the fused samplers draw from it."""
    if a_has_values:
        p = a_positives[r]
        m = a_modes[r]
    else:
        p = a_indptr[r + 1] - a_indptr[r]
        m = UNIFORM
    return a_indptr[r], a_indptr[r + 1], p, m
