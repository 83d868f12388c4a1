"""Row gathers through a hot-row cache, CUDA: twin of ``kernels.cpu.gather``.

One thread per output element, in row-major order, so consecutive threads
of a warp copy consecutive columns of one row: a row of a 4-byte dtype is
read in 128-byte transactions, which matters most for ``cold`` rows that
live in mapped host memory and cross the host-device link.  The matrices
are flat (with their width ``f``) so that every parameter is a 1-D array or
a 64-bit scalar and the launch takes the direct path of
``kernels.cuda._util.launch``.  Hits are counted per thread in a register
and added to the device counter with one atomic per thread, not per row,
so that the counter is never contended; nothing is read back to the host.

``take_sparse_rows`` gathers rows of a CSR matrix into a dense output: the
output is zeroed (one fill) and a thread per output row puts its row's
stored entries in place, so each stored entry is read once, which matters
when the matrix lives in mapped host memory.
"""

import numpy as np
from numba import cuda

from kernels import opcount
from kernels.cuda._util import SIM, _xp, launch


@cuda.jit(cache=True)
def _gather(ids, slot, hot, cold, f, out, hits):
    total = ids.size * f
    i = np.int64(cuda.grid(1))
    step = np.int64(cuda.gridsize(1))
    hit = 0
    while i < total:
        r = i // f
        c = i - r * f
        v = ids[r]
        s = slot[v]
        if s >= 0:
            out[i] = hot[s * f + c]
            if c == 0:
                hit += 1
        else:
            out[i] = cold[v * f + c]
        i += step
    if hit:
        cuda.atomic.add(hits, 0, hit)


@cuda.jit(cache=True)
def _scatter_sparse(ids, indptr, indices, values, has_values, f, out):
    r = np.int64(cuda.grid(1))
    step = np.int64(cuda.gridsize(1))
    while r < ids.size:
        v = ids[r]
        base = r * f
        for e in range(indptr[v], indptr[v + 1]):
            if has_values != 0:
                out[base + indices[e]] = values[e]
            else:
                out[base + indices[e]] = 1
        r += step


def _plain(a):
    # Under the simulator a cupy stand-in's element reads return 0-d arrays,
    # which simulated device code cannot use as indices.
    return a.view(np.ndarray) if SIM and isinstance(a, np.ndarray) else a


def gather_rows(ids, slot, hot, cold, f, out, hits):
    """The twin of ``kernels.cpu.gather.gather_rows`` (one launch, no host read)."""
    n = int(ids.size) * int(f)
    if n:
        args = [_plain(a) for a in (ids, slot, hot, cold)]
        launch(_gather, n, *args, np.int64(f), _plain(out), _plain(hits))
    return out


def take_sparse_rows(ids, indptr, indices, values, out):
    """The twin of ``kernels.cpu.gather.take_sparse_rows`` (a fill and one
    launch, no host read); ``out`` is 2-D."""
    if ids.size and out.shape[1]:
        if _xp(out) is not np:
            opcount.add_launch()
        out.fill(0)
        has = values is not None
        vals = values if has else out.reshape(-1)[:0]
        args = [_plain(a) for a in (ids, indptr, indices, vals)]
        launch(_scatter_sparse, int(ids.size), *args, np.int64(has),
               np.int64(out.shape[1]), _plain(out.reshape(-1)))
    return out
