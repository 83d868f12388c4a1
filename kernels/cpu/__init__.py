"""CPU kernels (numba ``@njit``, parallel).  One module per operation."""

from kernels.cpu import csr, ewise, extract, groups, reduce, sample, spgemm, topk  # noqa: F401
