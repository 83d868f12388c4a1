"""Small array helpers that work on numpy and cupy alike."""

import numpy as np

from spla.backend import xp_of_array


def row_ids(indptr, nnz=None):
    """The row of every entry of a CSR matrix (int64, length nnz).

    Parameters
    ----------
    indptr : numpy or cupy array of int, shape (nrows + 1,)
    nnz : int, optional
        The number of entries, when known (a matrix's ``nnz``, its indices'
        length): on a GPU, reading ``indptr[-1]`` instead is a blocking
        device-to-host read.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.util import row_ids
    >>> row_ids(np.array([0, 2, 2, 3]))
    array([0, 0, 2])
    >>> row_ids(np.array([0, 2, 2, 3]), nnz=3)
    array([0, 0, 2])
    """
    xp = xp_of_array(indptr)
    nnz = int(indptr[-1]) if nnz is None else int(nnz)
    n = indptr.size - 1
    if xp is np:
        return np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    return xp.searchsorted(indptr, xp.arange(nnz, dtype=np.int64), side="right") - 1


def indptr_from_counts(counts):
    """Exclusive scan of per-row counts into an int64 indptr.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.util import indptr_from_counts
    >>> indptr_from_counts(np.array([2, 0, 1]))
    array([0, 2, 2, 3])
    """
    xp = xp_of_array(counts)
    ptr = xp.zeros(counts.size + 1, np.int64)
    xp.cumsum(counts, out=ptr[1:])
    return ptr
