"""The composition that ``spla.importance_layer`` stands for, written from
spla's public operators: the reference its kernels are held to, bit for bit,
on every device (``tests/spla/test_importance_layer.py``) and the baseline
``benchmarks/bench_gpu.py`` times it against.  Only numpy and spla: the
benchmark imports it on a GPU machine too."""

import numpy as np

import spla


def composed_layer(A, S, dst, ptr, s, W=None, w_rows=None, p=None):
    """``importance_layer(A, S, dst, ptr, s, W=W, w_rows=w_rows, p=p)`` as
    its docstring's composition: ``(adj, src, src_ptr)``.  ``ptr`` and
    ``w_rows`` on the host; ``W`` with float values."""
    xp = A.xp
    ptr = np.asarray(ptr, np.int64)
    dst = xp.asarray(dst)
    G = ptr.size - 1
    _, src, src_ptr = spla.compact_columns_blockwise(
        S, np.arange(G + 1, dtype=np.int64), first=dst, first_ptr=ptr, check=False)
    src_ptr = np.asarray(spla.backend.to_host(src_ptr), np.int64)
    adj = spla.extract_blockwise(A, dst, ptr, src, src_ptr, check=False)
    if p is not None:
        p_col = xp.asarray(p)[src]
    else:
        # Only the kept columns are divided by their row's sum: the division
        # normalize_rows(W) makes (the same operands, so the same values).
        rows = xp.asarray(np.repeat(np.asarray(w_rows, np.int64), np.diff(src_ptr)))
        raw = spla.extract_values(W, rows, src, check=False)
        sums = spla.reduce_rowwise(W, "plus")
        p_col = raw / xp.where(sums == 0, 1, sums).astype(W.dtype, copy=False)[rows]
    kept = p_col > 0
    scale = xp.where(kept, 1.0 / (s * xp.where(kept, p_col, 1.0)), 0.0)
    return spla.normalize_scaled_rows(adj, scale.astype(adj.dtype, copy=False)), src, src_ptr
