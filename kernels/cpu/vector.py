"""Value maps for user-defined binary operators, CPU.

A user operator arrives as a numba dispatcher; a kernel taking one is
compiled per operator, and numba cannot cache such specialisations, hence
no ``cache``.
"""

from numba import prange

from kernels.parallel import parallel_kernel


@parallel_kernel(lambda a, b, f, out: int(a.size), cache=False)
def map_pairs(a, b, f, out):
    """``out[t] = f(a[t], b[t])`` for every t."""
    for t in prange(a.size):
        out[t] = f(a[t], b[t])
    return out
