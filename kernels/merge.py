"""Merging two sorted rows: the element-wise union and intersection of both backends.

``kernels.cpu.ewise`` and ``kernels.cuda.ewise`` call these per row pair
(the CUDA twin as device functions), so both count and fill alike.  Values
arrive cast to the output dtype; ``op`` is a ``kernels.semiring_ops``
additive code for the union and multiplicative code for the intersection.
"""

import numba

from kernels.semiring_ops import add_op, mul_op


@numba.njit(cache=True, inline="always")
def merge_count(a_idx, alo, ahi, b_idx, blo, bhi, union):
    """Entries of the union (or intersection) of two sorted rows."""
    p = alo
    q = blo
    c = 0
    while p < ahi and q < bhi:
        if a_idx[p] == b_idx[q]:
            c += 1
            p += 1
            q += 1
        elif a_idx[p] < b_idx[q]:
            if union:
                c += 1
            p += 1
        else:
            if union:
                c += 1
            q += 1
    if union:
        c += (ahi - p) + (bhi - q)
    return c


@numba.njit(cache=True, inline="always")
def merge_fill(a_idx, p, ahi, a_val, a_hv, b_idx, q, bhi, b_val, b_hv, union, op,
                onev, out_idx, out_val, f):
    """Merge one row pair into ``out[f:]``."""
    while p < ahi or q < bhi:
        take_a = q >= bhi or (p < ahi and a_idx[p] < b_idx[q])
        take_b = p >= ahi or (q < bhi and b_idx[q] < a_idx[p])
        if take_a:
            if union:
                out_idx[f] = a_idx[p]
                out_val[f] = a_val[p] if a_hv else onev
                f += 1
            p += 1
        elif take_b:
            if union:
                out_idx[f] = b_idx[q]
                out_val[f] = b_val[q] if b_hv else onev
                f += 1
            q += 1
        else:
            av = a_val[p] if a_hv else onev
            bv = b_val[q] if b_hv else onev
            out_idx[f] = a_idx[p]
            if union:
                out_val[f] = add_op(op, av, bv)
            else:
                out_val[f] = mul_op(op, av, bv, onev)
            f += 1
            p += 1
            q += 1
