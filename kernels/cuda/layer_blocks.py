"""One layer of a layer-wise sampler assembled from its draws, CUDA.

Twin of ``kernels.cpu.layer_blocks`` (see there for what is computed): the
same outputs, bit for bit, in about fifteen device operations and one or
two blocking reads, where the composition of the operators it stands for took
about thirty per layer.

1. **columns**: each group's destinations, then its drawn columns not among
   them, by ``kernels.cuda.layer_groups.kept_columns`` (first appearances in
   a hash table);
2. **block**: ``A[dst_g, src_g]`` by ``layer_groups.extract_groups`` (one
   read: the block's row pointer, which sizes the values).  Its tables are
   sized by each group's column count, read after step 1, or, when the
   caller has the draws' row pointer on the host (``sample_rows`` of a few
   rows keeps it), by a bound from it: the destinations and the draws of
   the group; step 1's pointer then comes back in step 2's read;
3. **scales**: a thread per kept column, ``1 / (s p_j)`` in ``p``'s dtype,
   stored in A's (the weights' row totals first, by the row reduction, when
   the probabilities come from ``W``);
4. **products**: a thread per entry, its value times its column's scale
   (and its column id written in the output's index type);
5. **normalisation**: each row's total in ``kernels.its_search.blocked_sum``'s
   order (a block per long row, ``kernels.cuda.long_rows``; a thread per
   other row), then its entries divided by it.

The products are stored by one kernel and summed by another: within one
thread the compiler could contract a product and the sum it feeds into a
fused multiply-add, which the CPU does not do, and the blocks would differ
in the last bit.
"""

import numpy as np
from numba import cuda

from kernels.common import index_dtype
from kernels.common import lower_bound as _lower_bound
from kernels.cuda import groups as _groups
from kernels.cuda import layer_groups
from kernels.cuda._util import BLOCK, _xp, device, launch
from kernels.cuda.long_rows import LONG_MIN, long_row_sums
from kernels.cuda.reduce import reduce_rows
from kernels.its_search import LEAF, blocked_sum as _blocked_sum
from kernels.semiring_ops import ADD_PLUS

blocked_sum = device(_blocked_sum)
lower_bound = device(_lower_bound)


@cuda.jit(cache=True)
def _scales(src, src_ptr, w_ptr, w_idx, w_val, w_rows, w_sum, p, s_p, one_p, scale):
    """``scale[c] = 1 / (s p_j)`` of every kept column ``c`` (0 where ``p_j``
    is not positive); ``p_j`` is ``p[j]``, or with an empty ``p`` the
    column's weight in its group's row of W over the row's total (1 where
    that is 0)."""
    zero = one_p - one_p
    lookup = p.size == 0
    for c in range(cuda.grid(1), src.size, cuda.gridsize(1)):
        j = src[c]
        if lookup:
            g = lower_bound(src_ptr, 0, src_ptr.size, c + 1) - 1
            wr = w_rows[g]
            lo = w_ptr[wr]
            hi = w_ptr[wr + 1]
            q = lower_bound(w_idx, lo, hi, j)
            raw = w_val[q] if q < hi and w_idx[q] == j else zero
            total = w_sum[wr]
            pj = raw / (total if total != 0 else one_p)
        else:
            pj = p[j]
        scale[c] = one_p / (s_p * pj) if pj > 0 else zero


@cuda.jit(cache=True)
def _products(a_val, pos, col, scale, out, out_col):
    """Each entry's value (``a_val[pos[e]]``) times its column's scale, and
    its column in the output's index type."""
    for e in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        c = col[e]
        out[e] = a_val[pos[e]] * scale[c]
        out_col[e] = c


@cuda.jit(cache=True)
def _normalize(ptr, val, sums, one, long_min):
    """Each row divided by its total unless that is 0: a thread per row of
    at most ``long_min`` entries sums and divides it; a longer row's total
    is ``long_row_sums``' (launched before) and its block divides it."""
    zero = one - one
    n = ptr.size - 1
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        lo = ptr[i]
        hi = ptr[i + 1]
        if hi == lo or hi - lo > long_min:
            continue
        blocked_sum(val, lo, hi, True, one, zero, LEAF, sums, i)
        t = sums[i]
        if t != 0:
            for f in range(lo, hi):
                val[f] = val[f] / t
    for i in range(cuda.blockIdx.x, n, cuda.gridDim.x):
        lo = ptr[i]
        hi = ptr[i + 1]
        if hi - lo <= long_min:
            continue
        t = sums[i]
        if t != 0:
            for f in range(lo + cuda.threadIdx.x, hi, BLOCK):
                val[f] = val[f] / t


