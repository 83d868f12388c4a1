"""Plain numeric helpers shared by the CPU and the CUDA kernels.

Every function here is a ``numba.njit`` function on scalars (or on a slice
of an array) with no allocation, so the CUDA kernels can call it as a device
function and the CPU kernels inline it.  Keeping one definition is what makes
the CPU and GPU sample picks bit-identical.

Randomness is counter-based: a draw is a pure function of
``(seed, stream, row_id, draw_number)``.  ``row_key`` folds the first three
into a 64-bit key once per row; ``uniform01`` turns ``(key, n)`` into the
n-th double in ``[0, 1)`` of that row.  There is no generator state.
"""

import numba
import numpy as np

# splitmix64 constants (Steele, Lea, Flood 2014).
_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MUL1 = np.uint64(0xBF58476D1CE4E5B9)
_MUL2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2**-53


@numba.njit(cache=True, inline="always")
def mix64(z):
    """Finaliser of splitmix64: a bijective avalanche of a 64-bit word."""
    z = np.uint64(z)
    z = (z ^ (z >> _S30)) * _MUL1
    z = (z ^ (z >> _S27)) * _MUL2
    return z ^ (z >> _S31)


@numba.njit(cache=True, inline="always")
def row_key(seed, stream, row_id):
    """64-bit key of one row's random stream.

    Each input goes through its own avalanche before being combined so that
    nearby seeds, streams or row ids give unrelated streams.
    """
    k = mix64(np.uint64(seed) + _GAMMA)
    k = mix64(k ^ (np.uint64(stream) * _GAMMA))
    return mix64(k + np.uint64(row_id) * _MUL1 + _GAMMA)


@numba.njit(cache=True, inline="always")
def uniform01(key, n):
    """The ``n``-th uniform double in ``[0, 1)`` of the stream ``key``.

    53 random bits, so every value is an exact multiple of 2**-53.
    """
    z = mix64(np.uint64(key) + (np.uint64(n) + np.uint64(1)) * _GAMMA)
    return np.float64(z >> _S11) * _TWO_M53


@numba.njit(cache=True, inline="always")
def search_prefix(prefix, lo, hi, x):
    """First position ``j`` in ``[lo, hi)`` with ``prefix[j] > x``.

    ``prefix`` is an inclusive prefix sum of non-negative weights restarted
    at ``lo``.  Entries of zero weight repeat the previous prefix value, so
    they can never be returned.  If rounding makes ``x`` reach the row total,
    the last entry of positive weight is returned, never one past the row.
    """
    a = lo
    b = hi
    while a < b:
        m = (a + b) >> 1
        if prefix[m] > x:
            b = m
        else:
            a = m + 1
    if a < hi:
        return a
    # x >= total: return the first position whose prefix equals the total.
    total = prefix[hi - 1]
    a = lo
    b = hi - 1
    while a < b:
        m = (a + b) >> 1
        if prefix[m] >= total:
            b = m
        else:
            a = m + 1
    return a


@numba.njit(cache=True, inline="always")
def lower_bound(arr, lo, hi, x):
    """First position ``j`` in ``[lo, hi)`` with ``arr[j] >= x`` (``hi`` if none)."""
    a = lo
    b = hi
    while a < b:
        m = (a + b) >> 1
        if arr[m] < x:
            a = m + 1
        else:
            b = m
    return a


@numba.njit(cache=True, inline="always")
def insertion_sort(a, lo, hi):
    """Sort ``a[lo:hi]`` in place; rows of picks are short (at most k)."""
    for i in range(lo + 1, hi):
        v = a[i]
        j = i - 1
        while j >= lo and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@numba.njit(cache=True, inline="always")
def contains(a, lo, hi, x):
    """Whether ``x`` is among ``a[lo:hi]`` (linear scan; short slices only)."""
    for i in range(lo, hi):
        if a[i] == x:
            return True
    return False
