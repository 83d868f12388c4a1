"""Row-wise ITS sampling kernels, CUDA.

Twin of ``kernels.cpu.sample``, one thread per row; the statistics and
prefix of rows longer than ``long_rows.LONG_MIN`` come from a block per
row (``kernels.cuda.long_rows``, the same values in the same blocked order).  The kernels call the
very ``@numba.njit`` helpers the CPU kernels call (``kernels.its.row_stats``
and ``sample_one_row``, ``kernels.common.row_key``, and the rows of a fused
selection, ``kernels.its.gather_row_*``), which numba-cuda compiles as device
functions, so a row's picks are bit-identical to the CPU ones.  Row pointers
are scanned with the array module between the launches.

Returns are as on the CPU: ``(indptr, positions)`` for the samplers,
``(prefix, positives, modes)`` for ``row_prefix``, an empty guide for
``row_guide`` and
``(indptr, positions, counts)`` for ``dedup_sorted_rows``.
"""

import numpy as np
from numba import cuda

from kernels import its as _its
from kernels.common import row_key as _row_key
from kernels.cuda._util import device, host_int, launch, scan, _xp
from kernels.cuda.long_rows import LONG_MIN, long_row_stats

row_stats = device(_its.row_stats)
sample_one_row = device(_its.sample_one_row)
row_key = device(_row_key)
_k_of = device(_its.k_of)
_rid_of = device(_its.rid_of)
_slots = device(_its.slots)
gather_row_slots = device(_its.gather_row_slots)
gather_row_sample = device(_its.gather_row_sample)


@cuda.jit(cache=True)
def _csr_stats(indptr, values, has_values, k_scalar, k_arr, replace, prefix,
               positives, modes, out_ptr, long_min):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        if has_values and indptr[i + 1] - indptr[i] > long_min:
            p = positives[i]  # a long row: long_rows._long_stats wrote it
        else:
            p, m = row_stats(indptr[i], indptr[i + 1], values, has_values, prefix,
                             has_values)
            positives[i] = p
            modes[i] = m
        out_ptr[i + 1] = _slots(_k_of(k_scalar, k_arr, i), p, replace)


@cuda.jit(cache=True)
def _csr_sample(indptr, values, has_values, prefix, positives, modes, row_ids,
                seed, stream, replace, out_ptr, out):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        cnt = out_ptr[i + 1] - out_ptr[i]
        if cnt:
            # np.uint64: a no-op on the GPU; under the simulator a jit
            # function's uint64 result comes back as a Python int, which
            # would otherwise be passed on as an int64.
            key = np.uint64(row_key(seed, stream, _rid_of(row_ids, i)))
            sample_one_row(out, out_ptr[i], cnt, indptr[i], indptr[i + 1],
                           values, has_values, prefix, modes[i], positives[i],
                           key, replace)


@cuda.jit(cache=True)
def _prefix_rows(indptr, values, prefix, positives, modes, long_min):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        if indptr[i + 1] - indptr[i] > long_min:
            continue  # long_rows._long_stats' row
        p, m = row_stats(indptr[i], indptr[i + 1], values, True, prefix, True)
        positives[i] = p
        modes[i] = m


@cuda.jit(cache=True)
def _gather_slots(q_indptr, q_indices, q_scale, a_indptr, a_has_values,
                  a_positives, k_scalar, k_arr, replace, out_ptr):
    n = q_indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        out_ptr[i + 1] = gather_row_slots(i, q_indptr, q_indices, q_scale, a_indptr,
                                          a_has_values, a_positives, k_scalar, k_arr,
                                          replace)


@cuda.jit(cache=True)
def _gather_sample(q_indptr, q_indices, a_indptr, a_values, a_has_values,
                   a_prefix, a_positives, a_modes, row_ids, seed, stream,
                   replace, out_ptr, out):
    n = q_indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        cnt = out_ptr[i + 1] - out_ptr[i]
        if cnt:
            key = np.uint64(row_key(seed, stream, _rid_of(row_ids, i)))
            gather_row_sample(i, out, out_ptr[i], cnt, q_indptr, q_indices, a_indptr,
                              a_values, a_has_values, a_prefix, a_positives, a_modes,
                              key, replace)


@cuda.jit(cache=True)
def _dedup_count(indptr, pos, counts):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        c = 0
        for t in range(indptr[i], indptr[i + 1]):
            if t == indptr[i] or pos[t] != pos[t - 1]:
                c += 1
        counts[i + 1] = c


