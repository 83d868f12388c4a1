"""CPU kernels (numba ``@njit``, parallel).  One module per operation."""

from kernels.cpu import (csr, ewise, extract, gather, generate, groups, hops,  # noqa: F401
                         masked, positions, random, reduce, sample, spgemm, spmm, topk,
                         vector)
