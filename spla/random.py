"""Counter-based random helpers on whole arrays (no generator state).

The same hash as the sampling kernels (``kernels.common``): a value depends
only on (seed, stream, index), never on the machine, thread count, rank or
device (``kernels.cpu.random`` and its CUDA twin).
"""

import numpy as np

from spla import backend
from spla.checks import as_int, describe, fail
from spla.exceptions import DTypeError, InvalidValue


def _u64(func, arg, x):
    x = as_int(func, arg, x, minimum=0)
    if x >= 2 ** 64:
        fail(InvalidValue, func, arg, "an integer below 2**64", x)
    return np.uint64(x)


def uniform(ids, *, seed, stream=0, width=None):
    """One uniform double in [0, 1) per id, a pure function of (seed, stream, id).

    Parameters
    ----------
    ids : array_like of int, 1-D (numpy, or cupy: computed on its device)
    seed, stream : int in [0, 2**64)
    width : int, optional
        Give ``(len(ids), width)`` values: element ``(i, j)`` is the uniform
        of id ``ids[i] * width + j``, the values of the rows ``ids`` of an
        array ``width`` wide (element keys as a row-major flat position),
        without building those keys.

    Returns
    -------
    float64 array on the ids' device, shape ``(len(ids),)`` or ``(len(ids), width)``

    Examples
    --------
    >>> import numpy as np
    >>> from spla.random import uniform
    >>> u = uniform(np.arange(3), seed=1)
    >>> bool(((0 <= u) & (u < 1)).all()), np.array_equal(u, uniform(np.arange(3), seed=1))
    (True, True)
    >>> rows = uniform(np.array([2, 0]), seed=1, width=3)
    >>> np.array_equal(rows, uniform(np.array([6, 7, 8, 0, 1, 2]), seed=1).reshape(2, 3))
    True
    """
    func = "uniform"
    seed, stream = _u64(func, "seed", seed), _u64(func, "stream", stream)
    xp = backend.xp_of_array(ids)
    ids = xp.asarray(ids)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        fail(DTypeError, func, "ids", "a 1-D array of integers", describe(ids))
    ids = xp.ascontiguousarray(ids, dtype=np.int64)
    K = backend.kernels_for(backend.device_of(ids)).random
    if width is None:
        return K.uniform(ids, seed, stream, xp.empty(ids.size, np.float64))
    width = as_int(func, "width", width, minimum=1)
    return K.uniform_rows(ids, seed, stream, xp.empty((ids.size, width), np.float64))


def permutation(n, *, seed, stream=0):
    """A random permutation of ``range(n)`` keyed by (seed, stream).

    Examples
    --------
    >>> from spla.random import permutation
    >>> sorted(permutation(5, seed=3).tolist())
    [0, 1, 2, 3, 4]
    """
    n = as_int("permutation", "n", n, minimum=0)
    keys = uniform(np.arange(n, dtype=np.int64), seed=seed, stream=stream)
    return np.argsort(keys, kind="stable").astype(np.int64)
