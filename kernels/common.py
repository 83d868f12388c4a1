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
from numba.cpython.unsafe.numbers import trailing_zeros

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
def element_bits(key, e):
    """The 32 random bits of flat element ``e`` (a uint64) under ``key``: dropout's mask.

    Elements ``2k`` and ``2k + 1`` take the low and the high half of one
    splitmix64 hash of ``(key, k)``, so a kernel may hash pairs in blocks
    (``kernels.cpu.spmm.dropout``) and get the same bits.
    """
    h = mix64(key + ((e >> np.uint64(1)) + np.uint64(1)) * _GAMMA)
    return np.uint32((h >> ((e & np.uint64(1)) << np.uint64(5))) & np.uint64(0xFFFFFFFF))


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
def _sift_down(a, lo, root, end):
    # Max-heap rooted at a[lo]; children of heap node r are 2r+1, 2r+2.
    v = a[lo + root]
    while True:
        c = 2 * root + 1
        if c >= end:
            break
        if c + 1 < end and a[lo + c + 1] > a[lo + c]:
            c += 1
        if a[lo + c] <= v:
            break
        a[lo + root] = a[lo + c]
        root = c
    a[lo + root] = v


@numba.njit(cache=True)
def sort_range(a, lo, hi):
    """Sort ``a[lo:hi]`` in place without allocating (device-safe).

    A sorting network up to 12 entries (the common short rows of picks),
    insertion sort up to 32, heap sort beyond, so a row of hundreds of
    picks never costs quadratic time.

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.common import sort_range
    >>> a = np.array([9, 5, 3, 8, 1, 0])
    >>> sort_range(a, 1, 5); a.tolist()
    [9, 1, 3, 5, 8, 0]
    """
    n = hi - lo
    if n <= 12:
        # Odd-even transposition: compare-exchanges by min/max, no branch
        # for random keys to mispredict (insertion sort's comparisons are
        # such branches); n rounds of n/2, so only for short ranges.
        for rnd in range(n):
            for q in range(lo + (rnd & 1), hi - 1, 2):
                x = a[q]
                y = a[q + 1]
                a[q] = min(x, y)
                a[q + 1] = max(x, y)
        return
    if n <= 32:
        insertion_sort(a, lo, hi)
        return
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(a, lo, root, n)
    for end in range(n - 1, 0, -1):
        v = a[lo]
        a[lo] = a[lo + end]
        a[lo + end] = v
        _sift_down(a, lo, 0, end)


@numba.njit(cache=True, inline="always")
def _sift_down_pairs(keys, vals, lo, root, end):
    # ``_sift_down`` moving ``vals`` alongside ``keys``.
    v = keys[lo + root]
    w = vals[lo + root]
    while True:
        c = 2 * root + 1
        if c >= end:
            break
        if c + 1 < end and keys[lo + c + 1] > keys[lo + c]:
            c += 1
        if keys[lo + c] <= v:
            break
        keys[lo + root] = keys[lo + c]
        vals[lo + root] = vals[lo + c]
        root = c
    keys[lo + root] = v
    vals[lo + root] = w


