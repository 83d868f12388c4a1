"""Keyed uniforms on whole arrays, CPU: ``uniform`` and ``uniform_rows``.

``uniform(ids, seed, stream, out)`` writes ``out[i] = uniform01(row_key(seed,
stream, ids[i]), 0)``: one double in [0, 1) per id, the hash of every draw of
spla (``kernels.common``), so a value depends on (seed, stream, id) alone.
``uniform_rows(ids, seed, stream, out)`` writes, for a 2-D ``out`` of width
``w``, ``out[i, j]`` = the uniform of id ``ids[i] * w + j``: the uniforms of
the rows ``ids`` of a virtual ``(n, w)`` array, without the ``ids x w`` keys
(``spla.random.uniform(..., width=w)``).  ``seed`` and ``stream`` are uint64.
"""

import numpy as np
from numba import prange

from kernels.common import row_key, uniform01
from kernels.parallel import parallel_kernel


@parallel_kernel(lambda ids, seed, stream, out: ids.size, inputs=("ids",))
def uniform(ids, seed, stream, out):
    """``out[i]``: the uniform of id ``ids[i]`` under (seed, stream)."""
    for i in prange(ids.size):
        out[i] = uniform01(row_key(seed, stream, ids[i]), 0)
    return out


@parallel_kernel(lambda ids, seed, stream, out: out.size, inputs=("ids",))
def uniform_rows(ids, seed, stream, out):
    """``out[i, j]``: the uniform of id ``ids[i] * out.shape[1] + j`` under (seed, stream)."""
    w = out.shape[1]
    for i in prange(ids.size):
        base = ids[i] * w
        for j in range(w):
            out[i, j] = uniform01(row_key(seed, stream, base + j), 0)
    return out
