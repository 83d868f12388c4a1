"""Sparse-vector kernels, CPU: value maps of user operators, and the union
of two sorted key lists.

A user operator arrives as a numba dispatcher; a kernel taking one is
compiled per operator, and numba cannot cache such specialisations, hence
no ``cache`` on ``map_pairs``.

``union_sorted`` merges two vectors' sorted, distinct keys in one serial
pass: a vector's union is one row, which a parallel region cannot share
out.  Runs of one side that fall between two keys of the other are found
by a galloping search and copied whole, so adding a few entries to a large
vector (a BFS's parents and its next frontier) costs the copy of the large
one and a logarithm per entry of the small one, not a comparison per entry
and no scratch of the vectors' size.
"""

import numba
import numpy as np
from numba import prange

from kernels.parallel import parallel_kernel
from kernels.semiring_ops import add_op, find_sorted


@parallel_kernel(lambda a, b, f, out: int(a.size), cache=False, inputs=("a", "b"))
def map_pairs(a, b, f, out):
    """``out[t] = f(a[t], b[t])`` for every t."""
    for t in prange(a.size):
        out[t] = f(a[t], b[t])
    return out


@numba.njit(cache=True, inline="always")
def gallop(idx, lo, hi, x):
    """The first position p in lo..hi-1 with idx[p] >= x (idx sorted), or hi.

    Steps of 1, 2, 4, ... from ``lo``, then a binary search of the last
    step: a logarithm of the distance to the answer, not of ``hi - lo``.
    """
    prev = lo
    step = 1
    while lo < hi and idx[lo] < x:
        prev = lo + 1
        lo += step
        step <<= 1
    return find_sorted(idx, prev, min(lo, hi), x)


@numba.njit(cache=True, inline="always")
def _copy_run(keys, vals, f, k, v, hv, onev, lo, hi):
    """Entries lo..hi-1 of one side into the output from position f.

    Plain loops over slice views, one per array, indexed by the loop
    counter alone: numba's slice assignment (its generic array copy) and
    loops indexing the whole arrays at ``f + t`` both ran slower
    (benchmarks/results/graphblas_cpu.md).
    """
    m = hi - lo
    dk = keys[f:f + m]
    sk = k[lo:hi]
    dv = vals[f:f + m]
    for t in range(m):
        dk[t] = sk[t]
    if hv:
        sv = v[lo:hi]
        for t in range(m):
            dv[t] = sv[t]
    else:
        for t in range(m):
            dv[t] = onev
    return f + m


@numba.njit(cache=True, inline="always")
def _step(ka, va, a_hv, kb, vb, b_hv, p, q, op, onev, keys, vals, f):
    """One output of the merge, written without a branch on the keys' order
    (selects: the order of interleaved keys is a coin toss to a predictor)."""
    x = ka[p]
    y = kb[q]
    ta = x <= y
    tb = y <= x
    u = va[p] if a_hv else onev
    w = vb[q] if b_hv else onev
    keys[f] = x if ta else y
    vals[f] = add_op(op, u, w) if (ta and tb) else (u if ta else w)
    return p + ta, q + tb


@numba.njit(cache=True, nogil=True)
def union_sorted(ka, va, a_hv, kb, vb, b_hv, op, one):
    """(keys, vals): the union of two sorted, distinct int64 key arrays.

    A key of both sides gets ``add_op(op, a, b)`` (``ADD_ANY`` keeps a's
    value); a key of one side keeps its value.  Values arrive cast to the
    output dtype (``one``'s, ``one[0]`` standing in for a side without
    values: ``a_hv`` / ``b_hv`` False).  Sides of alike sizes merge entry
    by entry; a side 8 times shorter than the other is placed by galloping
    searches, the other's runs copied between its keys.
    """
    na = ka.size
    nb = kb.size
    keys = np.empty(na + nb, np.int64)
    vals = np.empty(na + nb, one.dtype)
    onev = one[0]
    f = 0
    p = 0
    q = 0
    if 8 * min(na, nb) < max(na, nb):
        while p < na and q < nb:
            if ka[p] < kb[q]:
                e = gallop(ka, p, na, kb[q])
                f = _copy_run(keys, vals, f, ka, va, a_hv, onev, p, e)
                p = e
            elif kb[q] < ka[p]:
                e = gallop(kb, q, nb, ka[p])
                f = _copy_run(keys, vals, f, kb, vb, b_hv, onev, q, e)
                q = e
            else:
                keys[f] = ka[p]
                vals[f] = add_op(op, va[p] if a_hv else onev, vb[q] if b_hv else onev)
                f += 1
                p += 1
                q += 1
    else:
        while p < na and q < nb:
            p, q = _step(ka, va, a_hv, kb, vb, b_hv, p, q, op, onev, keys, vals, f)
            f += 1
    f = _copy_run(keys, vals, f, ka, va, a_hv, onev, p, na)
    f = _copy_run(keys, vals, f, kb, vb, b_hv, onev, q, nb)
    if f == na + nb:
        return keys, vals
    # keys of both sides: trim (a copy when the slack is a large share)
    if 4 * (na + nb - f) > f:
        return keys[:f].copy(), vals[:f].copy()
    return keys[:f], vals[:f]


@numba.njit(cache=True, nogil=True)
def key_flags(keys, n, complement):
    """A boolean array of size n: True at ``keys`` (False with ``complement``)
    and the opposite elsewhere.  The keys are sorted, so the writes walk
    the array forwards, where numpy's scatter pays for generic indexing."""
    flags = np.full(n, complement, np.bool_)
    mark = not complement
    for t in range(keys.size):
        flags[keys[t]] = mark
    return flags
