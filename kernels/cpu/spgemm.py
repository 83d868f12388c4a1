"""Sparse times sparse (SpGEMM) over a semiring, CPU.

Gustavson's row-by-row algorithm in two passes: ``spgemm_symbolic`` counts
each output row, ``spgemm_numeric`` fills it.  Rows are processed in chunks,
each with its own scratch, allocated per call: a dense accumulator over the
output columns with a bitmap of the columns the current row has touched,
while the column count is at most ``DENSE_ACC_FACTOR`` times the chunk's
products, else a hash accumulator (``kernels.common.probe``) sized to twice
the chunk's longest row of products, so a product with 2**40 columns and a
few entries allocates what its entries need.  Both accumulate a column's
terms in the same order, so the outputs are bit-identical.  The dense
accumulator's loops are branch-free where they can be (docs/design.rst).

Why a bitmap rather than a marker holding each column's last row: the first
touch of a column is tested once per product, and a bitmap (ncols / 8
bytes) stays in cache where a marker (4 or 8 bytes a column) does not.  A
row's bits are cleared after it, by the words it touched, or all at once
when it touched many.  Measured on one LADIES probability row at R-MAT scale
20 (7.5e5 products over 2**20 columns): 16.7-18.5 ms for both passes with
an int64 marker, 13.4 with an int32 one, 8.9 with the bitmap; A @ A at scale 15
went from 1.27 s to 1.18 s (int32 marker to bitmap).

``spgemm_gather`` is the fast path for a left operand with at most one entry
per row (a row selection, the sampler's common case): each output row is one
scaled row of B, so there is nothing to accumulate or sort.

Values arrive already cast to the output dtype; ``one`` (a length-1 array of
that dtype) supplies the implicit value of a structural operand.
"""

import numba
import numpy as np
from numba import prange

from kernels.common import (clear_table, index_dtype, pop_set_bits, probe, set_bit,
                            table_bits, zero_bitmap)
from kernels.parallel import over_rows, parallel_kernel
from kernels.semiring_ops import ADD_PLUS, MUL_TIMES, add_op, mul_op

#: A chunk uses the dense accumulator and bitmap while ``ncols <= DENSE_ACC_FACTOR
#: * (the chunk's products)``: filling ncols words then costs at most a few
#: times what the chunk's work costs, and direct indexing beats hashing.
DENSE_ACC_FACTOR = 4
# (Passed to the kernels per call, not read inside them: numba freezes a
# global's value when it compiles, and caches it on disk with the code.)


def _parts():
    """Row chunks per call: a few per thread, for load balance."""
    return 4 * numba.get_num_threads()


@numba.njit(cache=True, nogil=True)
def _chunks(a_ptr, a_idx, b_ptr, parts):
    """Row bounds of ``parts`` chunks of about equal products (not equal rows).

    Heavy rows cluster (R-MAT puts its hubs at low ids), so chunks of equal
    row counts leave one thread with most of the work; cutting where the
    running count of products crosses each ``c / parts`` of the total keeps
    the chunks even.  One pass over A's entries.
    """
    n = a_ptr.size - 1
    parts = max(1, min(n, parts))
    bounds = np.empty(parts + 1, np.int64)
    total = np.int64(0)
    for i in range(n):
        total += _row_products(a_ptr, a_idx, b_ptr, i)
    bounds[0] = 0
    c = 1
    run = np.int64(0)
    for i in range(n):
        if c >= parts:
            break
        run += _row_products(a_ptr, a_idx, b_ptr, i)
        while c < parts and run * parts >= total * c:
            bounds[c] = i + 1
            c += 1
    while c <= parts:
        bounds[c] = n
        c += 1
    return bounds


@numba.njit(cache=True, inline="always")
def _row_products(a_ptr, a_idx, b_ptr, i):
    """Number of products of row ``i`` (an upper bound of its output entries)."""
    w = np.int64(0)
    for p in range(a_ptr[i], a_ptr[i + 1]):
        k = a_idx[p]
        w += b_ptr[k + 1] - b_ptr[k]
    return w


@numba.njit(cache=True, inline="always")
def _chunk_products(a_ptr, a_idx, b_ptr, r0, r1):
    """(total, largest row) products of rows ``r0:r1``."""
    total = np.int64(0)
    most = np.int64(0)
    for i in range(r0, r1):
        w = _row_products(a_ptr, a_idx, b_ptr, i)
        total += w
        most = max(most, w)
    return total, most


