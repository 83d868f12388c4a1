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
  a fixed budget of draws the remaining picks are made directly from the
  remaining mass by a linear scan, so heavy entries cannot stall a row.

Picks are written as entry positions, sorted ascending (rows of a canonical
CSR matrix are sorted by column, so this is column order too).

Weights are used as given except at the two ends of the float64 range: a
row whose largest weight is huge (>= 2**900, where the row total could
overflow) or tiny (< 2**-960, where ``u * total`` would fall among the
subnormals and round to a few representable values) is rescaled by an exact
power of two (``row_scale``) before its prefix sum is formed.  Every other
row is sampled from its raw weights, so the rescaling changes no other pick.
"""

import numba
import numpy as np

from kernels.common import contains, insertion_sort, search_prefix, uniform01

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
def rejection_budget(cnt):
    """Draws tried by rejection before switching to the exact linear scan."""
    return 4 * cnt + 16


@numba.njit(cache=True, nogil=True)
def sample_one_row(out, o, cnt, lo, hi, values, has_values, prefix, mode,
                   positives, key, replace):
    """Write ``cnt`` picked entry positions of row ``[lo, hi)`` to ``out[o:]``.

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
        insertion_sort(out, o, o + cnt)
        return
    if mode == UNIFORM:
        # Floyd: for t = d-cnt .. d-1 pick r in [0, t]; if taken, take t.
        f = o
        n = 0
        for t in range(d - cnt, d):
            r = np.int64(uniform01(key, n) * (t + 1))
            n += 1
            if r > t:
                r = t
            if contains(out, o, f, lo + r):
                r = t
            out[f] = lo + r
            f += 1
        insertion_sort(out, o, o + cnt)
        return
    # Weighted without replacement.
    total = prefix[hi - 1]
    filled = 0
    n = 0
    budget = rejection_budget(cnt)
    while filled < cnt and n < budget:
        j = search_prefix(prefix, lo, hi, uniform01(key, n) * total)
        n += 1
        if not contains(out, o, o + filled, j):
            out[o + filled] = j
            filled += 1
    insertion_sort(out, o, o + filled)
    scale = 1.0
    if filled < cnt:
        # The same weights the prefix sum was formed from.
        scale = row_scale(row_max(lo, hi, values, has_values))
    while filled < cnt:
        # Exact draw from the mass not yet picked; picks stay sorted so one
        # merge-like pass skips them.
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


@numba.njit(cache=True, inline="always")
def row_stats(lo, hi, values, has_values, prefix, write_prefix):
    """Scan one row: (positive count, mode), optionally writing its prefix.

    A row is ``UNIFORM`` when it is structural or all its weights are equal
    and positive; otherwise ``WEIGHTED``.  The prefix holds the weights times
    ``row_scale(max weight)``: a second pass rescales it in the rare rows
    where that factor is not 1.
    """
    if not has_values:
        return hi - lo, UNIFORM
    positives = 0
    acc = 0.0
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
        acc += w
        if write_prefix:
            prefix[j] = acc
    if write_prefix:
        scale = row_scale(top)
        if scale != 1.0:
            acc = 0.0
            for j in range(lo, hi):
                w = np.float64(values[j])
                if w > 0.0:
                    acc += w * scale
                prefix[j] = acc
    if equal and first > 0.0:
        return positives, UNIFORM
    return positives, WEIGHTED
