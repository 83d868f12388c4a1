"""Learnable vertex embeddings for vertex types without features.

``Embedding(num_nodes, dim)`` holds one row per vertex and returns the rows
of the vertices a minibatch reads (``mb.input_nodes[t]``), with sparse
gradients: an optimiser step touches only the rows the minibatch used
(``torch.optim.SparseAdam`` or ``SGD``), which keeps a step's cost
proportional to the minibatch, not to the type's vertex count.
``DistEmbedding`` shards the table over the ranks of a communicator (rank
``r`` holds the rows ``spla.layout.chunk(n, p, r)``): a lookup is one
all-to-allv of ids and one of rows, and the backward pass sends each row's
gradient to its owner, which gets a sparse gradient of its shard.
"""

import numpy as np

from spla import comm as C
from spla.checks import as_index_array, as_int
from spla.layout import chunk, owner_of
from spla.random import uniform

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - exercised without torch only
    torch = nn = None

_Module = object if nn is None else nn.Module
_Function = object if torch is None else torch.autograd.Function


def keyed_init(start, stop, dim, seed):
    """Rows ``start:stop`` of the initial table: float32, keyed by ``(seed, row, column)``.

    Examples
    --------
    >>> from sampling.models.embedding import keyed_init
    >>> bool((keyed_init(2, 4, 3, 0) == keyed_init(0, 5, 3, 0)[2:4]).all())
    True
    """
    ids = np.arange(start * dim, stop * dim, dtype=np.int64)
    u = uniform(ids, seed=seed, stream=0x3E3B)
    return ((2.0 * u - 1.0) / np.sqrt(dim)).astype(np.float32).reshape(stop - start, dim)


class Embedding(_Module):
    """A learnable ``num_nodes x dim`` table, read by global vertex ids.

    Parameters
    ----------
    num_nodes : int
    dim : int
    sparse : bool, default True
        Sparse gradients (only the rows read get a gradient).
    seed : int, default 0
        Keys the initial values: row ``v`` is uniform in
        ``[-1/sqrt(dim), 1/sqrt(dim))``, a pure function of ``(seed, v)``
        (``keyed_init``), so ``DistEmbedding`` starts from the same table
        on any number of ranks.

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
        init = torch.from_numpy(keyed_init(0, num_nodes, dim, seed))
        self.table = nn.Embedding(num_nodes, dim, sparse=bool(sparse), _weight=init)

    @property
    def weight(self):
        return self.table.weight

    def forward(self, ids):
        """Rows ``ids`` (numpy or torch int array) of the table."""
        if not isinstance(ids, torch.Tensor):
            ids = torch.from_numpy(np.asarray(ids, np.int64))
        return self.table(ids.to(self.table.weight.device, torch.int64))


class _Exchange(_Function):
    """Rows of a sharded table by global ids (forward), gradients to their owners (backward)."""

    @staticmethod
    def forward(ctx, weight, ids, module):
        uniq, inv = np.unique(ids, return_inverse=True)      # sorted: grouped by owner
        p = module.comm.Get_size()
        counts = np.bincount(owner_of(uniq, module.num_nodes, p), minlength=p)
        asked, asked_counts = C.alltoallv(module.comm, uniq, counts, "embedding ids")
        local = torch.from_numpy(np.asarray(asked, np.int64) - module.start)
        rows = weight.detach()[local].numpy().reshape(-1)
        got, _ = C.alltoallv(module.comm, rows, asked_counts * module.dim, "embedding rows")
        ctx.module, ctx.local, ctx.counts, ctx.inv = module, local, counts, inv
        ctx.uniq_size = uniq.size
        out = torch.from_numpy(np.asarray(got, np.float32).reshape(-1, module.dim))
        return out[torch.from_numpy(inv.reshape(-1))]

    @staticmethod
    def backward(ctx, grad):
        m = ctx.module
        g = torch.zeros(ctx.uniq_size, m.dim, dtype=grad.dtype)
        g.index_add_(0, torch.from_numpy(ctx.inv.reshape(-1)), grad)
        back, _ = C.alltoallv(m.comm, g.numpy().reshape(-1), ctx.counts * m.dim,
                              "embedding grads")
        vals = torch.from_numpy(np.asarray(back, np.float32).reshape(-1, m.dim))
        sparse = torch.sparse_coo_tensor(ctx.local.reshape(1, -1), vals,
                                         (m.stop - m.start, m.dim), check_invariants=True)
        return sparse.coalesce(), None, None


class DistEmbedding(_Module):
    """An embedding table sharded over the ranks of ``comm``, with sparse gradients.

    Collective: every rank of ``comm`` builds it, and calls ``forward``
    and the backward pass together (each with its own ids, any number,
    none included).  Rank ``r`` holds rows ``chunk(num_nodes, p, r)`` as
    ``weight`` (a parameter whose gradient is sparse: an optimiser step
    touches only the rows some rank read).  The initial table and every
    lookup equal ``Embedding``'s with the same seed, for any number of
    ranks.

    Parameters
    ----------
    num_nodes, dim : int
    comm : MPI communicator, default COMM_WORLD
    seed : int, default 0

    Examples
    --------
    >>> import numpy as np, torch
    >>> from sampling.models.embedding import DistEmbedding
    >>> from sampling import Embedding
    >>> d = DistEmbedding(10, 4)                      # on one rank
    >>> bool(torch.equal(d(np.array([3, 7, 3])), Embedding(10, 4)(np.array([3, 7, 3]))))
    True
    """

    def __init__(self, num_nodes, dim, *, comm=None, seed=0):
        from sampling.models.layers import require_torch
        require_torch("DistEmbedding")
        super().__init__()
        func = "DistEmbedding"
        self.comm = C.as_comm(comm, func)
        with C.collective_checks(self.comm):
            self.num_nodes = as_int(func, "num_nodes", num_nodes, minimum=0)
            self.dim = as_int(func, "dim", dim, minimum=1)
            seed = as_int(func, "seed", seed, minimum=0)
        C.check_same(self.comm, func, "(num_nodes, dim, seed)", [self.num_nodes, self.dim, seed])
        self.start, self.stop = chunk(self.num_nodes, self.comm.Get_size(), self.comm.Get_rank())
        self.weight = nn.Parameter(torch.from_numpy(keyed_init(self.start, self.stop, self.dim,
                                                               seed)))

    def forward(self, ids):
        """Collective: the rows ``ids`` (global ids, numpy or torch), fetched from their owners."""
        ids = ids.numpy() if isinstance(ids, torch.Tensor) else np.asarray(ids)
        with C.collective_checks(self.comm):
            ids = np.asarray(as_index_array("DistEmbedding.forward", "ids", ids,
                                            self.num_nodes), np.int64)
        return _Exchange.apply(self.weight, ids, self)


__all__ = ["Embedding", "DistEmbedding", "keyed_init"]
