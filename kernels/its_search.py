"""One row's weights, and the searches a weighted draw makes in them.

The part of inverse-transform sampling (``kernels.its``) that reads a row
without picking from it: the row modes (``UNIFORM``, ``WEIGHTED``) and
``row_stats``, which classifies a row and writes its prefix sum (rescaled
by an exact power of two at the ends of the float64 range: ``row_scale``);
the searches of a draw ``x = u * total`` in the prefix, by branch-free
bisection (``search_below_total``) or by the row's guide table
(``fill_row_guide``, ``search_guided``: Chen and Asau's indexed search), and
the choices between them (``guide_pays``, ``search_ahead``).  Every function
is an ``@numba.njit`` function on scalars and slices, so the CPU kernels
inline it and the CUDA kernels call it as a device function.  ``kernels.its``
re-exports every name.
"""

import numba
import numpy as np

from kernels.common import search_prefix, uniform01

# Row modes, computed by the callers.
UNIFORM = 0
WEIGHTED = 1


@numba.njit(cache=True, inline="always")
def weight_at(values, has_values, j):
    if has_values:
        return np.float64(values[j])
    return 1.0


# Rows with a largest weight outside [_TINY, _BIG) are rescaled by an exact
# power of two: _SHRINK keeps a total of up to 2**63 entries below 2**959,
# _GROW lifts subnormal weights (multiples of 2**-1074) to normal numbers
# without rounding them.
_BIG = 2.0 ** 900
_SHRINK = 2.0 ** -128
_TINY = 2.0 ** -960
_GROW = 2.0 ** 960


@numba.njit(cache=True, inline="always")
def row_scale(max_weight):
    """The exact power-of-two factor applied to a row's weights (1 for most rows)."""
    if max_weight >= _BIG:
        return _SHRINK
    if 0.0 < max_weight < _TINY:
        return _GROW
    return 1.0


@numba.njit(cache=True, nogil=True)
def row_max(lo, hi, values, has_values):
    m = 0.0
    for j in range(lo, hi):
        w = weight_at(values, has_values, j)
        if w > m:
            m = w
    return m


@numba.njit(cache=True, inline="always")
def search_below_total(prefix, lo, hi, x):
    """``search_prefix`` for an ``x`` below the row total, without branches.

    The range holding the answer halves by a select, not a branch, and its
    length sequence depends on the row's length only; so no mispredicted
    branch cancels the searches of the other draws in flight.
    """
    base = lo
    length = hi - lo
    while length > 1:
        half = length >> 1
        base = base + half if prefix[base + half - 1] <= x else base
        length -= half
    return base


#: Rows longer than this have no guide (it holds row offsets in the low 31
#: bits of a uint32) and are searched by bisection.
GUIDE_MAX_D = 2 ** 31 - 1
#: Rows shorter than this are searched by bisection: their prefix spans a
#: few cache lines, which a branch-free bisection reads about as fast as the
#: guide's two (the guide's own line, then the prefix's).
GUIDE_MIN_D = 32


@numba.njit(cache=True, inline="always")
def has_guide_length(d):
    """Whether a weighted row of ``d`` entries is searched by its guide
    (``GUIDE_MIN_D <= d <= GUIDE_MAX_D``), so has one in ``row_guide``."""
    return GUIDE_MIN_D <= d <= GUIDE_MAX_D


@numba.njit(cache=True, inline="always")
def guide_pays(mode, cnt, positives, d, replace):
    """Whether a row's weighted draws pay for building its guide first.

    A kernel sampling a row from a prefix of its own (no cached guide) can
    build the row's guide (``fill_row_guide``: one pass over the row) and
    search each draw by it instead of bisecting (``log2(d)`` dependent
    reads).  The row makes at least ``cnt`` draws, so the guide pays when
    ``4 cnt log2(d) >= d``: LADIES' probability rows of a few thousand
    entries drawing 512, not a node-wise row drawing 10 of thousands.  The
    picks are the same either way.
    """
    if mode == UNIFORM or positives <= 0 or not has_guide_length(d):
        return False
    if not replace and cnt >= positives:
        return False  # take-all: no draws
    lg = 1
    while (np.int64(1) << lg) < d:
        lg += 1
    return 4 * cnt * lg >= d


#: The guide bit of a bucket that holds no prefix value: every ``x`` in it
#: has the same answer, the entry the guide names.
GUIDE_EXACT = 2 ** 31


@numba.njit(cache=True, inline="always")
def guide_scale(d, total):
    """Buckets per unit of mass of a row of ``d`` entries: ``d / total``."""
    return np.float64(d) / total


@numba.njit(cache=True, inline="always")
def guide_bucket(x, scale, d):
    """The guide bucket of ``x``: ``floor(x * scale)``, at most ``d - 1``.

    Monotone in ``x`` (a product by a fixed positive factor rounds
    monotonically), which is all ``search_guided`` needs; a NaN product (a
    row of total 0, never drawn from) lands in the last bucket.
    """
    y = x * scale
    if y < d - 1:
        return np.int64(y)
    return np.int64(d - 1)