def _columns_and_block(a_ptr, a_idx, s_ptr, s_idx, s_host_ptr, dst, dst_ptr, ncols):
    """Steps 1 and 2: ``(out_ptr, out_idx, pos, host_ptr, src, src_ptr,
    src_host)``, the pointers ``host_ptr`` and ``src_ptr`` on the host, and
    ``src_host`` a host copy of ``src`` or None.

    With the draws' row pointer on the host (``s_host_ptr``), each group's
    columns are bounded there (its destinations and its draws), so the
    block's tables are sized before the columns are counted and one read
    brings both pointers and the columns back; otherwise the columns'
    pointer is read first."""
    G = dst_ptr.size - 1
    groups = np.arange(G + 1, dtype=np.int64)
    if G > 0 and layer_groups.fits_compact(G, ncols):
        if s_host_ptr is not None:
            kept, kept_ptr = layer_groups.kept_columns_unread(s_ptr, s_idx, groups, dst,
                                                              dst_ptr, ncols)
            bound = np.diff(dst_ptr) + np.diff(np.asarray(s_host_ptr, np.int64))
            out_ptr, out_idx, pos, host_ptr, src_ptr, src_host = (
                layer_groups.extract_groups_unread_cols(a_ptr, a_idx, dst, dst_ptr, kept,
                                                        kept_ptr, bound, ncols))
            return out_ptr, out_idx, pos, host_ptr, kept[:int(src_ptr[G])], src_ptr, src_host
        src, src_ptr = layer_groups.kept_columns(s_ptr, s_idx, groups, dst, dst_ptr, ncols)
    else:
        _, _, src, src_ptr, _ = _groups.compact_groups(s_ptr, s_idx, groups, dst, dst_ptr,
                                                        ncols, with_perm=False, check=False)
        src_ptr = np.asarray(src_ptr, np.int64)
    out_ptr, out_idx, pos, _, host_ptr = layer_groups.extract_groups(
        a_ptr, a_idx, dst, dst_ptr, src, src_ptr, ncols, check=False, with_host_ptr=True)
    return out_ptr, out_idx, pos, host_ptr, src, src_ptr, None


def _constants(xp, dtype):
    """0 and 1 of ``dtype`` as one-element device arrays (the row reductions'
    identity and unit), in one upload and no launch."""
    both = xp.asarray(np.array([0, 1], dtype))
    return both[:1], both[1:]


def importance_layer(a_ptr, a_idx, a_val, s_ptr, s_idx, dst, dst_ptr, w_ptr, w_idx, w_val,
                     w_rows, p, s, ncols=None, s_host_ptr=None):
    """One layer's blocks and columns; see ``kernels.cpu.layer_blocks.importance_layer``
    (the same arguments and results).  ``dst_ptr`` is a host array; the
    others are on the device (``w_rows`` too, when ``p`` is empty), but for
    ``s_host_ptr``, a host copy of ``s_ptr`` if the caller has one (a read
    fewer, and ``src`` comes back on the host too: the last result, None
    without it)."""
    xp = _xp(a_ptr)
    ncols = int(a_ptr.size - 1 if ncols is None else ncols)
    dst_ptr = np.asarray(dst_ptr, np.int64)
    out_ptr, out_idx, pos, host_ptr, src, src_ptr, src_host = _columns_and_block(
        a_ptr, a_idx, s_ptr, s_idx, s_host_ptr, dst, dst_ptr, ncols)
    pd = p.dtype if p.size else w_val.dtype
    # Every probability in one dtype (see the CPU twin); casts only where needed.
    w_val, p = (a if a.dtype == pd else a.astype(pd) for a in (w_val, p))
    scale = xp.empty(src.size, a_val.dtype)
    if src.size:
        w_sum = w_val[:0]
        if not p.size:
            zero, one = _constants(xp, pd)
            w_sum = reduce_rows(w_ptr, w_val, True, ADD_PLUS, zero, one)
        launch(_scales, src.size, src, xp.asarray(src_ptr), w_ptr, w_idx, w_val, w_rows, w_sum,
               p, np.asarray(s).astype(pd)[()], pd.type(1), scale)
    out_val = xp.empty(out_idx.size, a_val.dtype)
    # The CPU twin's index type (the same bound).
    out_col = xp.empty(out_idx.size, index_dtype(int(dst.size) + int(s_idx.size)))
    if out_val.size:
        launch(_products, out_val.size, a_val, pos, out_idx, scale, out_val, out_col)
        sums = xp.empty(dst.size, a_val.dtype)
        long_row_sums(out_ptr, out_val, *_constants(xp, a_val.dtype), sums)
        # A block per row at most, so that long rows spread over the grid.
        launch(_normalize, dst.size * BLOCK, out_ptr, out_val, sums, a_val.dtype.type(1),
               np.int64(LONG_MIN))
    return out_ptr, out_col, out_val, src, src_ptr, host_ptr, src_host
