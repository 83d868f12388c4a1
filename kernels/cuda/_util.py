"""Launch helpers shared by the CUDA kernels (private to ``kernels.cuda``).

* ``_xp(arr)``: the array module of an array (numpy under the simulator,
  cupy on a GPU; cupy is imported lazily, only when a cupy array is met).
* ``BLOCK`` / ``blocks(n)``: the launch shape.  Every kernel is a grid-stride
  loop, so the grid may be capped; under the simulator (where each thread is
  a Python thread) a tiny grid keeps the tests fast and still exercises the
  stride.
* ``device(fn)``: an ``@numba.njit`` helper as the CUDA kernels call it.  On a
  GPU numba-cuda compiles a jit function called from a kernel as a device
  function, so this is ``fn`` itself.  Under the simulator kernels run as
  Python and hand their arrays around as simulator wrappers, which a CPU
  dispatcher cannot unbox: there the helper is called on the wrapped numpy
  arrays.  Either way the same helper decides, which keeps results identical.
* ``scan(xp, counts_ptr)``, ``argsort_stable``, ``stable_order``: host-side
  array steps between kernel launches.
* ``CHUNK_ITEMS`` / ``row_chunks``: the row ranges a kernel that expands
  rows (SpGEMM's products, the extraction's entries) works through, so its
  buffers are bounded by a chunk.
* ``check_numba_cuda()``: numba-cuda's numpy bindings loaded at import,
  with a clear error when the installed numpy breaks them.
"""

import ctypes
import importlib
import os
import struct
import sys
import threading
from importlib import metadata

import numpy as np
from numba import config

from kernels import opcount

SIM = bool(config.ENABLE_CUDASIM)

#: Items (products, entries) expanded at once by a kernel that expands rows:
#: rows are cut into chunks of at most this many (a row with more is a chunk
#: alone), so the expansion's buffers (about 40 bytes per item with a sort's)
#: stay bounded whatever the input's size.  Tiny under the simulator, where
#: the tests' inputs are tiny, so the chunked path is what they check.
CHUNK_ITEMS = 7 if SIM else 1 << 26

#: Threads per block.
BLOCK = 8 if SIM else 256
#: Cap on blocks per launch (grid-stride loops cover the rest).
MAX_BLOCKS = 2 if SIM else 8192