@numba.njit(cache=True, nogil=True)
def fill_row_guide(prefix, lo, hi, guide):
    """Write the guide of row ``[lo, hi)`` to ``guide[lo:hi]``.

    ``guide[lo + t]`` is the row offset of the first entry whose prefix falls
    in bucket ``t`` or later (``d - 1`` where none does).  Every entry before
    it has a prefix in an earlier bucket, hence below any ``x`` of bucket
    ``t``: a search for ``x`` may start there.  When that entry's prefix is
    in a later bucket, it is above every ``x`` of bucket ``t`` and is the
    answer itself: ``GUIDE_EXACT`` is set, and the search reads no prefix.
    """
    d = hi - lo
    scale = guide_scale(d, prefix[hi - 1])
    t = 0
    for j in range(d):
        b = guide_bucket(prefix[lo + j], scale, d)
        while t < b:
            guide[lo + t] = j | GUIDE_EXACT
            t += 1
        if t == b:
            guide[lo + t] = j
            t += 1
    while t < d:
        guide[lo + t] = d - 1
        t += 1


@numba.njit(cache=True, inline="always")
def search_guided(prefix, guide, lo, hi, x, scale):
    """``search_prefix`` for an ``x`` below the row total, by the row's guide.

    The indexed search of Chen and Asau (1974): ``x``'s bucket gives a start
    no later than the answer, and a forward scan finds the first prefix above
    ``x``, so the answer is the bisection's.  The buckets split the row's mass
    evenly, one per entry, so an ``x`` uniform in the mass scans about one
    entry.  A draw thus reads the guide, then the prefix (only the guide
    where the bucket holds no prefix value: ``GUIDE_EXACT``, about 1/e of
    the buckets), where a bisection of a row of ``d`` entries makes
    ``log2(d)`` dependent reads.  ``scale`` is
    ``guide_scale(hi - lo, prefix[hi - 1])``.
    """
    g = np.int64(guide[lo + guide_bucket(x, scale, hi - lo)])
    if g >= GUIDE_EXACT:
        return lo + g - GUIDE_EXACT
    return finish_guided(prefix, lo, g, prefix[lo + g], x)


@numba.njit(cache=True, inline="always")
def finish_guided(prefix, lo, g, first, x):
    """``search_guided``'s answer from the guide entry ``g`` it read.

    ``first`` is ``prefix[lo + g]`` where ``g`` lacks ``GUIDE_EXACT`` (any
    value otherwise: it is not read).  Callers that read the guide entries
    and first prefixes of many draws in passes of their own finish each
    draw here.
    """
    j = lo + (g & (GUIDE_EXACT - 1))
    if g < GUIDE_EXACT and first <= x:
        j += 1
        while prefix[j] <= x:
            j += 1
    return j


@numba.njit(cache=True, inline="always")
def search_draw(prefix, guide, lo, hi, x, total, scale):
    """The entry a weighted draw ``x = u * total`` picks: guided when the row
    has a guide, else bisected (the same answer either way)."""
    if x < total:
        if guide.size and has_guide_length(hi - lo):
            return search_guided(prefix, guide, lo, hi, x, scale)
        return search_below_total(prefix, lo, hi, x)
    return search_prefix(prefix, lo, hi, x)


@numba.njit(cache=True, inline="always")
def search_ahead(mode, cnt, positives, d, replace):
    """Whether a kernel over many rows runs ``search_first_draws`` on this row
    in a pass of its own.

    The row must draw by weighted searches: with replacement, its picks;
    without, when its first batch is likely to be all it needs (``cnt**2 <=
    d``: about one repeat or less among the draws).  A row that needs more
    batches would read its prefix and guide again in the second pass, after
    the other rows' reads have evicted them, and is faster in one pass.
    """
    if mode == UNIFORM or cnt <= 0:
        return False
    if replace:
        return True
    return cnt < positives and cnt * cnt <= d


@numba.njit(cache=True, nogil=True)
def search_first_draws(out, o, cnt, lo, hi, prefix, guide, key):
    """The searches of a weighted row's draws ``0 .. cnt-1``, into ``out[o:o+cnt]``.

    With replacement they are the row's picks; without, its first batch of
    rejection draws (``_reject_batched``).  Kernels over many rows run this
    in a pass of its own, ahead of the sorting and accepting: a loop that
    only issues searches keeps the searches of many rows in flight, where
    the sort after each row's searches would wait on them.
    """
    total = prefix[hi - 1]
    scale = guide_scale(hi - lo, total)
    for t in range(cnt):
        out[o + t] = search_draw(prefix, guide, lo, hi, uniform01(key, t) * total, total,
                                  scale)


#: Entries per leaf chunk of the blocked sums, and children per block at
#: every level above but the top (see ``blocked_prefix``).
LEAF = 32


