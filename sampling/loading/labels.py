"""A feature store's labels and splits: small, so kept whole on every rank.

``Targets`` checks them once (``sampling.datasets.validation.check_targets``)
and answers the label and split lookups of ``features.FeatureStore``
locally: no method here sends a message.
"""

import numpy as np

from spla.checks import as_index_array

from sampling.datasets.validation import check_targets, host_array


class Targets:
    """Class labels and split vertex ids of ``num_nodes`` vertices, checked.

    Parameters
    ----------
    func : str
        The name errors give (the store's constructor).
    labels : 1-D int array of length num_nodes, optional
        Integer class ids ``>= 0``, or -1 for an unknown label (numpy,
        torch or cupy); kept as int64.
    splits : dict of name -> 1-D int array, optional
        Vertex ids of each split (``'train'``, ``'val'``, ``'test'``).
    num_nodes : int
    num_classes : int, optional
        When given, every known label must be below it.

    Attributes
    ----------
    labels : int64 array or None
    splits : dict of name -> int64 array
    num_classes : int or None

    Examples
    --------
    >>> import numpy as np
    >>> t = Targets("f", np.array([0, 2, -1, 1]), {"train": [1, 3]}, 4)
    >>> t.fetch("f", [3, 2]).tolist(), t.mask("train").tolist()
    ([1, -1], [False, True, False, True])
    """

    def __init__(self, func, labels, splits, num_nodes, num_classes=None):
        self.num_nodes = num_nodes
        self.num_classes, self.labels, self.splits = check_targets(
            func, labels, splits, num_nodes, num_classes)

    def mask(self, name):
        """Boolean mask of split ``name`` (length ``num_nodes``)."""
        m = np.zeros(self.num_nodes, bool)
        m[self.splits[name]] = True
        return m

    def fetch(self, func, ids):
        """Labels of ``ids`` (global vertex ids; ``func`` names the caller in errors)."""
        return self.labels[as_index_array(func, "ids", host_array(func, "ids", ids),
                                          self.num_nodes)]


__all__ = ["Targets"]
