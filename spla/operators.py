"""Binary operators as objects (GraphBLAS ``GrB_BinaryOp``).

A ``BinaryOp`` is accepted wherever an operator takes a binary operation
(``ewise_add``, ``ewise_mult``, ``ewise_union``, ``kronecker``, ``accum=``)
and, paired with a monoid, makes a ``spla.Semiring``.  The built-in ones
live in ``spla.binary`` (``spla.binary.plus``, ``spla.binary.secondi``, ...);
``BinaryOp.from_function`` makes one from a Python function of two scalars
that numba can compile.

How an operator reaches the kernels: the ones with a kernel code
(``kernels.semiring_ops.MUL_*``) run in the compiled semiring kernels; the
logical ones run there on operands cast to 0/1 (``land`` is ``min`` and
``lor`` is ``max`` on 0/1); the positional ones (``firsti``, ``secondj``, ...)
run as ``first``/``second`` on operands whose values were replaced by their
row or column ids.  Everything else (``minus``, ``div``, comparisons, user
functions) runs on array expressions of the matched operand values.

Boolean results (comparisons, logical operators) are stored as int64 0/1:
a boolean value array means a pattern in spla.

Examples
--------
>>> import numpy as np
>>> from spla import binary
>>> binary.minus
BinaryOp('minus')
>>> binary.minus(np.array([3.0]), np.array([1.0]))
array([2.])
>>> hyp = binary.BinaryOp.from_function(lambda x, y: (x * x + y * y) ** 0.5, "hypot")
>>> hyp(np.array([3.0]), np.array([4.0]))
array([5.])
"""

import numpy as np

from kernels import semiring_ops as ops
from spla.checks import describe, fail
from spla.exceptions import DTypeError, InvalidValue


class BinaryOp:
    """A binary operator ``z = f(x, y)``.

    Attributes
    ----------
    name : str
    code : int or None
        Kernel code of the semiring kernels, or None when the operator runs
        on array expressions only.
    logical : bool
        Operands are taken as booleans (nonzero is true) and the result is 0/1.
    positional : {None, 'firsti', 'firstj', 'secondi', 'secondj'}
        The result is an index of the entry, not a function of its values.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.operators import BinaryOp
    >>> op = BinaryOp.from_function(lambda x, y: x - 2 * y, "x_minus_2y")
    >>> op(np.array([5, 7]), np.array([1, 2]))
    array([3, 3])
    """

    __slots__ = ("name", "code", "logical", "positional", "_np", "_py", "_jit")

    def __init__(self, name, code=None, np_func=None, *, logical=False, positional=None,
                 py_func=None):
        self.name = name
        self.code = code
        self.logical = logical
        self.positional = positional
        self._np = np_func
        self._py = py_func
        self._jit = None

    def __repr__(self):
        return f"BinaryOp({self.name!r})"

    @property
    def is_user(self):
        """True for an operator made from a Python function."""
        return self._py is not None

    @classmethod
    def from_function(cls, func, name=None):
        """A binary operator from a Python function of two scalars.

        The function is compiled with ``numba.njit`` now (for float64
        operands), so a function numba cannot compile is refused here, with
        its name, and not deep inside an operator.

        Parameters
        ----------
        func : callable
            ``func(x, y) -> scalar``; a ``numba.njit`` function is taken as is.
        name : str, optional
            Defaults to the function's ``__name__``.

        Raises
        ------
        InvalidValue
            ``func`` is not callable, or numba cannot compile it.

        Examples
        --------
        >>> import numpy as np
        >>> from spla.operators import BinaryOp
        >>> def absdiff(x, y):
        ...     return x - y if x > y else y - x
        >>> BinaryOp.from_function(absdiff)(np.array([1.0, 5.0]), np.array([4.0, 2.0]))
        array([3., 3.])
        """
        fn = "BinaryOp.from_function"
        if not callable(func):
            fail(InvalidValue, fn, "func", "a function of two scalars", describe(func))
        name = name or getattr(func, "__name__", "user_op")
        op = cls(name, py_func=func)
        op._compiled(fn, np.dtype(np.float64), np.dtype(np.float64))
        return op

    def _compiled(self, func, a_dtype, b_dtype):
        import numba
        from numba.core.registry import CPUDispatcher
        if self._jit is None:
            f = self._py
            self._jit = f if isinstance(f, CPUDispatcher) else numba.njit(cache=False)(f)
        try:
            self._jit.compile((numba.from_dtype(a_dtype), numba.from_dtype(b_dtype)))
        except Exception as e:  # numba raises its own error classes (TypingError, ...)
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            fail(InvalidValue, func, "op",
                 f"a binary operator numba can compile; {self.name!r} does not compile for "
                 f"({a_dtype}, {b_dtype})", first)
        return self._jit

    def __call__(self, a, b, i=None, j=None, *, func="BinaryOp"):
        """``f(a, b)`` on matched value arrays (numpy or cupy).

        ``i``, ``j`` are the row and column ids of the entries, needed by the
        positional operators only.
        """
        from spla.backend import device_of, kernels_for, to_host, xp_of
        if self.positional is not None:
            k = i if self.positional in ("firsti", "secondi") else j
            return _as_value_dtype(k if k is not None else np.zeros(len(a), np.int64))
        if self.logical:
            a, b = a != 0, b != 0
        if self._np is not None:
            return _as_value_dtype(self._np(a, b))
        jit = self._compiled(func, np.dtype(a.dtype), np.dtype(b.dtype))
        on_gpu = device_of(a) == "cuda"
        ha, hb = (to_host(a), to_host(b)) if on_gpu else (a, b)
        map_pairs = kernels_for("cpu").vector.map_pairs
        if ha.size == 0:
            out = np.zeros(0, np.result_type(ha.dtype, hb.dtype))
        else:
            out = map_pairs(ha, hb, jit, np.empty(ha.size, np.asarray(jit(ha[0], hb[0])).dtype))
        out = _as_value_dtype(out)
        if on_gpu:
            out = xp_of("cuda").asarray(out)
        return out