def _spgemm_work(a_ptr, a_idx, b_ptr, *rest):
    # Entries of A times B's mean row length: the products, without a pass.
    nb = max(1, b_ptr.size - 1)
    return over_rows(int(a_ptr.size) - 1,
                     int(a_idx.size) * max(1, int(b_ptr[-1]) // nb) if b_ptr.size else 0)


@parallel_kernel(_spgemm_work, inputs=("a_ptr", "a_idx", "b_ptr", "b_idx"))
def _symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols, dense_factor, parts):
    n = a_ptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    bounds = _chunks(a_ptr, a_idx, b_ptr, parts)
    for c in prange(bounds.size - 1):
        total, most = _chunk_products(a_ptr, a_idx, b_ptr, bounds[c], bounds[c + 1])
        if ncols <= dense_factor * total:
            seen = zero_bitmap(ncols)
            for i in range(bounds[c], bounds[c + 1]):
                cnt = 0
                for p in range(a_ptr[i], a_ptr[i + 1]):
                    k = a_idx[p]
                    # Unsigned indices: no negative-index wraparound code in
                    # the innermost loop (see kernels.cpu.extract).
                    for q in range(np.uint64(b_ptr[k]), np.uint64(b_ptr[k + 1])):
                        j = np.uint64(b_idx[q])
                        w = j >> np.uint64(6)
                        bit = np.uint64(1) << (j & np.uint64(63))
                        # Branch-free: whether a column is new is a coin
                        # toss the predictor loses (A @ A at R-MAT scale
                        # 15: this pass 0.25 s -> 0.105 s).
                        sw = seen[w]
                        seen[w] = sw | bit
                        cnt += np.int64((sw & bit) == 0)
                out_ptr[i + 1] = cnt
                # Clear the row's bits by the cheaper of a fill of every word
                # and a second pass over its products.
                if _row_products(a_ptr, a_idx, b_ptr, i) >= seen.size:
                    for w in range(seen.size):
                        seen[w] = 0
                else:
                    for p in range(a_ptr[i], a_ptr[i + 1]):
                        k = a_idx[p]
                        for q in range(np.uint64(b_ptr[k]), np.uint64(b_ptr[k + 1])):
                            seen[np.uint64(b_idx[q]) >> np.uint64(6)] = 0
        else:
            table = np.empty(np.int64(2) << table_bits(most), np.int64)
            for i in range(bounds[c], bounds[c + 1]):
                bits = table_bits(_row_products(a_ptr, a_idx, b_ptr, i))
                clear_table(table, bits)
                cnt = 0
                for p in range(a_ptr[i], a_ptr[i + 1]):
                    k = a_idx[p]
                    for q in range(b_ptr[k], b_ptr[k + 1]):
                        j = b_idx[q]
                        s = probe(table, j, bits)
                        if table[2 * s] != j:
                            table[2 * s] = j
                            cnt += 1
                out_ptr[i + 1] = cnt
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    return out_ptr


#: A row of more than 16 columns is put in order by reading the bitmap over
#: its span when that span covers at most this many columns per entry (the
#: words read, one per 64 columns, are then fewer than the row's entries),
#: else sorted.
SPAN_PER_ENTRY = 64


@numba.njit(cache=True, inline="always")
def _by_bits(cnt, lo, hi):
    """Whether a row of ``cnt`` columns in ``[lo, hi]`` is ordered by its bits."""
    return cnt > 16 and hi - lo + 1 <= SPAN_PER_ENTRY * cnt


@numba.njit(cache=True, inline="always")
def _finish_row_bits(out_idx, out_val, acc, seen, start, f, lo, hi, reset, zero):
    """Write a row's columns in order and clear its bits: read the bitmap's
    words over [lo, hi] when the row is dense enough in that span
    (``_by_bits``; cheaper than sorting), else sort what was touched.  With
    ``reset``, the row's accumulator slots are set back to ``zero``."""
    if _by_bits(f - start, lo, hi):
        pop_set_bits(seen, lo, hi, out_idx, start)
    else:
        out_idx[start:f].sort()
        for t in range(start, f):
            seen[np.uint64(out_idx[t]) >> np.uint64(6)] = 0
    for t in range(start, f):
        out_val[t] = acc[out_idx[t]]
    if reset:
        for t in range(start, f):
            acc[out_idx[t]] = zero


@numba.njit(cache=True, inline="always")
def _hashed_rows(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, out_ptr, add,
                 mul, onev, r0, r1, most, out_idx, out_val, counts, ncols):
    """Rows ``r0:r1`` of the product through a hash accumulator.

    A bitmap over the columns orders the long rows (``_by_bits``) when it
    has no more words than the chunk's longest row has products, so it is
    sized by the work: a LADIES probability row of 2.8e4 columns out of
    2**20 took 2 ms to sort, most of its product.
    """
    bits_most = table_bits(most)
    table = np.empty(np.int64(2) << bits_most, np.int64)
    acc = np.empty(np.int64(1) << bits_most, out_val.dtype)
    use_bits = ncols <= 64 * most
    seen = zero_bitmap(ncols if use_bits else 0)
    for i in range(r0, r1):
        bits = table_bits(_row_products(a_ptr, a_idx, b_ptr, i))
        clear_table(table, bits)
        start = out_ptr[i]
        f = start
        lo = ncols
        hi = np.int64(-1)
        for p in range(a_ptr[i], a_ptr[i + 1]):
            k = a_idx[p]
            av = a_val[p] if a_hv else onev
            for q in range(b_ptr[k], b_ptr[k + 1]):
                j = b_idx[q]
                bv = b_val[q] if b_hv else onev
                prod = mul_op(mul, av, bv, onev)
                s = probe(table, j, bits)
                if table[2 * s] != j:
                    table[2 * s] = j
                    acc[s] = prod
                    out_idx[f] = j
                    f += 1
                    lo = min(lo, np.int64(j))
                    hi = max(hi, np.int64(j))
                else:
                    acc[s] = add_op(add, acc[s], prod)
        if use_bits and _by_bits(f - start, lo, hi):
            for t in range(start, f):
                set_bit(seen, out_idx[t])
            pop_set_bits(seen, lo, hi, out_idx, start)
        else:
            out_idx[start:f].sort()
        for t in range(start, f):
            out_val[t] = acc[probe(table, out_idx[t], bits)]
        counts[i] = f - start


@numba.njit(cache=True, nogil=True)
def _accumulator(n, like, zero, fill):
    # Not inlined: numba hoists an allocation of loop-invariant size out of
    # the chunk loop, and out of the hashed branch that never needs it.
    acc = np.empty(n, like.dtype)
    if fill:
        acc[:] = zero
    return acc


@numba.njit(cache=True, inline="always")
def _plus_times_bits(out_idx, acc, seen, b_idx, b_val, q0, q1, av, f, lo, hi, guarded):
    """Add ``av * B[k, :]`` (entries ``q0:q1``) to a row on the dense
    accumulator; returns the row's new ``(f, lo, hi)``.

    Branch-free unless ``guarded``: every column is written at ``out_idx[f]``
    and kept (``f`` advanced) only if new, so a full row writes one slot past
    its end.  ``guarded`` writes only new columns, for the rows whose next
    slot is not their chunk's to overwrite.  B's rows are sorted (a
    ``Matrix``'s invariant), so the span grows by their first and last
    columns: a minimum and maximum per product cost a fifth of the loop.
    """
    if q1 > q0:
        lo = min(lo, np.int64(b_idx[q0]))
        hi = max(hi, np.int64(b_idx[q1 - 1]))
    for q in range(np.uint64(q0), np.uint64(q1)):
        col = b_idx[q]
        j = np.uint64(col)
        w = j >> np.uint64(6)
        bit = np.uint64(1) << (j & np.uint64(63))
        sw = seen[w]
        new = (sw & bit) == 0
        seen[w] = sw | bit
        acc[j] += av * b_val[q]
        if not guarded or new:
            out_idx[f] = col
        f += np.int64(new)
    return f, lo, hi


def _numeric_work(a_ptr, a_idx, a_val, a_hv, b_ptr, *rest):
    # The same estimate as the symbolic pass: numeric's arguments interleave
    # the values, so B's row pointer is its fifth argument, not its third.
    return _spgemm_work(a_ptr, a_idx, b_ptr)


@parallel_kernel(_numeric_work,
                 inputs=("a_ptr", "a_idx", "a_val", "b_ptr", "b_idx", "b_val", "out_ptr"))
def _numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
             ncols, out_ptr, add, mul, one, idx_proto, numeric, dense_factor, parts):
    # ``out_ptr`` may also be an upper bound of every row (``_row_bounds``):
    # rows are written from ``out_ptr[i]`` and ``counts`` says how many
    # entries each holds.
    n = a_ptr.size - 1
    nnz = out_ptr[n]
    out_idx = np.empty(nnz, idx_proto.dtype)
    out_val = np.empty(nnz, one.dtype)
    counts = np.empty(n, np.int64)
    onev = one[0]
    # plus_times on valued numbers is the common case: a branch-free loop
    # accumulating every product onto a slot that starts at -0 (the
    # additive identity of IEEE floats, -0 + x == x even for x = -0, and
    # 0 for integers), so a column's first term is not a special case.  A
    # structural A (a sampler's Q) multiplies by ``onev``, the product the
    # general loop forms too.
    fast = add == ADD_PLUS and mul == MUL_TIMES and b_hv and numeric
    zero = -(onev * 0)
    bounds = _chunks(a_ptr, a_idx, b_ptr, parts)
    for c in prange(bounds.size - 1):
        total, most = _chunk_products(a_ptr, a_idx, b_ptr, bounds[c], bounds[c + 1])
        if ncols > dense_factor * total:
            _hashed_rows(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, out_ptr,
                         add, mul, onev, bounds[c], bounds[c + 1], most, out_idx, out_val,
                         counts, ncols)
            continue
        seen = zero_bitmap(ncols)
        acc = _accumulator(ncols, one, zero, fast)
        chunk_end = out_ptr[bounds[c + 1]]
        for i in range(bounds[c], bounds[c + 1]):
            start = out_ptr[i]
            f = start
            lo = np.int64(ncols)
            hi = np.int64(-1)
            # A full row's write past its end is harmless while a later row
            # of this chunk starts there (it overwrites the slot), not at the
            # end of the chunk, whose next slot is another chunk's.
            free = out_ptr[i + 1] < chunk_end
            for p in range(a_ptr[i], a_ptr[i + 1]):
                k = a_idx[p]
                av = a_val[p] if a_hv else onev
                if fast:
                    # Two copies of the loop, the flag a constant in each.
                    if free:
                        f, lo, hi = _plus_times_bits(out_idx, acc, seen, b_idx, b_val,
                                                     b_ptr[k], b_ptr[k + 1], av,
                                                     f, lo, hi, False)
                    else:
                        f, lo, hi = _plus_times_bits(out_idx, acc, seen, b_idx, b_val,
                                                     b_ptr[k], b_ptr[k + 1], av,
                                                     f, lo, hi, True)
                    continue
                for q in range(b_ptr[k], b_ptr[k + 1]):
                    j = b_idx[q]
                    bv = b_val[q] if b_hv else onev
                    prod = mul_op(mul, av, bv, onev)
                    w = np.uint64(j) >> np.uint64(6)
                    bit = np.uint64(1) << (np.uint64(j) & np.uint64(63))
                    if not seen[w] & bit:
                        seen[w] |= bit
                        acc[j] = prod
                        out_idx[f] = j
                        f += 1
                        lo = min(lo, j)
                        hi = max(hi, j)
                    else:
                        acc[j] = add_op(add, acc[j], prod)
            _finish_row_bits(out_idx, out_val, acc, seen, start, f, lo, hi, fast, zero)
            counts[i] = f - start
    return out_idx, out_val, counts


def spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols):
    """Exclusive-scanned row pointer of ``A @ B`` (structure only)."""
    return _symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols, np.int64(DENSE_ACC_FACTOR), _parts())


def spgemm_numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                   ncols, out_ptr, add, mul, one):
    """Fill ``A @ B`` given the row pointer from ``spgemm_symbolic``:
    returns (indices, values)."""
    # int32 column indices when they fit: half the output traffic.
    proto = np.empty(0, index_dtype(ncols))
    # The branch-free plus_times loop needs an additive identity it can
    # start every slot at: real numbers have one (-0 or 0), booleans do not.
    numeric = np.dtype(one.dtype).kind in "iuf"
    out_idx, out_val, _ = _numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                                   ncols, out_ptr, add, mul, one, proto, numeric,
                                   np.int64(DENSE_ACC_FACTOR), _parts())
    return out_idx, out_val


#: ``spgemm`` skips the counting pass while the products number at most this
#: many times the operands' entries: the rows are then filled into scratch
#: sized by their products (an upper bound of their entries) and packed,
#: which costs a copy of the output instead of a second pass over every
#: product, with scratch no larger than a small multiple of the operands.
#: Sparse-times-sparse products whose rows share few columns (a sampler's
#: probability rows: a LADIES layer at R-MAT scale 16 has 2.3e5 products
#: over 1.8e6 entries of A) take this path; squaring a graph with hubs,
#: whose products far outnumber its entries, keeps two passes.
ONE_PASS_FACTOR = 2


