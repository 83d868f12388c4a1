"""Row-wise reduction with a monoid, CUDA.

Twin of ``kernels.cpu.reduce``: one thread per row folds the row with the
helpers the CPU kernel calls (``kernels.its_search.blocked_sum`` for
``plus``, ``kernels.semiring_ops.fold_row`` otherwise); long rows of a
float ``plus`` take a block each (``kernels.cuda.long_rows``, the same
blocked order).  ``identity`` (length-1 array of the output dtype) is what an empty row reduces to; ``op`` is a
``kernels.semiring_ops`` additive code.
"""

from numba import cuda

from kernels.cuda._util import device, launch, _xp
from kernels.cuda.long_rows import LONG_MIN, long_row_sums
from kernels.its_search import LEAF, blocked_sum as _blocked_sum
from kernels.semiring_ops import ADD_PLUS, fold_row as _fold_row

fold_row = device(_fold_row)
_NEVER = 1 << 62
blocked_sum = device(_blocked_sum)


@cuda.jit(cache=True)
def _reduce_rows(ptr, val, hv, op, identity, one, out, long_min):
    n = ptr.size - 1
    onev = one[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        lo = ptr[i]
        hi = ptr[i + 1]
        if hi == lo:
            out[i] = identity[0]
            continue
        if hi - lo > long_min:
            continue  # long_rows._long_sum's row
        if op == ADD_PLUS:
            blocked_sum(val, lo, hi, hv, onev, identity[0], LEAF, out, i)
        else:
            fold_row(val, lo, hi, hv, op, onev, out, i)


def reduce_rows(ptr, val, hv, op, identity, one):
    xp = _xp(ptr)
    n = ptr.size - 1
    out = xp.empty(max(n, 0), identity.dtype)
    if n > 0:
        # Long rows of a float plus go to a block each; the other monoids
        # and integer sums are exact in any order, and stay one thread a row.
        long_min = _NEVER
        if hv and op == ADD_PLUS and identity.dtype.kind == "f":
            long_min = LONG_MIN
            long_row_sums(ptr, val, identity, one, out)
        launch(_reduce_rows, n, ptr, val, bool(hv), op, identity, one, out, long_min)
    return out
