"""A stand-in for cupy on the host, for running the GPU path under the CUDA simulator.

Installed as ``sys.modules["cupy"]`` (``install()``), it makes spla treat its
arrays as device arrays: ``spla.backend.device_of`` says 'cuda', the
``kernels.cuda`` drivers run, and their numba.cuda kernels run under
numba's simulator.  Its arrays are numpy arrays of a subclass; its functions
are numpy's, with array results cast to that subclass.

It also counts what a real GPU would pay for, independently of the
library's own counters (``kernels.opcount``):

* ``reads``: blocking device-to-host reads: ``.get()``, ``.item()``,
  ``.tolist()``, and ``int``/``float``/``bool``/``index`` of an array;
  also every operation whose result's size depends on the data
  (``nonzero``, ``flatnonzero``, ``argwhere``, ``unique``, ``compress``,
  ``extract``, one-argument ``where``, indexing by a boolean array): cupy
  reads that size back before it can allocate the result, so each is a
  read too, hidden in an array operation;
* ``uploads``: host-to-device copies (``asarray`` of host data);
* ``launches``: kernels: every ufunc and reduction on its arrays, every
  array-module call that computes (``cumsum``, ``sort``, ``zeros``,
  ``full``, ...; not ``empty`` or an upload), gathers and scatters by an
  index array, ``astype``/``copy``/``fill``, and every numba.cuda kernel launched
  (``count_kernels`` patches the simulator's launch).

Element reads return 0-d arrays (as on cupy), so reading one element into
Python is a counted read too.
"""

import contextlib
import sys
import types

import numpy as np

STATS = {"reads": 0, "launches": 0, "uploads": 0}


def reset():
    """Zero the counts."""
    STATS["reads"] = 0
    STATS["launches"] = 0
    STATS["uploads"] = 0


def _plain(x):
    return x.view(np.ndarray) if isinstance(x, ndarray) else x


def _wrap(x):
    if isinstance(x, np.ndarray):
        return x.view(ndarray)
    if isinstance(x, (np.generic,)):
        return np.asarray(x).view(ndarray)
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


class ndarray(np.ndarray):
    """A 'device' array: a numpy array whose host reads are counted."""

    def __new__(cls, shape, dtype=float, memptr=None, *args, **kwargs):
        # cupy's signature: an array over a MemoryPointer (mapped host memory).
        if isinstance(memptr, MemoryPointer):
            buf = _HOST[memptr.mem.ptr]
            arr = np.ndarray.__new__(cls, shape, dtype, buffer=buf, offset=memptr.offset)
            arr.memptr = memptr  # keeps the memory's owner alive, as cupy's arrays do
            return arr
        return np.ndarray.__new__(cls, shape, dtype, memptr, *args, **kwargs)

    def get(self):
        STATS["reads"] += 1
        return np.array(self.view(np.ndarray), copy=True)

    def item(self, *args):
        STATS["reads"] += 1
        return self.view(np.ndarray).item(*args)

    def tolist(self):
        STATS["reads"] += 1
        return self.view(np.ndarray).tolist()

    def __int__(self):
        STATS["reads"] += 1
        return int(self.view(np.ndarray))

    def __index__(self):
        STATS["reads"] += 1
        return self.view(np.ndarray).__index__()

    def __float__(self):
        STATS["reads"] += 1
        return float(self.view(np.ndarray))

    def __bool__(self):
        STATS["reads"] += 1
        return bool(self.view(np.ndarray))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        STATS["launches"] += 1
        args = [_plain(i) for i in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(o) for o in kwargs["out"])
        return _wrap(getattr(ufunc, method)(*args, **kwargs))

    def __getitem__(self, key):
        plain = self.view(np.ndarray)
        if _is_mask(key):
            STATS["reads"] += 1
        if _is_gather(key):
            STATS["launches"] += 1
            key = _plain_key(key)
        return _wrap(plain[key])

    def __setitem__(self, key, value):
        STATS["launches"] += 1
        self.view(np.ndarray)[_plain_key(key)] = _plain(value)

    def astype(self, dtype, copy=True, **kw):
        if not copy and np.dtype(dtype) == self.dtype:
            return self
        STATS["launches"] += 1
        return _wrap(self.view(np.ndarray).astype(dtype, copy=copy, **kw))

    def copy(self, order="C"):
        STATS["launches"] += 1
        return _wrap(self.view(np.ndarray).copy(order))

    def fill(self, value):
        STATS["launches"] += 1
        self.view(np.ndarray).fill(value)

    def argsort(self, *args, **kw):
        STATS["launches"] += 1
        kw.setdefault("kind", "stable")  # cupy's argsort is stable
        return _wrap(self.view(np.ndarray).argsort(*args, **kw))

    def sort(self, *args, **kw):
        STATS["launches"] += 1
        self.view(np.ndarray).sort(*args, **kw)

    def nonzero(self):
        STATS["launches"] += 1
        STATS["reads"] += 1
        return _wrap(self.view(np.ndarray).nonzero())

    def repeat(self, repeats, axis=None):
        STATS["launches"] += 1
        return _wrap(self.view(np.ndarray).repeat(_plain(repeats), axis))


