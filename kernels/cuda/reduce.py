"""Row-wise reduction with a monoid, CUDA.

Twin of ``kernels.cpu.reduce``: one thread per row folds the row left to
right, as the CPU kernel does.  ``identity`` (length-1 array of the output
dtype) is what an empty row reduces to; ``op`` is a
``kernels.semiring_ops`` additive code.
"""

from numba import cuda

from kernels.cuda._util import BLOCK, _xp, blocks, device
from kernels.semiring_ops import add_op as _add_op

add_op = device(_add_op)


@cuda.jit(cache=True)
def _reduce_rows(ptr, val, hv, op, identity, one, out):
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
        # The running value lives in out[i], in the output dtype (spla passes
        # val, one and identity in that dtype): floats round at every step
        # as the CPU accumulator does, integers wrap to the same result, and
        # under the simulator no step is computed in a wider type.
        out[i] = val[lo] if hv else onev
        for q in range(lo + 1, hi):
            out[i] = add_op(op, out[i], val[q] if hv else onev)


def reduce_rows(ptr, val, hv, op, identity, one):
    xp = _xp(ptr)
    n = ptr.size - 1
    out = xp.empty(max(n, 0), identity.dtype)
    if n > 0:
        _reduce_rows[blocks(n), BLOCK](ptr, val, bool(hv), op, identity, one,
                                       out)
    return out
