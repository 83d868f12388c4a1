"""CPU kernels (numba ``@njit``, parallel).  One module per operation."""

from kernels.cpu import (csr, ewise, extract, generate, groups, positions, reduce,  # noqa: F401
                         sample, spgemm, spmm, topk)
