"""Column scaling and row normalisation in two launches, CUDA (twin of
``kernels.cpu.layer_ops``, see there): a thread per entry each, an entry's
row found by binary search in the row pointer."""

from numba import cuda

from kernels.common import lower_bound as _lower_bound
from kernels.cuda._util import device, launch

lower_bound = device(_lower_bound)


@cuda.jit(cache=True)
def _scale(idx, vals, hv, d, out):
    start = cuda.grid(1)
    for e in range(start, idx.size, cuda.gridsize(1)):
        out[e] = vals[e] * d[idx[e]] if hv != 0 else d[idx[e]]


def scale_entries(idx, vals, hv, d, out):
    """``out[e] = vals[e] * d[idx[e]]`` (``d[idx[e]]`` without values), in ``out``'s dtype."""
    if idx.size:
        launch(_scale, idx.size, idx, vals, hv, d, out)
    return out


@cuda.jit(cache=True)
def _divide(ptr, vals, sums):
    n = ptr.size - 1
    start = cuda.grid(1)
    for e in range(start, vals.size, cuda.gridsize(1)):
        i = lower_bound(ptr, 0, n + 1, e + 1) - 1
        s = sums[i]
        if s != 0:
            vals[e] = vals[e] / s


def divide_rows(ptr, vals, sums):
    """``vals`` of row i divided by ``sums[i]`` in place (rows summing to 0 kept)."""
    if vals.size:
        launch(_divide, vals.size, ptr, vals, sums)
    return vals
