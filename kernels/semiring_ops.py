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
