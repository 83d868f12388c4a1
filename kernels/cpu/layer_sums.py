"""Sums of groups of rows, CPU (twin of ``kernels.cuda.layer_sums``).

Row g of the output is the sum of A's rows ``rows[row_ptr[g]:row_ptr[g+1]]``
(distinct within a group): the product ``Q @ A`` of the structural group
selection Q with A, which the CPU SpGEMM computes with each column's terms
added in ascending row order onto -0, in A's value dtype.  That product is
the reference, so this twin is it.
"""

import numpy as np

from kernels.common import index_dtype
from kernels.cpu.spgemm import spgemm
from kernels.semiring_ops import ADD_PLUS, MUL_TIMES


def group_row_sums(a_ptr, a_idx, a_val, rows, row_ptr, ncols, total=None):
    """(indptr, indices, values) of the group sums (``row_ptr`` on the host;
    ``total``, the products' count, is for the CUDA twin, which then reads
    nothing for it).

    Examples
    --------
    >>> import numpy as np
    >>> from kernels.cpu.layer_sums import group_row_sums
    >>> ptr, idx = np.array([0, 1, 3]), np.array([1, 0, 1])
    >>> p, i, v = group_row_sums(ptr, idx, np.array([1.0, 2.0, 3.0]), np.array([1, 0]),
    ...                          np.array([0, 2]), 2)
    >>> p.tolist(), i.tolist(), v.tolist()
    ([0, 2], [0, 1], [2.0, 4.0])
    """
    row_ptr = np.asarray(row_ptr, np.int64)
    G = row_ptr.size - 1
    n_rows = np.int64(a_ptr.size - 1)
    # Q's columns ascending within each row (a canonical CSR).
    if G == 1:
        q_idx = np.sort(np.asarray(rows, np.int64))
    else:
        group = np.repeat(np.arange(G, dtype=np.int64), np.diff(row_ptr))
        q_idx = (np.sort(group * n_rows + np.asarray(rows, np.int64)) - group * n_rows)
    q_idx = q_idx.astype(index_dtype(max(int(n_rows), 1)), copy=False)
    one = np.ones(1, a_val.dtype)
    return spgemm(row_ptr, q_idx, np.empty(0, a_val.dtype), False, a_ptr, a_idx, a_val, True,
                  np.int64(ncols), ADD_PLUS, MUL_TIMES, one)
