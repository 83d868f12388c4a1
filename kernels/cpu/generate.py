"""Seeded random matrix generators, CPU (R-MAT graphs, uniform random CSR).

Everything is counter-based (``kernels.common.row_key`` / ``uniform01``):

* R-MAT edge ``e`` is a pure function of ``(seed, e)``: level ``l`` of its
  recursive descent uses the draw ``uniform01(row_key(seed, EDGES, e), l)``.
* Vertex ids are relabelled by ``permute_vertex``, a keyed bijection of the
  ``scale``-bit integers (rounds of add-key, multiply-by-odd and
  xor-shift, all modulo ``2**scale``), so no permutation array is stored and
  any rank can relabel any vertex.
* A weight is a pure function of ``(seed, min(u, v), max(u, v))``, so
  duplicate edges agree and a symmetric graph gets symmetric weights.
* Row ``i`` of ``random_csr`` uses the stream ``row_key(seed, RANDOM_CSR, i)``.

So the output never depends on the thread count or on how the rows are split
into blocks.

``rmat_csr`` builds (a block of rows of) the graph in four passes without
ever holding the edge list: (1) generate the edges, count entries per (edge
chunk, row bucket); (2) generate them again and scatter packed keys
``(row within bucket) << scale | column`` in bucket order; (3) per bucket,
sort and deduplicate the keys and count entries per row; (4) scan the
counts and write the columns (and weights).  Peak memory is 8 bytes per
(pre-dedup) stored entry plus the output.
"""

import numba
import numpy as np
from numba import prange

from kernels.common import mix64, row_key, uniform01

# Stream ids (second argument of row_key) of the generators' random streams.
STREAM_EDGES = np.uint64(0x524D41545F454447)      # "RMAT_EDG"
STREAM_PERM = np.uint64(0x524D41545F504552)       # "RMAT_PER"
STREAM_WEIGHTS = np.uint64(0x524D41545F574754)    # "RMAT_WGT"
STREAM_RANDOM_CSR = np.uint64(0x52414E445F435352)  # "RAND_CSR"

PERM_ROUNDS = 4

_ONE = np.uint64(1)
_ZERO = np.uint64(0)


def perm_keys(seed, scale):
    """The round keys of the vertex permutation (uint64 array, 2 per round)."""
    keys = np.empty(2 * PERM_ROUNDS, np.uint64)
    for t in range(2 * PERM_ROUNDS):
        keys[t] = _perm_key(np.uint64(seed), np.uint64(scale), t)
    return keys


@numba.njit(cache=True, nogil=True)
def _perm_key(seed, scale, t):
    k = mix64(row_key(seed, STREAM_PERM + scale, t))
    if t % 2 == 1:
        k |= _ONE   # multipliers must be odd to be invertible modulo 2**scale
    return k


@numba.njit(cache=True, inline="always")
def permute_vertex(x, mask, shift, keys):
    """A keyed bijection of ``[0, mask]`` (``mask = 2**scale - 1``), uint64."""
    for r in range(PERM_ROUNDS):
        x = (x + keys[2 * r]) & mask
        x = (x * keys[2 * r + 1]) & mask
        x ^= x >> shift
    return x


@numba.njit(cache=True, inline="always")
def rmat_edge(seed, e, scale, a, ab, abc):
    """Unpermuted endpoints ``(u, v)`` (uint64) of R-MAT edge ``e``."""
    key = row_key(seed, STREAM_EDGES, e)
    u = _ZERO
    v = _ZERO
    for lvl in range(scale):
        r = uniform01(key, lvl)
        bit = _ONE << np.uint64(scale - 1 - lvl)
        if r < a:
            pass
        elif r < ab:
            v |= bit
        elif r < abc:
            u |= bit
        else:
            u |= bit
            v |= bit
    return u, v


@numba.njit(cache=True, inline="always")
def edge_weight(seed, u, v):
    """Weight in ``(0, 1]`` of the undirected pair ``{u, v}`` (float64)."""
    lo = u if u < v else v
    hi = v if u < v else u
    return 1.0 - uniform01(row_key(seed, STREAM_WEIGHTS, lo), hi)


