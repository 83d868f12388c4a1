"""Argument checks shared by every public operator (public: custom samplers use them too).

Each check raises with a message of one shape: ``func: argument 'name' must
be <expected>; got <received>``.  Checks run once, at the public call site,
before any kernel.
"""

import numbers
import operator

import numpy as np

from kernels.common import index_dtype as _kernel_index_dtype

from spla.backend import device_of
from spla.optional import require_cupy
from spla.exceptions import (DTypeError, IndexOutOfRange, InvalidValue,
                             SplaError)

INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
VALUE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64),
                np.dtype(np.int32), np.dtype(np.int64))


def fail(cls, func, arg, expected, got):
    """Raise ``cls`` with the house message shape.

    Parameters
    ----------
    cls : type
        The exception class (usually one of ``spla.exceptions``).
    func, arg : str
        The function and the argument at fault.
    expected, got : object
        What the argument must be, and what was received.

    Examples
    --------
    >>> from spla.checks import fail
    >>> from spla.exceptions import InvalidValue
    >>> fail(InvalidValue, "my_sampler", "fanout", "an integer >= 1", 0)
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: my_sampler: argument 'fanout' must be an integer >= 1; got 0
    """
    raise cls(f"{func}: argument {arg!r} must be {expected}; got {got}")


def describe(x):
    """Short description of a received value for error messages.

    Arrays are described by shape and dtype (never printed whole); other
    values by a ``repr`` cut to 80 characters.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.checks import describe
    >>> describe(np.zeros((2, 3), np.float32))
    'array of shape (2, 3) and dtype float32'
    >>> import spla
    >>> describe(spla.distribute(spla.Matrix.from_dense(np.eye(2))))
    'a spla.DistMatrix of shape (2, 2) and dtype float64'
    """
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        # spla's own objects by name: "array" would hide that a DistMatrix
        # reached an operator that takes local matrices only.
        kind = type(x)
        what = (f"a spla.{kind.__name__}" if kind.__module__.split(".")[0] == "spla"
                else "array")
        return f"{what} of shape {tuple(x.shape)} and dtype {x.dtype}"
    r = repr(x)
    return r if len(r) < 80 else r[:77] + "..."


def as_int(func, arg, x, *, minimum=None):
    """A Python int from an integral scalar (bools and floats refused).

    Examples
    --------
    >>> import numpy as np
    >>> from spla.checks import as_int
    >>> as_int("f", "k", np.int32(3), minimum=1)
    3
    >>> as_int("f", "k", 2.0)
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: f: argument 'k' must be an integer; got 2.0
    """
    if isinstance(x, bool) or not isinstance(x, (numbers.Integral, np.integer)):
        try:
            if isinstance(x, bool) or isinstance(x, float):
                raise TypeError
            x = operator.index(x)
        except TypeError:
            fail(InvalidValue, func, arg, "an integer", describe(x))
    x = int(x)
    if minimum is not None and x < minimum:
        fail(InvalidValue, func, arg, f"an integer >= {minimum}", x)
    return x


def as_u64(func, arg, x):
    """A Python int in ``[0, 2**64)`` (seeds and random streams).

    Examples
    --------
    >>> from spla.checks import as_u64
    >>> as_u64("f", "seed", 7)
    7
    """
    x = as_int(func, arg, x, minimum=0)
    if x >= 2 ** 64:
        fail(InvalidValue, func, arg, "an integer below 2**64", x)
    return x


def index_dtype(bound):
    """int32 when every index is at most ``bound`` and ``bound < 2**31``, else int64.

    The one rule for narrowing column indices, wire formats and generated
    indices (halving their bytes when the dimensions allow it); the kernels
    apply the same function (``kernels.common.index_dtype``).

    Examples
    --------
    >>> from spla.checks import index_dtype
    >>> index_dtype(2**31 - 1), index_dtype(2**31)
    (dtype('int32'), dtype('int64'))
    """
    return _kernel_index_dtype(bound)


def as_shape(func, shape):
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        fail(InvalidValue, func, "shape", "a pair (nrows, ncols)", describe(shape))
    return (as_int(func, "shape[0]", shape[0], minimum=0),
            as_int(func, "shape[1]", shape[1], minimum=0))


def xp_array(x):
    """The array module of x and x as an array (lists become numpy)."""
    if device_of(x) == "cuda":
        return require_cupy("spla"), x
    return np, np.asarray(x)


