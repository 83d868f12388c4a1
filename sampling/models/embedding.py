"""Learnable vertex embeddings for vertex types without features.

``Embedding(num_nodes, dim)`` holds one row per vertex and returns the rows
of the vertices a minibatch reads (``mb.input_nodes[t]``), with sparse
gradients: an optimiser step touches only the rows the minibatch used
(``torch.optim.SparseAdam`` or ``SGD``), which keeps a step's cost
proportional to the minibatch, not to the type's vertex count.  This is the
single-process version; the table is not sharded over ranks.
"""

import numpy as np

from spla.checks import as_int

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - exercised without torch only
    torch = nn = None

_Module = object if nn is None else nn.Module


class Embedding(_Module):
    """A learnable ``num_nodes x dim`` table, read by global vertex ids.

    Parameters
    ----------
    num_nodes : int
    dim : int
    sparse : bool, default True
        Sparse gradients (only the rows read get a gradient).
    seed : int, default 0
        Seeds the initial values (a generator of its own, normal with
        standard deviation ``1 / sqrt(dim)``).

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sampling import Embedding
    >>> emb = Embedding(10, 4)
    >>> out = emb(np.array([3, 7]))
    >>> out.shape
    torch.Size([2, 4])
    >>> out.sum().backward()
    >>> emb.weight.grad.is_sparse, emb.weight.grad.coalesce().indices().tolist()
    (True, [[3, 7]])
    """

    def __init__(self, num_nodes, dim, *, sparse=True, seed=0):
        from sampling.models.layers import require_torch
        require_torch("Embedding")
        super().__init__()
        num_nodes = as_int("Embedding", "num_nodes", num_nodes, minimum=0)
        dim = as_int("Embedding", "dim", dim, minimum=1)
        seed = as_int("Embedding", "seed", seed, minimum=0)
        gen = torch.Generator().manual_seed(seed)
        init = torch.randn(num_nodes, dim, generator=gen) / float(np.sqrt(dim))
        self.table = nn.Embedding(num_nodes, dim, sparse=bool(sparse), _weight=init)

    @property
    def weight(self):
        return self.table.weight

    def forward(self, ids):
        """Rows ``ids`` (numpy or torch int array) of the table."""
        if not isinstance(ids, torch.Tensor):
            ids = torch.from_numpy(np.asarray(ids, np.int64))
        return self.table(ids.to(self.table.weight.device, torch.int64))


__all__ = ["Embedding"]
