"""Block-per-row kernels for long rows, CUDA.

LADIES and FastGCN sample from one row per minibatch of up to ``n``
entries; a kernel that gives such a row one thread runs it serially.  Here
a block of threads takes a row, and computes exactly what the one-thread
kernels compute, in the same blocked order of summation
(``kernels.its_search.blocked_prefix`` / ``blocked_sum``): leaf chunks of
``leaf`` entries summed left to right, then exclusive running sums of the
chunks' totals at four levels.  Every level is a set of independent
sequential sums (one per block of the level), so the block's threads share
them out and the result is bit for bit the CPU loop's.

Both kernels take every row and skip those of at most ``long_min``
entries, which the one-thread kernels take (they skip the others by the
same test): choosing needs no read back to the host.  The levels' partial
sums live in scratch arrays sized by the work (``scratch_sizes``): row
``i`` of ``[lo, hi)`` uses level ``l``'s slots from ``lo // leaf**l + i``,
which no other row's slots overlap.

The sampling of a long row (``sample_long_row``) makes exactly the picks
of ``kernels.its.sample_one_row`` with a block: its independent draws in
parallel, its rejection draws a round of one per thread at a time, accepted
in counter order (see docs/design.rst, "Long rows' draws on the GPU").
"""

import numpy as np
from numba import cuda

from kernels import common as _common, its as _draws, its_search as _its
from kernels.cuda._util import BLOCK, SIM, device, launch_grid, _xp

row_scale = device(_its.row_scale)

#: Rows of more entries than this go to the block kernels.
LONG_MIN = 4 * BLOCK


