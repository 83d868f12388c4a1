"""Counter-based random helpers on whole arrays (no generator state).

The same hash as the sampling kernels (``kernels.common``): a value depends
only on (seed, stream, index), never on the machine, thread count or rank.
"""

import numba
import numpy as np
from numba import prange

from kernels.common import row_key, uniform01
from spla.checks import as_int, fail
from spla.exceptions import InvalidValue


@numba.njit(parallel=True, cache=True, nogil=True)
def _uniform(ids, seed, stream):
    out = np.empty(ids.size, np.float64)
    for i in prange(ids.size):
        out[i] = uniform01(row_key(seed, stream, ids[i]), 0)
    return out


def _u64(func, arg, x):
    x = as_int(func, arg, x, minimum=0)
    if x >= 2 ** 64:
        fail(InvalidValue, func, arg, "an integer below 2**64", x)
    return np.uint64(x)


def uniform(ids, *, seed, stream=0):
    """One uniform double in [0, 1) per id, a pure function of (seed, stream, id).

    Examples
    --------
    >>> import numpy as np
    >>> from spla.random import uniform
    >>> u = uniform(np.arange(3), seed=1)
    >>> bool(((0 <= u) & (u < 1)).all()), np.array_equal(u, uniform(np.arange(3), seed=1))
    (True, True)
    """
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    return _uniform(ids, _u64("uniform", "seed", seed), _u64("uniform", "stream", stream))


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
