"""Row gathers through an optional hot-row cache: ``take_rows``.

``take_rows(cold, ids)`` is ``cold[ids]``; with ``hot`` and ``slot`` the rows
of cached vertices (``slot[v] >= 0``) are read from ``hot[slot[v]]`` instead.
A sparse ``cold`` (``spla.Matrix``) gives its rows dense, as
``cold.to_dense()[ids]`` without the dense matrix (a bag-of-words feature
matrix feeding a model).
On a GPU ``cold`` is typically in mapped host memory
(``spla.backend.to_mapped_host``) and ``hot`` in device memory, so that a
feature matrix larger than the GPU is gathered by one kernel that reads
cached rows from device memory and the others over the host-device link.
"""

import numpy as np

from spla import backend
from spla.checks import describe, fail
from spla.exceptions import (DeviceMismatch, DimensionMismatch, DTypeError, IndexOutOfRange,
                             InvalidValue)
from spla.matrix import Matrix

_FUNC = "take_rows"


def _array(arg, a, ndim, kinds):
    """``(device, a)``: a numpy or cupy array of ``ndim`` dimensions and a dtype of ``kinds``."""
    device = backend.device_of(a)
    if device != backend.CUDA and not isinstance(a, np.ndarray):
        fail(DTypeError, _FUNC, arg, "a numpy or cupy array", describe(a))
    if a.ndim != ndim:
        fail(DimensionMismatch, _FUNC, arg, f"a {ndim}-D array", describe(a))
    if a.dtype.kind not in kinds:
        what = "an integer" if kinds == "iu" else "a numeric (integer or float)"
        fail(DTypeError, _FUNC, arg, f"{what} array", describe(a))
    return device, a


def _ids_on(device, ids):
    """``ids`` checked: a 1-D integer array on ``device`` (that of 'cold')."""
    dev, ids = _array("ids", ids, 1, "iu")
    if dev != device:
        fail(DeviceMismatch, _FUNC, "ids", f"an array on {device!r} like 'cold'",
             f"one on {dev!r}")
    return ids


def _in_range(arg, a, lo, hi):
    """Check ``lo <= a < hi`` (one blocking read for a device array)."""
    if a.size == 0:
        return
    xp = backend.xp_of_array(a)
    mn, mx = (int(x) for x in backend.to_host(xp.stack([a.min(), a.max()])))
    if mn < lo or mx >= hi:
        fail(IndexOutOfRange, _FUNC, arg, f"values in [{lo}, {hi})",
             f"values in [{mn}, {mx}]")


def _check_cache(device, cold, hot, slot):
    """The checks of ``hot`` and ``slot`` that need no read of their values."""
    if (hot is None) != (slot is None):
        fail(InvalidValue, _FUNC, "hot" if hot is None else "slot",
             "given together with 'slot' and 'hot'", "None")
    if hot is None:
        return
    for arg, a in (("hot", hot), ("slot", slot)):
        dev, _ = _array(arg, a, 2 if arg == "hot" else 1, "iuf" if arg == "hot" else "iu")
        if dev != device:
            fail(DeviceMismatch, _FUNC, arg, f"an array on {device!r} like 'cold'",
                 f"one on {dev!r}")
    if hot.dtype != cold.dtype or hot.shape[1] != cold.shape[1]:
        fail(DimensionMismatch, _FUNC, "hot", f"an (h, {cold.shape[1]}) array of dtype "
             f"{cold.dtype} like 'cold'", describe(hot))
    if slot.shape[0] != cold.shape[0]:
        fail(DimensionMismatch, _FUNC, "slot", f"one slot per row of 'cold' "
             f"({cold.shape[0]})", describe(slot))


def _check_out(device, out, shape, dtype):
    dev, _ = _array("out", out, 2, "iuf")
    if dev != device or tuple(out.shape) != shape or out.dtype != dtype \
            or not out.flags.c_contiguous:
        fail(DimensionMismatch, _FUNC, "out", f"a C-contiguous {shape} array of dtype "
             f"{dtype} on {device!r}", describe(out) + f" on {dev!r}")