@numba.njit(cache=True)
def sort_pairs_inplace(keys, vals, lo, hi):
    """Sort ``keys[lo:hi]`` ascending, permuting ``vals`` alongside, without allocating.

    Insertion sort up to 32 entries, heap sort beyond (device-safe: the CUDA
    kernels call it); the order of equal keys is unspecified, so callers
    pass distinct keys.

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.common import sort_pairs_inplace
    >>> k, v = np.array([3, 1, 2]), np.array([30.0, 10.0, 20.0])
    >>> sort_pairs_inplace(k, v, 0, 3); k.tolist(), v.tolist()
    ([1, 2, 3], [10.0, 20.0, 30.0])
    """
    n = hi - lo
    if n <= 32:
        for i in range(lo + 1, hi):
            c = keys[i]
            p = vals[i]
            j = i - 1
            while j >= lo and keys[j] > c:
                keys[j + 1] = keys[j]
                vals[j + 1] = vals[j]
                j -= 1
            keys[j + 1] = c
            vals[j + 1] = p
        return
    for root in range(n // 2 - 1, -1, -1):
        _sift_down_pairs(keys, vals, lo, root, n)
    for end in range(n - 1, 0, -1):
        v = keys[lo]
        keys[lo] = keys[lo + end]
        keys[lo + end] = v
        w = vals[lo]
        vals[lo] = vals[lo + end]
        vals[lo + end] = w
        _sift_down_pairs(keys, vals, lo, 0, end)


@numba.njit(cache=True, inline="always")
def sort_pairs(keys, vals, lo, hi):
    """Sort ``keys[lo:hi]`` ascending, permuting ``vals`` alongside (keys distinct).

    ``sort_pairs_inplace`` for short ranges (no allocation), ``np.argsort``
    beyond 32 entries (CPU only).
    """
    if hi - lo <= 32:
        sort_pairs_inplace(keys, vals, lo, hi)
    else:
        order = np.argsort(keys[lo:hi])
        keys[lo:hi] = keys[lo:hi][order]
        vals[lo:hi] = vals[lo:hi][order]


@numba.njit(cache=True, inline="always")
def contains(a, lo, hi, x):
    """Whether ``x`` is among ``a[lo:hi]`` (linear scan; short slices only)."""
    for i in range(lo, hi):
        if a[i] == x:
            return True
    return False



# -- Open-addressing hash tables over int64 keys ----------------------------
#
# Column-indexed work on a sparse column space (a group's columns, a
# product row's columns) goes through a table sized by the work, never by
# the column count.  A table of ``2**bits`` slots is one int64 array of
# ``2 * 2**bits`` words interleaving key and value (``table[2s]``,
# ``table[2s+1]``), so a hit reads one cache line; keys are >= 0 and
# ``EMPTY_KEY`` marks a free slot.  Callers allocate the array (the CUDA
# twins do not use these).

#: Key of a free slot.
EMPTY_KEY = np.int64(-1)
# Fibonacci hashing: the top bits of key * 2**64 / golden ratio spread
# consecutive and strided ids evenly over the table.
_FIB = np.uint64(0x9E3779B97F4A7C15)
_MIN_BITS = 4


@numba.njit(cache=True, inline="always")
def table_bits(n_keys):
    """log2 of the slots of a table for ``n_keys`` keys: at most half full."""
    bits = _MIN_BITS
    while (np.int64(1) << bits) < 2 * n_keys:
        bits += 1
    return bits


@numba.njit(cache=True, inline="always")
def hash_slot(key, bits):
    """Home slot of ``key`` in a table of ``2**bits`` slots."""
    return np.int64((np.uint64(key) * _FIB) >> np.uint64(64 - bits))


@numba.njit(cache=True, inline="always")
def probe(table, key, bits):
    """Slot holding ``key``, or the free slot where it would go (linear probing).

    The table must have a free slot (``table_bits`` keeps it half empty).
    """
    mask = (np.int64(1) << bits) - 1
    s = hash_slot(key, bits)
    while True:
        k = table[2 * s]
        if k == key or k == EMPTY_KEY:
            return s
        s = (s + 1) & mask


@numba.njit(cache=True, inline="always")
def set_slot(keys, bits, key):
    """Slot of ``key`` (>= 0) in a keys-only table of ``2**bits`` slots, or the
    free slot where it would go (``keys[slot] == key`` tells which).

    ``keys`` holds ``EMPTY_KEY`` in free slots (``np.full(1 << bits,
    EMPTY_KEY)``) and must keep a free slot (``table_bits``).  Allocation is
    the caller's, so a device function can use it on scratch it is given.
    """
    mask = (np.int64(1) << bits) - 1
    s = hash_slot(key, bits)
    while True:
        k = keys[s]
        if k == key or k == EMPTY_KEY:
            return s
        s = (s + 1) & mask


@numba.njit(cache=True, inline="always")
def set_add(keys, bits, key):
    """Add ``key`` to a keys-only table (see ``set_slot``); False if present."""
    s = set_slot(keys, bits, key)
    if keys[s] == key:
        return False
    keys[s] = key
    return True


@numba.njit(cache=True, inline="always")
def next_set_bit(word):
    """``(index of the lowest set bit of word, word without it)`` for a
    non-zero uint64 (one count-trailing-zeros instruction): reading the set
    bits of a bitmap costs one step per bit, not 64 per word.

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.common import next_set_bit
    >>> b, rest = next_set_bit(np.uint64(0b10100)); int(b), int(rest)
    (2, 16)
    """
    return np.int64(trailing_zeros(word)), word & (word - np.uint64(1))


@numba.njit(cache=True, inline="always")
def get_bit(bits, j):
    """Bit ``j`` of a bitmap of uint64 words, as an int64 0 or 1 (a branch-free
    loop adds it to a count or an output position).

    Examples
    --------
    >>> import numpy as np
    >>> b = np.zeros(2, np.uint64); set_bit(b, 70)
    >>> int(get_bit(b, 70)), int(get_bit(b, 6))
    (1, 0)
    """
    jj = np.uint64(j)
    return np.int64((bits[jj >> np.uint64(6)] >> (jj & np.uint64(63))) & np.uint64(1))


@numba.njit(cache=True, inline="always")
def set_bit(bits, j):
    """Set bit ``j`` of a bitmap of uint64 words (word ``j >> 6``)."""
    jj = np.uint64(j)
    bits[jj >> np.uint64(6)] |= np.uint64(1) << (jj & np.uint64(63))


@numba.njit(cache=True, inline="always")
def pop_set_bits(bits, lo, hi, out, t):
    """Write the indices of the set bits of the words covering ``[lo, hi]`` to
    ``out[t:]`` in ascending order, zero those words, and return the next
    free position: a bitmap's members in order, one step per member.

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.common import pop_set_bits
    >>> bits = np.array([0b1001, 1 << 3], np.uint64); out = np.zeros(3, np.int64)
    >>> pop_set_bits(bits, 0, 70, out, 0), out.tolist(), bits.tolist()
    (3, [0, 3, 67], [0, 0])
    """
    for w in range(lo >> 6, (hi >> 6) + 1):
        word = bits[w]
        if word == 0:
            continue
        bits[w] = 0
        base = np.int64(w) << 6
        while word:
            b, word = next_set_bit(word)
            out[t] = base + b
            t += 1
    return t


@numba.njit(cache=True, nogil=True)
def zero_bitmap(n):
    """A zeroed bitmap of ``n`` bits (uint64 words): bit ``j`` is word ``j >> 6``,
    bit ``j & 63``.

    A function of its own, never inlined: numba's parfor pass hoists an
    allocation whose size does not change across a ``prange`` loop out of the
    loop, out of any branch too, so an allocation written in a branch that a
    product over 2**40 columns never takes would still be made (and fail).
    """
    return np.zeros((np.int64(n) >> 6) + 1, np.uint64)


@numba.njit(cache=True, inline="always")
def clear_table(table, bits):
    """Free the first ``2**bits`` slots of ``table``."""
    n = np.int64(2) << bits
    for t in range(0, n, 2):
        table[t] = EMPTY_KEY


# -- Plain Python (not njit): rules the kernels' Python wrappers share ------

def index_dtype(bound):
    """int32 when every index is at most ``bound`` and ``bound < 2**31``, else int64.

    The one index-dtype rule of the kernels (``spla.checks.index_dtype``
    states the same rule for spla): column indices narrower than 64 bits
    halve their memory traffic when the dimension allows it.

    Parameters
    ----------
    bound : int
        The largest index value the array may hold (or its dimension).

    Returns
    -------
    numpy.dtype

    Examples
    --------
    >>> from kernels.common import index_dtype
    >>> index_dtype(2**31 - 1), index_dtype(2**31)
    (dtype('int32'), dtype('int64'))
    """
    return np.dtype(np.int32) if int(bound) <= 2 ** 31 - 1 else np.dtype(np.int64)


#: The dense column map is used while ``ncols <= DENSE_MAP_FACTOR * (entries
#: + selected columns)``: filling and scanning ncols + 1 words is then cheaper
#: than hashing every entry's column.
DENSE_MAP_FACTOR = 4


def use_dense_map(n_entries, n_cols_selected, ncols):
    """Whether a column extraction maps columns densely (see ``DENSE_MAP_FACTOR``).

    The rule both backends' ``extract_cols`` follow, so they build the same
    map.

    Examples
    --------
    >>> from kernels.common import use_dense_map
    >>> use_dense_map(10, 2, 40), use_dense_map(10, 2, 100)
    (True, False)
    """
    return int(ncols) <= DENSE_MAP_FACTOR * (int(n_entries) + int(n_cols_selected))


#: ``BadSeeds.code`` bits: a seed outside ``[0, n)``, a seed twice in its group.
BAD_RANGE = np.int64(1)
BAD_REPEAT = np.int64(2)


class BadSeeds(ValueError):
    """A sampling kernel met seed vertices it was told were valid: one outside
    ``[0, n)`` (``code & BAD_RANGE``) or one repeated within its group
    (``code & BAD_REPEAT``).

    Kernels that check seeds as they go (the GPU's fused hops) raise it
    after their one read of sizes and flags; spla then runs its precise
    check, which names the argument and the vertex, instead of reading the
    seeds back before every bulk.
    """

    def __init__(self, code):
        super().__init__(f"bad seed vertices (code {code})")
        self.code = int(code)


class Finished:
    """A result already computed, behind the ``finish()`` of a launch.

    The GPU twins of some kernels launch their work and return a handle whose
    ``finish()`` reads the result back (``kernels.cuda.hops.launch_hops``);
    their CPU twins compute at once and return this, so callers treat both
    devices alike.

    Examples
    --------
    >>> from kernels.common import Finished
    >>> Finished(42).finish()
    42
    """

    def __init__(self, value):
        self._value = value

    def finish(self):
        return self._value


class KernelLimitError(ValueError):
    """An input beyond a documented limit of a kernel.

    ``kernels`` imports nothing from ``spla``, so it cannot raise spla's
    exceptions; spla translates this one into its ``InvalidValue`` with its
    own function name, keeping the house message shape ``func: argument
    'arg' must be <expected>; got <got>``.

    Parameters
    ----------
    func : str
        The kernel that refused the input.
    arg : str
        The argument at fault, named as the kernel names it.
    expected, got : str
        What the argument must be, and what was received.
    """

    def __init__(self, func, arg, expected, got):
        self.func = func
        self.arg = arg
        self.expected = expected
        self.got = got
        super().__init__(f"{func}: argument {arg!r} must be {expected}; got {got}")
