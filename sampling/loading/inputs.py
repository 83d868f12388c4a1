"""A minibatch's inputs: features and labels, checked once and gathered per bulk.

``NodeLoader`` accepts features in many containers (numpy, cupy or torch
arrays, ``scipy.sparse``, ``spla.Matrix``, a ``FeatureStore``) and labels
as any 1-D int array; ``Inputs`` checks them when the loader is built and
gathers, per bulk, the rows of every minibatch's input vertices and the
labels of its seeds, as torch tensors on the loader's device.
"""

import sys

import numpy as np

import spla
from spla import backend
from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, MissingDependency
from spla.matrix import Matrix

from sampling.datasets.validation import check_labels, host_array
from sampling.loading.device_cache import DeviceFeatureCache
from sampling.loading.features import FeatureStore
from sampling.samplers.minibatch import require_torch


class Inputs:
    """Features and labels of a loader, and their gather.

    Parameters
    ----------
    func : str
        The caller, named in errors.
    n : int
        Vertices of the sampler's graph.
    features, labels, device
        As ``NodeLoader`` takes them.

    Examples
    --------
    >>> import numpy as np
    >>> inp = Inputs("f", 4, np.eye(4, dtype=np.float32), np.arange(4), "cpu")
    >>> x, = inp.gather_x([np.array([2, 0])], inp.features)
    >>> x.tolist(), inp.kind
    ([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 0.0, 0.0]], 'numpy')
    """

    def __init__(self, func, n, features, labels, device):
        self.features, self.kind = as_features(func, features, n)
        need_torch = features is not None or labels is not None
        self.torch = require_torch(func) if need_torch else None
        self.device = as_device(func, device, self.torch)
        on_cuda = getattr(self.device, "type", self.device) == "cuda"
        if self.kind == "sparse" and self.features.device != backend.CPU:
            if on_cuda:
                # Gathered where they are: a fill and a kernel per bulk, no copy.
                self.kind = "devsparse"
            else:
                self.features = self.features.to(backend.CPU)
        if self.kind == "devcache" and not on_cuda:
            fail(InvalidValue, func, "device", "a CUDA device ('cuda', 'cuda:0') when "
                 "'features' is a DeviceFeatureCache (its rows are gathered on the GPU)",
                 describe(device))
        self.labels = None if labels is None else as_labels(func, labels, n, self.torch,
                                                            self.device)

    def gather_x(self, parts, F):
        """The feature rows of each array of ``parts``, from one gather of ``F`` per bulk."""
        kind = self.kind
        if kind is None:
            return None
        torch = self.torch
        ids = backend.concatenate(parts)
        if kind == "store":
            # Collective when partitioned: called once per bulk on every rank.
            X = torch.from_numpy(F.fetch(ids)).to(self.device)
        elif kind == "devcache":
            # One kernel on the GPU; the sampler's ids are vertices of the graph.
            X = torch.from_dlpack(F.gather(ids, check=False)).to(self.device, torch.float32)
        elif kind == "torch":
            # index_select, not F[idx]: advanced indexing took 4x as long on
            # the CPU (80,000 rows of 64 float32, 2 threads).
            X = torch.index_select(F, 0, torch_index(torch, ids, F.device)).to(
                self.device, torch.float32)
        elif kind == "devsparse":
            X = torch.from_dlpack(device_sparse_rows(F, ids)).to(self.device)
        elif kind == "sparse":
            # Dense rows straight from the float32 CSR, on every CPU thread.
            X = torch.from_numpy(spla.take_rows(F, backend.to_host(ids), check=False)).to(
                self.device)
        else:  # numpy
            X = torch.from_numpy(self._host_rows(F, ids)).to(self.device)
        return list(X.split([int(a.size) for a in parts]))

    def width(self, F):
        """Columns of the features ``F`` (of this object's kind), 0 without features."""
        if self.kind is None:
            return 0
        return int(F.num_features if self.kind == "store" else F.shape[1])

    def gather_x_into(self, parts, F, out):
        """Write the feature rows of ``parts`` (concatenated) into ``out``.

        ``out`` is a C-contiguous float32 numpy array of ``(rows, width)``,
        such as a pinned staging buffer: a replicated ``FeatureStore``, a
        float32 numpy matrix or sparse features (held as a float32
        ``spla.Matrix``) are gathered into it by one parallel kernel
        (``spla.take_rows``), any other host container through its own
        gather and a copy.  Host features only (``staging_for``'s kinds).

        Examples
        --------
        >>> import numpy as np
        >>> inp = Inputs("f", 3, np.arange(6, dtype=np.float32).reshape(3, 2), None, "cpu")
        >>> out = np.empty((2, 2), np.float32)
        >>> inp.gather_x_into([np.array([2]), np.array([0])], inp.features, out).tolist()
        [[4.0, 5.0], [0.0, 1.0]]
        """
        ids = np.asarray(backend.to_host(backend.concatenate(parts)), np.int64)
        kind = self.kind
        if kind == "store":
            return F.fetch(ids, out=out)
        if kind == "numpy":
            return self._host_rows(F, ids, out)
        if kind == "torch":
            torch = self.torch
            idx = torch.from_numpy(ids)
            if F.dtype == torch.float32:
                torch.index_select(F, 0, idx, out=torch.from_numpy(out))
                return out
            out[...] = torch.index_select(F, 0, idx).to(torch.float32).numpy()
        elif kind == "sparse":
            spla.take_rows(F, ids, out=out, check=False)
        else:
            out[...] = F[ids]
        return out

    @staticmethod
    def _host_rows(F, ids, out=None):
        """Rows ``ids`` of the numpy matrix ``F`` as C-contiguous float32 (into ``out``)."""
        ids = np.asarray(backend.to_host(ids))
        if F.dtype == np.float32 and F.flags.c_contiguous:
            # On every CPU thread; the sampler's ids are vertices of the graph.
            return spla.take_rows(F, ids, out=out, check=False)
        rows = np.ascontiguousarray(F[ids], np.float32)
        if out is None:
            return rows
        out[...] = rows
        return out

    def gather_y_into(self, parts, out):
        """Write the labels of ``parts`` (concatenated) into the int64 tensor ``out``."""
        idx = torch_index(self.torch, backend.concatenate(parts), self.labels.device)
        return self.torch.index_select(self.labels, 0, idx, out=out)

    def gather_y(self, parts):
        """The labels of each array of ``parts`` (one gather per bulk), or None."""
        if self.labels is None:
            return None
        Y = self.labels[torch_index(self.torch, backend.concatenate(parts),
                                    self.labels.device)]
        return list(Y.split([int(a.size) for a in parts]))