@parallel_kernel(lambda a_ptr, a_idx, b_ptr, ncols: over_rows(int(a_ptr.size) - 1,
                                                              int(a_idx.size)),
                 inputs=("a_ptr", "a_idx", "b_ptr"))
def _row_bounds(a_ptr, a_idx, b_ptr, ncols):
    """Exclusive scan of every row's products, capped at ``ncols``: an upper
    bound of the product's row pointer."""
    n = a_ptr.size - 1
    ub = np.zeros(n + 1, np.int64)
    for i in prange(n):
        ub[i + 1] = min(_row_products(a_ptr, a_idx, b_ptr, i), ncols)
    for i in range(n):
        ub[i + 1] += ub[i]
    return ub


@parallel_kernel(lambda ub, counts, idx, val: over_rows(int(counts.size), int(ub[-1])))
def _pack(ub, counts, idx, val):
    """The rows filled at ``ub`` with ``counts`` entries, made contiguous:
    (indptr, indices, values)."""
    n = counts.size
    ptr = np.zeros(n + 1, np.int64)
    for i in range(n):
        ptr[i + 1] = ptr[i] + counts[i]
    if ptr[n] == ub[n]:
        return ptr, idx, val
    out_idx = np.empty(ptr[n], idx.dtype)
    out_val = np.empty(ptr[n], val.dtype)
    for i in prange(n):
        o = ptr[i]
        s = ub[i]
        for t in range(counts[i]):
            out_idx[o + t] = idx[s + t]
            out_val[o + t] = val[s + t]
    return ptr, out_idx, out_val


