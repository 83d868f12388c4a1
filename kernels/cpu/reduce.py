"""Row-wise reduction with a monoid, CPU.

``identity`` (length-1 array of the output dtype) is what an empty row
reduces to; ``op`` is a ``kernels.semiring_ops`` additive code.  ``plus`` sums in the blocked order
of ``kernels.its_search.blocked_sum`` (the left-to-right sum for rows of at
most ``LEAF`` entries), which the CUDA twin's block-per-row kernel can
compute in parallel bit for bit; the other monoids fold left to right.
"""

import numpy as np
from numba import prange

from kernels.parallel import parallel_kernel
from kernels.its_search import LEAF, blocked_sum
from kernels.semiring_ops import ADD_PLUS, fold_row


@parallel_kernel(lambda ptr, val, hv, op, identity, one: int(ptr[-1]) + int(ptr.size),
                 inputs=("ptr", "val"))
def reduce_rows(ptr, val, hv, op, identity, one):
    n = ptr.size - 1
    out = np.empty(n, identity.dtype)
    onev = one[0]
    for i in prange(n):
        lo = ptr[i]
        hi = ptr[i + 1]
        if hi == lo:
            out[i] = identity[0]
            continue
        if op == ADD_PLUS:
            blocked_sum(val, lo, hi, hv, onev, identity[0], LEAF, out, i)
        else:
            fold_row(val, lo, hi, hv, op, onev, out, i)
    return out
