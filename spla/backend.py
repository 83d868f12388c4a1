"""Where arrays live and which kernels run on them: the one dispatch point.

numpy arrays run the ``kernels.cpu`` kernels, cupy arrays the
``kernels.cuda`` ones.  cupy is imported only when a cupy array is met or a
GPU is asked for, so the CPU path never needs it.
"""

import importlib
import sys

import numpy as np

from spla.exceptions import DeviceMismatch, InvalidValue, MissingDependency

CPU = "cpu"
CUDA = "cuda"


def cupy_or_none():
    """The cupy module if it is already imported or importable, else None."""
    mod = sys.modules.get("cupy")
    if mod is not None:
        return mod
    try:
        return importlib.import_module("cupy")
    except Exception:  # ImportError, or a CUDA runtime that fails to load
        return None


def require_cupy(func):
    cp = cupy_or_none()
    if cp is None:
        raise MissingDependency(
            f"{func}: the GPU backend needs cupy; install it with "
            "`pip install -e .[gpu]` (cupy-cuda12x) on a machine with a CUDA GPU")
    return cp


def device_of(arr):
    """'cpu' for numpy arrays (and anything else), 'cuda' for cupy arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.backend import device_of
    >>> device_of(np.zeros(3))
    'cpu'
    """
    if isinstance(arr, np.ndarray):
        return CPU
    cp = sys.modules.get("cupy")
    if cp is not None and isinstance(arr, cp.ndarray):
        return CUDA
    return CPU


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
    """The kernel package of a device: ``kernels.cpu`` or ``kernels.cuda``."""
    if device == CPU:
        return importlib.import_module("kernels.cpu")
    require_cupy("spla")
    return importlib.import_module("kernels.cuda")


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
    if isinstance(arr, np.ndarray):
        return arr
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
    if isinstance(arrays[0], np.ndarray):
        return np.concatenate(arrays)
    return require_cupy("concatenate").concatenate(arrays)