def spgemm(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, ncols, add, mul, one):
    """``A @ B`` over a semiring: (indptr, indices, values).

    The entries and values ``spgemm_symbolic`` then ``spgemm_numeric`` give
    (the same accumulation, term for term), in one pass over the products
    when they are few next to the operands (``ONE_PASS_FACTOR``).

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.cpu.spgemm import spgemm
    >>> from kernels.semiring_ops import ADD_PLUS, MUL_TIMES
    >>> ptr = np.array([0, 2, 3]); idx = np.array([0, 1, 1]); val = np.array([1.0, 2.0, 3.0])
    >>> p, i, v = spgemm(ptr, idx, val, True, ptr, idx, val, True, 2, ADD_PLUS, MUL_TIMES,
    ...                  np.ones(1))
    >>> p.tolist(), i.tolist(), v.tolist()
    ([0, 2, 3], [0, 1, 1], [1.0, 8.0, 9.0])
    """
    ub = _row_bounds(a_ptr, a_idx, b_ptr, np.int64(ncols))
    if int(ub[-1]) > ONE_PASS_FACTOR * (int(a_idx.size) + int(b_idx.size)):
        ptr = spgemm_symbolic(a_ptr, a_idx, b_ptr, b_idx, ncols)
        return (ptr,) + spgemm_numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val,
                                       b_hv, ncols, ptr, add, mul, one)
    proto = np.empty(0, index_dtype(ncols))
    numeric = np.dtype(one.dtype).kind in "iuf"
    idx, val, counts = _numeric(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv,
                                ncols, ub, add, mul, one, proto, numeric,
                                np.int64(DENSE_ACC_FACTOR), _parts())
    return _pack(ub, counts, idx, val)


@numba.njit(cache=True, inline="always")
def gather_row_fill(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                    onev, f, out_idx, out_val):
    """Row ``i`` of a row-gather product into ``out[f:]``.

    The CUDA twin writes the same entries, one thread per entry.
    """
    if a_ptr[i + 1] > a_ptr[i]:
        p = a_ptr[i]
        k = a_idx[p]
        av = a_val[p] if a_hv else onev
        # Unsigned offsets: numba then adds no negative-index wraparound to
        # the accesses, and the CPU build vectorises the copy (see
        # kernels.cpu.extract.gather_rows).
        lo = np.uint64(b_ptr[k])
        m = np.uint64(b_ptr[k + 1]) - lo
        o = np.uint64(f)
        for q in range(m):
            bv = b_val[lo + q] if b_hv else onev
            out_idx[o + q] = b_idx[lo + q]
            out_val[o + q] = mul_op(mul, av, bv, onev)


def _gather_work(a_ptr, *rest):
    return int(a_ptr.size - 1)


@parallel_kernel(_gather_work, inputs=("a_ptr", "a_idx", "a_val", "b_ptr", "b_idx", "b_val"))
def spgemm_gather(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                  one):
    """``A @ B`` for an A with at most one entry per row (row gather)."""
    n = a_ptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        if a_ptr[i + 1] > a_ptr[i]:
            k = a_idx[a_ptr[i]]
            out_ptr[i + 1] = b_ptr[k + 1] - b_ptr[k]
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    out_idx = np.empty(out_ptr[n], b_idx.dtype)
    out_val = np.empty(out_ptr[n], one.dtype)
    onev = one[0]
    for i in prange(n):
        gather_row_fill(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, mul,
                        onev, out_ptr[i], out_idx, out_val)
    return out_ptr, out_idx, out_val
