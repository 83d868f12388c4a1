"""Scalar semiring and monoid operators, by integer code.

Kernels take the codes as plain integers so one compiled kernel serves every
semiring (no per-semiring compilation).  The codes are the contract between
``spla.semiring`` and the kernels of both backends.
"""

import numba

# Additive monoids.
ADD_PLUS = 0
ADD_MIN = 1
ADD_MAX = 2
ADD_ANY = 3  # keeps the first value met (GraphBLAS "any")
ADD_TIMES = 4

# Multiplicative operators.
MUL_TIMES = 0
MUL_PAIR = 1  # 1 whatever the operands: structure only
MUL_PLUS = 2
MUL_FIRST = 3
MUL_SECOND = 4
MUL_MIN = 5
MUL_MAX = 6


@numba.njit(cache=True, inline="always")
def mul_op(code, a, b, one):
    if code == MUL_TIMES:
        return a * b
    if code == MUL_PAIR:
        return one
    if code == MUL_PLUS:
        return a + b
    if code == MUL_FIRST:
        return a
    if code == MUL_SECOND:
        return b
    if code == MUL_MIN:
        return a if a < b else b
    return a if a > b else b


@numba.njit(cache=True, inline="always")
def add_op(code, x, y):
    if code == ADD_PLUS:
        return x + y
    if code == ADD_MIN:
        return x if x < y else y
    if code == ADD_MAX:
        return x if x > y else y
    if code == ADD_TIMES:
        return x * y
    return x


@numba.njit(cache=True, inline="always")
def fold_row(val, lo, hi, hv, code, one, out, i):
    """``out[i]``: entries ``lo .. hi - 1`` folded left to right with the
    additive monoid ``code`` (``hi - lo`` copies of ``one`` when ``hv`` is
    False); ``hi > lo``.

    Both backends' row reductions call this one function, so the running
    value has the same type everywhere: the type numba gives the fold of the
    operands (float32 stays float32; small integers widen to int64 and wrap
    once, on the store, to the same result as wrapping at every step).  It
    lives in a register: a GPU thread that kept it in ``out[i]`` paid a
    round trip to memory per entry.
    """
    acc = val[lo] if hv else one
    for q in range(lo + 1, hi):
        acc = add_op(code, acc, val[q] if hv else one)
    out[i] = acc


# Row steps of the masked products (kernels/cpu/masked.py and its CUDA twin):
# both backends run these same functions, one output row per call.

