"""Element-wise union (``ewise_add``) and intersection (``ewise_mult``), CPU.

Both merge two sorted rows; two passes (count, fill).  Values arrive cast to
the output dtype.  ``op`` is a ``kernels.semiring_ops`` additive code for the
union and multiplicative code for the intersection.
"""

import numpy as np
from numba import prange

from kernels.merge import merge_count, merge_fill
from kernels.parallel import parallel_kernel


def _ewise_work(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, *rest):
    return int(a_idx.size) + int(b_idx.size)


@parallel_kernel(_ewise_work, inputs=("a_ptr", "a_idx", "a_val", "b_ptr", "b_idx", "b_val"))
def ewise(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, union, op,
          one):
    n = a_ptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        out_ptr[i + 1] = merge_count(a_idx, a_ptr[i], a_ptr[i + 1], b_idx,
                                      b_ptr[i], b_ptr[i + 1], union)
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    nnz = out_ptr[n]
    out_idx = np.empty(nnz, np.int64)
    out_val = np.empty(nnz, one.dtype)
    onev = one[0]
    for i in prange(n):
        merge_fill(a_idx, a_ptr[i], a_ptr[i + 1], a_val, a_hv, b_idx, b_ptr[i],
                    b_ptr[i + 1], b_val, b_hv, union, op, onev, out_idx, out_val,
                    out_ptr[i])
    return out_ptr, out_idx, out_val


# User functions arrive as numba dispatchers; a kernel taking one is compiled
# per function, and numba cannot cache such specialisations, hence no cache.
@parallel_kernel(lambda vals, f, out: int(vals.size), cache=False, inputs=("vals",))
def map_values_into(vals, f, out):
    """``out[t] = f(vals[t])`` for every value."""
    for t in prange(vals.size):
        out[t] = f(vals[t])
    return out


def map_values(vals, f):
    """``f`` applied to every value; the output dtype is that of ``f(vals[0])``."""
    if vals.size == 0:
        return vals.copy()
    dtype = np.asarray(f(vals[0])).dtype
    return map_values_into(vals, f, np.empty(vals.size, dtype))


@parallel_kernel(lambda ptr, idx, vals, pred: int(idx.size), cache=False,
                 inputs=("ptr", "idx", "vals"))
def select_mask(ptr, idx, vals, pred):
    """Boolean mask of the entries (i, j, v) with ``pred(i, j, v)`` true."""
    n = ptr.size - 1
    keep = np.empty(idx.size, np.bool_)
    for i in prange(n):
        for t in range(ptr[i], ptr[i + 1]):
            keep[t] = pred(i, idx[t], vals[t])
    return keep
