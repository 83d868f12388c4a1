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
"""

import numpy as np
from numba import cuda

from kernels import its_search as _its, opcount
from kernels.cuda._util import BLOCK, device, _xp

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
    opcount.add_launch()
    _long_stats[grid, BLOCK](indptr, values, bool(has_values), bool(write_prefix), leaf,
                             long_min, prefix, positives, modes, *s)


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
    opcount.add_launch()
    _long_sum[max(1, min(n, 65535)), BLOCK](ptr, val, True, one, identity, leaf, long_min,
                                            out, *s)
