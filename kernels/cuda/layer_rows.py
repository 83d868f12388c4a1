"""Block-per-row helpers of the layer-wise kernels, CUDA.

The kernels of ``layer_groups`` and ``layer_sums`` give a thread to a row
of A (or of a sampled matrix); on a power-law graph a hub row holds 10^4 to
10^5 entries and its thread would run long after the rest of the grid.
Each such kernel therefore works in two phases in one launch: a
grid-stride loop over the rows of at most ``LONG_ROW`` entries, a thread
each, then a loop of the blocks over the longer rows, the block's threads
sharing the row's entries.  Both phases test the same length, which the
kernel reads from the row pointer: choosing costs no read on the host.

Outputs keep the one-thread order bit for bit: a thread walks a contiguous
share of the row and places its outputs after those of the threads before
it (``long_rows.block_scan`` over the shares' counts), and sorts of a long
row go through ``block_sort_pairs`` (a bitonic network over keys packed with
their positions, so equal keys keep their order).
"""

import numpy as np
from numba import cuda

from kernels.common import sort_pairs_inplace as _sort_pairs
from kernels.common import sort_range as _sort_range
from kernels.cuda._util import BLOCK, SIM, device
from kernels.cuda.long_rows import block_scan, block_sort

sort_pairs = device(_sort_pairs)
sort_range = device(_sort_range)

#: Rows of more entries than this go to a block (a few entries under the
#: simulator, so that the tests' tiny inputs take the block path).
LONG_ROW = 4 if SIM else 256
#: Most entries ``block_sort_pairs`` sorts by a block (its shared memory:
#: two int64 arrays of this size); a layer-wise output row holds at most its
#: group's columns (a minibatch's destinations and picks, about 2,000 for
#: [512, 512] on 1,024 seeds).  Longer runs are sorted by one thread.
SORT_MAX = 2048
#: ``block_sort_pairs`` packs ``key * SORT_MAX + position``: keys below this fit.
KEY_LIMIT = (1 << 62) // SORT_MAX
#: A row length no row exceeds: every row takes the one-thread path.
NEVER = np.int64(np.iinfo(np.int64).max)

__all__ = ["LONG_ROW", "SORT_MAX", "KEY_LIMIT", "NEVER", "block_scan", "block_total",
           "share", "block_sort_pairs", "long_row_for"]


def long_row_for(max_key):
    """The length threshold for a launch whose sort keys stay below ``max_key``
    (the one-thread path for all rows when the packed keys could overflow)."""
    return np.int64(LONG_ROW) if int(max_key) < KEY_LIMIT else NEVER


@cuda.jit(device=True)
def block_total(sh, c):
    """The sum of every thread's ``c`` over the block (``sh``: BLOCK int64 shared)."""
    t = cuda.threadIdx.x
    sh[t] = c
    cuda.syncthreads()
    half = BLOCK // 2
    while half > 0:
        if t < half:
            sh[t] += sh[t + half]
        cuda.syncthreads()
        half //= 2
    total = sh[0]
    cuda.syncthreads()
    return total


@cuda.jit(device=True)
def share(lo, hi):
    """This thread's contiguous share ``[a, b)`` of ``[lo, hi)`` (row order by thread)."""
    s = (hi - lo + BLOCK - 1) // BLOCK
    a = min(hi, lo + cuda.threadIdx.x * s)
    return a, min(hi, a + s)


@cuda.jit(device=True)
def block_sort_pairs(keys, vals, with_vals, lo, m, sh_k, sh_v):
    """Sort ``keys[lo:lo+m]`` ascending (stable; keys in ``[0, KEY_LIMIT)``),
    ``vals`` alongside when ``with_vals``, by the whole block.

    Up to ``SORT_MAX`` entries by ``long_rows.block_sort`` over
    ``key * SORT_MAX + offset`` (``sh_k``, ``sh_v``: SORT_MAX int64 shared each);
    longer runs by thread 0 (the one-thread path's sort: distinct keys give
    the same order).
    """
    t = cuda.threadIdx.x
    if m > SORT_MAX:
        if t == 0:
            if with_vals != 0:
                sort_pairs(keys, vals, lo, lo + m)
            else:
                sort_range(keys, lo, lo + m)
        cuda.syncthreads()
        return
    for q in range(t, m, BLOCK):
        keys[lo + q] = keys[lo + q] * SORT_MAX + q
    cuda.syncthreads()
    block_sort(keys, lo, m, sh_k)
    for q in range(t, m, BLOCK):
        x = keys[lo + q]
        keys[lo + q] = x // SORT_MAX
        if with_vals != 0:
            sh_v[q] = vals[lo + x % SORT_MAX]
    cuda.syncthreads()
    if with_vals != 0:
        for q in range(t, m, BLOCK):
            vals[lo + q] = sh_v[q]
    cuda.syncthreads()
