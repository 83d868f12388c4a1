"""Keyed uniforms on whole arrays, CUDA: twin of ``kernels.cpu.random``.

One thread per output element; the values come from the helpers the CPU
kernels call (``kernels.common.row_key`` and ``uniform01``), so they are the
CPU's bit for bit.  A key is passed on as ``np.uint64``: under the simulator
the helpers run as CPU functions, which return a uint64 as a Python int.
"""

import numpy as np
from numba import cuda

from kernels.common import row_key as _row_key
from kernels.common import uniform01 as _uniform01
from kernels.cuda._util import device, launch

row_key = device(_row_key)
uniform01 = device(_uniform01)


@cuda.jit(cache=True)
def _uniform(ids, seed, stream, out):
    start = cuda.grid(1)
    for i in range(start, ids.size, cuda.gridsize(1)):
        out[i] = uniform01(np.uint64(row_key(seed, stream, ids[i])), 0)


def uniform(ids, seed, stream, out):
    """``out[i]``: the uniform of id ``ids[i]`` under (seed, stream)."""
    if ids.size:
        launch(_uniform, ids.size, ids, np.uint64(seed), np.uint64(stream), out)
    return out


@cuda.jit(cache=True)
def _uniform_rows(ids, seed, stream, out):
    w = out.shape[1]
    start = cuda.grid(1)
    for t in range(start, out.size, cuda.gridsize(1)):
        i = t // w
        j = t - i * w
        out[i, j] = uniform01(np.uint64(row_key(seed, stream, ids[i] * w + j)), 0)


def uniform_rows(ids, seed, stream, out):
    """``out[i, j]``: the uniform of id ``ids[i] * out.shape[1] + j`` under (seed, stream)."""
    if out.size:
        launch(_uniform_rows, out.size, ids, np.uint64(seed), np.uint64(stream), out)
    return out