def scratch_sizes(nnz, n, leaf):
    """Slots of the four levels' scratch arrays for ``n`` rows of ``nnz`` entries."""
    return [nnz // leaf ** lvl + n + 1 for lvl in (1, 2, 3, 4)]


@cuda.jit(device=True)
def _weight(values, j, scale):
    w = np.float64(values[j])
    if scale != 1.0:
        w = w * scale if w > 0.0 else 0.0
    return w


@cuda.jit(device=True)
def _row_flags(lo, hi, values, sh_pos, sh_top, sh_eq):
    """Positives, largest weight and 'all equal' of a row, reduced over the block."""
    t = cuda.threadIdx.x
    first = np.float64(values[lo])
    pos = 0
    top = 0.0
    eq = 1
    for j in range(lo + t, hi, BLOCK):
        w = np.float64(values[j])
        if w > 0.0:
            pos += 1
            if w > top:
                top = w
        if w != first:
            eq = 0
    sh_pos[t] = pos
    sh_top[t] = top
    sh_eq[t] = eq
    cuda.syncthreads()
    half = BLOCK // 2
    while half > 0:
        if t < half:
            sh_pos[t] += sh_pos[t + half]
            sh_top[t] = max(sh_top[t], sh_top[t + half])
            sh_eq[t] = min(sh_eq[t], sh_eq[t + half])
        cuda.syncthreads()
        half //= 2
    return first


@cuda.jit(device=True)
def _level(src, src_base, dst, dst_base, children, count, in_place):
    """One level of exclusive running sums: block ``b`` (``children`` slots
    from ``src_base + b * children``, ``count`` slots in all) gets its
    running sums (in place when ``in_place``) and its total in ``dst``."""
    t = cuda.threadIdx.x
    nb = (count + children - 1) // children
    for b in range(t, nb, BLOCK):
        e = 0.0
        for k in range(b * children, min(count, (b + 1) * children)):
            x = src[src_base + k]
            if in_place:
                src[src_base + k] = e
            e = e + x
        dst[dst_base + b] = e


@cuda.jit(device=True)
def _row_prefix(i, lo, hi, values, scale, prefix, leaf, s1, s2, s3, s4):
    t = cuda.threadIdx.x
    d = hi - lo
    nc = (d + leaf - 1) // leaf
    l2 = leaf * leaf
    l3 = l2 * leaf
    b1 = lo // leaf + i
    b2 = lo // l2 + i
    b3 = lo // l3 + i
    b4 = lo // (l3 * leaf) + i
    for k in range(t, nc, BLOCK):  # leaves: sequential prefix, total to s1
        c = 0.0
        for j in range(lo + k * leaf, min(hi, lo + (k + 1) * leaf)):
            c += _weight(values, j, scale)
            prefix[j] = c
        s1[b1 + k] = c
    cuda.syncthreads()
    n2 = (nc + leaf - 1) // leaf
    n3 = (n2 + leaf - 1) // leaf
    n4 = (n3 + leaf - 1) // leaf
    _level(s1, b1, s2, b2, leaf, nc, True)
    cuda.syncthreads()
    _level(s2, b2, s3, b3, leaf, n2, True)
    cuda.syncthreads()
    _level(s3, b3, s4, b4, leaf, n3, True)
    cuda.syncthreads()
    if t == 0:  # the top level spans the row
        e = 0.0
        for k in range(n4):
            x = s4[b4 + k]
            s4[b4 + k] = e
            e = e + x
    cuda.syncthreads()
    for k in range(t, nc, BLOCK):
        e1 = s1[b1 + k]
        e2 = s2[b2 + k // leaf]
        e3 = s3[b3 + k // l2]
        e4 = s4[b4 + k // l3]
        for j in range(lo + k * leaf, min(hi, lo + (k + 1) * leaf)):
            prefix[j] = e4 + (e3 + (e2 + (e1 + prefix[j])))


@cuda.jit(cache=True)
def _long_stats(indptr, values, has_values, write_prefix, leaf, long_min, prefix,
                positives, modes, s1, s2, s3, s4):
    sh_pos = cuda.shared.array(BLOCK, np.int64)
    sh_top = cuda.shared.array(BLOCK, np.float64)
    sh_eq = cuda.shared.array(BLOCK, np.int64)
    n = indptr.size - 1
    for i in range(cuda.blockIdx.x, n, cuda.gridDim.x):
        lo = indptr[i]
        hi = indptr[i + 1]
        if hi - lo <= long_min:
            continue
        if not has_values:
            if cuda.threadIdx.x == 0:
                positives[i] = hi - lo
                modes[i] = _its.UNIFORM
            continue
        first = _row_flags(lo, hi, values, sh_pos, sh_top, sh_eq)
        p = sh_pos[0]
        top = sh_top[0]
        eq = sh_eq[0]
        cuda.syncthreads()  # the flags are read before the next row reuses them
        if cuda.threadIdx.x == 0:
            positives[i] = p
            modes[i] = _its.UNIFORM if eq == 1 and first > 0.0 else _its.WEIGHTED
        if write_prefix:
            _row_prefix(i, lo, hi, values, row_scale(top), prefix, leaf, s1, s2, s3, s4)
            cuda.syncthreads()


def long_row_stats(indptr, values, has_values, write_prefix, prefix, positives, modes,
                   leaf=None, long_min=None, rows=None):
    """Fill ``positives``, ``modes`` (and ``prefix``) of the rows longer than
    ``long_min``, as ``row_stats`` does, one block per row.

    ``rows`` is an upper bound on the long rows (blocks to launch; all
    rows when None).  The other rows are left as they are.
    """
    xp = _xp(indptr)
    leaf = _its.LEAF if leaf is None else int(leaf)
    long_min = LONG_MIN if long_min is None else int(long_min)
    n = indptr.size - 1
    if n <= 0:
        return
    nnz = values.size if has_values else 0
    s = [xp.empty(max(k, 1), np.float64) for k in scratch_sizes(nnz, n, leaf)]
    grid = max(1, min(n if rows is None else int(rows), 65535))
    launch_grid(_long_stats, grid, BLOCK, indptr, values, bool(has_values), bool(write_prefix),
                leaf, long_min, prefix, positives, modes, *s)


@cuda.jit(device=True)
def _sum_level(src, src_base, dst, dst_base, children, count, zero):
    """Totals of blocks of ``children`` slots (left to right, from ``zero``)."""
    for b in range(cuda.threadIdx.x, (count + children - 1) // children, BLOCK):
        e = zero
        for k in range(b * children, min(count, (b + 1) * children)):
            e = e + src[src_base + k]
        dst[dst_base + b] = e


@cuda.jit(cache=True)
def _long_sum(ptr, val, hv, one, identity, leaf, long_min, out, s1, s2, s3, s4):
    n = ptr.size - 1
    zero = identity[0]
    onev = one[0]
    t = cuda.threadIdx.x
    for i in range(cuda.blockIdx.x, n, cuda.gridDim.x):
        lo = ptr[i]
        hi = ptr[i + 1]
        if hi - lo <= long_min:
            continue
        nc = (hi - lo + leaf - 1) // leaf
        b1 = lo // leaf + i
        b2 = lo // (leaf * leaf) + i
        b3 = lo // (leaf * leaf * leaf) + i
        b4 = lo // (leaf * leaf * leaf * leaf) + i
        for k in range(t, nc, BLOCK):
            c = zero
            for j in range(lo + k * leaf, min(hi, lo + (k + 1) * leaf)):
                c = c + (val[j] if hv else onev)
            s1[b1 + k] = c
        cuda.syncthreads()
        n2 = (nc + leaf - 1) // leaf
        n3 = (n2 + leaf - 1) // leaf
        _sum_level(s1, b1, s2, b2, leaf, nc, zero)
        cuda.syncthreads()
        _sum_level(s2, b2, s3, b3, leaf, n2, zero)
        cuda.syncthreads()
        _sum_level(s3, b3, s4, b4, leaf, n3, zero)
        cuda.syncthreads()
        if t == 0:
            e = zero
            for k in range((n3 + leaf - 1) // leaf):
                e = e + s4[b4 + k]
            out[i] = e
        cuda.syncthreads()


def long_row_sums(ptr, val, identity, one, out, leaf=None, long_min=None):
    """``out[i]`` for the rows longer than ``long_min`` of a valued matrix:
    the row's ``plus`` total in ``kernels.its_search.blocked_sum``'s order,
    one block per row (the other rows of ``out`` are left as they are)."""
    xp = _xp(ptr)
    leaf = _its.LEAF if leaf is None else int(leaf)
    long_min = LONG_MIN if long_min is None else int(long_min)
    n = ptr.size - 1
    if n <= 0:
        return
    s = [xp.empty(max(k, 1), identity.dtype) for k in scratch_sizes(val.size, n, leaf)]
    launch_grid(_long_sum, max(1, min(n, 65535)), BLOCK, ptr, val, True, one, identity, leaf,
                long_min, out, *s)


# -- Draws of long rows: a block per row ---------------------------------------------
#
# ``kernels.cuda.sample``'s sampling kernel gives rows with ``is_long_row`` to a
# block (``sample_long_row``) and the others to one thread each
# (``kernels.its.sample_one_row``); both make exactly ``sample_one_row``'s picks.

_uniform01 = device(_common.uniform01)
_search_prefix = device(_common.search_prefix)
_sort_range = device(_common.sort_range)
_weight_at = device(_draws.weight_at)
_budget = device(_draws.rejection_budget)
_fill_by_scan = device(_draws.fill_by_scan)
_sample_one_row = device(_draws.sample_one_row)

#: Most picks a row may ask of the block path (the shared memory holds its
#: picks' hash set and its sort); rows asking more stay on one thread.
MAX_K = 1024
#: Slots of the shared hash set of a row's picks (load at most 1/2).
TABLE = 2 * MAX_K
#: Blocks of a sampling launch that take long rows (the rest take short ones).
LONG_BLOCKS = 1 if SIM else 512
_NO_KEY = np.int32(-1)
_TOP = np.iinfo(np.int64).max


@cuda.jit(device=True)
def is_long_row(d, cnt, has_values, long_min, max_k):
    """Whether a row of ``d`` entries asked for ``cnt`` picks takes the block path
    (the statistics' test, ``d > long_min`` on a valued matrix, and few picks)."""
    return has_values and d > long_min and 0 < cnt <= max_k


@cuda.jit(device=True)
def block_scan(flags):
    """Exclusive scan of ``flags[:BLOCK]`` over the block: (this thread's, total)."""
    t = cuda.threadIdx.x
    x = flags[t]
    off = 1
    while off < BLOCK:
        cuda.syncthreads()
        y = flags[t - off] if t >= off else 0
        cuda.syncthreads()
        flags[t] += y
        off *= 2
    cuda.syncthreads()
    incl = flags[t]
    total = flags[BLOCK - 1]
    cuda.syncthreads()
    return incl - x, total


@cuda.jit(device=True)
def block_sort(out, o, cnt, sh):
    """Sort ``out[o:o+cnt]`` (``cnt <= MAX_K``) by a bitonic network in ``sh``."""
    t = cuda.threadIdx.x
    p = 1
    while p < cnt:
        p *= 2
    for q in range(t, p, BLOCK):
        sh[q] = out[o + q] if q < cnt else _TOP
    cuda.syncthreads()
    k = 2
    while k <= p:
        j = k // 2
        while j > 0:
            for q in range(t, p, BLOCK):
                r = q ^ j
                if r > q:
                    a = sh[q]
                    b = sh[r]
                    if (a > b) == ((q & k) == 0):
                        sh[q] = b
                        sh[r] = a
            cuda.syncthreads()
            j //= 2
        k *= 2
    for q in range(t, cnt, BLOCK):
        out[o + q] = sh[q]
    cuda.syncthreads()


@cuda.jit(device=True)
def _slot(key, bits):
    # Fibonacci hashing of a 31-bit key in 64-bit arithmetic (no wrap).
    return ((np.int64(key) * 2654435761) & 0xFFFFFFFF) >> (32 - bits)


@cuda.jit(device=True)
def _in_set(table, bits, key):
    s = _slot(key, bits)
    mask = (1 << bits) - 1
    while table[s] != _NO_KEY:
        if table[s] == key:
            return True
        s = (s + 1) & mask
    return False


@cuda.jit(device=True)
def _set_insert(table, bits, key):
    """Insert a key known to be absent (concurrent inserts of distinct keys)."""
    s = _slot(key, bits)
    mask = (1 << bits) - 1
    while cuda.atomic.cas(table, s, _NO_KEY, np.int32(key)) != _NO_KEY:
        s = (s + 1) & mask


@cuda.jit(device=True)
def _take_all(out, o, lo, hi, values, has_values, flags):
    """Every positive entry, in row order: a contiguous share per thread."""
    t = cuda.threadIdx.x
    share = (hi - lo + BLOCK - 1) // BLOCK
    a = min(hi, lo + t * share)
    b = min(hi, a + share)
    c = 0
    for j in range(a, b):
        if _weight_at(values, has_values, j) > 0.0:
            c += 1
    flags[t] = c
    f, _ = block_scan(flags)
    f += o
    for j in range(a, b):
        if _weight_at(values, has_values, j) > 0.0:
            out[f] = j
            f += 1
    cuda.syncthreads()


@cuda.jit(device=True)
def _with_replacement(out, o, cnt, lo, hi, prefix, mode, key, sh_sort):
    """Independent draws, one per thread at a time, then sorted."""
    d = hi - lo
    for q in range(cuda.threadIdx.x, cnt, BLOCK):
        if mode == _its.UNIFORM:
            r = min(np.int64(_uniform01(key, q) * d), d - 1)
            out[o + q] = lo + r
        else:
            out[o + q] = _search_prefix(prefix, lo, hi, _uniform01(key, q) * prefix[hi - 1])
    cuda.syncthreads()
    block_sort(out, o, cnt, sh_sort)


@cuda.jit(device=True)
def _reject_block(out, o, cnt, lo, hi, prefix, key, batch, table, sh_draw, flags):
    """``kernels.its._reject`` by a block: returns the same ``(filled, n)``.

    Each round searches the draws ``n .. n+b-1`` at once (one per thread),
    keeps a draw that is neither a pick so far (the shared hash set of row
    offsets) nor an earlier draw of the round, and accepts the kept draws in
    counter order (a block scan) up to the ``cnt``-th pick; ``n`` then
    stops where the one-draw-at-a-time loop stops when the picks run short
    (``n`` is then the budget; a row that fills needs no ``n``).  Picks land
    unsorted in ``out[o:o+filled]``.
    """
    t = cuda.threadIdx.x
    bits = 1
    while (1 << bits) < 2 * cnt:
        bits += 1
    for q in range(t, 1 << bits, BLOCK):
        table[q] = _NO_KEY
    cuda.syncthreads()
    total = prefix[hi - 1]
    budget = _budget(cnt, hi - lo)
    filled = 0
    n = 0
    while filled < cnt and n < budget:  # the same values in every thread
        b = min(batch, budget - n)
        j = np.int64(-1)
        if t < b:
            j = _search_prefix(prefix, lo, hi, _uniform01(key, n + t) * total)
            sh_draw[t] = j
        cuda.syncthreads()
        new = 0
        if t < b and not _in_set(table, bits, j - lo):
            new = 1
            for s in range(t):
                if sh_draw[s] == j:
                    new = 0
                    break
        flags[t] = new
        rank, kept = block_scan(flags)
        need = cnt - filled
        if new == 1 and rank < need:
            out[o + filled + rank] = j
            _set_insert(table, bits, j - lo)
        cuda.syncthreads()
        # A row that fills stops mid-round; its count of draws is only read
        # by the second phase, which it skips.
        n += b
        filled += min(kept, need)
    return filled, n


@cuda.jit(device=True)
def sample_long_row(out, o, cnt, lo, hi, values, has_values, prefix, mode, positives,
                    key, replace, batch, table, sh_sort, sh_draw, flags):
    """``kernels.its.sample_one_row`` by the whole block: the same picks.

    Every thread calls it with the same row.  Parallel: take-all rows (a
    scan of positive counts), draws with replacement (independent, then a
    bitonic sort) and the rejection phase of weighted rows without
    replacement (``_reject_block``).  Sequential, in thread 0: Floyd's
    algorithm for uniform rows without replacement (``cnt`` cheap draws,
    each depending on the picks before it) and the exact second phase of a
    row whose rejection budget ran out (``fill_by_scan``, the one-thread
    path's own code, from the same picks and counter).
    """
    if not replace and cnt >= positives:
        _take_all(out, o, lo, hi, values, has_values, flags)
    elif replace:
        _with_replacement(out, o, cnt, lo, hi, prefix, mode, key, sh_sort)
    elif mode == _its.UNIFORM:
        if cuda.threadIdx.x == 0:
            _sample_one_row(out, o, cnt, lo, hi, values, has_values, prefix, mode,
                            positives, key, replace)
        cuda.syncthreads()
    else:
        filled, n = _reject_block(out, o, cnt, lo, hi, prefix, key, batch, table,
                                  sh_draw, flags)
        if filled == cnt:
            block_sort(out, o, cnt, sh_sort)
        else:
            if cuda.threadIdx.x == 0:
                _sort_range(out, o, o + filled)
                _fill_by_scan(out, o, cnt, filled, n, lo, hi, values, has_values, key)
            cuda.syncthreads()
