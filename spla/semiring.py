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

import numbers
from dataclasses import dataclass

import numpy as np

from kernels import semiring_ops as ops


@dataclass(frozen=True)
class Monoid:
    """An associative operator with an identity (GraphBLAS ``GrB_Monoid``).

    The built-in monoids are ``spla.monoid.<name>``; ``Monoid.from_binary``
    makes one from any binary operator, user-defined ones included.

    Attributes
    ----------
    name : str
    code : int or None
        Kernel code (``kernels.semiring_ops.ADD_*``); None when the monoid
        folds through its operator on array expressions (``reduceat``).
    identity : float or int
        The value of an empty reduction.
    logical : bool
        Operands are taken as booleans and results are 0/1.
    op : BinaryOp or None
        The operator of a monoid made by ``from_binary`` (None for the
        built-in ones, whose operator is ``spla.binary.<name>``).

    Examples
    --------
    >>> from spla import Monoid, binary
    >>> absmax = Monoid.from_binary(binary.BinaryOp.from_function(
    ...     lambda x, y: abs(x) if abs(x) > abs(y) else abs(y), "absmax"), 0.0)
    >>> absmax, absmax.identity, absmax.code is None
    (Monoid('absmax'), 0.0, True)
    """

    name: str
    code: object
    identity: float
    logical: bool = False
    op: object = None

    def __repr__(self):
        return f"Monoid({self.name!r})"

    @classmethod
    def from_binary(cls, op, identity, name=None):
        """A monoid from a binary operator and its identity.

        python-graphblas spells this ``Monoid.register_anonymous(binop,
        identity)``; the alias ``Monoid.register_anonymous`` is accepted too.
        The monoid is accepted wherever one is: ``reduce_rowwise``,
        ``reduce_columnwise``, ``reduce_scalar``, ``ewise_add``, ``accum=``,
        and ``Semiring(monoid, binary_op)`` for ``mxv`` / ``vxm``.  It runs
        on array expressions (on the host for device arrays), not in the
        compiled kernels.

        Fold order: the operands of one output keep a fixed order, the
        order of their positions (a row's entries by increasing column, a
        column's by increasing row, a whole matrix row after row; the terms
        of a product by increasing inner index), and are combined pairwise,
        ``((x0 ⊕ x1) ⊕ (x2 ⊕ x3)) ⊕ ...``.  For an associative operator that
        equals the left fold ``(((x0 ⊕ x1) ⊕ x2) ⊕ ...)`` exactly when the
        operator is exact (integers, ``max``, ``min``, ...), and up to
        rounding for floating-point arithmetic; the operator need not be
        commutative.

        Parameters
        ----------
        op : BinaryOp
            ``spla.binary.<name>`` or one made by ``BinaryOp.from_function``
            (not a positional operator).  It should be associative, with
            ``identity`` as its identity: spla does not check either.
        identity : int or float
            The value of an empty reduction (cast to the values' dtype;
            ±inf becomes the integer extremes for integer values).
        name : str, optional
            Defaults to the operator's name; it may not be a built-in
            monoid's name (``spla.monoid.<name>``).

        Returns
        -------
        Monoid

        Raises
        ------
        InvalidValue
            ``op`` is not a (non-positional) BinaryOp, ``identity`` is not
            a real scalar, or ``name`` is taken.

        Examples
        --------
        >>> import numpy as np
        >>> from spla import BinaryOp, Matrix, Monoid, reduce_rowwise
        >>> def absmax(x, y):
        ...     return abs(x) if abs(x) > abs(y) else abs(y)
        >>> m = Monoid.from_binary(BinaryOp.from_function(absmax), 0.0)
        >>> A = Matrix.from_dense(np.array([[-3.0, 2.0], [0.0, 0.0]]))
        >>> reduce_rowwise(A, m)
        array([3., 0.])
        """
        return _user_monoid("Monoid.from_binary", op, identity, name)

    @classmethod
    def register_anonymous(cls, binop, identity, name=None):
        """``Monoid.from_binary`` under python-graphblas's name.

        Examples
        --------
        >>> from spla import Monoid, binary
        >>> Monoid.register_anonymous(binary.minus, 0, "minus_m").binop
        BinaryOp('minus')
        """
        return _user_monoid("Monoid.register_anonymous", binop, identity, name)

    @property
    def binop(self):
        """The monoid's binary operator (a ``spla.binary`` object)."""
        if self.op is not None:
            return self.op
        from spla.operators import BINARY
        return BINARY[self.name]

    def identity_for(self, dtype):
        """The identity cast to ``dtype`` (±inf becomes the integer extremes)."""
        dtype = np.dtype(dtype)
        if dtype.kind in "iu" and np.isinf(self.identity):
            info = np.iinfo(dtype)
            return dtype.type(info.max if self.identity > 0 else info.min)
        return dtype.type(self.identity)

    def reduceat(self, vals, starts, *, func="reduceat"):
        """Each run of ``vals`` folded, as ``numpy.ufunc.reduceat`` does.

        Parameters
        ----------
        vals : numpy array
            Host values, the runs one after another, each in fold order.
        starts : numpy array of int
            Strictly increasing run starts (every run non-empty).
        func : str
            The public operator, named in errors.

        Returns
        -------
        numpy array, one value per run: the values' dtype (a monoid maps
        T x T -> T, so an operator's results are cast to it); 0/1 for the
        logical monoids (booleans for ``lor``, ``land`` and ``lxor``)

        Examples
        --------
        >>> import numpy as np
        >>> from spla import monoid
        >>> monoid.max.reduceat(np.array([1.0, 5.0, 2.0]), np.array([0, 2]))
        array([5., 2.])
        """
        vals = np.asarray(vals)
        starts = np.asarray(starts, np.int64)
        if self.op is None and self.name == "any":
            return vals[starts]
        uf = _UFUNCS.get(self.name) if self.op is None else None
        if uf is not None:
            return uf.reduceat(vals != 0 if self.logical else vals, starts)
        if self.logical:
            vals = (vals != 0).astype(np.int64)
        return _pairwise_fold(self.binop, vals, starts, func)


