"""Checks of training data shared by the dataset loaders and the feature store.

Bad data must stop a job where it enters, with a message that says which
function, which argument, what was expected and what was received: NaN
features otherwise train to ``loss nan``, float labels are silently
truncated, and a label out of range silently adds a class to the model.

Data also arrives in many containers (numpy, cupy, torch tensors on the
CPU or a GPU, scipy/torch/cupyx sparse matrices, spla matrices):
``host_array`` and ``as_features`` turn them into the two forms the
library keeps, so every entry point accepts the same inputs and applies
the same checks.
"""

import sys

import numpy as np

from spla import backend
from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.matrix import Matrix

#: The label of a vertex whose class is unknown (never trained or evaluated on).
UNKNOWN = -1

# Entries checked per step by check_finite: the NaN mask of a 50 GB feature
# matrix must not cost another 12 GB.
_FINITE_CHUNK = 1 << 22


def _torch_tensor(x):
    """``x`` if it is a torch tensor (torch is never imported here), else None."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return x
    return None


def _cupyx_sparse(x):
    sparse = sys.modules.get("cupyx.scipy.sparse")
    return sparse is not None and sparse.issparse(x)


def _scipy_sparse(x):
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(x)


def is_sparse(x):
    """True for the sparse containers ``as_features`` keeps sparse.

    spla matrices, scipy.sparse and cupyx.scipy.sparse matrices, and torch
    tensors of a sparse layout.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> is_sparse(sp.eye(2)), is_sparse(np.eye(2))
    (True, False)
    """
    if isinstance(x, Matrix) or _scipy_sparse(x) or _cupyx_sparse(x):
        return True
    t = _torch_tensor(x)
    return t is not None and t.layout != sys.modules["torch"].strided


def host_array(func, arg, a):
    """A numpy array holding ``a``: numpy as is, torch and cupy arrays on the host.

    CPU tensors share their memory (no copy); GPU tensors and cupy arrays
    are copied to the host.  bfloat16 tensors, which numpy cannot hold,
    become float32.  Anything else goes through ``numpy.asarray``.  Sparse
    containers are refused (use ``as_features`` for feature matrices).

    Examples
    --------
    >>> import numpy as np, torch
    >>> host_array("f", "y", torch.tensor([3, 1])).tolist()
    [3, 1]
    >>> a = np.arange(3)
    >>> host_array("f", "y", a) is a
    True
    """
    if isinstance(a, np.ndarray):
        return a
    if isinstance(a, Matrix) or _scipy_sparse(a) or _cupyx_sparse(a):
        fail(DTypeError, func, arg, "a dense array", f"a sparse matrix ({type(a).__name__})")
    t = _torch_tensor(a)
    if t is not None:
        if t.layout != sys.modules["torch"].strided:
            fail(DTypeError, func, arg, "a dense array", f"a sparse tensor ({t.layout})")
        t = t.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        if t.dtype == sys.modules["torch"].bfloat16:
            t = t.float()
        return t.resolve_conj().resolve_neg().numpy()
    if backend.device_of(a) == "cuda":
        return backend.to_host(a)
    try:
        return np.asarray(a)
    except (TypeError, ValueError) as e:
        fail(DTypeError, func, arg, "an array", f"{describe(a)} ({e})")


def as_features(func, arg, x, n=None):
    """Node features in one of the two forms the library keeps, checked.

    * Sparse input (``spla.Matrix``, scipy.sparse, a sparse torch tensor,
      cupyx.scipy.sparse) becomes a ``spla.Matrix`` (a spla matrix is kept
      as is, on its device; the others land on the CPU).
    * Dense input (numpy, cupy, torch, nested lists) becomes a C-contiguous
      float32 numpy array; it is not copied when it already is one (a CPU
      tensor's memory is shared), so large features do not exist twice.

    Parameters
    ----------
    func, arg : str
        Named in error messages.
    x : matrix or array of shape (n, f)
        Numeric: float, integer or bool values (bool and integer counts
        become float32).
    n : int, optional
        The number of rows expected (one per vertex).

    Returns
    -------
    spla.Matrix or numpy.ndarray of float32

    Raises
    ------
    DTypeError
        Strings, objects, complex values.
    DimensionMismatch
        Not 2-D, or not ``n`` rows.
    InvalidValue
        NaN or infinite values, or values beyond float32's range.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> as_features("f", "x", np.eye(2, dtype=np.float64)).dtype
    dtype('float32')
    >>> as_features("f", "x", sp.eye(2, format="csr"))
    <spla.Matrix 2x2, nnz=2, dtype=float64, device=cpu>
    >>> as_features("f", "x", np.ones(3))
    Traceback (most recent call last):
    ...
    spla.exceptions.DimensionMismatch: f: argument 'x' must be a 2-D (n, f) matrix; got array of shape (3,) and dtype float64
    """
    if isinstance(x, Matrix):
        M = x
    elif _scipy_sparse(x) or _cupyx_sparse(x):
        if _cupyx_sparse(x):
            x = x.get()
        _check_kind(func, arg, x)
        if x.ndim != 2:
            fail(DimensionMismatch, func, arg, "a 2-D (n, f) matrix", describe(x))
        M = Matrix.from_scipy(x)
    elif _torch_tensor(x) is not None and x.layout != sys.modules["torch"].strided:
        M = _from_sparse_tensor(func, arg, x)
    else:
        M = None
    if M is not None:
        if n is not None and M.nrows != n:
            fail(DimensionMismatch, func, arg, f"{n} rows (one per vertex)", f"shape {M.shape}")
        check_finite(func, arg, M.values)
        return M
    a = host_array(func, arg, x)
    if a.ndim != 2:
        fail(DimensionMismatch, func, arg, "a 2-D (n, f) matrix", describe(a))
    _check_kind(func, arg, a)
    if n is not None and a.shape[0] != n:
        fail(DimensionMismatch, func, arg, f"{n} rows (one per vertex)", describe(a))
    with np.errstate(over="ignore"):  # overflow becomes inf, reported just below
        out = np.ascontiguousarray(a, dtype=np.float32)
    i = _first_non_finite(out)
    if i is not None:
        v = float(a[np.unravel_index(i, a.shape)])
        if np.isfinite(v):  # finite in a wider float, infinite in float32
            fail(InvalidValue, func, arg, "values within float32's range", f"{v} at entry {i}")
        fail(InvalidValue, func, arg, "finite values", f"{v} at entry {i}")
    return out


def _check_kind(func, arg, a):
    if np.dtype(a.dtype).kind not in "fiub":
        fail(DTypeError, func, arg, "numeric features (float, integer or bool)", describe(a))


def _from_sparse_tensor(func, arg, t):
    """A CPU spla.Matrix from a sparse torch tensor of any sparse layout."""
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    if t.layout != sys.modules["torch"].sparse_coo:
        t = t.to_sparse_coo()
    t = t.coalesce()
    if t.ndim != 2 or t.dense_dim() != 0:
        fail(DimensionMismatch, func, arg, "a 2-D (n, f) matrix",
             f"a sparse tensor of shape {tuple(t.shape)}")
    values = host_array(func, arg, t.values())
    _check_kind(func, arg, values)
    idx = t.indices().numpy()
    return Matrix.from_coo(idx[0], idx[1], values if values.dtype != np.bool_ else None,
                           shape=tuple(t.shape))


def _first_non_finite(values):
    """Flat index of the first NaN or infinite value, or None (checked by chunks)."""
    if values is None or values.size == 0 or values.dtype.kind not in "fc":
        return None
    xp = backend.xp_of_array(values)
    flat = values.reshape(-1)
    for start in range(0, flat.size, _FINITE_CHUNK):
        bad = ~xp.isfinite(flat[start:start + _FINITE_CHUNK])
        if bool(bad.any()):
            return start + int(xp.flatnonzero(bad)[0])
    return None


def check_finite(func, arg, values):
    """Refuse NaN or infinite feature values (numpy or cupy array, or None).

    Examples
    --------
    >>> import numpy as np
    >>> check_finite("f", "features", np.ones(3))
    >>> check_finite("f", "features", np.array([1.0, np.nan]))
    Traceback (most recent call last):
    ...
    spla.exceptions.InvalidValue: f: argument 'features' must be finite values; got nan at entry 1
    """
    i = _first_non_finite(values)
    if i is not None:
        fail(InvalidValue, func, arg, "finite values",
             f"{float(values.reshape(-1)[i])} at entry {i}")


def check_targets(func, labels, splits, n, num_classes=None):
    """A feature store's ``num_classes``, ``labels`` and ``splits``, checked.

    ``num_classes`` (when given) must be a positive int; ``labels`` (when
    given) pass ``check_labels`` for ``n`` vertices; each split is an array
    of vertex ids below ``n``.  Returns ``(num_classes, labels, splits)``
    with the splits as a dict of int64 arrays.

    Examples
    --------
    >>> import numpy as np
    >>> k, y, s = check_targets("f", np.array([0, 1, 1]), {"train": [0, 2]}, 3, 2)
    >>> k, y.tolist(), s["train"].tolist()
    (2, [0, 1, 1], [0, 2])
    """
    if num_classes is not None:
        num_classes = as_int(func, "num_classes", num_classes, minimum=1)
    if labels is not None:
        labels = check_labels(func, "labels", labels, n, num_classes)
    checked = {name: np.asarray(as_index_array(
        func, f"splits[{name!r}]", host_array(func, f"splits[{name!r}]", ids), n))
        for name, ids in (splits or {}).items()}
    return num_classes, labels, checked


def check_labels(func, arg, labels, n=None, num_classes=None):
    """Class labels as an int64 array: integers in ``[0, num_classes)``, or -1 (unknown).

    Parameters
    ----------
    func, arg : str
        Named in the error message.
    labels : array_like
        One label per vertex (numpy, torch or cupy).  Float arrays are
        refused, even with integral values: a float label array is almost always a bug upstream, and
        converting it would truncate 2.7 to 2 without a word.
    n : int, optional
        The number of vertices (the expected length).
    num_classes : int, optional
        When given, every known label must be below it.

    Returns
    -------
    numpy.ndarray of int64

    Examples
    --------
    >>> import numpy as np
    >>> check_labels("f", "y", np.array([0, 2, -1]), num_classes=3).tolist()
    [0, 2, -1]
    >>> check_labels("f", "y", np.array([0.0, 1.5]))
    Traceback (most recent call last):
    ...
    spla.exceptions.DTypeError: f: argument 'y' must be integer class labels; got array of shape (2,) and dtype float64
    """
    a = host_array(func, arg, labels)
    if a.ndim != 1 or (n is not None and a.shape[0] != n):
        what = "a 1-D array of labels" if n is None else f"a 1-D array of {n} labels"
        fail(DimensionMismatch, func, arg, what, describe(a))
    if a.dtype.kind not in "iu":
        fail(DTypeError, func, arg, "integer class labels", describe(a))
    if a.size == 0:
        return a.astype(np.int64)
    if a.dtype.kind == "u" and int(a.max()) > np.iinfo(np.int64).max:
        fail(InvalidValue, func, arg, "labels below 2**63", int(a.max()))
    a = a.astype(np.int64, copy=False)
    lo = int(a.min())
    if lo < UNKNOWN:
        fail(InvalidValue, func, arg, f"labels >= 0 (or {UNKNOWN} for unknown)",
             f"{lo} at vertex {int(np.flatnonzero(a == lo)[0])}")
    if num_classes is not None:
        hi = int(a.max())
        if hi >= num_classes:
            fail(InvalidValue, func, arg, f"labels in [0, {num_classes}) ({num_classes} classes)",
                 f"{hi} at vertex {int(np.flatnonzero(a == hi)[0])}")
    return a


def check_split_labels(func, labels, splits):
    """Every vertex of a split must have a known label (training and evaluation use it).

    ``splits`` maps the argument name of each split to its vertex ids.

    Examples
    --------
    >>> import numpy as np
    >>> check_split_labels("f", np.array([0, -1, 1]), {"train": np.array([0, 2])})
    """
    for name, ids in splits.items():
        ids = np.asarray(ids)
        if ids.size == 0:
            continue
        unknown = labels[ids] < 0
        if bool(unknown.any()):
            v = int(ids[np.flatnonzero(unknown)[0]])
            fail(InvalidValue, func, name,
                 "vertices with known labels (>= 0)", f"vertex {v} with label {int(labels[v])}")


__all__ = ["as_features", "check_finite", "check_labels", "check_split_labels", "host_array",
           "is_sparse", "UNKNOWN"]
