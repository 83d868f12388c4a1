"""Named semirings and monoids (GraphBLAS vocabulary).

A semiring is an additive monoid (how products meeting in one output entry
are combined) and a multiplicative operator (how an entry of A meets an
entry of B).  A structural operand (a matrix without values) behaves as if
every stored value were 1.

Examples
--------
>>> from spla import semiring
>>> semiring.plus_times
Semiring('plus_times')
>>> semiring.min_plus.monoid.identity
inf
"""

from dataclasses import dataclass

import numpy as np

from kernels import semiring_ops as ops


@dataclass(frozen=True)
class Monoid:
    """An associative, commutative operator with an identity.

    Attributes
    ----------
    name : str
    code : int
        Kernel code (``kernels.semiring_ops.ADD_*``).
    identity : float
        The value of an empty reduction.
    """

    name: str
    code: int
    identity: float

    def __repr__(self):
        return f"Monoid({self.name!r})"

    def identity_for(self, dtype):
        """The identity cast to ``dtype`` (±inf becomes the integer extremes)."""
        dtype = np.dtype(dtype)
        if dtype.kind in "iu" and np.isinf(self.identity):
            info = np.iinfo(dtype)
            return dtype.type(info.max if self.identity > 0 else info.min)
        return dtype.type(self.identity)


@dataclass(frozen=True)
class Semiring:
    """An additive monoid and a multiplicative operator.

    Attributes
    ----------
    name : str
    monoid : Monoid
    mul_code : int
        Kernel code (``kernels.semiring_ops.MUL_*``).
    structural : bool
        True when the result carries no values (``any_pair``).
    count : bool
        True when values count paths whatever the operands (``plus_pair``).
    """

    name: str
    monoid: Monoid
    mul_code: int
    structural: bool = False
    count: bool = False

    def __repr__(self):
        return f"Semiring({self.name!r})"

    def output_dtype(self, a_dtype, b_dtype):
        """The result dtype for operand dtypes (None = structural operand)."""
        if self.structural:
            return None
        if self.count:
            return np.dtype(np.int64)
        given = [d for d in (a_dtype, b_dtype) if d is not None]
        if not given:
            return np.dtype(np.int64)
        return np.result_type(*given)

    @property
    def scales_rows(self):
        """True when a one-entry row of A times B is B's row scaled (or all ones).

        This is what the fused sampling path relies on: it holds for ``times``
        and ``pair`` multiplies, whatever the monoid (a single term is never
        added to anything).
        """
        return self.mul_code in (ops.MUL_TIMES, ops.MUL_PAIR)


plus = Monoid("plus", ops.ADD_PLUS, 0.0)
times = Monoid("times", ops.ADD_TIMES, 1.0)
min = Monoid("min", ops.ADD_MIN, np.inf)  # noqa: A001 - GraphBLAS name
max = Monoid("max", ops.ADD_MAX, -np.inf)  # noqa: A001 - GraphBLAS name
any = Monoid("any", ops.ADD_ANY, 0.0)  # noqa: A001 - GraphBLAS name

plus_times = Semiring("plus_times", plus, ops.MUL_TIMES)
plus_pair = Semiring("plus_pair", plus, ops.MUL_PAIR, count=True)
any_pair = Semiring("any_pair", any, ops.MUL_PAIR, structural=True)
min_plus = Semiring("min_plus", min, ops.MUL_PLUS)
max_plus = Semiring("max_plus", max, ops.MUL_PLUS)
max_times = Semiring("max_times", max, ops.MUL_TIMES)
min_times = Semiring("min_times", min, ops.MUL_TIMES)
plus_min = Semiring("plus_min", plus, ops.MUL_MIN)
any_second = Semiring("any_second", any, ops.MUL_SECOND)

MONOIDS = {m.name: m for m in (plus, times, min, max, any)}
SEMIRINGS = {s.name: s for s in (plus_times, plus_pair, any_pair, min_plus,
                                 max_plus, max_times, min_times, plus_min,
                                 any_second)}


def _lookup(func, arg, value, table, kind):
    if isinstance(value, kind):
        return value
    if isinstance(value, str) and value in table:
        return table[value]
    from spla.exceptions import InvalidValue
    raise InvalidValue(
        f"{func}: argument {arg!r} must be a {kind.__name__} or one of "
        f"{sorted(table)}; got {value!r}")


def as_semiring(func, value):
    """A Semiring from a Semiring or its name."""
    return _lookup(func, "semiring", value, SEMIRINGS, Semiring)


def as_monoid(func, value):
    """A Monoid from a Monoid or its name ('count' is handled by callers)."""
    return _lookup(func, "monoid", value, MONOIDS, Monoid)