def _torch_module_of(x):
    torch = sys.modules.get("torch")
    return torch if torch is not None and isinstance(x, torch.Tensor) else None


def as_features(func, features, n):
    """(the features in a gatherable form, their kind) or (None, None)."""
    if features is None:
        return None, None
    if isinstance(features, FeatureStore):
        if features.num_nodes != n:
            fail(DimensionMismatch, func, "features", f"a FeatureStore of {n} rows (one per "
                 "vertex of the sampler's graph)", repr(features))
        return features, "store"
    if isinstance(features, DeviceFeatureCache):
        if features.num_nodes != n:
            fail(DimensionMismatch, func, "features", f"a DeviceFeatureCache of {n} rows (one "
                 "per vertex of the sampler's graph)", repr(features))
        return features, "devcache"
    if isinstance(features, Matrix):
        _check_rows(func, features.shape, n, describe(features))
        # Left on its device: ``Inputs`` moves a GPU matrix to the host
        # only for a loader on the CPU.
        return _float32(features), "sparse"
    torch = _torch_module_of(features)
    if torch is not None:
        _check_rows(func, tuple(features.shape), n, f"tensor of shape {tuple(features.shape)}"
                    f" and dtype {features.dtype}")
        if features.dtype.is_complex:
            fail(DTypeError, func, "features", "a real-valued tensor", str(features.dtype))
        return features, "torch"
    if backend.device_of(features) == "cuda":
        _check_rows(func, features.shape, n, describe(features))
        _check_dtype(func, features)
        torch = require_torch(func)
        return torch.from_dlpack(features), "torch"
    import scipy.sparse as sp
    if sp.issparse(features):
        _check_rows(func, features.shape, n, describe(features))
        if features.dtype.kind not in "biuf":
            fail(DTypeError, func, "features", "a real-valued sparse matrix",
                 describe(features))
        return _float32(Matrix.from_scipy(features)), "sparse"
    if not isinstance(features, np.ndarray):
        fail(DTypeError, func, "features", "a numpy, cupy or torch array, a scipy.sparse "
             "matrix, a spla.Matrix or a sampling.FeatureStore", describe(features))
    _check_rows(func, features.shape, n, describe(features))
    _check_dtype(func, features)
    return features, "numpy"


def _float32(M):
    """``M`` with float32 values (a structural matrix: ones), on its device:
    the form the loader gathers dense rows from (``spla.take_rows``)."""
    return M if M.dtype == np.float32 else M.astype(np.float32)


def device_sparse_rows(F, ids):
    """Dense float32 rows ``ids`` of the GPU matrix ``F`` as a device array.

    ``ids`` (numpy or cupy; a sampler's, so in range) are uploaded when on
    the host; the rows are written by a fill and one kernel
    (``spla.take_rows``), with no blocking read.

    Examples
    --------
    >>> import numpy as np, spla
    >>> F = spla.Matrix.from_dense(np.eye(3, dtype=np.float32))
    >>> device_sparse_rows(F, np.array([2, 0])).tolist()   # a host matrix works too
    [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    return spla.take_rows(F, F.xp.asarray(ids), check=False)


def _check_rows(func, shape, n, got):
    if len(shape) != 2 or shape[0] != n:
        fail(DimensionMismatch, func, "features", f"an ({n}, f) matrix (one row per vertex "
             "of the sampler's graph)", got)


def _check_dtype(func, a):
    if a.dtype.kind not in "fiub":
        fail(DTypeError, func, "features", "a numeric array", describe(a))


def as_device(func, device, torch):
    """The torch.device for x and y (checked only when torch is needed)."""
    if torch is None:
        if not isinstance(device, str) and type(device).__name__ != "device":
            fail(DTypeError, func, "device", "a device name ('cpu', 'cuda', 'cuda:1') or a "
                 "torch.device", describe(device))
        return device
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        fail(InvalidValue, func, "device", "a device name ('cpu', 'cuda', 'cuda:1') or a "
             "torch.device", describe(device))
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise MissingDependency(f"{func}: argument 'device' is {str(dev)!r}, but this PyTorch "
                                "build sees no CUDA GPU; install a CUDA build of torch or use "
                                "device='cpu'")
    return dev


def as_labels(func, labels, n, torch, device):
    """``labels`` checked (ints in [-1, classes)), as an int64 tensor on ``device``."""
    a = check_labels(func, "labels", host_array(func, "labels", labels), n)
    return torch.from_numpy(np.ascontiguousarray(a, np.int64)).to(device)


def torch_index(torch, ids, device):
    """``ids`` (numpy or cupy) as an int64 torch tensor on ``device``."""
    if isinstance(ids, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(ids, np.int64))
    else:
        t = torch.from_dlpack(ids.astype(np.int64, copy=False))
    return t.to(device)


__all__ = ["Inputs", "as_features", "as_device", "as_labels", "device_sparse_rows",
           "torch_index"]
