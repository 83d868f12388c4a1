"""The ``Dataset`` type: a node-classification graph, checked when it is built.

It lives apart from the loaders (``sampling.datasets.loaders``) and the
generators (``sampling.datasets.synthetic``) so that both can build one
without importing each other.
"""

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError
from spla.matrix import Matrix

from sampling.datasets.validation import as_features, check_labels, check_split_labels, host_array


@dataclass(frozen=True)
class Dataset:
    """A node-classification dataset.

    Attributes
    ----------
    name : str
    A : spla.Matrix
        The adjacency in sampler orientation: row ``v`` lists the vertices
        whose features flow into ``v`` (row = target, column = source), the
        transpose of PyG's ``edge_index`` reading.  Symmetric for the
        embedded graphs, the synthetic ones and OGB's with the default
        ``to_undirected=True``.
    x : spla.Matrix or numpy.ndarray of float32, shape (n, f)
        Node features, finite.  Given as a spla matrix, a scipy.sparse
        matrix or a sparse torch tensor, they are kept sparse (a
        ``spla.Matrix``: bag-of-words features); given dense (numpy, torch,
        cupy), they stay dense as a C-contiguous float32 numpy array, not
        copied when already one (a CPU tensor's memory is shared: changing
        it afterwards bypasses the checks).
    y : int64 array
        Labels in ``[0, num_classes)``; -1 where unknown.  Given as a numpy,
        torch or cupy integer array.
    train_idx, val_idx, test_idx : int64 arrays
        Vertices of each split; every one has a known label.
    classes : int, optional
        The number of classes; default ``max(y) + 1``.  When given, a label
        at or above it is an error instead of an extra class.

    Raises
    ------
    InvalidValue
        NaN or infinite features; labels below -1 or not below ``classes``;
        a split vertex with an unknown label.
    DTypeError
        Features that are not numbers (strings, objects, complex); float
        (or other non-integer) labels: they are refused, not truncated.
    DimensionMismatch, IndexOutOfRange
        Shapes that do not match (features must be 2-D with one row per
        vertex), split ids outside the graph.

    Examples
    --------
    >>> import numpy as np, spla
    >>> A = spla.Matrix.from_dense(np.ones((3, 3)) - np.eye(3)).structure()
    >>> x = spla.Matrix.from_dense(np.eye(3, dtype=np.float32))
    >>> ds = Dataset("toy", A, x, np.array([0, 1, 1]), np.array([0]), np.array([1]),
    ...              np.array([2]))
    >>> ds.num_classes
    2

    Dense features stay dense:

    >>> Dataset("toy", A, np.ones((3, 4)), ds.y, ds.train_idx, ds.val_idx,
    ...         ds.test_idx).x.dtype
    dtype('float32')
    """

    name: str
    A: Matrix
    x: Union[Matrix, np.ndarray]
    y: np.ndarray
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    classes: Optional[int] = None

    def __post_init__(self):
        func = "Dataset"
        if not isinstance(self.A, Matrix):
            fail(DTypeError, func, "A", "a spla.Matrix", describe(self.A))
        n = self.A.nrows
        if self.A.ncols != n:
            fail(DimensionMismatch, func, "A", "a square adjacency", f"shape {self.A.shape}")
        x = as_features(func, "x", self.x, n)
        classes = None if self.classes is None else as_int(func, "classes", self.classes,
                                                            minimum=1)
        y = check_labels(func, "y", self.y, n, classes)
        splits = {}
        for name in ("train_idx", "val_idx", "test_idx"):
            ids = host_array(func, name, getattr(self, name))
            splits[name] = np.asarray(as_index_array(func, name, ids, n))
        check_split_labels(func, y, splits)
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "y", y)
        for name, ids in splits.items():
            object.__setattr__(self, name, ids)

    @property
    def num_nodes(self):
        return self.A.nrows

    @property
    def num_classes(self):
        if self.classes is not None:
            return self.classes
        return int(self.y.max()) + 1 if self.y.size else 0

    @property
    def num_features(self):
        return int(self.x.shape[1])

    @property
    def sparse_features(self):
        """True when ``x`` is a spla.Matrix, False when it is a dense array."""
        return isinstance(self.x, Matrix)

    def __repr__(self):
        return (f"<Dataset {self.name}: {self.num_nodes} nodes, {self.A.nnz} edges, "
                f"{self.num_features} features, {self.num_classes} classes, "
                f"{self.train_idx.size}/{self.val_idx.size}/{self.test_idx.size} split>")


__all__ = ["Dataset"]
