"""CUDA kernels (numba.cuda), twins of ``kernels.cpu``.  One module per operation.

Each public function has the name, arguments and returns of its CPU twin and
allocates its outputs with the array module of its inputs (cupy on a GPU,
numpy under the CUDA simulator).  ``kernels.cpu.generate`` has no twin: the
graph generators build on the host.
"""

from kernels.cuda import _util

if not _util.SIM:
    _util.check_numba_cuda()

from kernels.cuda import (csr, ewise, extract, gather, groups, hops, masked,  # noqa: E402,F401
                          positions, random, reduce, sample, spgemm, spmm, topk)