def take_rows(cold, ids, *, hot=None, slot=None, out=None, hits=None, check=True):
    """Rows ``ids`` of ``cold``, the cached ones read from ``hot``.

    Row ``r`` of the result is ``hot[slot[v]]`` if ``slot[v] >= 0`` and
    ``cold[v]`` otherwise, for ``v = ids[r]``: with a ``hot`` that holds
    copies of rows of ``cold`` it equals ``cold[ids]``, bit for bit.  One
    kernel of the arrays' backend does the gather (on a GPU, one launch and
    no read back to the host when ``check=False``).

    Parameters
    ----------
    cold : numpy or cupy array (n, f), or spla.Matrix
        All rows; on a GPU it may live in mapped host memory
        (``spla.backend.to_mapped_host``, ``Matrix.to(memory="host")``).
        A ``spla.Matrix`` gives its rows dense, equal to
        ``cold.to_dense()[ids]`` (float64 ones for a structural matrix),
        without a cache (``hot``, ``slot`` and ``hits`` must be None).
    ids : numpy or cupy integer array (k,)
        The rows to gather, each in ``[0, n)``.
    hot : array (h, f) of ``cold``'s dtype, optional
        The cached rows, on the device of ``cold``.  Given with ``slot``.
    slot : integer array (n,), optional
        The row of ``hot`` holding each vertex's row, or -1; values < h.
    out : array (k, f), optional
        Written with the rows (C-contiguous, ``cold``'s dtype and device;
        for a ``spla.Matrix``, the dtype of its ``to_dense()``).
    hits : int64 array (1,), optional
        A counter on ``cold``'s device, increased by the rows read from ``hot``.
    check : bool
        Check that ``ids`` and ``slot`` are in range.  On a GPU this costs a
        blocking read; pass False when they are known to be.

    Returns
    -------
    array (k, f)
        ``out``, or a new array of ``cold``'s dtype on its device.

    Raises
    ------
    DTypeError, DimensionMismatch, DeviceMismatch, InvalidValue, IndexOutOfRange
        For arguments of the wrong kind, shape, device or range.

    Examples
    --------
    >>> import numpy as np
    >>> import spla
    >>> cold = np.arange(8, dtype=np.float32).reshape(4, 2)
    >>> spla.take_rows(cold, np.array([3, 0])).tolist()
    [[6.0, 7.0], [0.0, 1.0]]
    >>> hot, slot = cold[[3]] + 100, np.array([-1, -1, -1, 0])
    >>> spla.take_rows(cold, np.array([3, 0]), hot=hot, slot=slot).tolist()
    [[106.0, 107.0], [0.0, 1.0]]
    >>> X = spla.Matrix.from_coo([0, 2], [1, 0], np.array([5.0, 6.0], np.float32), shape=(3, 2))
    >>> spla.take_rows(X, np.array([2, 1, 0])).tolist()
    [[6.0, 0.0], [0.0, 0.0], [0.0, 5.0]]
    """
    if isinstance(cold, Matrix):
        return _sparse_rows(cold, ids, hot, slot, out, hits, check)
    device, cold = _array("cold", cold, 2, "iuf")
    ids = _ids_on(device, ids)
    _check_cache(device, cold, hot, slot)
    n, f = int(cold.shape[0]), int(cold.shape[1])
    shape = (int(ids.shape[0]), f)
    if out is not None:
        _check_out(device, out, shape, cold.dtype)
    if hits is not None and (backend.device_of(hits) != device or hits.dtype != np.int64
                             or hits.shape != (1,)):
        fail(DTypeError, _FUNC, "hits", f"an int64 array of shape (1,) on {device!r}",
             describe(hits))
    if not cold.flags.c_contiguous:
        fail(InvalidValue, _FUNC, "cold", "a C-contiguous array", "a non-contiguous one")
    if check:
        _in_range("ids", ids, 0, n)
        if slot is not None:
            _in_range("slot", slot, -1, int(hot.shape[0]))
    return _gather(device, cold, ids, hot, slot, out, hits, shape)


def _sparse_rows(cold, ids, hot, slot, out, hits, check):
    """``take_rows`` of a ``spla.Matrix``: its rows ``ids``, dense."""
    for arg, a in (("hot", hot), ("slot", slot), ("hits", hits)):
        if a is not None:
            fail(InvalidValue, _FUNC, arg, "None for a spla.Matrix 'cold' (the hot-row cache "
                 "holds dense rows)", describe(a))
    device = cold.device
    ids = _ids_on(device, ids)
    n, f = cold.shape
    dtype = np.dtype(np.float64) if cold.is_structural else cold.dtype
    shape = (int(ids.shape[0]), int(f))
    if out is not None:
        _check_out(device, out, shape, dtype)
    if check:
        _in_range("ids", ids, 0, n)
    xp = backend.xp_of(device)
    if out is None:
        out = xp.empty(shape, dtype)
    ids = _contiguous(xp, ids, np.int64)
    backend.kernels_for(device).gather.take_sparse_rows(ids, cold.indptr, cold.indices,
                                                        cold.values, out)
    return out


def _contiguous(xp, a, dtype):
    """``a`` as a C-contiguous array of ``dtype``, copied only when it is not one."""
    if a.dtype == dtype and a.flags.c_contiguous:
        return a
    return xp.ascontiguousarray(a, dtype)


def _gather(device, cold, ids, hot, slot, out, hits, shape):
    xp = backend.xp_of(device)
    f = shape[1]
    if out is None:
        out = xp.empty(shape, cold.dtype)
    ids = _contiguous(xp, ids, np.int64)
    if hot is None:
        # No cache: a plain gather (no slot map of n entries to build per
        # call), on every CPU thread (numpy's take copies on one).
        if device == backend.CUDA:
            xp.take(cold, ids, axis=0, out=out)
        else:
            backend.kernels_for(device).gather.take_rows(ids, cold, out)
        return out
    if hits is None:
        hits = xp.zeros(1, np.int64)
    hot = _contiguous(xp, hot, hot.dtype)
    slot = _contiguous(xp, slot, np.int64)
    backend.kernels_for(device).gather.gather_rows(
        ids, slot, hot.reshape(-1), cold.reshape(-1), f, out.reshape(-1), hits)
    return out


__all__ = ["take_rows"]
