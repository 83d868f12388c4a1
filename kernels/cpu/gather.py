"""Row gathers through a hot-row cache (CPU twin of ``kernels.cuda.gather``).

``gather_rows`` writes ``out[r] = hot[slot[v]]`` where vertex ``v = ids[r]``
has a cache slot (``slot[v] >= 0``) and ``out[r] = cold[v]`` otherwise, and
adds the number of rows served by ``hot`` to ``hits[0]``.  The matrices are
passed flattened (C order) with their row width ``f``, as the CUDA twin
takes them, so both have one signature per dtype.

``take_rows`` is the gather without a cache, ``out[r] = cold[ids[r]]``, on
every thread: numpy's ``take`` copies on one, and a bulk's feature rows
(tens to hundreds of megabytes for a loader feeding a GPU) are random reads
of whole rows that more threads overlap.  On the GPU cupy's ``take`` is
already one parallel kernel.

``take_sparse_rows`` is the same gather from a CSR matrix, written dense
(a sparse bag-of-words feature matrix feeding a model): the selected rows'
entries are copied out compactly, then each output row is zeroed and its
entries put in place.
"""

import numba
import numpy as np

from kernels.cpu import extract
from kernels.parallel import parallel_kernel


def _take_work(ids, cold, out):
    return int(ids.size) * int(cold.shape[1])


@parallel_kernel(_take_work, inputs=("ids", "cold"))
def _take(ids, cold, out):
    # Two-dimensional C-contiguous operands: LLVM vectorises the row copy
    # (flat arrays with a run-time width ran 2.5x slower than numpy's take).
    f = cold.shape[1]
    for r in numba.prange(ids.size):
        v = ids[r]
        for c in range(f):
            out[r, c] = cold[v, c]


def take_rows(ids, cold, out):
    """``out[r] = cold[ids[r]]`` for C-contiguous 2-D ``cold`` and ``out``;
    ids are trusted to be in range.

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.cpu.gather import take_rows
    >>> cold = np.arange(6.0).reshape(3, 2)
    >>> take_rows(np.array([2, 0]), cold, np.empty((2, 2))).tolist()
    [[4.0, 5.0], [0.0, 1.0]]
    """
    if ids.size and cold.shape[1]:
        _take(ids, cold, out)
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def _gather(ids, slot, hot, cold, f, out):
    # Viewed as rows (two-dimensional, C order): the row copies vectorise.
    hot2 = hot.reshape((hot.size // f, f))
    cold2 = cold.reshape((cold.size // f, f))
    out2 = out.reshape((out.size // f, f))
    n = ids.size
    hit = 0
    for r in numba.prange(n):
        v = ids[r]
        s = slot[v]
        if s >= 0:
            for c in range(f):
                out2[r, c] = hot2[s, c]
            hit += 1
        else:
            for c in range(f):
                out2[r, c] = cold2[v, c]
    return hit


def gather_rows(ids, slot, hot, cold, f, out, hits):
    """Gather rows of ``hot`` (cached) or ``cold`` (all rows) into ``out``.

    Parameters
    ----------
    ids : int64 array (k,)
        The vertices whose rows are gathered, each in ``[0, slot.size)``.
    slot : int64 array (n,)
        The cache slot of each vertex (its row in ``hot``), or -1.
    hot, cold : 1-D arrays of one dtype
        The cached rows and the full matrix, flattened (C order), ``f`` wide.
    f : int
        The row width.
    out : 1-D array (k * f,)
        Written with the gathered rows.
    hits : int64 array (1,)
        ``hits[0]`` is increased by the number of rows found in ``hot``.
    """
    if ids.size and f:
        hits[0] += _gather(ids, slot, hot, cold, np.int64(f), out)
    elif ids.size:
        hits[0] += int((slot[ids] >= 0).sum())  # rows of no columns: only the count
    return out


def _dense_work(ptr, idx, val, hv, out):
    return int(out.shape[0]) * max(int(out.shape[1]), 1)


@parallel_kernel(_dense_work, inputs=("ptr", "idx", "val"))
def _dense(ptr, idx, val, hv, out):
    # Unsigned offsets: numba adds a negative-index wraparound to every
    # signed access, which here took twice the time of the whole scatter.
    f = out.shape[1]
    for r in numba.prange(out.shape[0]):
        u = np.uint64(r)
        for c in range(f):
            out[u, c] = 0
        for e in range(np.uint64(ptr[r]), np.uint64(ptr[r + 1])):
            if hv:
                out[u, np.uint64(idx[e])] = val[e]
            else:
                out[u, np.uint64(idx[e])] = 1


def take_sparse_rows(ids, indptr, indices, values, out):
    """``out[r]`` = row ``ids[r]`` of the CSR matrix ``(indptr, indices,
    values)``, dense (zeros where nothing is stored; ones for the stored
    entries when ``values`` is None).  ``out`` is a C-contiguous 2-D array
    of the values' dtype as wide as the matrix; ids are trusted to be in
    range and each row's column ids to be distinct and below that width.

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.cpu.gather import take_sparse_rows
    >>> indptr, indices = np.array([0, 1, 3]), np.array([2, 0, 1])
    >>> vals = np.array([5.0, 6.0, 7.0])
    >>> take_sparse_rows(np.array([1, 0]), indptr, indices, vals, np.empty((2, 3))).tolist()
    [[6.0, 7.0, 0.0], [0.0, 0.0, 5.0]]
    """
    if ids.size and out.shape[1]:
        # The selected rows first, compact (their random reads in a pass of
        # their own), then the dense rows from them in order: 2x faster than
        # one pass that reads a row and writes it out before the next (942,001
        # random rows of rmat:18's bag-of-words features, 1 and 2 threads).
        hv = values is not None
        # A structural matrix: an empty stand-in of the output's dtype, so
        # that one compiled signature serves both.
        vals = values if hv else np.empty(0, out.dtype)
        ptr, idx, val = extract.gather_rows(indptr, indices, vals, hv, ids)
        _dense(ptr, idx, val, hv, out)
    return out
