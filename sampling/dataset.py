"""The ``Dataset`` type: a node-classification graph, checked when it is built.

It lives apart from the loaders (``sampling.datasets``) and the generators
(``sampling.synthetic``) so that both can build one without importing each
other.
"""

from dataclasses import dataclass
from typing import Optional

import numpy as np

from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError
from spla.matrix import Matrix

from sampling.validation import check_finite, check_labels, check_split_labels


@dataclass(frozen=True)
class Dataset:
    """A node-classification dataset.

    Attributes
    ----------
    name : str
    A : spla.Matrix
        Structural symmetric adjacency.
    x : spla.Matrix
        Node features (n x f, float32, sparse), finite.
    y : int64 array
        Labels in ``[0, num_classes)``; -1 where unknown.
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
        Float (or other non-integer) labels: they are refused, not truncated.
    DimensionMismatch, IndexOutOfRange
        Shapes that do not match, split ids outside the graph.

    Examples
    --------
    >>> import numpy as np, spla
    >>> A = spla.Matrix.from_dense(np.ones((3, 3)) - np.eye(3)).structure()
    >>> x = spla.Matrix.from_dense(np.eye(3, dtype=np.float32))
    >>> ds = Dataset("toy", A, x, np.array([0, 1, 1]), np.array([0]), np.array([1]),
    ...              np.array([2]))
    >>> ds.num_classes
    2
    """

    name: str
    A: Matrix
    x: Matrix
    y: np.ndarray
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    classes: Optional[int] = None

    def __post_init__(self):
        func = "Dataset"
        if not isinstance(self.A, Matrix):
            fail(DTypeError, func, "A", "a spla.Matrix", describe(self.A))
        if not isinstance(self.x, Matrix):
            fail(DTypeError, func, "x", "a spla.Matrix", describe(self.x))
        n = self.A.nrows
        if self.A.ncols != n:
            fail(DimensionMismatch, func, "A", "a square adjacency", f"shape {self.A.shape}")
        if self.x.nrows != n:
            fail(DimensionMismatch, func, "x", f"{n} rows (one per vertex)",
                 f"shape {self.x.shape}")
        check_finite(func, "x", self.x.values)
        classes = None if self.classes is None else as_int(func, "classes", self.classes,
                                                            minimum=1)
        y = check_labels(func, "y", self.y, n, classes)
        splits = {}
        for name in ("train_idx", "val_idx", "test_idx"):
            splits[name] = np.asarray(as_index_array(func, name, getattr(self, name), n))
        check_split_labels(func, y, splits)
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
        return self.x.ncols

    def __repr__(self):
        return (f"<Dataset {self.name}: {self.num_nodes} nodes, {self.A.nnz} edges, "
                f"{self.num_features} features, {self.num_classes} classes, "
                f"{self.train_idx.size}/{self.val_idx.size}/{self.test_idx.size} split>")


__all__ = ["Dataset"]
