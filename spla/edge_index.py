"""PyG-style edge lists into the samplers' orientation: ``Matrix.from_edge_index``'s work.

The checks of an edge list (shape, integer ids, range, finite values) and
its conversion to CSR, with the sampler orientation (row = target of a
message) and the choice of what a repeated edge means.
"""

import numpy as np

from spla import backend
from spla.checks import as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, IndexOutOfRange, InvalidValue
from spla.arrays import as_xp_array, first_repeat, from_torch, widen_values


def edge_index_csr(edge_index, num_nodes, values, flow, duplicates):
    """(indptr, indices, values or None, n) of ``Matrix.from_edge_index``'s matrix."""
    func = "Matrix.from_edge_index"
    if flow not in ("source_to_target", "target_to_source"):
        fail(InvalidValue, func, "flow", "'source_to_target' or 'target_to_source'",
             repr(flow))
    if duplicates not in ("error", "sum", "keep-first"):
        fail(InvalidValue, func, "duplicates", "'error', 'sum' or 'keep-first'",
             repr(duplicates))
    xp, ei, n = _checked_edges(func, edge_index, num_nodes)
    E = int(ei.shape[1])
    values = _checked_values(func, xp, values, E)
    hv = values is not None
    rows, cols = (ei[1], ei[0]) if flow == "source_to_target" else (ei[0], ei[1])
    if duplicates == "sum" and not hv:
        values, hv = xp.ones(E, np.int64), True  # the count of each edge
    K = backend.kernels_for(backend.device_of(rows))
    vals = values if hv else xp.zeros(0, np.float64)
    ptr, idx, val, first_dup = K.csr.coo_to_csr(rows, cols, vals, hv, n, duplicates == "sum")
    if first_dup >= 0 and duplicates == "error":
        p, q = first_repeat(backend.to_host(rows), backend.to_host(cols))
        fail(InvalidValue, func, "edge_index",
             "distinct edges (or duplicates='sum' / 'keep-first')",
             f"edge_index[:, {p}] = ({int(ei[0, p])}, {int(ei[1, p])}), "
             f"a repeat of edge_index[:, {q}]")
    return ptr, idx, val if hv else None, n


def _checked_edges(func, edge_index, num_nodes):
    """(array module, int64 ``(2, E)`` ids, vertex count), every id checked."""
    xp, ei = as_xp_array(from_torch(func, "edge_index", edge_index))
    if ei.ndim != 2 or ei.shape[0] != 2:
        fail(DimensionMismatch, func, "edge_index", "an array of shape (2, E)", describe(ei))
    if ei.dtype.kind not in "iu" and not (ei.size == 0 and ei.dtype.kind == "f"):
        fail(DTypeError, func, "edge_index", "integer vertex ids", describe(ei))
    E = int(ei.shape[1])
    if ei.dtype.kind == "u" and E and int(ei.max()) > np.iinfo(np.int64).max:
        fail(IndexOutOfRange, func, "edge_index", "ids below 2**63", int(ei.max()))
    ei = ei.astype(np.int64, copy=False)
    if E and int(ei.min()) < 0:
        r, c = (int(v[0]) for v in xp.nonzero(ei < 0))
        fail(IndexOutOfRange, func, "edge_index", "non-negative vertex ids",
             f"{int(ei[r, c])} at edge_index[{r}, {c}]")
    if num_nodes is None:
        return xp, ei, int(ei.max()) + 1 if E else 0
    n = as_int(func, "num_nodes", num_nodes, minimum=0)
    if E and int(ei.max()) >= n:
        r, c = (int(v[0]) for v in xp.nonzero(ei >= n))
        fail(IndexOutOfRange, func, "edge_index", f"vertex ids below num_nodes = {n}",
             f"{int(ei[r, c])} at edge_index[{r}, {c}]")
    return xp, ei, n


def _checked_values(func, xp, values, E):
    """Per-edge values on ``xp``, widened and finite, or None (structural)."""
    if values is None:
        return None
    _, values = as_xp_array(from_torch(func, "values", values), like=xp)
    if values.ndim != 1 or values.size != E:
        fail(DimensionMismatch, func, "values", f"a 1-D array of length {E}", describe(values))
    values = widen_values(func, "values", values)
    if values is not None and values.dtype.kind == "f" and E:
        bad = ~xp.isfinite(values)
        if bool(bad.any()):
            p = int(xp.flatnonzero(bad)[0])
            fail(InvalidValue, func, "values", "finite values (no NaN or inf)",
                 f"{float(values[p])} at position {p}")
    return values


__all__ = ["edge_index_csr"]