@numba.njit(cache=True, inline="always")
def _edge(seed, e, scale, a, ab, abc, mask, shift, keys):
    u, v = rmat_edge(seed, e, scale, a, ab, abc)
    return (np.int64(permute_vertex(u, mask, shift, keys)),
            np.int64(permute_vertex(v, mask, shift, keys)))


@numba.njit(parallel=True, cache=True, nogil=True)
def _count(seed, n_edges, scale, a, ab, abc, keys, symmetric, self_loops,
           start, stop, row_shift, n_buckets, n_chunks):
    mask = (_ONE << np.uint64(scale)) - _ONE
    shift = np.uint64(max(1, (scale + 1) // 2))
    counts = np.zeros((n_chunks, n_buckets), np.int64)
    for cc in prange(n_chunks):
        c = np.int64(cc)   # prange indices are unsigned
        lo = (n_edges * c) // n_chunks
        hi = (n_edges * (c + 1)) // n_chunks
        for e in range(lo, hi):
            u, v = _edge(seed, e, scale, a, ab, abc, mask, shift, keys)
            if u == v and not self_loops:
                continue
            if u >= start and u < stop:
                counts[c, (u - start) >> row_shift] += 1
            if symmetric and u != v and v >= start and v < stop:
                counts[c, (v - start) >> row_shift] += 1
    return counts


@numba.njit(parallel=True, cache=True, nogil=True)
def _scatter(seed, n_edges, scale, a, ab, abc, keys, symmetric, self_loops,
             start, stop, row_shift, offsets, out):
    n_chunks = offsets.shape[0]
    mask = (_ONE << np.uint64(scale)) - _ONE
    shift = np.uint64(max(1, (scale + 1) // 2))
    low = (np.int64(1) << row_shift) - 1
    sc = np.uint64(scale)
    for cc in prange(n_chunks):
        c = np.int64(cc)
        fill = offsets[c].copy()
        lo = (n_edges * c) // n_chunks
        hi = (n_edges * (c + 1)) // n_chunks
        for e in range(lo, hi):
            u, v = _edge(seed, e, scale, a, ab, abc, mask, shift, keys)
            if u == v and not self_loops:
                continue
            if u >= start and u < stop:
                r = u - start
                b = r >> row_shift
                out[fill[b]] = (np.uint64(r & low) << sc) | np.uint64(v)
                fill[b] += 1
            if symmetric and u != v and v >= start and v < stop:
                r = v - start
                b = r >> row_shift
                out[fill[b]] = (np.uint64(r & low) << sc) | np.uint64(u)
                fill[b] += 1


@numba.njit(parallel=True, cache=True, nogil=True)
def _sort_dedup(keys_arr, bucket_ptr, scale, row_shift, nrows):
    """Sort and deduplicate each bucket in place; entries per row."""
    n_buckets = bucket_ptr.size - 1
    row_counts = np.zeros(nrows + 1, np.int64)
    uniq = np.zeros(n_buckets, np.int64)
    sc = np.uint64(scale)
    for bb in prange(n_buckets):
        b = np.int64(bb)
        lo = bucket_ptr[b]
        hi = bucket_ptr[b + 1]
        if hi == lo:
            continue
        keys_arr[lo:hi].sort()
        f = lo
        for t in range(lo, hi):
            k = keys_arr[t]
            if t == lo or k != keys_arr[f - 1]:
                keys_arr[f] = k
                f += 1
                row = (b << row_shift) + np.int64(k >> sc)
                row_counts[row + 1] += 1
        uniq[b] = f - lo
    return row_counts, uniq


@numba.njit(parallel=True, cache=True, nogil=True)
def _fill(keys_arr, bucket_ptr, uniq, indptr, scale, row_shift, start,
          weighted, seed, idx_template, w_template):
    n_buckets = bucket_ptr.size - 1
    nnz = indptr[indptr.size - 1]
    indices = np.empty(nnz, idx_template.dtype)
    values = np.empty(nnz if weighted else 0, w_template.dtype)
    sc = np.uint64(scale)
    cmask = (_ONE << sc) - _ONE
    for bb in prange(n_buckets):
        b = np.int64(bb)
        lo = bucket_ptr[b]
        o = indptr[min(b << row_shift, indptr.size - 1)]
        for t in range(uniq[b]):
            k = keys_arr[lo + t]
            col = np.int64(k & cmask)
            indices[o + t] = col
            if weighted:
                row = start + (b << row_shift) + np.int64(k >> sc)
                values[o + t] = edge_weight(seed, np.uint64(row), np.uint64(col))
    return indices, values


def bucket_shift(nrows):
    """log2 of the rows per bucket: 1024 rows, or more to keep <= 2**16 buckets."""
    bits = max(int(nrows - 1).bit_length(), 0) if nrows > 0 else 0
    return max(10, bits - 16)


def rmat_csr(seed, scale, n_edges, a, b, c, symmetric, self_loops, start,
             stop, weighted, n_chunks, index_dtype=np.int64,
             value_dtype=np.float32):
    """Rows ``[start, stop)`` of a permuted R-MAT graph in canonical CSR.

    Returns ``(indptr int64, indices, values or None)``.  The arguments are
    trusted (checked by ``spla.generators.rmat``).
    """
    seed = np.uint64(seed)
    nrows = stop - start
    keys = perm_keys(seed, scale)
    rs = bucket_shift(nrows)
    n_buckets = max(1, ((nrows - 1) >> rs) + 1) if nrows > 0 else 1
    n_chunks = int(max(1, min(n_chunks, n_edges)))
    ab = a + b
    abc = ab + c
    counts = _count(seed, n_edges, scale, a, ab, abc, keys, symmetric, self_loops,
                    start, stop, rs, n_buckets, n_chunks)
    # Bucket-major offsets: bucket b holds chunk 0's entries, then chunk 1's...
    flat = counts.T.ravel()
    starts = np.zeros(flat.size + 1, np.int64)
    np.cumsum(flat, out=starts[1:])
    offsets = np.ascontiguousarray(starts[:-1].reshape(n_buckets, n_chunks).T)
    bucket_ptr = np.ascontiguousarray(starts[::n_chunks])
    out = np.empty(int(starts[-1]), np.uint64)
    _scatter(seed, n_edges, scale, a, ab, abc, keys, symmetric, self_loops,
             start, stop, rs, offsets, out)
    row_counts, uniq = _sort_dedup(out, bucket_ptr, scale, rs, nrows)
    indptr = np.cumsum(row_counts)  # row_counts[0] == 0: an inclusive scan
    indices, values = _fill(out, bucket_ptr, uniq, indptr, scale, rs, start,
                            bool(weighted), seed, np.empty(0, index_dtype),
                            np.empty(0, value_dtype))
    return indptr, indices, (values if weighted else None)


@numba.njit(parallel=True, cache=True, nogil=True)
def random_csr(seed, row_start, nrows, ncols, k, has_values, idx_template,
               val_template):
    """Rows ``[row_start, row_start + nrows)`` of a matrix with exactly ``k``
    distinct uniform columns per row (sorted) and values ``1 - U`` in
    ``(0, 1]``.

    Row ``i``'s columns are Floyd's algorithm (exactly ``k`` draws, uniform
    over ``k``-subsets) on the stream ``row_key(seed, RANDOM_CSR, i)``; its
    values are draws ``k .. 2k-1`` of that stream, in column order.
    """
    nnz = nrows * k
    indptr = np.empty(nrows + 1, np.int64)
    for i in range(nrows + 1):
        indptr[i] = i * k
    indices = np.empty(nnz, idx_template.dtype)
    values = np.empty(nnz if has_values else 0, val_template.dtype)
    for ii in prange(nrows):
        i = np.int64(ii)
        key = row_key(seed, STREAM_RANDOM_CSR, row_start + i)
        o = i * k
        filled = 0
        for t in range(ncols - k, ncols):
            r = np.int64(uniform01(key, t - (ncols - k)) * (t + 1))
            if r > t:
                r = t
            # Binary search in the sorted picks so far.
            a = o
            b = o + filled
            while a < b:
                m = (a + b) >> 1
                if indices[m] < r:
                    a = m + 1
                else:
                    b = m
            if a < o + filled and indices[a] == r:
                r = t          # taken: t itself is new (t > every pick so far)
                a = o + filled
            q = o + filled
            while q > a:
                indices[q] = indices[q - 1]
                q -= 1
            indices[a] = r
            filled += 1
        if has_values:
            for t in range(k):
                values[o + t] = 1.0 - uniform01(key, k + t)
    return indptr, indices, values