@cuda.jit(cache=True)
def _dedup_fill(indptr, pos, new_ptr, out, counts):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        f = new_ptr[i] - 1
        for t in range(indptr[i], indptr[i + 1]):
            if t == indptr[i] or pos[t] != pos[t - 1]:
                f += 1
                out[f] = pos[t]
                counts[f] = 1
            else:
                counts[f] += 1


def sample_csr(indptr, values, has_values, k_scalar, k_arr, row_ids, seed,
               stream, replace):
    """Sample every row of a CSR matrix; see ``kernels.cpu.sample``."""
    xp = _xp(indptr)
    n = indptr.size - 1
    if n <= 0:
        return xp.zeros(1, np.int64), xp.zeros(0, np.int64)
    has_values = bool(has_values)
    replace = bool(replace)
    nnz = host_int(indptr[n])
    prefix = xp.empty(nnz if has_values else 0, np.float64)
    positives = xp.empty(n, np.int64)
    modes = xp.empty(n, np.uint8)
    out_ptr = xp.zeros(n + 1, np.int64)
    if has_values:
        long_row_stats(indptr, values, True, True, prefix, positives, modes)
    launch(_csr_stats, n, indptr, values, has_values, k_scalar, k_arr,
           replace, prefix, positives, modes, out_ptr, LONG_MIN)
    out_ptr = scan(xp, out_ptr)
    total = host_int(out_ptr[n])
    out = xp.empty(total, np.int64)
    if total:
        launch(_csr_sample, n, indptr, values, has_values, prefix,
                                      positives, modes, row_ids, seed, stream,
                                      replace, out_ptr, out)
    return out_ptr, out


def row_prefix(indptr, values):
    """Per-row inclusive prefix sums (float64), positive counts and modes."""
    xp = _xp(indptr)
    n = max(indptr.size - 1, 0)
    prefix = xp.empty(host_int(indptr[n]) if n else 0, np.float64)
    positives = xp.empty(n, np.int64)
    modes = xp.empty(n, np.uint8)
    if n:
        long_row_stats(indptr, values, True, True, prefix, positives, modes)
        launch(_prefix_rows, n, indptr, values, prefix, positives, modes, LONG_MIN)
    return prefix, positives, modes


def row_guide(indptr, prefix, positives, modes):
    """No guide: the GPU rows search their prefixes by bisection (an empty array).

    Thousands of rows in flight hide the bisection's dependent reads on the
    GPU far better than two CPU threads can, so a guide is not known to pay
    there for the 4 bytes per entry it costs.
    """
    return _xp(indptr).zeros(0, np.uint32)


def sample_gather(q_indptr, q_indices, q_scale, a_indptr, a_values,
                  a_has_values, a_prefix, a_guide, a_positives, a_modes, k_scalar,
                  k_arr, row_ids, seed, stream, replace):
    """Sample the rows of ``Q @ A`` for a Q with at most one entry per row;
    see ``kernels.cpu.sample``.  ``a_guide`` is ignored (see ``row_guide``):
    the picks are the same with or without it."""
    xp = _xp(q_indptr)
    n = q_indptr.size - 1
    if n <= 0:
        return xp.zeros(1, np.int64), xp.zeros(0, np.int64)
    a_has_values = bool(a_has_values)
    replace = bool(replace)
    out_ptr = xp.zeros(n + 1, np.int64)
    launch(_gather_slots, n, q_indptr, q_indices, q_scale, a_indptr,
                                    a_has_values, a_positives, k_scalar, k_arr,
                                    replace, out_ptr)
    out_ptr = scan(xp, out_ptr)
    total = host_int(out_ptr[n])
    out = xp.empty(total, np.int64)
    if total:
        launch(_gather_sample, n, q_indptr, q_indices, a_indptr,
                                         a_values, a_has_values, a_prefix,
                                         a_positives, a_modes, row_ids, seed,
                                         stream, replace, out_ptr, out)
    return out_ptr, out


def dedup_sorted_rows(indptr, pos):
    """Fold repeats in rows of sorted positions: (indptr, positions, counts)."""
    xp = _xp(indptr)
    n = indptr.size - 1
    if n <= 0:
        return xp.zeros(1, np.int64), xp.zeros(0, np.int64), xp.zeros(0, np.int64)
    new_ptr = xp.zeros(n + 1, np.int64)
    if pos.size:
        launch(_dedup_count, n, indptr, pos, new_ptr)
        new_ptr = scan(xp, new_ptr)
    total = host_int(new_ptr[n])
    out = xp.empty(total, np.int64)
    counts = xp.empty(total, np.int64)
    if total:
        launch(_dedup_fill, n, indptr, pos, new_ptr, out, counts)
    return new_ptr, out, counts