@numba.njit(cache=True, nogil=True)
def blocked_prefix(lo, hi, values, scale, prefix, leaf):
    """Write row ``[lo, hi)``'s inclusive prefix sum in the blocked order;
    return the row total (the last prefix).

    The order (the same on every device, so a block of GPU threads can
    compute it in parallel and still equal this loop bit for bit): leaf
    chunks of ``leaf`` consecutive entries are summed left to right into
    ``c_j``; chunks form blocks of ``leaf`` chunks, those blocks of ``leaf``
    blocks, and so on for three levels, the fourth level spanning the rest
    of the row.  At each level ``l`` a block's exclusive running sum of its
    children's totals is ``E_l`` (children left to right, a child's total
    being its own last prefix), and the prefix of entry ``j`` is
    ``fl(E_4 + fl(E_3 + fl(E_2 + fl(E_1 + c_j))))``.

    * A row of at most ``leaf`` entries has every ``E_l = 0`` and
      ``fl(0 + c) = c``: its prefix is the plain sequential sum.
    * For non-negative weights the prefix is non-decreasing: within a leaf
      ``c_j`` grows and ``fl(E + .)`` is monotone; at the end of a child the
      prefix equals ``fl(E_l + T)``, which is the next child's ``E_l``, and
      the next child starts at ``fl(E_l + x) >= E_l`` for ``x >= 0``.  The
      same argument holds at each level, by induction from the leaves.

    With ``scale != 1`` the summed weights are ``w * scale`` for positive
    ``w`` and 0 otherwise (``row_stats``' rescaled pass); with ``scale ==
    1`` the weights as given.
    """
    c = 0.0
    e1 = 0.0
    e2 = 0.0
    e3 = 0.0
    e4 = 0.0
    k1 = leaf
    k2 = leaf
    k3 = leaf
    k4 = leaf
    for j in range(lo, hi):
        w = np.float64(values[j])
        if scale != 1.0:
            w = w * scale if w > 0.0 else 0.0
        c += w
        prefix[j] = e4 + (e3 + (e2 + (e1 + c)))
        k1 -= 1
        if k1 == 0:  # a leaf ends; then maybe blocks of each level
            k1 = leaf
            e1 += c
            c = 0.0
            k2 -= 1
            if k2 == 0:
                k2 = leaf
                e2 += e1
                e1 = 0.0
                k3 -= 1
                if k3 == 0:
                    k3 = leaf
                    e3 += e2
                    e2 = 0.0
                    k4 -= 1
                    if k4 == 0:
                        k4 = leaf
                        e4 += e3
                        e3 = 0.0
    return e4 + (e3 + (e2 + (e1 + c)))


@numba.njit(cache=True, nogil=True)
def blocked_sum(val, lo, hi, hv, one, zero, leaf, out, i):
    """``out[i]``: the total of row ``[lo, hi)`` in ``blocked_prefix``'s
    order, summed in the type of ``zero`` (the row reductions' ``plus``;
    ``hi - lo`` copies of ``one`` when ``hv`` is False).  Stored here, as
    ``fold_row`` stores, so integer sums wrap on the store alike on every
    device."""
    c = zero
    e1 = zero
    e2 = zero
    e3 = zero
    e4 = zero
    k1 = leaf
    k2 = leaf
    k3 = leaf
    k4 = leaf
    for j in range(lo, hi):
        c += val[j] if hv else one
        k1 -= 1
        if k1 == 0:
            k1 = leaf
            e1 += c
            c = zero
            k2 -= 1
            if k2 == 0:
                k2 = leaf
                e2 += e1
                e1 = zero
                k3 -= 1
                if k3 == 0:
                    k3 = leaf
                    e3 += e2
                    e2 = zero
                    k4 -= 1
                    if k4 == 0:
                        k4 = leaf
                        e4 += e3
                        e3 = zero
    out[i] = e4 + (e3 + (e2 + (e1 + c)))


@numba.njit(cache=True, inline="always")
def row_stats(lo, hi, values, has_values, prefix, write_prefix):
    """Scan one row: (positive count, mode), optionally writing its prefix.

    A row is ``UNIFORM`` when it is structural or all its weights are equal
    and positive; otherwise ``WEIGHTED``.  The prefix is ``blocked_prefix``'s
    (the plain sequential sum for rows of at most ``LEAF`` entries) of the
    weights times ``row_scale(max weight)``: a second pass rescales it in
    the rare rows where that factor is not 1.
    """
    if not has_values:
        return hi - lo, UNIFORM
    positives = 0
    equal = True
    first = 0.0
    top = 0.0
    if hi > lo:
        first = np.float64(values[lo])
    for j in range(lo, hi):
        w = np.float64(values[j])
        if w > 0.0:
            positives += 1
            if w > top:
                top = w
        if w != first:
            equal = False
    if write_prefix:
        blocked_prefix(lo, hi, values, row_scale(top), prefix, LEAF)
    if equal and first > 0.0:
        return positives, UNIFORM
    return positives, WEIGHTED
