"""Column scaling and row normalisation in two passes, CPU (twin of
``kernels.cuda.layer_ops``).

``scale_entries`` multiplies each entry by its column's scale, in the
values' dtype (one rounding, as ``values * d[indices]`` rounds);
``divide_rows`` divides each row's entries by the row's sum (the sums come
from the row reduction both devices share), leaving a row that sums to 0 as
it is: ``x / 1`` is ``x``, so skipping the division is the division.
"""

import numba


@numba.njit(cache=True, nogil=True)
def _scale(idx, vals, hv, d, out):
    for e in range(idx.size):
        out[e] = vals[e] * d[idx[e]] if hv else d[idx[e]]


def scale_entries(idx, vals, hv, d, out):
    """``out[e] = vals[e] * d[idx[e]]`` (``d[idx[e]]`` without values), in ``out``'s dtype."""
    if idx.size:
        _scale(idx, vals, hv, d, out)
    return out


@numba.njit(cache=True, nogil=True)
def _divide(ptr, vals, sums):
    for i in range(ptr.size - 1):
        s = sums[i]
        if s != 0:
            for e in range(ptr[i], ptr[i + 1]):
                vals[e] = vals[e] / s


def divide_rows(ptr, vals, sums):
    """``vals`` of row i divided by ``sums[i]`` in place (rows summing to 0 kept)."""
    if vals.size:
        _divide(ptr, vals, sums)
    return vals
