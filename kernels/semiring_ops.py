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