def as_index_array(func, arg, x, bound=None, *, allow_empty=True):
    """A 1-D int64 index array checked against ``[0, bound)``.

    Accepts numpy/cupy arrays and sequences of integers; refuses floats and
    bools (a float array of ids is almost always a bug upstream).

    Examples
    --------
    >>> from spla.checks import as_index_array
    >>> as_index_array("f", "rows", [3, 1], bound=4)
    array([3, 1])
    >>> as_index_array("f", "rows", [0.5])
    Traceback (most recent call last):
    ...
    spla.exceptions.DTypeError: f: argument 'rows' must be an integer array; got array of shape (1,) and dtype float64
    """
    xp, a = xp_array(x)
    if a.ndim != 1:
        fail(InvalidValue, func, arg, "a 1-D array of indices", describe(a))
    if a.size == 0:
        if not allow_empty:
            fail(InvalidValue, func, arg, "a non-empty array of indices", "an empty one")
        return xp.zeros(0, np.int64)
    if a.dtype.kind not in "iu":
        fail(DTypeError, func, arg, "an integer array", describe(a))
    if a.dtype.kind == "u" and a.dtype.itemsize == 8 and int(a.max()) > np.iinfo(np.int64).max:
        fail(IndexOutOfRange, func, arg, "indices below 2**63", f"{int(a.max())}")
    a = a.astype(np.int64, copy=False)
    if xp is np:
        lo = int(a.min())
        hi = int(a.max()) if bound is not None else None
    else:  # a device array: both ends in one blocking read
        lo, hi = xp.stack((a.min(), a.max())).tolist()
    if lo < 0:
        fail(IndexOutOfRange, func, arg, "non-negative indices", f"{lo}")
    if bound is not None and hi >= bound:
        fail(IndexOutOfRange, func, arg, f"indices below {bound}", f"{hi}")
    return a


def grouped_ids_stats(ids, group, n):
    """``(smallest, largest, first repeat)`` of ids in groups, in one device read.

    ``ids`` (numpy or cupy, non-empty) and ``group`` (the group of each id,
    host or device) are what samplers are given as minibatches; ``first
    repeat`` is None, or ``(group, id)`` of a repeat within a group (looked
    for only when there is one).  Ids are clipped to ``[-1, n]`` before the
    repeats are counted, so an out-of-range id can neither fake nor hide
    one.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.checks import grouped_ids_stats
    >>> grouped_ids_stats(np.array([3, 1, 3]), np.array([0, 0, 1]), 5)
    (1, 3, None)
    >>> grouped_ids_stats(np.array([3, 1, 3]), np.array([0, 0, 0]), 5)
    (1, 3, (0, 3))
    """
    from spla import backend
    xp = backend.xp_of_array(ids)
    width = n + 2
    key = xp.sort(xp.asarray(group) * width + xp.clip(ids, -1, n))
    same = key[1:] == key[:-1]
    dups = same.sum() if key.size > 1 else xp.zeros((), np.int64)
    lo, hi, dups = (int(v) for v in backend.to_host(xp.stack([ids.min(), ids.max(), dups])))
    if not dups:
        return lo, hi, None
    k = int(key[:-1][same][0])
    return lo, hi, (k // width, k % width)


def value_dtype(func, arg, dtype):
    """The supported value dtype equal to ``dtype``, or DTypeError."""
    dtype = np.dtype(dtype)
    if dtype not in VALUE_DTYPES:
        fail(DTypeError, func, arg,
             "values of dtype float32, float64, int32 or int64 "
             "(or no values, for a structural matrix)", f"dtype {dtype}")
    return dtype


def check_weights(func, arg, values):
    """Weights must be finite and non-negative (probabilities up to scale).

    Examples
    --------
    >>> import numpy as np
    >>> from spla.checks import check_weights
    >>> check_weights("f", "w", np.array([0.5, 0.0]))        # fine: returns None
    >>> check_weights("f", "w", np.array([1.0, -2.0]))
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: f: argument 'w' must be non-negative weights; got -2.0 at entry 1
    """
    if values is None or values.size == 0:
        return
    xp = xp_array(values)[0]
    neg = values < 0
    # One test (one blocking read on a GPU) for valid weights; the error's
    # details are worked out only when there is one.
    bad = (neg | ~xp.isfinite(values)) if values.dtype.kind == "f" else neg
    if not bool(bad.any()):
        return
    if values.dtype.kind == "f":
        bad = ~xp.isfinite(values)
        if bool(bad.any()):
            pos = int(xp.flatnonzero(bad)[0])
            fail(InvalidValue, func, arg, "finite weights (no NaN or inf)",
                 f"{values[pos]} at entry {pos}")
    if bool(neg.any()):
        pos = int(xp.flatnonzero(neg)[0])
        fail(InvalidValue, func, arg, "non-negative weights", f"{values[pos]} at entry {pos}")


__all__ = ["fail", "describe", "as_int", "as_u64", "index_dtype", "as_shape",
           "as_index_array", "value_dtype", "check_weights", "grouped_ids_stats"]