def _is_gather(key):
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, (np.ndarray, list)) for k in keys)


def _is_mask(key):
    keys = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, np.ndarray) and k.dtype == np.bool_ for k in keys)


def _plain_key(key):
    if isinstance(key, tuple):
        return tuple(_plain(k) for k in key)
    return _plain(key)


#: Array-module calls that allocate without computing (no launch counted).
_FREE = {"empty", "empty_like", "ndim", "shape", "dtype", "result_type", "can_cast",
         "iinfo", "finfo", "issubdtype"}


#: Array-module calls whose result's size depends on the data: a hidden read.
_SIZED = {"nonzero", "flatnonzero", "argwhere", "unique", "compress", "extract"}


def _function(name, fn):
    def call(*args, **kwargs):
        if name not in _FREE:
            STATS["launches"] += 1
        if name in _SIZED or (name == "where" and len(args) == 1):
            STATS["reads"] += 1
        args = [_plain(a) if not isinstance(a, (list, tuple))
                else type(a)(_plain(v) for v in a) for a in args]
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        return _wrap(fn(*args, **kwargs))
    call.__name__ = name
    return call


def asarray(a, dtype=None):
    """Device arrays as they are; host data is uploaded (an upload: no launch,
    no read, but a copy a GPU's host prepares and queues)."""
    if isinstance(a, ndarray) and (dtype is None or np.dtype(dtype) == a.dtype):
        return a
    if isinstance(a, ndarray):
        STATS["launches"] += 1
    else:
        STATS["uploads"] += 1
    return np.array(_plain(a), dtype=dtype, copy=True).view(ndarray)


#: "Pinned host memory" by address: the buffers ``runtime.hostAlloc`` handed out.
_HOST = {}


class _Runtime:
    @staticmethod
    def hostAlloc(nbytes, flags):
        buf = np.zeros(nbytes, np.uint8)
        _HOST[buf.ctypes.data] = buf
        STATS["mapped"] = STATS.get("mapped", 0) + nbytes
        return buf.ctypes.data

    @staticmethod
    def freeHost(ptr):
        _HOST.pop(ptr, None)


class UnownedMemory:
    def __init__(self, ptr, size, owner):
        self.ptr, self.size, self.owner = ptr, size, owner


class MemoryPointer:
    def __init__(self, mem, offset):
        self.mem, self.offset = mem, offset


class _Device:
    mem_info = (1 << 34, 1 << 34)

    def synchronize(self):
        STATS["reads"] += 1


class _Pool:
    def free_bytes(self):
        return 0


def _module():
    mod = types.ModuleType("cupy")
    mod.__doc__ = __doc__
    mod.ndarray = ndarray
    mod.asarray = asarray
    mod.array = asarray
    mod.cuda = types.SimpleNamespace(Device=_Device, runtime=_Runtime,
                                     UnownedMemory=UnownedMemory, MemoryPointer=MemoryPointer)
    mod.get_default_memory_pool = _Pool
    mod.__version__ = "fake"

    def __getattr__(name):
        attr = getattr(np, name)
        if callable(attr) and not isinstance(attr, type):
            return _function(name, attr)
        return attr

    mod.__getattr__ = __getattr__
    return mod


def install():
    """Make ``import cupy`` return this stand-in (for this process)."""
    sys.modules["cupy"] = _module()
    return sys.modules["cupy"]


def count_kernels():
    """Count every numba.cuda kernel launched under the simulator as a launch.

    The kernels get plain numpy views of this module's arrays, so their
    element accesses inside the kernel are not counted as reads.
    """
    from numba.cuda.simulator import kernel as simk

    if getattr(simk.FakeCUDAKernel.__call__, "_counted", False):
        return
    original = simk.FakeCUDAKernel.__call__

    def call(self, *args):
        if not (self._device or simk._kernel_context):
            STATS["launches"] += 1
            args = [_plain(a) for a in args]
        return original(self, *args)

    call._counted = True
    simk.FakeCUDAKernel.__call__ = call


@contextlib.contextmanager
def installed():
    """The stand-in as ``sys.modules["cupy"]`` with kernel launches counted,
    for the ``with`` block only (a module-scoped fixture's body)."""
    saved = sys.modules.get("cupy")
    mod = install()
    count_kernels()
    try:
        yield mod
    finally:
        if saved is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = saved
