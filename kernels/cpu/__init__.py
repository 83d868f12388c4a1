"""CPU kernels (numba ``@njit``, parallel).  One module per operation."""

from kernels.cpu import (csr, ewise, extract, gather, generate, groups, masked,  # noqa: F401
                         positions, reduce, sample, spgemm, spmm, topk, vector)
