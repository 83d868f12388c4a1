"""Element-wise union (``ewise_add``) and intersection (``ewise_mult``), CUDA.

Twin of ``kernels.cpu.ewise``: one thread per row merges the two sorted rows,
in two passes (count and fill with the row merges both backends share,
``kernels.merge``).

``map_values`` and ``select_mask`` take a user function (a numba
dispatcher); a kernel calling it as a device function is built once per
function and memoised.  Such kernels close over the function and cannot be
cached on disk.
"""

import threading
from collections import OrderedDict

import numpy as np
from numba import cuda

from kernels.merge import merge_count as _merge_count_rows
from kernels.merge import merge_fill as _merge_fill_rows
from kernels.cuda._util import device, host_int, launch, scan, to_host, _xp

_merge_count = device(_merge_count_rows)
_merge_fill = device(_merge_fill_rows)


@cuda.jit(cache=True)
def _ewise_count(a_ptr, a_idx, b_ptr, b_idx, union, counts):
    n = a_ptr.size - 1
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        counts[i + 1] = _merge_count(a_idx, a_ptr[i], a_ptr[i + 1], b_idx,
                                     b_ptr[i], b_ptr[i + 1], union)


@cuda.jit(cache=True)
def _ewise_fill(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, union,
                op, one, out_ptr, out_idx, out_val):
    n = a_ptr.size - 1
    onev = one[0]
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        _merge_fill(a_idx, a_ptr[i], a_ptr[i + 1], a_val, a_hv, b_idx, b_ptr[i],
                    b_ptr[i + 1], b_val, b_hv, union, op, onev, out_idx, out_val,
                    out_ptr[i])


def ewise(a_ptr, a_idx, a_val, a_hv, b_ptr, b_idx, b_val, b_hv, union, op,
          one):
    xp = _xp(a_ptr)
    n = a_ptr.size - 1
    union = bool(union)
    out_ptr = xp.zeros(n + 1, np.int64)
    if n > 0:
        launch(_ewise_count, n, a_ptr, a_idx, b_ptr, b_idx, union,
                                       out_ptr)
        out_ptr = scan(xp, out_ptr)
    nnz = host_int(out_ptr[n])
    out_idx = xp.empty(nnz, np.int64)
    out_val = xp.empty(nnz, one.dtype)
    if nnz:
        launch(_ewise_fill, n, a_ptr, a_idx, a_val, bool(a_hv), b_ptr,
                                      b_idx, b_val, bool(b_hv), union, op, one,
                                      out_ptr, out_idx, out_val)
    return out_ptr, out_idx, out_val


# Kernels built per user function, memoised by the function's Python code
# (spla wraps a plain function in a new dispatcher at every call), keeping
# the most recently used ones.
_lock = threading.Lock()
_MEMO_SIZE = 64
_map_kernels = OrderedDict()
_select_kernels = OrderedDict()


def _memo(table, f, build):
    key = getattr(f, "py_func", f)
    with _lock:
        k = table.get(key)
        if k is not None:
            table.move_to_end(key)
            return k
    k = build(f)
    with _lock:
        table[key] = k
        while len(table) > _MEMO_SIZE:
            table.popitem(last=False)
    return k


def _build_map(f):
    fd = device(f)

    @cuda.jit
    def _map(vals, out):
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for t in range(start, vals.size, stride):
            out[t] = fd(vals[t])

    return _map


def _build_select(f):
    pred = device(f)

    @cuda.jit
    def _select(ptr, idx, vals, keep):
        n = ptr.size - 1
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, n, stride):
            for t in range(ptr[i], ptr[i + 1]):
                keep[t] = pred(np.int64(i), idx[t], vals[t])

    return _select


def map_values_into(vals, f, out):
    """``out[t] = f(vals[t])`` for every value."""
    n = vals.size
    if n:
        launch(_memo(_map_kernels, f, _build_map), n, vals, out)
    return out


def map_values(vals, f):
    """``f`` applied to every value; the output dtype is that of ``f(vals[0])``."""
    if vals.size == 0:
        return vals.copy()
    xp = _xp(vals)
    dtype = np.asarray(f(to_host(vals[:1])[0])).dtype
    return map_values_into(vals, f, xp.empty(vals.size, dtype))


def select_mask(ptr, idx, vals, pred):
    """Boolean mask of the entries (i, j, v) with ``pred(i, j, v)`` true."""
    xp = _xp(ptr)
    n = ptr.size - 1
    keep = xp.empty(idx.size, np.bool_)
    if n > 0 and idx.size:
        launch(_memo(_select_kernels, pred, _build_select), n, 
            ptr, idx, vals, keep)
    return keep
