"""What a sampler returns: ``MiniBatch`` objects made of ``Block`` objects.

A block is one layer of message passing: ``adj`` is ``n_dst x n_src`` with
rows = destination vertices, ``dst_nodes`` and ``src_nodes`` are global
vertex ids, and ``src_nodes`` begin with ``dst_nodes`` (so a vertex's own
features are at hand).  ``MiniBatch.blocks`` run from the input layer to the
output layer; the last block's ``dst_nodes`` are the minibatch's seeds, and
each block's ``src_nodes`` are the previous block's ``dst_nodes`` (the
*prefix chain*): ``blocks[i + 1].src_nodes == blocks[i].dst_nodes``.

The chain is what the conversions rely on: the input layer's vertices
(``MiniBatch.input_nodes``) list the seeds first, then the vertices new at
hop 1, then those new at hop 2, ..., and a block's local source ids are
positions in that list.  ``MiniBatch.to_pyg``, ``to_pyg_data`` and
``to_dgl`` hand the blocks to PyTorch Geometric and DGL models.
"""

from dataclasses import dataclass, field
from typing import List

import numpy as np

from spla import backend, entry_positions
from spla.util import row_ids
from spla.matrix import Matrix

from sampling.samplers import conversions
from sampling.samplers.conversions import (Adj, DglBlockLayout, PygBatch,  # noqa: F401 - public here too
                                           check_chain, require_torch)


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
        return xp.stack([self.adj.indices.astype(np.int64), row_ids(self.adj.indptr, self.adj.nnz)])

    def to_scipy(self):
        """The adjacency as a ``scipy.sparse.csr_matrix`` (host)."""
        return self.adj.to_scipy()

    def to_torch(self):
        """The adjacency as a ``torch.sparse_csr_tensor`` (zero-copy via DLPack on GPU).

        Values are float32 (ones for a structural adjacency).
        """
        torch = require_torch("Block.to_torch")
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
    graph : spla.Matrix or spla.DistMatrix, optional
        The graph the sampler was built on, or the sampler's copy of it with
        the same entry positions (GraphSAGE keeps only the pattern when it
        samples uniformly), set by ``Sampler.sample``: what ``edge_ids``
        look the sampled edges up in.  Not compared by ``==``.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from sampling import GraphSAGE
    >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
    >>> mb, = GraphSAGE(A, fanouts=[2, 3]).sample([np.array([4, 1])], seed=0)
    >>> mb.seeds.tolist(), mb.batch_size, mb.num_sampled_edges
    ([4, 1], 2, 19)
    """

    blocks: List[Block]
    index: int = 0
    meta: dict = field(default_factory=dict)
    x: object = None
    y: object = None
    graph: object = None

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

    # ---- edge ids ----------------------------------------------------------
    def edge_ids(self):
        """Position of each block's edges among the graph's stored entries.

        The graph is ``self.graph``, the matrix the sampler was built on.
        Its stored entries are its edges in canonical CSR order: entry
        ``(v, u)`` (an edge from ``u`` into ``v``) sits at ``indptr[v] +``
        the rank of ``u`` among row ``v``'s columns, so ``values[e_id]``
        (or a per-edge feature array in that order) holds the edges' data.

        Returns
        -------
        list of int64 arrays or None
            One per block, aligned with the block's stored entries (and so
            with ``Block.edge_index()``), on the blocks' device.  An edge the
            graph does not store gets -1: LADIES and FastGCN sample from
            ``D^-1 (A + I)`` (with ``normalize=True``), whose self loops are
            not edges of A.  None (a single None, not a list) when the graph
            is unknown (a ``MiniBatch`` built by hand or gathered by
            ``gather_minibatches``) or is a ``DistMatrix`` partitioned over
            the ranks: this rank does not hold the rows to look edges up in,
            and a conversion is no place for a collective.  A DistMatrix
            whose rank holds every row (replicated with
            ``replicate_graph=True``, or on one rank) works as a local
            graph.

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import GraphSAGE
        >>> A = spla.Matrix.from_dense(np.ones((4, 4)) - np.eye(4))
        >>> mb, = GraphSAGE(A, fanouts=[3]).sample([np.array([2])], seed=0)
        >>> mb.edge_ids()[0].tolist()           # row 2 holds entries 6, 7, 8
        [6, 7, 8]
        """
        graph = _local_graph(self.graph)
        if graph is None:
            return None
        out = []
        for b in self.blocks:
            adj = b.adj
            rows = b.dst_nodes[row_ids(adj.indptr, adj.nnz)]
            cols = b.src_nodes[adj.indices]
            out.append(entry_positions(graph, rows, cols))
        return out

    # ---- conversions -------------------------------------------------------
    def check_chain(self):
        """Raise ``InvalidValue`` unless the blocks form a prefix chain.

        Every block's ``src_nodes`` must begin with its ``dst_nodes``, and
        each block's ``src_nodes`` must equal the previous block's
        ``dst_nodes`` (blocks input layer first).  The built-in samplers
        always satisfy this; the conversions check it because their local
        ids mean nothing otherwise.

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import LADIES
        >>> A = spla.Matrix.from_dense(np.ones((8, 8)) - np.eye(8))
        >>> mb, = LADIES(A, [3, 3]).sample([np.array([0, 5])], seed=0)
        >>> mb.check_chain()                      # passes silently
        """
        check_chain(self.blocks, "MiniBatch.check_chain")

    def to_pyg(self, *, edge_ids=True):
        """The minibatch in PyG's ``NeighborSampler`` convention, as torch tensors.

        Parameters
        ----------
        edge_ids : bool, default True
            Look the edges up in the graph for ``e_id`` (see ``edge_ids``):
            a binary search per edge in the graph's rows, which costs about
            as much as sampling the minibatch did.  False gives ``e_id =
            None``.

        Returns
        -------
        PygBatch
            ``(batch_size, n_id, adjs, edge_weight)``:

            * ``n_id``: int64 global ids of the input layer's vertices,
              seeds first, then the vertices new at hop 1, hop 2, ...
              (``input_nodes``);
            * ``adjs``: one ``Adj(edge_index, e_id, size)`` per layer, input
              layer first (PyG's order; always a list, even for one layer).
              ``edge_index`` is ``[2, E]`` int64 with row 0 the source's
              local id and row 1 the target's; ``size = (num_src,
              num_dst)``.  Layer ``i``'s sources are ``n_id[:size[0]]`` and
              its targets the first ``size[1]`` of them, so PyG's loop works
              as is::

                  x = features[n_id]
                  for conv, (edge_index, _, size) in zip(convs, adjs):
                      x = conv((x, x[:size[1]]), edge_index)
                  # x: the seeds' outputs, batch_size rows

            * ``e_id``: see ``edge_ids`` (None when the graph is unknown or
              partitioned);
            * ``edge_weight``: per layer, the block's values as float32, or
              None for a structural block.  What the values are depends on
              the sampler: GraphSAGE's uniform blocks are structural (None);
              with ``replace=True`` the values count how often each
              neighbour was drawn; ``weighted=True`` without replacement
              keeps the graph's edge values (the sampling weights, not an
              estimator's scale); LADIES and FastGCN blocks hold the
              normalised, importance-scaled adjacency their GCN layers
              multiply by.

            Arrays on a GPU come back as CUDA tensors (DLPack, no copy).

        Raises
        ------
        MissingDependency
            Without PyTorch.
        InvalidValue
            Blocks that do not form a prefix chain (``check_chain``).

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import GraphSAGE
        >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
        >>> mb, = GraphSAGE(A, fanouts=[2, 2]).sample([np.array([0, 1])], seed=0)
        >>> batch_size, n_id, adjs = mb.to_pyg()[:3]
        >>> batch_size, [a.size[1] for a in adjs], adjs[-1].edge_index.shape
        (2, [5, 2], torch.Size([2, 4]))
        """
        return conversions.to_pyg(self, edge_ids=edge_ids)

    def to_pyg_data(self, *, edge_ids=True):
        """The minibatch as one ``torch_geometric.data.Data``, as PyG's ``NeighborLoader`` makes it.

        The blocks are merged into one graph over ``n_id`` (the input
        layer's vertices: seeds first, then the vertices new at hop 1, hop
        2, ...), with local ids as ``edge_index``.  The blocks re-sample a
        vertex's neighbours at every layer it is a destination in (a seed
        gets fresh neighbours at every hop), whereas a ``NeighborLoader``
        graph gives every vertex one set of in-edges.  The merged graph
        keeps, for each vertex, its in-edges from the first hop at which it
        is a destination: the seeds' edges from the output layer's block,
        the edges of the vertices new at hop 1 from the block below, and so
        on.  Edges are grouped by hop, seeds' edges first, which is what
        ``torch_geometric.utils.trim_to_layer`` expects.  With full
        neighbourhoods (fanouts at least every degree) this is exactly the
        graph a full-neighbourhood ``NeighborLoader`` samples, and a model
        run on it gives the full-graph outputs for the seeds.

        Parameters
        ----------
        edge_ids : bool, default True
            Set ``e_id`` (see ``to_pyg``: it costs about a minibatch's
            sampling time); False leaves it out.

        Returns
        -------
        torch_geometric.data.Data
            With ``edge_index`` ([2, E] int64, row 0 sources), ``n_id``,
            ``batch_size``, ``num_nodes``, ``num_sampled_nodes`` (one count
            per hop, seeds first: L + 1 numbers for L layers),
            ``num_sampled_edges`` (edges into each hop's new vertices: L
            numbers); ``e_id`` when the graph is known (see ``edge_ids``);
            ``edge_weight`` (float32) when a block has values (ones stand in
            for a structural block's edges); ``x`` and ``y`` when the
            minibatch has them.  ``x`` holds features of ``n_id``; ``y``
            holds the seeds' labels only (``batch_size`` rows), so PyG's
            ``data.y[:data.batch_size]`` reads the same labels.

        Raises
        ------
        MissingDependency
            Without PyTorch or torch_geometric.
        InvalidValue
            Blocks that do not form a prefix chain (``check_chain``).

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import GraphSAGE
        >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
        >>> mb, = GraphSAGE(A, fanouts=[2, 2]).sample([np.array([0, 1])], seed=0)
        >>> data = mb.to_pyg_data()
        >>> data.batch_size, data.num_sampled_nodes, data.num_sampled_edges
        (2, [2, 3, 1], [4, 6])
        """
        return conversions.to_pyg_data(self, edge_ids=edge_ids)

    def to_dgl_layout(self, *, edge_ids=True):
        """Each block as the plain tensors ``dgl.create_block`` takes.

        What ``to_dgl`` builds its blocks from, usable (and tested) without
        DGL installed.

        Parameters
        ----------
        edge_ids : bool, default True
            Fill ``e_id`` (see ``to_pyg`` for its cost); False gives None.

        Returns
        -------
        list of DglBlockLayout
            Input layer first, each ``(src, dst, num_src_nodes,
            num_dst_nodes, src_nid, dst_nid, e_id, weight)``: int64 local
            edge endpoints, the node counts, the global ids, the edges'
            positions in the graph (see ``edge_ids``; None when unknown) and
            float32 edge values (None for a structural block), as torch
            tensors (CUDA tensors for GPU blocks).

        Raises
        ------
        MissingDependency
            Without PyTorch.

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import GraphSAGE
        >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
        >>> mb, = GraphSAGE(A, fanouts=[2]).sample([np.array([3])], seed=0)
        >>> blk, = mb.to_dgl_layout()
        >>> blk.num_dst_nodes, blk.num_src_nodes, blk.dst.tolist(), blk.e_id.shape
        (1, 3, [0, 0], torch.Size([2]))
        """
        return conversions.to_dgl_layout(self, edge_ids=edge_ids)

    def to_dgl(self, *, edge_ids=True):
        """The blocks as DGL blocks (``dgl.create_block``), input layer first.

        Each block's edges go from its source nodes to its destination
        nodes (DGL's message direction), with the global ids in
        ``srcdata[dgl.NID]`` / ``dstdata[dgl.NID]``, the edges' positions in
        the graph in ``edata[dgl.EID]`` (when known, see ``edge_ids``) and
        the block's values in ``edata['w']`` (float32; absent for a
        structural block).  The layout comes from ``to_dgl_layout``, which is
        what the tests check: DGL does not install on the machines this
        project is tested on.

        Parameters
        ----------
        edge_ids : bool, default True
            Set ``edata[dgl.EID]`` (see ``to_pyg`` for its cost).

        Raises
        ------
        MissingDependency
            Without PyTorch or DGL.
        """
        return conversions.to_dgl(self, edge_ids=edge_ids)

    def __eq__(self, other):
        if not isinstance(other, MiniBatch):
            return NotImplemented
        return (self.index == other.index and len(self.blocks) == len(other.blocks)
                and all(a == b for a, b in zip(self.blocks, other.blocks)))

    def __repr__(self):
        layers = ", ".join(f"{b.num_src}->{b.num_dst} ({b.num_edges} edges)" for b in self.blocks)
        return f"<MiniBatch index={self.index}, seeds={self.batch_size}, blocks=[{layers}]>"


def _local_graph(graph):
    """The local matrix holding every row of ``graph``, or None."""
    if isinstance(graph, Matrix):
        return graph
    from spla.dist import DistMatrix
    if (isinstance(graph, DistMatrix) and graph.row_start == 0
            and graph.local.nrows == graph.nrows):
        return graph.local  # replicated, or a single rank: this rank holds every row
    return None


__all__ = ["Block", "MiniBatch", "Adj", "PygBatch", "DglBlockLayout", "require_torch"]