def _as_value_dtype(v):
    """Values in one of spla's value dtypes (bool -> int64 0/1)."""
    dt = np.dtype(v.dtype)
    if dt in (np.float32, np.float64, np.int32, np.int64):
        return v
    if dt.kind == "f":
        return v.astype(np.float64)
    if dt.kind in "biu":
        return v.astype(np.int64)
    fail(DTypeError, "BinaryOp", "result", "real values", f"dtype {dt}")


def _div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        if a.dtype.kind in "iu" and b.dtype.kind in "iu":
            return a.astype(np.float64) / b
        return a / b


def _binops():
    P = ops
    table = [
        BinaryOp("plus", P.MUL_PLUS, lambda a, b: a + b),
        BinaryOp("minus", None, lambda a, b: a - b),
        BinaryOp("times", P.MUL_TIMES, lambda a, b: a * b),
        BinaryOp("div", None, _div),
        BinaryOp("min", P.MUL_MIN, lambda a, b: np.minimum(a, b)),
        BinaryOp("max", P.MUL_MAX, lambda a, b: np.maximum(a, b)),
        BinaryOp("first", P.MUL_FIRST, lambda a, b: a.copy()),
        BinaryOp("second", P.MUL_SECOND, lambda a, b: b.copy()),
        BinaryOp("any", P.MUL_FIRST, lambda a, b: a.copy()),
        BinaryOp("pair", P.MUL_PAIR, lambda a, b: (a == a) | True),
        BinaryOp("lor", P.MUL_MAX, lambda a, b: a | b, logical=True),
        BinaryOp("land", P.MUL_MIN, lambda a, b: a & b, logical=True),
        BinaryOp("lxor", None, lambda a, b: a ^ b, logical=True),
        BinaryOp("eq", None, lambda a, b: a == b),
        BinaryOp("ne", None, lambda a, b: a != b),
        BinaryOp("lt", None, lambda a, b: a < b),
        BinaryOp("le", None, lambda a, b: a <= b),
        BinaryOp("gt", None, lambda a, b: a > b),
        BinaryOp("ge", None, lambda a, b: a >= b),
    ]
    for p in ("firsti", "firstj", "secondi", "secondj"):
        code = P.MUL_FIRST if p.startswith("first") else P.MUL_SECOND
        table.append(BinaryOp(p, code, positional=p))
    return {op.name: op for op in table}


#: The built-in binary operators by name.
BINARY = _binops()


def as_binary(func, arg, value):
    """A BinaryOp from a BinaryOp, a Monoid (its operator) or a name.

    Examples
    --------
    >>> from spla.operators import as_binary
    >>> as_binary("f", "op", "times")
    BinaryOp('times')
    """
    if isinstance(value, BinaryOp):
        return value
    binop = getattr(value, "binop", None)  # a Monoid
    if isinstance(binop, BinaryOp):
        return binop
    if isinstance(value, str) and value in BINARY:
        return BINARY[value]
    fail(InvalidValue, func, arg,
         f"a spla.binary operator, a monoid or one of {sorted(BINARY)}", describe(value))
