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
>>> from spla import Semiring, binary, monoid
>>> Semiring(monoid.max, binary.min)
Semiring('max_min')
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
    logical: bool = False

    def __repr__(self):
        return f"Monoid({self.name!r})"

    @property
    def binop(self):
        """The monoid's binary operator (a ``spla.binary`` object)."""
        from spla.operators import BINARY
        return BINARY[self.name]

    def identity_for(self, dtype):
        """The identity cast to ``dtype`` (±inf becomes the integer extremes)."""
        dtype = np.dtype(dtype)
        if dtype.kind in "iu" and np.isinf(self.identity):
            info = np.iinfo(dtype)
            return dtype.type(info.max if self.identity > 0 else info.min)
        return dtype.type(self.identity)


@dataclass(frozen=True, init=False)
class Semiring:
    """An additive monoid and a multiplicative operator.

    ``Semiring(monoid, binary_op)`` builds one from a monoid and any binary
    operator, built-in or made with ``BinaryOp.from_function``: no kernel
    code is needed (operators without one run on array expressions).

    Attributes
    ----------
    name : str
    monoid : Monoid
    mul_code : int or None
        Kernel code (``kernels.semiring_ops.MUL_*``); None when the
        multiplicative operator has none.
    structural : bool
        True when the result carries no values (``any_pair``).
    count : bool
        True when values count paths whatever the operands (``plus_pair``).
    binop : BinaryOp
        The multiplicative operator.

    Examples
    --------
    >>> from spla import Semiring, binary, monoid
    >>> sr = Semiring(monoid.min, binary.BinaryOp.from_function(lambda x, y: x + 2 * y, "p2"))
    >>> sr.name, sr.mul_code is None
    ('min_p2', True)
    """

    name: str
    monoid: Monoid
    mul_code: object
    structural: bool
    count: bool
    binop: object

    def __init__(self, monoid, binary_op, mul_code=None, structural=False, count=False,
                 *, name=None):
        # Two spellings: Semiring(monoid, binary_op) and the internal
        # Semiring(name, monoid, mul_code, ...) of the named table below.
        from spla.operators import BINARY, as_binary
        if isinstance(monoid, str):
            name, monoid, binop = monoid, binary_op, None
            for op in BINARY.values():
                if op.code == mul_code and op.positional is None and not op.logical:
                    binop = op
                    break
        else:
            if not isinstance(monoid, Monoid):
                monoid = as_monoid("Semiring", monoid)
            binop = as_binary("Semiring", "binary_op", binary_op)
            mul_code = binop.code
            structural = monoid.name == "any" and binop.name == "pair"
            count = monoid.name == "plus" and binop.name == "pair"
            name = name or f"{monoid.name}_{binop.name}"
        for key, val in (("name", name), ("monoid", monoid), ("mul_code", mul_code),
                         ("structural", structural), ("count", count), ("binop", binop)):
            object.__setattr__(self, key, val)

    @property
    def kernel_ready(self):
        """True when the compiled semiring kernels can run this semiring."""
        return self.mul_code is not None and self.monoid.code is not None

    def __repr__(self):
        return f"Semiring({self.name!r})"

    def output_dtype(self, a_dtype, b_dtype):
        """The result dtype for operand dtypes (None = structural operand)."""
        if self.structural:
            return None
        b = self.binop
        if self.count or (b is not None and (b.logical or b.positional)) or self.monoid.logical:
            return np.dtype(np.int64)
        if b is not None and b.name == "div":
            return np.result_type(np.float64, *[d for d in (a_dtype, b_dtype) if d is not None])
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
# On operands cast to 0/1, "or" is max and "and" is min; "xor" has no kernel code.
lor = Monoid("lor", ops.ADD_MAX, 0.0, logical=True)
land = Monoid("land", ops.ADD_MIN, 1.0, logical=True)
lxor = Monoid("lxor", None, 0.0, logical=True)

plus_times = Semiring("plus_times", plus, ops.MUL_TIMES)
plus_pair = Semiring("plus_pair", plus, ops.MUL_PAIR, count=True)
any_pair = Semiring("any_pair", any, ops.MUL_PAIR, structural=True)
min_plus = Semiring("min_plus", min, ops.MUL_PLUS)
max_plus = Semiring("max_plus", max, ops.MUL_PLUS)
max_times = Semiring("max_times", max, ops.MUL_TIMES)
min_times = Semiring("min_times", min, ops.MUL_TIMES)
plus_min = Semiring("plus_min", plus, ops.MUL_MIN)
any_second = Semiring("any_second", any, ops.MUL_SECOND)
min_first = Semiring("min_first", min, ops.MUL_FIRST)
min_second = Semiring("min_second", min, ops.MUL_SECOND)
any_secondi = Semiring(any, "secondi")
any_firsti = Semiring(any, "firsti")
min_secondi = Semiring(min, "secondi")
lor_land = Semiring(lor, "land")
plus_first = Semiring("plus_first", plus, ops.MUL_FIRST)
plus_second = Semiring("plus_second", plus, ops.MUL_SECOND)

MONOIDS = {m.name: m for m in (plus, times, min, max, any, lor, land, lxor)}
SEMIRINGS = {s.name: s for s in (plus_times, plus_pair, any_pair, min_plus,
                                 max_plus, max_times, min_times, plus_min,
                                 any_second, min_first, min_second, any_secondi,
                                 any_firsti, min_secondi, lor_land, plus_first,
                                 plus_second)}


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
