"""Datasets: the embedded Planetoid graphs and seeded synthetic graphs.

``load("cora")`` and ``load("citeseer")`` read the pickle-free ``.npz`` files
shipped inside the package (standard Planetoid split).  ``load("rmat:SCALE")``
builds a seeded R-MAT graph with planted community labels and features that
carry signal, so accuracy means something at any size.
"""

import os

import numpy as np

from spla.checks import fail
from spla.exceptions import DTypeError, InvalidValue
from spla.matrix import Matrix

from sampling.dataset import Dataset
from sampling.synthetic import rmat_dataset

DATA_DIR = os.path.join(os.path.dirname(__file__), "data")
#: The embedded Planetoid graphs and their number of classes.
EMBEDDED = {"cora": 7, "citeseer": 6}
_NPZ_KEYS = ("indptr", "indices", "x_indptr", "x_indices", "x_data", "y", "train_idx",
             "val_idx", "test_idx")


def load(name):
    """Load a dataset by name: 'cora', 'citeseer' or 'rmat:SCALE'.

    Examples
    --------
    >>> from sampling.datasets import load
    >>> load("cora")
    <Dataset cora: 2708 nodes, 10556 edges, 1433 features, 7 classes, 140/500/1000 split>
    """
    if not isinstance(name, str):
        fail(InvalidValue, "load", "name", "'cora', 'citeseer' or 'rmat:SCALE'", repr(name))
    key = name.lower()
    if key in EMBEDDED:
        return load_npz(os.path.join(DATA_DIR, f"{key}.npz"), name=key,
                        num_classes=EMBEDDED[key])
    if key.startswith("rmat:"):
        try:
            scale = int(key.split(":", 1)[1])
        except ValueError:
            fail(InvalidValue, "load", "name", "'rmat:SCALE' with an integer SCALE", repr(name))
        return rmat_dataset(scale)
    fail(InvalidValue, "load", "name", "'cora', 'citeseer' or 'rmat:SCALE'", repr(name))


def load_npz(path, *, name=None, num_classes=None):
    """Load a dataset from a pickle-free ``.npz`` file (the embedded graphs' format).

    Parameters
    ----------
    path : str
        A file with the arrays ``indptr``, ``indices`` (CSR adjacency),
        ``x_indptr``, ``x_indices``, ``x_data`` (CSR features), ``y``
        (integer labels, -1 for unknown), ``train_idx``, ``val_idx``,
        ``test_idx``, and optionally ``num_classes`` (a scalar).
    name : str, optional
        Default: the file name without its extension.
    num_classes : int, optional
        Overrides the file's ``num_classes``; labels must be below it.

    Returns
    -------
    Dataset

    Raises
    ------
    InvalidValue
        A missing array, NaN or infinite features, labels out of range.
    DTypeError
        Non-integer labels (float labels are refused, not truncated).
    InvalidCSR
        Inconsistent CSR arrays.

    Examples
    --------
    >>> import os
    >>> from sampling.datasets import load_npz, DATA_DIR
    >>> load_npz(os.path.join(DATA_DIR, "cora.npz")).num_classes
    7
    """
    func = "load_npz"
    name = name or os.path.splitext(os.path.basename(str(path)))[0]
    with np.load(path, allow_pickle=False) as d:
        missing = [k for k in _NPZ_KEYS if k not in d.files]
        if missing:
            fail(InvalidValue, func, "path", f"an .npz file with the arrays {', '.join(_NPZ_KEYS)}",
                 f"{path} without {', '.join(missing)}")
        arrays = {k: d[k] for k in d.files}
    if num_classes is None and "num_classes" in arrays:
        num_classes = arrays["num_classes"]
        if num_classes.shape != () or num_classes.dtype.kind not in "iu":
            fail(DTypeError, func, "path", "an integer scalar 'num_classes' in the file",
                 f"{num_classes.dtype} of shape {num_classes.shape}")
        num_classes = int(num_classes)
    n = arrays["indptr"].size - 1
    A = Matrix.from_csr(arrays["indptr"], arrays["indices"], None, (n, n))
    xi = arrays["x_indices"]
    x = Matrix.from_csr(arrays["x_indptr"], xi, arrays["x_data"],
                        (n, int(xi.max()) + 1 if xi.size else 0))
    return Dataset(name, A, x, arrays["y"], arrays["train_idx"], arrays["val_idx"],
                   arrays["test_idx"], classes=num_classes)


__all__ = ["Dataset", "EMBEDDED", "load", "load_npz"]