@numba.njit(cache=True, inline="always")
def find_sorted(idx, lo, hi, j):
    """The first position p in lo..hi-1 with idx[p] >= j (idx sorted), or hi."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if idx[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, inline="always")
def masked_row(i, a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, m_ptr, m_idx,
               m_ok, add, mul, onev, out_val, hit):
    """Fill the mask slots of output row i (shared by both backends)."""
    mlo = m_ptr[i]
    mhi = m_ptr[i + 1]
    if mhi == mlo:
        return
    for p in range(a_ptr[i], a_ptr[i + 1]):
        k = a_idx[p]
        av = a_val[p] if a_hv else onev
        q0 = b_ptr[k]
        q1 = b_ptr[k + 1]
        s = mlo
        for q in range(q0, q1):
            j = b_idx[q]
            s = find_sorted(m_idx, s, mhi, j)  # B's row is sorted: search on from the last slot
            if s >= mhi:
                break
            if m_idx[s] != j or not m_ok[s]:
                continue
            t = mul_op(mul, av, b_val[q] if b_hv else onev, onev)
            if hit[s]:
                out_val[s] = add_op(add, out_val[s], t)
            else:
                out_val[s] = t
                hit[s] = True


@numba.njit(cache=True, inline="always")
def pull_row(i, a_ptr, a_idx, a_val, a_hv, u_val, u_has, add, mul, onev, flip, w, w_has):
    """Output row i of a masked ``A u`` (shared by both backends).

    The terms fold left to right in A's row order (a fixed order, so the
    value does not depend on how rows are spread over threads), in a
    register: one store per row, not one per term.  An empty ``u_has``
    means every u[k] is present (a dense u: no test per term); plus_times
    over such a u runs a loop free of the per-term operator dispatch, with
    the same terms in the same order (``a ⊗ u`` and ``u ⊗ a`` are the same
    product for ``times``).
    """
    lo = a_ptr[i]
    hi = a_ptr[i + 1]
    dense_u = u_has.size == 0
    if dense_u and add == ADD_PLUS and mul == MUL_TIMES and a_hv:
        if hi > lo:
            acc0 = a_val[lo] * u_val[a_idx[lo]]
            for p in range(lo + 1, hi):
                acc0 += a_val[p] * u_val[a_idx[p]]
            w[i] = acc0
            w_has[i] = True
        return
    acc = onev
    found = False
    for p in range(lo, hi):
        k = a_idx[p]
        if not dense_u and not u_has[k]:
            continue
        av = a_val[p] if a_hv else onev
        t = mul_op(mul, u_val[k], av, onev) if flip else mul_op(mul, av, u_val[k], onev)
        if found:
            acc = add_op(add, acc, t)
        else:
            acc = t
            found = True
            if add == ADD_ANY:
                break
    if found:
        w[i] = acc
        w_has[i] = True


@numba.njit(cache=True, inline="always")
def _dot_term(mul, a_val, a_hv, p, bt_val, bt_hv, q, onev):
    return mul_op(mul, a_val[p] if a_hv else onev, bt_val[q] if bt_hv else onev, onev)


@numba.njit(cache=True, inline="always")
def dot_slot(s, i, a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_idx,
             add, mul, onev, out_val, hit):
    """Mask slot s = (i, j) as the dot product of A's row i and Bᵀ's row j.

    The sorted rows meet in increasing k: by a merge when their lengths
    are alike, by searching the long row for each entry of the short one
    when one is 8 times longer (a hub's row then costs the short row's
    entries times a log, not its own length).
    """
    j = m_idx[s]
    p = a_ptr[i]
    pe = a_ptr[i + 1]
    q = bt_ptr[j]
    qe = bt_ptr[j + 1]
    acc = onev
    found = False
    if 8 * (pe - p) < qe - q:  # short A row: search Bᵀ's row
        while p < pe and q < qe:
            q = find_sorted(bt_idx, q, qe, a_idx[p])
            if q < qe and bt_idx[q] == a_idx[p]:
                t = _dot_term(mul, a_val, a_hv, p, bt_val, bt_hv, q, onev)
                acc = add_op(add, acc, t) if found else t
                found = True
                if add == ADD_ANY:
                    break
                q += 1
            p += 1
    elif 8 * (qe - q) < pe - p:  # short Bᵀ row: search A's row
        while p < pe and q < qe:
            p = find_sorted(a_idx, p, pe, bt_idx[q])
            if p < pe and a_idx[p] == bt_idx[q]:
                t = _dot_term(mul, a_val, a_hv, p, bt_val, bt_hv, q, onev)
                acc = add_op(add, acc, t) if found else t
                found = True
                if add == ADD_ANY:
                    break
                p += 1
            q += 1
    else:
        while p < pe and q < qe:
            ka = a_idx[p]
            kb = bt_idx[q]
            if ka == kb:
                t = _dot_term(mul, a_val, a_hv, p, bt_val, bt_hv, q, onev)
                acc = add_op(add, acc, t) if found else t
                found = True
                if add == ADD_ANY:
                    break
                p += 1
                q += 1
            elif ka < kb:
                p += 1
            else:
                q += 1
    if found:
        out_val[s] = acc
        hit[s] = True


@numba.njit(cache=True, inline="always")
def dot_row(i, a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_ptr, m_idx, m_ok,
            add, mul, onev, out_val, hit):
    """Mask slots of output row i as dot products (``dot_slot``) of A's row i
    and Bᵀ's rows."""
    for s in range(m_ptr[i], m_ptr[i + 1]):
        if m_ok[s]:
            dot_slot(s, i, a_ptr, a_idx, a_val, a_hv, bt_ptr, bt_idx, bt_val, bt_hv, m_idx,
                     add, mul, onev, out_val, hit)
