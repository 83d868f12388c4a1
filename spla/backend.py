"""Where arrays live and which kernels run on them: the one dispatch point.

numpy arrays run the ``kernels.cpu`` kernels, cupy arrays the
``kernels.cuda`` ones.  cupy is imported only when a cupy array is met or a
GPU is asked for, so the CPU path never needs it.
"""

import ctypes
import importlib
import sys

import numpy as np

from kernels import opcount
from spla.exceptions import DeviceMismatch, InvalidValue
from spla.optional import cupy_or_none, require_cupy  # noqa: F401 - also spla.backend names

CPU = "cpu"
CUDA = "cuda"


def device_of(arr):
    """'cpu' for numpy arrays (and anything else), 'cuda' for cupy arrays.

    cupy is asked first: an array module standing in for cupy may subclass
    numpy's arrays (the CUDA-simulator tests run the GPU path on one).

    Examples
    --------
    >>> import numpy as np
    >>> from spla.backend import device_of
    >>> device_of(np.zeros(3))
    'cpu'
    """
    # Every operator asks several times per call: a plain numpy array, the
    # common case, is answered without looking cupy up.
    if type(arr) is np.ndarray:
        return CPU
    cp = sys.modules.get("cupy")
    if cp is not None and isinstance(arr, cp.ndarray):
        return CUDA
    return CPU


def xp_of_array(arr):
    """The array module of ``arr``: cupy for a cupy array, numpy otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.backend import xp_of_array
    >>> xp_of_array(np.arange(2)).__name__
    'numpy'
    """
    return sys.modules["cupy"] if device_of(arr) == CUDA else np


def xp_of(device):
    """The array module (numpy or cupy) of a device.

    Examples
    --------
    >>> from spla.backend import xp_of
    >>> xp_of("cpu").__name__
    'numpy'
    """
    if device == CPU:
        return np
    return require_cupy("spla")


def normalize_device(func, device):
    """Accept 'cpu', 'cuda', 'gpu' (alias) or 'cuda:0'; return 'cpu'/'cuda'."""
    if isinstance(device, str):
        d = device.lower()
        if d == CPU:
            return CPU
        if d in (CUDA, "gpu") or d.startswith("cuda:"):
            return CUDA
    raise InvalidValue(f"{func}: argument 'device' must be 'cpu' or 'cuda'; got {device!r}")


def same_device(func, *mats):
    """The common device of matrices, or DeviceMismatch naming both."""
    devs = {m.device for m in mats}
    if len(devs) > 1:
        raise DeviceMismatch(
            f"{func}: operands must live on one device; got {sorted(devs)} "
            "(move one with .to(device))")
    return devs.pop()


def kernels_for(device):
    """The kernel package of a device: ``kernels.cpu`` or ``kernels.cuda``.

    spla's one dispatch point: an operator calls
    ``kernels_for(A.device).<operation>.<kernel>``, and both packages hold
    the same modules with the same functions (the generators, which build
    on the host, are ``kernels.cpu``'s alone).  Asking for ``'cuda'``
    without cupy raises ``MissingDependency``.

    Examples
    --------
    >>> from spla.backend import kernels_for
    >>> K = kernels_for("cpu")
    >>> K.__name__, K.spmm.__name__
    ('kernels.cpu', 'kernels.cpu.spmm')
    """
    if device == CPU:
        return _KERNELS.get(CPU) or _load_kernels(CPU, "kernels.cpu")
    require_cupy("spla")
    return _KERNELS.get(CUDA) or _load_kernels(CUDA, "kernels.cuda")


#: The kernel packages once imported (two module objects): every operator
#: asks for one, and an import-system lookup per call cost more than some
#: of the kernels it dispatched to.
_KERNELS = {}


def _load_kernels(device, name):
    module = importlib.import_module(name)
    _KERNELS[device] = module
    return module


def to_host(arr):
    """The array on the host: a numpy array as is, a cupy array copied.

    The one host-copy helper of spla and its clients (MPI buffers, logging,
    tests).

    Examples
    --------
    >>> import numpy as np
    >>> from spla.backend import to_host
    >>> a = np.arange(3)
    >>> to_host(a) is a
    True
    """
    if device_of(arr) == CPU:
        return arr
    opcount.add_read()
    return arr.get()


