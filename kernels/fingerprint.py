"""One row's share of a CSR pattern's symmetry fingerprints (CPU and CUDA).

``row_fingerprint(indptr, indices, i)`` returns ``(a1, b1, a2, b2)``: over
row ``i``'s entries ``(i, j)``, the uint64 sums (mod 2**64) of a hash
``h(i, j)`` of the entry as stored (``a1``) and of ``h(j, i)``, the same
entry transposed (``b1``), then of a second avalanche of each (``a2``,
``b2``).  Summed over all rows, ``a1 == b1`` and ``a2 == b2`` when the
pattern equals its transpose's; see ``spla.edges.is_symmetric_pattern`` for
what the comparison promises.  ``h(a, b)`` is a bijection of ``b`` for each
``a``, so distinct entries of a row hash apart.  The CPU kernel
(``kernels.cpu.positions``) and its CUDA twin call this one function, so
both backends give the same sums.
"""

import numba
import numpy as np

from kernels.common import mix64

# Keys of the two hash families (odd 64-bit constants with no structure in
# common with splitmix64's own).
_K1 = np.uint64(0xD1B54A32D192ED03)
_K2 = np.uint64(0x8CB92BA72F3D8DD7)
_M1 = np.uint64(0xBF58476D1CE4E5B9)


@numba.njit(cache=True, inline="always")
def row_fingerprint(indptr, indices, i):
    """``(a1, b1, a2, b2)`` of row ``i`` (see the module's docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.fingerprint import row_fingerprint
    >>> ptr, idx = np.array([0, 1, 2]), np.array([1, 0])   # entries (0, 1), (1, 0)
    >>> r0, r1 = row_fingerprint(ptr, idx, 0), row_fingerprint(ptr, idx, 1)
    >>> bool(r0[0] == r1[1] and r0[1] == r1[0])
    True
    """
    ui = np.uint64(i)
    hi = mix64(ui + _K1)
    a1 = np.uint64(0)
    b1 = np.uint64(0)
    a2 = np.uint64(0)
    b2 = np.uint64(0)
    for k in range(indptr[i], indptr[i + 1]):
        uj = np.uint64(indices[k])
        hj = mix64(uj + _K1)
        h = mix64(hi ^ (uj * _M1))       # entry (i, j)
        ht = mix64(hj ^ (ui * _M1))      # entry (j, i) of the transpose
        a1 += h
        b1 += ht
        a2 += mix64(h ^ _K2)
        b2 += mix64(ht ^ _K2)
    return a1, b1, a2, b2