def blocks(n):
    """Blocks for ``n`` work items (at least one)."""
    return max(1, min(MAX_BLOCKS, (int(n) + BLOCK - 1) // BLOCK))


def _xp(arr):
    """cupy for cupy arrays, numpy otherwise.

    cupy is asked first, and only when something imported it: an array
    module standing in for cupy may subclass numpy's arrays (the simulator
    tests of the whole GPU path run on one).
    """
    cp = sys.modules.get("cupy")
    if cp is not None and isinstance(arr, cp.ndarray):
        return cp
    return np


def host_int(x):
    """A Python int from a numpy/cupy scalar or 0-d array (a blocking read on a GPU)."""
    if _xp(x) is not np:
        opcount.add_read()
    return int(x)


def launch(kernel, n, *args):
    """Launch the grid-stride ``kernel`` over ``n`` items (counted by ``kernels.opcount``).

    On a GPU, a kernel whose parameters are all 1-D contiguous arrays and
    plain scalars is launched through the CUDA driver directly once numba
    has compiled it for those argument types (``_FastLaunch``): numba's own
    launch types and converts every argument on every call, which for a
    kernel of a dozen array arguments takes longer than many kernels run.
    Boolean flags are passed as int64 so that their kernels qualify.
    """
    launch_grid(kernel, blocks(n), BLOCK, *args)


def launch_grid(kernel, grid, block, *args):
    """``launch`` with an explicit grid and block size (a kernel that strides by
    its own block, or needs a given number of blocks); counted the same."""
    opcount.add_launch()
    args = tuple(np.int64(a) if isinstance(a, (bool, np.bool_)) else a for a in args)
    if SIM and RECORD_PATH:
        _record(kernel, args)
    if not SIM and FAST_LAUNCH:
        fast = _fast_launcher(kernel, args)
        if fast is not None:
            fast(grid, args, block)
            return
    kernel[grid, block](*args)


#: Under the simulator, ``$SPLA_RECORD_KERNELS`` names a file where each
#: kernel launched and its argument types are written once, as JSON lines:
#: ``benchmarks/ptx_check.py`` compiles them for a GPU without one, which
#: finds the typing errors that the simulator (plain Python) cannot.
RECORD_PATH = os.environ.get("SPLA_RECORD_KERNELS", "")
_RECORDED = set()
_RECORD_LOCK = threading.Lock()


def _arg_spec(a):
    """A launch argument's type as JSON: ``[dtype, ndim, layout]`` for an array,
    ``[dtype]`` for a scalar."""
    if isinstance(a, np.generic):
        return [a.dtype.str]
    if isinstance(a, (int, float)):
        return ["<i8" if isinstance(a, int) else "<f8"]
    a = np.asarray(a)
    layout = "C" if a.flags.c_contiguous else ("F" if a.flags.f_contiguous else "A")
    return [a.dtype.str, a.ndim, layout]


def _record(kernel, args):
    import json
    fn = getattr(kernel, "fn", None) or getattr(kernel, "py_func", None)
    line = json.dumps({"module": getattr(fn, "__module__", "?"),
                       "name": getattr(fn, "__qualname__", "?"),
                       "args": [_arg_spec(a) for a in args]})
    with _RECORD_LOCK:
        if line in _RECORDED:
            return
        _RECORDED.add(line)
        with open(RECORD_PATH, "a") as f:
            f.write(line + "\n")


#: Launch eligible kernels through the driver directly (``SPLA_CUDA_LAUNCH=numba``
#: in the environment turns it off: every launch then goes through numba).
FAST_LAUNCH = os.environ.get("SPLA_CUDA_LAUNCH", "direct") != "numba"

# (kernel, argument key) -> _FastLaunch, or None where a kernel's parameters
# do not qualify.  Grows with the kernels and signatures used, a few dozen.
_FAST = {}
_FAST_LOCK = threading.Lock()


def _arg_key(a):
    cp = sys.modules.get("cupy")
    if cp is not None and isinstance(a, cp.ndarray):
        return (a.dtype.char, a.ndim, bool(a.flags.c_contiguous))
    return type(a)


def _fast_launcher(kernel, args):
    """The direct launcher of ``kernel`` for these arguments' types, if any.

    The first call with new argument types returns None (numba launches,
    compiling the kernel); later calls find its compiled code.
    """
    key = (kernel, tuple(_arg_key(a) for a in args))
    found = _FAST.get(key, False)
    if found is not False:
        return found
    overloads = getattr(kernel, "overloads", None)
    if overloads is None:
        return None
    try:
        types = tuple(kernel.typeof_pyval(a) for a in args)
    except Exception:  # noqa: BLE001 - numba cannot type it: its own launch will say why
        return None
    compiled = overloads.get(types)
    if compiled is None:
        return None  # not compiled yet: numba's launch compiles it
    fast = _FastLaunch.build(compiled, types)
    with _FAST_LOCK:
        _FAST[key] = fast
    return fast


#: Scalar parameters a direct launch packs: numba type name -> (struct code, bytes).
_SCALARS = {"int64": ("q", 8), "uint64": ("Q", 8), "float64": ("d", 8),
            "int32": ("i", 4), "uint32": ("I", 4), "float32": ("f", 4)}


def param_format(types):
    """The ``struct`` format of a kernel's packed parameters, or None if not eligible.

    ``types`` are the numba types of the kernel's arguments: a 1-D C array
    is seven 64-bit parameters (meminfo, parent, items, item size, data,
    shape, stride), a 64-bit integer ``q``/``Q``, a float64 ``d``, a 32-bit
    integer ``i``/``I`` and a float32 ``f``, each at an offset that is a
    multiple of its size (``x`` pads), as the driver lays out a kernel's
    parameters; anything else (booleans, arrays of other ranks) makes the
    kernel ineligible for a direct launch (``launch`` passes flags as int64).

    Examples
    --------
    >>> from numba.core import types as nt
    >>> from kernels.cuda._util import param_format
    >>> param_format((nt.Array(nt.int32, 1, "C"), nt.int64, nt.uint64, nt.float64))
    '<QQqqQqqqQd'
    >>> param_format((nt.float32, nt.int64))
    '<fxxxxq'
    >>> param_format((nt.boolean,)) is None
    True
    """
    from numba.core import types as nt
    fmt, offset = "<", 0
    for t in types:
        if isinstance(t, nt.Array):
            if t.ndim != 1 or t.layout != "C":
                return None
            code, size = "QQqqQqq", 8
        elif str(t) in _SCALARS:
            code, size = _SCALARS[str(t)]
        else:
            return None
        pad = -offset % size
        fmt += "x" * pad + code
        offset += pad + size * len(code)
    return fmt


class _FastLaunch:
    """One compiled specialization of a numba.cuda kernel, launched by cuLaunchKernel.

    numba passes a 1-D array as seven 64-bit parameters (meminfo, parent,
    item count, item size, data pointer, shape, stride in bytes) and a
    scalar as itself (``param_format``); those parameters are packed into one buffer
    and handed to the driver (``CU_LAUNCH_PARAM_BUFFER_POINTER``), on
    cupy's current stream.  Kernels with other parameters (booleans, arrays
    of other ranks) are not built (``build`` returns None) and go through
    numba.
    """

    def __init__(self, func, fmt):
        self.func = func
        self.fmt = fmt

    @classmethod
    def build(cls, compiled, types):
        fmt = param_format(types)
        if fmt is None:
            return None
        cupy = sys.modules.get("cupy")   # loaded wherever kernels get cupy arrays
        try:
            if cupy is None or not hasattr(cupy.cuda.driver, "launchKernel"):
                return None
            cubin = compiled.library.get_cubin()
            module = cupy.cuda.function.Module()
            module.load(bytes(getattr(cubin, "code", cubin)))
            func = module.get_function(compiled.entry_name)
        except Exception:  # noqa: BLE001 - any failure: numba's launch stays
            return None
        fast = cls(func, fmt)
        fast.module = module  # the function lives as long as its module
        return fast

    def __call__(self, grid, args, block=BLOCK):
        # ctypes buffers rather than numpy ones: a launch packs a dozen arrays
        # and its host time is what a small bulk waits on.
        cupy = sys.modules["cupy"]
        nd = cupy.ndarray
        vals = []
        for a in args:
            if isinstance(a, nd):
                size = a.size
                vals += (0, 0, size, a.itemsize, a.data.ptr, size, a.itemsize)
            else:
                vals.append(a)
        packed = struct.pack(self.fmt, *vals)
        buf = ctypes.create_string_buffer(packed, len(packed))
        length = ctypes.c_size_t(len(packed))
        extra = (ctypes.c_void_p * 5)(1, ctypes.addressof(buf), 2, ctypes.addressof(length), 0)
        cupy.cuda.driver.launchKernel(self.func.ptr, grid, 1, 1, block, 1, 1, 0,
                                      cupy.cuda.get_current_stream().ptr, 0,
                                      ctypes.addressof(extra))


def to_host(arr):
    """A numpy copy/view of a numpy or cupy array (a blocking read of a cupy one)."""
    if _xp(arr) is np:
        return arr
    opcount.add_read()
    return arr.get()


if SIM:
    from numba.cuda.simulator.cudadrv.devicearray import (
        FakeCUDAArray, FakeWithinKernelCUDAArray)

    def _unwrap(a):
        if isinstance(a, FakeWithinKernelCUDAArray):
            a = a._item
        if isinstance(a, FakeCUDAArray):
            a = a._ary
        return a

    def device(fn):
        def call(*args):
            return fn(*[_unwrap(a) for a in args])

        call.__name__ = getattr(fn, "__name__", "device_fn")
        call.py_func = getattr(fn, "py_func", fn)
        return call
else:

    def device(fn):
        return fn


def check_numba_cuda(import_module=importlib.import_module):
    """Load numba-cuda's numpy bindings now, or say which versions clash.

    numba-cuda loads them at its first kernel compilation, so a numpy it
    does not support fails deep inside the first GPU call, with an
    AttributeError about numpy (numba-cuda 0.30.4 under numpy 2.5.2: no
    ``np.row_stack``).  ``kernels.cuda`` calls this at import instead.
    """
    try:
        import_module("numba.cuda.cudaimpl")
    except ModuleNotFoundError:
        return  # another layout of numba's CUDA target: its first compilation will tell
    except AttributeError as exc:
        try:
            nc = metadata.version("numba-cuda")
        except metadata.PackageNotFoundError:
            nc = "(version unknown)"
        raise ImportError(
            f"kernels.cuda: numba-cuda {nc} cannot load its numpy bindings under numpy "
            f"{np.__version__} ({exc}); install a numpy this numba-cuda supports (numba-cuda "
            "0.30.4 works with numpy 2.4 and fails with 2.5: pip install 'numpy<2.5') or a "
            "newer numba-cuda") from exc


def row_chunks(row_off, total):
    """Row ranges ``(r0, r1, t0, t1)`` whose items ``[t0, t1)`` number at most
    ``CHUNK_ITEMS`` (a row with more is a chunk alone).

    ``row_off`` (n + 1 int64, on either device) holds the items before each
    row, ``row_off[0] == 0``; ``total`` is ``row_off[n]``.  It is copied to
    the host only when there is more than one chunk.
    """
    n = row_off.size - 1
    if total <= CHUNK_ITEMS:
        return [(0, n, 0, total)]
    off = to_host(row_off)
    chunks, r0 = [], 0
    while r0 < n:
        r1 = int(np.searchsorted(off, off[r0] + CHUNK_ITEMS, side="right")) - 1
        r1 = min(n, max(r1, r0 + 1))
        chunks.append((r0, r1, int(off[r0]), int(off[r1])))
        r0 = r1
    return chunks


def full(xp, n, value, dtype):
    """An array of ``n`` items set to ``value`` (a counted launch on a GPU)."""
    if xp is not np:
        opcount.add_launch()
    return xp.full(n, value, dtype)


def upload(xp, *arrays):
    """Small int64 host arrays on the device in one copy: views of one array.

    Each host-to-device copy costs a staging buffer and a copy on cupy's
    stream (host time a small call waits on), so a kernel's few pointers go
    over together.  Arrays already on the device are taken as they are.
    """
    if any(isinstance(a, xp.ndarray) for a in arrays) or xp is np:
        return [xp.asarray(a) for a in arrays]
    parts = [np.asarray(a, np.int64) for a in arrays]
    flat = xp.asarray(np.concatenate(parts))
    ends = np.cumsum([0] + [a.size for a in parts]).tolist()
    return [flat[a:b] for a, b in zip(ends[:-1], ends[1:])]


def scan(xp, ptr, out=None):
    """Inclusive scan of ``ptr`` (``ptr[0] == 0``, ``ptr[1:]`` the counts),
    i.e. the CSR row pointer; a new int64 array, or written into ``out``."""
    if xp is not np:
        opcount.add_launch()
    return xp.cumsum(ptr, dtype=np.int64, out=out)


def argsort_stable(xp, a):
    """Stable argsort as int64 (cupy's argsort is always stable)."""
    if xp is np:
        return np.argsort(a, kind="stable").astype(np.int64, copy=False)
    order = a.argsort()
    return order if order.dtype == np.int64 else order.astype(np.int64)


def stable_order(xp, major, minor, n_major, n_minor):
    """Permutation sorting by (major, minor); ties keep the input order.

    One sort on a combined key when ``n_major * n_minor`` fits in 62 bits,
    else two stable sorts (minor, then major).
    """
    if int(n_major) * int(n_minor) < (1 << 62):
        key = major.astype(np.int64) * np.int64(n_minor) + minor.astype(np.int64)
        return argsort_stable(xp, key)
    o = argsort_stable(xp, minor)
    return o[argsort_stable(xp, major[o])]