def concatenate(arrays, dtype=np.int64):
    """The arrays (all numpy or all cupy) end to end, on their device.

    An empty list gives an empty numpy array of ``dtype``: the bulk of a
    rank that samples no minibatch has nothing to join.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.backend import concatenate
    >>> concatenate([np.array([3, 1]), np.array([2])]).tolist(), concatenate([]).size
    ([3, 1, 2], 0)
    """
    if not arrays:
        return np.zeros(0, dtype)
    return xp_of_array(arrays[0]).concatenate(arrays)


def views(arr, starts, stops):
    """The views ``arr[starts[g]:stops[g]]`` of a 1-D array, for every ``g``.

    A bulk of sampled minibatches is cut into hundreds of per-minibatch
    views after its one read, and that cutting is host time the bulk waits
    on: a cupy array's views are built straight over its memory (about 0.7
    of a slice's host time with cupy 14), a numpy array's (or any other's)
    sliced.

    Parameters
    ----------
    arr : numpy or cupy array, 1-D
    starts, stops : sequences of int
        The bounds, ``0 <= starts[g] <= stops[g] <= arr.size`` (not checked:
        callers pass pointers they computed).

    Returns
    -------
    list of arrays
        Views sharing ``arr``'s memory.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.backend import views
    >>> [v.tolist() for v in views(np.arange(6), [0, 2, 2], [2, 2, 6])]
    [[0, 1], [], [2, 3, 4, 5]]
    """
    mem = getattr(getattr(arr, "data", None), "mem", None)
    cp = sys.modules.get("cupy")
    if mem is None or cp is None or arr.ndim != 1 or not arr.flags.c_contiguous:
        return [arr[a:b] for a, b in zip(starts, stops)]
    nd, pointer, dtype, item = cp.ndarray, cp.cuda.MemoryPointer, arr.dtype, arr.itemsize
    offset = arr.data.ptr - mem.ptr
    return [nd((b - a,), dtype, pointer(mem, offset + a * item)) for a, b in zip(starts, stops)]


#: ``cudaHostAllocPortable | cudaHostAllocMapped``: pinned pages every context
#: sees, mapped into the device's address space.
_HOST_ALLOC_FLAGS = 1 | 2


class _MappedHostBuffer:
    """Pinned, device-mapped host memory, freed when its last array goes."""

    def __init__(self, cp, nbytes):
        self._free = cp.cuda.runtime.freeHost
        self.ptr = cp.cuda.runtime.hostAlloc(nbytes, _HOST_ALLOC_FLAGS)
        self.nbytes = nbytes

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        if ptr:
            self._free(ptr)


def to_mapped_host(arr):
    """A cupy array whose data stays in pinned host memory that GPU kernels read.

    The array's pages are page-locked and mapped into the GPU's address
    space (unified virtual addressing), so kernels read them over the
    host-device link as they run, without a copy to device memory: a
    graph larger than the GPU's memory can be sampled on the GPU this way
    (Quiver's "UVA" mode).  Reads are slower than from device memory, and
    each costs host-device bandwidth.

    Parameters
    ----------
    arr : numpy or cupy array

    Returns
    -------
    cupy.ndarray
        A copy of ``arr`` in mapped host memory (freed with the array).
    """
    cp = require_cupy("to_mapped_host")
    host = np.ascontiguousarray(to_host(arr))
    nbytes = max(int(host.nbytes), 8)
    buf = _MappedHostBuffer(cp, nbytes)
    raw = (ctypes.c_uint8 * nbytes).from_address(buf.ptr)
    np.frombuffer(raw, np.uint8, host.nbytes)[:] = host.reshape(-1).view(np.uint8)
    mem = cp.cuda.UnownedMemory(buf.ptr, nbytes, buf)
    return cp.ndarray(host.shape, host.dtype, cp.cuda.MemoryPointer(mem, 0))
