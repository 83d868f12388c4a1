"""CPU kernels (numba ``@njit``, parallel).  One module per operation."""

from kernels.cpu import (csr, ewise, extract, generate, groups, masked, positions,  # noqa: F401
                         reduce, sample, spgemm, spmm, topk, vector)
