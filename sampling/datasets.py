"""Datasets: the embedded Planetoid graphs and seeded synthetic graphs.

``load("cora")`` and ``load("citeseer")`` read the pickle-free ``.npz`` files
shipped inside the package (standard Planetoid split).  ``load("rmat:SCALE")``
builds a seeded R-MAT graph with planted community labels and features that
carry signal, so accuracy means something at any size.
"""

import os
from dataclasses import dataclass

import numpy as np

from spla.checks import fail
from spla.exceptions import InvalidValue
from spla.matrix import Matrix

_DATA = os.path.join(os.path.dirname(__file__), "data")
EMBEDDED = ("cora", "citeseer")


@dataclass(frozen=True)
class Dataset:
    """A node-classification dataset.

    Attributes
    ----------
    name : str
    A : spla.Matrix
        Structural symmetric adjacency.
    x : spla.Matrix
        Node features (n x f, float32, sparse).
    y : int64 array
        Labels; -1 where unknown.
    train_idx, val_idx, test_idx : int64 arrays
    """

    name: str
    A: Matrix
    x: Matrix
    y: np.ndarray
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray

    @property
    def num_nodes(self):
        return self.A.nrows

    @property
    def num_classes(self):
        return int(self.y.max()) + 1

    @property
    def num_features(self):
        return self.x.ncols

    def __repr__(self):
        return (f"<Dataset {self.name}: {self.num_nodes} nodes, {self.A.nnz} edges, "
                f"{self.num_features} features, {self.num_classes} classes, "
                f"{self.train_idx.size}/{self.val_idx.size}/{self.test_idx.size} split>")


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
        return _load_npz(key, os.path.join(_DATA, f"{key}.npz"))
    if key.startswith("rmat:"):
        from sampling.synthetic import rmat_dataset
        try:
            scale = int(key.split(":", 1)[1])
        except ValueError:
            fail(InvalidValue, "load", "name", "'rmat:SCALE' with an integer SCALE", repr(name))
        return rmat_dataset(scale)
    fail(InvalidValue, "load", "name", "'cora', 'citeseer' or 'rmat:SCALE'", repr(name))


def _load_npz(name, path):
    with np.load(path, allow_pickle=False) as d:
        n = d["indptr"].size - 1
        A = Matrix.from_csr(d["indptr"], d["indices"], None, (n, n))
        x = Matrix.from_csr(d["x_indptr"], d["x_indices"], d["x_data"],
                            (n, int(d["x_indices"].max()) + 1))
        return Dataset(name, A, x, d["y"].copy(), d["train_idx"].copy(),
                       d["val_idx"].copy(), d["test_idx"].copy())
