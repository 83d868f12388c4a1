"""What a sampler returns: ``MiniBatch`` objects made of ``Block`` objects.

A block is one layer of message passing: ``adj`` is ``n_dst x n_src`` with
rows = destination vertices, ``dst_nodes`` and ``src_nodes`` are global
vertex ids, and ``src_nodes`` begin with ``dst_nodes`` (so a vertex's own
features are at hand).  ``MiniBatch.blocks`` run from the input layer to the
output layer; the last block's ``dst_nodes`` are the minibatch's seeds.
"""

from dataclasses import dataclass, field
from typing import List

import numpy as np

from spla import backend
from spla.util import row_ids
from spla.exceptions import MissingDependency
from spla.matrix import Matrix


@dataclass(frozen=True, eq=False)
class Block:
    """One sampled layer.

    Attributes
    ----------
    adj : spla.Matrix
        ``n_dst x n_src``; column ``j`` is vertex ``src_nodes[j]``.
    dst_nodes, src_nodes : int64 arrays
        Global vertex ids; ``src_nodes[:n_dst]`` equals ``dst_nodes``.
    """

    adj: Matrix
    dst_nodes: object
    src_nodes: object

    @property
    def num_dst(self):
        return int(self.dst_nodes.size)

    @property
    def num_src(self):
        return int(self.src_nodes.size)

    @property
    def num_edges(self):
        return self.adj.nnz

    def edge_index(self):
        """(2, nnz) int64 array of (source, destination) *local* ids, PyG order."""
        xp = self.adj.xp
        return xp.stack([self.adj.indices.astype(np.int64), row_ids(self.adj.indptr)])

    def to_scipy(self):
        """The adjacency as a ``scipy.sparse.csr_matrix`` (host)."""
        return self.adj.to_scipy()

    def to_torch(self):
        """The adjacency as a ``torch.sparse_csr_tensor`` (zero-copy via DLPack on GPU).

        Values are float32 (ones for a structural adjacency).
        """
        torch = _require_torch("Block.to_torch")
        adj = self.adj
        xp = adj.xp
        vals = xp.ones(adj.nnz, np.float32) if adj.values is None else adj.values
        conv = torch.from_numpy if xp is np else torch.from_dlpack
        # torch needs writable host buffers; spla's are read-only views.
        own = (lambda a: conv(np.array(a))) if xp is np else conv
        return torch.sparse_csr_tensor(own(adj.indptr), own(adj.indices.astype(np.int64)),
                                       own(vals), size=adj.shape)

    def __eq__(self, other):
        if not isinstance(other, Block):
            return NotImplemented
        return (self.adj.isequal(other.adj)
                and np.array_equal(backend.to_host(self.dst_nodes), backend.to_host(other.dst_nodes))
                and np.array_equal(backend.to_host(self.src_nodes), backend.to_host(other.src_nodes)))


@dataclass(frozen=True, eq=False)
class MiniBatch:
    """The sampled computation graph of one minibatch.

    Attributes
    ----------
    blocks : list of Block
        Input layer first; ``blocks[-1].dst_nodes`` are the seeds.
    index : int
        The minibatch's id (its position in the ``batches`` given to
        ``sample``, or the ``batch_ids`` passed); it keys the random draws.
    x : torch.Tensor, optional
        Features of ``input_nodes`` (set by ``NodeLoader`` when it is given
        features; None otherwise).
    y : torch.Tensor, optional
        Labels of ``seeds`` (set by ``NodeLoader`` when it is given labels).
    """

    blocks: List[Block]
    index: int = 0
    meta: dict = field(default_factory=dict)
    x: object = None
    y: object = None

    @property
    def seeds(self):
        return self.blocks[-1].dst_nodes

    @property
    def input_nodes(self):
        """Vertices whose features the first layer reads (= ``blocks[0].src_nodes``)."""
        return self.blocks[0].src_nodes

    @property
    def batch_size(self):
        return self.blocks[-1].num_dst

    @property
    def num_sampled_edges(self):
        """Edges over all blocks (what SEPS counts)."""
        return sum(b.num_edges for b in self.blocks)

    def to_pyg(self):
        """PyG-style view: ``dict(n_id, batch_size, edge_index=[...], adjs=[...])``.

        ``n_id`` is ``input_nodes``; each block's ``edge_index`` is in PyG's
        ``(source, target)`` convention with local ids (source ids index that
        block's ``src_nodes``, whose prefix is its ``dst_nodes``, as PyG's
        ``NeighborSampler`` lays them out).  Arrays are numpy/cupy; wrap them
        with ``torch.as_tensor`` or DLPack as needed.
        """
        return {
            "n_id": self.input_nodes,
            "batch_size": self.batch_size,
            "edge_index": [b.edge_index() for b in self.blocks],
            "sizes": [(b.num_src, b.num_dst) for b in self.blocks],
        }

    def __eq__(self, other):
        if not isinstance(other, MiniBatch):
            return NotImplemented
        return (self.index == other.index and len(self.blocks) == len(other.blocks)
                and all(a == b for a, b in zip(self.blocks, other.blocks)))

    def __repr__(self):
        layers = ", ".join(f"{b.num_src}->{b.num_dst} ({b.num_edges} edges)" for b in self.blocks)
        return f"<MiniBatch index={self.index}, seeds={self.batch_size}, blocks=[{layers}]>"


def _require_torch(func):
    try:
        import torch
    except ImportError as exc:
        raise MissingDependency(
            f"{func}: needs PyTorch; install it with `pip install -e .[train]`") from exc
    return torch
