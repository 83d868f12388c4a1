"""Checks of training data shared by the dataset loaders and the feature store.

Bad data must stop a job where it enters, with a message that says which
function, which argument, what was expected and what was received: NaN
features otherwise train to ``loss nan``, float labels are silently
truncated, and a label out of range silently adds a class to the model.
"""

import numpy as np

from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue

#: The label of a vertex whose class is unknown (never trained or evaluated on).
UNKNOWN = -1


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
    if values is None or values.size == 0 or values.dtype.kind not in "fc":
        return
    xp = np if isinstance(values, np.ndarray) else __import__("cupy")
    flat = values.reshape(-1)
    bad = ~xp.isfinite(flat)
    if bool(bad.any()):
        i = int(xp.flatnonzero(bad)[0])
        fail(InvalidValue, func, arg, "finite values", f"{float(flat[i])} at entry {i}")


def check_labels(func, arg, labels, n=None, num_classes=None):
    """Class labels as an int64 array: integers in ``[0, num_classes)``, or -1 (unknown).

    Parameters
    ----------
    func, arg : str
        Named in the error message.
    labels : array_like
        One label per vertex.  Float arrays are refused, even with integral
        values: a float label array is almost always a bug upstream, and
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
    a = np.asarray(labels)
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


__all__ = ["check_finite", "check_labels", "check_split_labels", "UNKNOWN"]
