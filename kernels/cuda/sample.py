"""Row-wise ITS sampling kernels, CUDA.

Twin of ``kernels.cpu.sample``, one thread per row; the statistics and
prefix of rows longer than ``long_rows.LONG_MIN`` come from a block per
row (``kernels.cuda.long_rows``, the same values in the same blocked order),
and so do the draws of such rows when they ask at most ``long_rows.MAX_K``
picks (``long_rows.sample_long_row``, in the same launch: ``_sample_rows``
gives its last blocks to the long rows).  The kernels call the
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
from kernels.cuda._util import (BLOCK, MAX_BLOCKS, blocks, device, host_int, launch, scan,
                                to_host, _xp)
from kernels.cuda.long_rows import (LONG_BLOCKS, LONG_MIN, MAX_K, TABLE, is_long_row,
                                    long_row_stats, sample_long_row)

row_stats = device(_its.row_stats)
sample_one_row = device(_its.sample_one_row)
row_key = device(_row_key)
_k_of = device(_its.k_of)
_rid_of = device(_its.rid_of)
_slots = device(_its.slots)
gather_row_slots = device(_its.gather_row_slots)
_row_draw_params = device(_its.row_draw_params)


@cuda.jit(cache=True)
def _csr_stats(indptr, values, has_values, k_scalar, k_arr, replace, prefix,
               positives, modes, out_ptr, long_min):
    n = indptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    if start == 0:
        out_ptr[0] = 0  # the scan's first entry: no fill before the launch
    for i in range(start, n, stride):
        if has_values and indptr[i + 1] - indptr[i] > long_min:
            p = positives[i]  # a long row: long_rows._long_stats wrote it
        else:
            p, m = row_stats(indptr[i], indptr[i + 1], values, has_values, prefix,
                             has_values)
            positives[i] = p
            modes[i] = m
        out_ptr[i + 1] = _slots(_k_of(k_scalar, k_arr, i), p, replace)


@cuda.jit(device=True)
def _row_of(i, gather, indptr, q_indptr, q_indices, has_values, positives, modes):
    """(lo, hi, positives, mode) of the row sampled as row ``i``: row ``i`` of the
    matrix, or for a fused selection ``Q @ A`` the row of A that Q selects."""
    r = q_indices[q_indptr[i]] if gather else i
    return _row_draw_params(r, indptr, has_values, positives, modes)


@cuda.jit(cache=True)
def _sample_rows(gather, indptr, q_indptr, q_indices, values, has_values, prefix,
                 positives, modes, row_ids, seed, stream, replace, out_ptr, out,
                 long_min, max_k, batch, long_blocks):
    # The last ``long_blocks`` blocks take the long rows, one block per row;
    # the others take every other row, one thread per row.  Both read the
    # rows' lengths, so no host read decides the routing.
    table = cuda.shared.array(TABLE, np.int32)
    sh_sort = cuda.shared.array(MAX_K, np.int64)
    sh_draw = cuda.shared.array(BLOCK, np.int64)
    flags = cuda.shared.array(BLOCK, np.int32)
    sh_rows = cuda.shared.array(BLOCK, np.int64)
    n = out_ptr.size - 1
    t = cuda.threadIdx.x
    short_blocks = cuda.gridDim.x - long_blocks
    if cuda.blockIdx.x < short_blocks:
        for i in range(cuda.blockIdx.x * BLOCK + t, n, short_blocks * BLOCK):
            cnt = out_ptr[i + 1] - out_ptr[i]
            if cnt:
                lo, hi, p, m = _row_of(i, gather, indptr, q_indptr, q_indices,
                                       has_values, positives, modes)
                if not is_long_row(hi - lo, cnt, has_values, long_min, max_k):
                    # np.uint64: a no-op on the GPU; under the simulator a jit
                    # function's uint64 result comes back as a Python int,
                    # which would otherwise be passed on as an int64.
                    key = np.uint64(row_key(seed, stream, _rid_of(row_ids, i)))
                    sample_one_row(out, out_ptr[i], cnt, lo, hi, values, has_values,
                                   prefix, m, p, key, replace)
        return
    first = cuda.blockIdx.x - short_blocks
    for c0 in range(first, n, long_blocks * BLOCK):  # the block's rows, BLOCK at a time
        i = c0 + t * long_blocks
        sh_rows[t] = -1
        if i < n and out_ptr[i + 1] > out_ptr[i]:  # an empty Q row selects no row
            lo, hi, p, m = _row_of(i, gather, indptr, q_indptr, q_indices, has_values,
                                   positives, modes)
            if is_long_row(hi - lo, out_ptr[i + 1] - out_ptr[i], has_values, long_min,
                           max_k):
                sh_rows[t] = i
        cuda.syncthreads()
        for s in range(BLOCK):
            i = sh_rows[s]
            if i >= 0:
                lo, hi, p, m = _row_of(i, gather, indptr, q_indptr, q_indices,
                                       has_values, positives, modes)
                key = np.uint64(row_key(seed, stream, _rid_of(row_ids, i)))
                sample_long_row(out, out_ptr[i], out_ptr[i + 1] - out_ptr[i], lo, hi,
                                values, has_values, prefix, m, p, key, replace, batch,
                                table, sh_sort, sh_draw, flags)
        cuda.syncthreads()


def _launch_sample(n, gather, indptr, q_indptr, q_indices, values, has_values, prefix,
                   positives, modes, row_ids, seed, stream, replace, out_ptr, out,
                   long_min, max_k, batch):
    """One launch of ``_sample_rows``: ``blocks(n)`` blocks of short rows (fewer if
    the cap on blocks requires) and up to ``LONG_BLOCKS`` of long ones."""
    long_min = LONG_MIN if long_min is None else int(long_min)
    max_k = MAX_K if max_k is None else min(int(max_k), MAX_K)
    batch = BLOCK if batch is None else max(1, min(int(batch), BLOCK))
    nl = min(n, LONG_BLOCKS, MAX_BLOCKS // 2)
    ns = min(blocks(n), MAX_BLOCKS - nl)
    launch(_sample_rows, (ns + nl) * BLOCK, gather, indptr, q_indptr, q_indices, values,
           has_values, prefix, positives, modes, row_ids, seed, stream, replace, out_ptr,
           out, long_min, max_k, batch, nl)


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
    if start == 0:
        out_ptr[0] = 0  # the scan's first entry: no fill before the launch
    for i in range(start, n, stride):
        out_ptr[i + 1] = gather_row_slots(i, q_indptr, q_indices, q_scale, a_indptr,
                                          a_has_values, a_positives, k_scalar, k_arr,
                                          replace)


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


def _read_size(out_ptr, whole):
    """(the entry count ``out_ptr[-1]``, a host copy of ``out_ptr`` with
    ``whole`` or None): one read either way."""
    if whole:
        host = np.asarray(to_host(out_ptr), np.int64)
        return int(host[-1]), host
    return host_int(out_ptr[out_ptr.size - 1]), None


def sample_csr(indptr, values, has_values, k_scalar, k_arr, row_ids, seed,
               stream, replace, long_min=None, max_k=None, batch=None):
    """Sample every row of a CSR matrix; see ``kernels.cpu.sample``.

    Rows longer than ``long_min`` (default ``LONG_MIN``) asking at most
    ``max_k`` picks (default and cap ``MAX_K``) are sampled by a block each,
    ``batch`` rejection draws per round (default and cap ``BLOCK``): the
    same picks; the tests shrink them.
    """
    out_ptr, out, _ = _sample_csr(indptr, values, has_values, k_scalar, k_arr, row_ids,
                                  seed, stream, replace, long_min, max_k, batch, False)
    return out_ptr, out


def sample_csr_with_host_ptr(indptr, values, has_values, k_scalar, k_arr, row_ids, seed,
                             stream, replace):
    """``sample_csr`` and a host copy of its row pointer, in the same one read
    (the whole pointer where ``sample_csr`` reads its last entry: for
    matrices of few rows, whose consumers then read nothing more)."""
    return _sample_csr(indptr, values, has_values, k_scalar, k_arr, row_ids, seed, stream,
                       replace, None, None, None, True)


def _sample_csr(indptr, values, has_values, k_scalar, k_arr, row_ids, seed, stream, replace,
                long_min, max_k, batch, with_host_ptr):
    xp = _xp(indptr)
    n = indptr.size - 1
    if n <= 0:
        return xp.zeros(1, np.int64), xp.zeros(0, np.int64), np.zeros(1, np.int64)
    has_values = bool(has_values)
    replace = bool(replace)
    # A matrix's values are exactly its entries: their count needs no read
    # (and without values there is no prefix to size).
    prefix = xp.empty(values.size if has_values else 0, np.float64)
    positives = xp.empty(n, np.int64)
    modes = xp.empty(n, np.uint8)
    out_ptr = xp.empty(n + 1, np.int64)
    if has_values:
        long_row_stats(indptr, values, True, True, prefix, positives, modes)
    launch(_csr_stats, n, indptr, values, has_values, k_scalar, k_arr,
           replace, prefix, positives, modes, out_ptr, LONG_MIN)
    out_ptr = scan(xp, out_ptr)
    total, host = _read_size(out_ptr, with_host_ptr)
    out = xp.empty(total, np.int64)
    if total:
        _launch_sample(n, False, indptr, indptr, indptr, values, has_values, prefix,
                       positives, modes, row_ids, seed, stream, replace, out_ptr, out,
                       long_min, max_k, batch)
    return out_ptr, out, host


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
                  k_arr, row_ids, seed, stream, replace, long_min=None, max_k=None,
                  batch=None):
    """Sample the rows of ``Q @ A`` for a Q with at most one entry per row;
    see ``kernels.cpu.sample``.  ``a_guide`` is ignored (see ``row_guide``):
    the picks are the same with or without it.  Long rows of A go to a
    block each, as in ``sample_csr`` (same keywords)."""
    out_ptr, out, _ = _sample_gather(
        q_indptr, q_indices, q_scale, a_indptr, a_values, a_has_values, a_prefix,
        a_positives, a_modes, k_scalar, k_arr, row_ids, seed, stream, replace, long_min,
        max_k, batch, False)
    return out_ptr, out


def sample_gather_with_host_ptr(q_indptr, q_indices, q_scale, a_indptr, a_values,
                                a_has_values, a_prefix, a_guide, a_positives, a_modes,
                                k_scalar, k_arr, row_ids, seed, stream, replace):
    """``sample_gather`` and a host copy of its row pointer, in its one read
    (see ``sample_csr_with_host_ptr``)."""
    return _sample_gather(q_indptr, q_indices, q_scale, a_indptr, a_values, a_has_values,
                          a_prefix, a_positives, a_modes, k_scalar, k_arr, row_ids, seed,
                          stream, replace, None, None, None, True)


def _sample_gather(q_indptr, q_indices, q_scale, a_indptr, a_values, a_has_values, a_prefix,
                   a_positives, a_modes, k_scalar, k_arr, row_ids, seed, stream, replace,
                   long_min, max_k, batch, with_host_ptr):
    xp = _xp(q_indptr)
    n = q_indptr.size - 1
    if n <= 0:
        return xp.zeros(1, np.int64), xp.zeros(0, np.int64), np.zeros(1, np.int64)
    a_has_values = bool(a_has_values)
    replace = bool(replace)
    out_ptr = xp.empty(n + 1, np.int64)
    launch(_gather_slots, n, q_indptr, q_indices, q_scale, a_indptr,
                                    a_has_values, a_positives, k_scalar, k_arr,
                                    replace, out_ptr)
    out_ptr = scan(xp, out_ptr)
    total, host = _read_size(out_ptr, with_host_ptr)
    out = xp.empty(total, np.int64)
    if total:
        _launch_sample(n, True, a_indptr, q_indptr, q_indices, a_values, a_has_values,
                       a_prefix, a_positives, a_modes, row_ids, seed, stream, replace,
                       out_ptr, out, long_min, max_k, batch)
    return out_ptr, out, host


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
