"""Per-row top-k selection kernels (CPU).

``topk_rows(indptr, values, k, largest)`` keeps, in every row of a canonical
CSR matrix, the ``k`` entries that rank first: the largest values (the
smallest with ``largest=False``), ties broken by the smaller position.  In a
canonical row positions increase with the column, so "smaller position" is
"smaller column": the kept set is one well-defined set, whatever the thread
count or the backend.  A row of at most ``k`` entries (or any row when ``k``
is negative) is kept whole.

Returns ``(indptr, positions)`` like the sample kernels: ``positions`` index
the input's entries, ascending within each row (so the kept entries stay in
column order and the caller gathers indices and values with them).

The values must hold no NaN (the caller refuses them): the ranking relies on
``<`` and ``==`` being a total order on the values.

Per row, the selection is a bounded heap built in the row's own output
slice (no scratch beyond the output): the first ``k`` positions are
heapified with the worst-ranked entry at the root, every later entry that
ranks before the root replaces it, and the slice is finally heap-sorted by
position.  ``O(d log k)`` per row of ``d`` entries, no allocation, so the
CUDA twin calls the very same row function as a device function.
"""

import numpy as np
from numba import prange

from kernels.parallel import parallel_kernel
from kernels.topk_rows import row_slots, select_row


def _topk_work(indptr, values, k, largest):
    # Every entry of a row longer than k is compared; shorter rows are copied.
    return int(indptr[-1])


@parallel_kernel(_topk_work, inputs=("indptr", "values"))
def topk_rows(indptr, values, k, largest):
    """Per-row top-k positions: ``(indptr, positions)``; see the module docstring."""
    n = indptr.size - 1
    out_ptr = np.zeros(n + 1, np.int64)
    for i in prange(n):
        out_ptr[i + 1] = row_slots(indptr[i], indptr[i + 1], k)
    for i in range(n):
        out_ptr[i + 1] += out_ptr[i]
    out = np.empty(out_ptr[n], np.int64)
    for i in prange(n):
        select_row(out, out_ptr[i], out_ptr[i + 1] - out_ptr[i], indptr[i],
                   indptr[i + 1], values, largest)
    return out_ptr, out