_UFUNCS = {"plus": np.add, "times": np.multiply, "min": np.minimum, "max": np.maximum,
           "lor": np.logical_or, "land": np.logical_and, "lxor": np.logical_xor}


def _pairwise_fold(op, vals, starts, func):
    """Runs folded by ``op`` in rounds: each round combines neighbours 0-1,
    2-3, ... of every run (one array call per round, log2 of the longest
    run rounds), keeping the operands in order."""
    if starts.size == 0:
        return vals[:0]
    lens = np.diff(np.append(starts, vals.size))
    v = vals
    while v.size > lens.size:
        r = np.arange(v.size, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        even = (r & 1) == 0
        paired = even.copy()
        paired[:-1] &= r[1:] != 0  # the next position lies in the same run
        paired[-1] = False
        left = np.flatnonzero(paired)
        out = v[even]
        with np.errstate(all="ignore"):  # the operator's arithmetic, as the user wrote it
            # a monoid maps T x T -> T: results are cast to the values' dtype
            out[(np.cumsum(even) - 1)[left]] = op(v[left], v[left + 1], func=func)
        v, lens = out, (lens + 1) // 2
    return v


def _user_monoid(func, op, identity, name):
    from spla.checks import describe, fail
    from spla.exceptions import InvalidValue
    from spla.operators import BinaryOp
    if not isinstance(op, BinaryOp):
        fail(InvalidValue, func, "op", "a spla.BinaryOp (spla.binary.<name>, or "
             "BinaryOp.from_function(f) for a Python function)", describe(op))
    if op.positional is not None:
        fail(InvalidValue, func, "op", "an operator of the values (not positional)",
             repr(op))
    if isinstance(identity, (bool, np.bool_)) or not isinstance(identity, numbers.Real):
        fail(InvalidValue, func, "identity", "a real scalar (int or float)", describe(identity))
    identity = identity.item() if isinstance(identity, np.generic) else identity
    name = op.name if name is None else name
    if not isinstance(name, str) or not name:
        fail(InvalidValue, func, "name", "a non-empty str", describe(name))
    if name in MONOIDS:
        fail(InvalidValue, func, "name", f"a name other than the built-in monoids' "
             f"{sorted(MONOIDS)} (pass name=)", repr(name))
    return Monoid(name, None, identity, op=op)


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
