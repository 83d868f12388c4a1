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
from typing import List, NamedTuple, Optional, Tuple

import numpy as np

from spla import backend, entry_positions
from spla.checks import fail
from spla.util import row_ids
from spla.exceptions import InvalidValue, MissingDependency
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


class Adj(NamedTuple):
    """One layer in PyG's ``NeighborSampler`` convention (see ``MiniBatch.to_pyg``).

    Attributes
    ----------
    edge_index : torch.Tensor
        ``[2, E]`` int64: row 0 the source's local id (an index into the
        layer's source vertices), row 1 the target's (an index into its
        destination vertices, which are the first ``size[1]`` sources).
    e_id : torch.Tensor or None
        int64 position of each edge among the graph's stored entries, -1 for
        an edge the graph does not store; None when unknown.
    size : (int, int)
        ``(num_src, num_dst)``.
    """

    edge_index: object
    e_id: object
    size: Tuple[int, int]


class PygBatch(NamedTuple):
    """A minibatch in PyG's ``NeighborSampler`` convention (see ``MiniBatch.to_pyg``).

    Unpacks like PyG's ``batch_size, n_id, adjs = batch[:3]``; the fourth
    field holds each layer's edge weights.

    Attributes
    ----------
    batch_size : int
    n_id : torch.Tensor
        int64 global ids of the input layer's vertices, seeds first.
    adjs : list of Adj
        One per layer, input layer first (a list even for one layer).
    edge_weight : list of torch.Tensor or None
        float32 per edge of each layer, aligned with its ``edge_index``;
        None for a layer without values.
    """

    batch_size: int
    n_id: object
    adjs: List[Adj]
    edge_weight: List[Optional[object]]


class DglBlockLayout(NamedTuple):
    """One DGL block as plain tensors (see ``MiniBatch.to_dgl_layout``).

    Attributes
    ----------
    src, dst : torch.Tensor
        int64 local ids of each edge's source (in ``[0, num_src_nodes)``)
        and destination (in ``[0, num_dst_nodes)``): DGL's ``(u, v)``.
    num_src_nodes, num_dst_nodes : int
    src_nid, dst_nid : torch.Tensor
        int64 global ids (``dgl.NID`` of the source and destination nodes);
        ``src_nid[:num_dst_nodes]`` equals ``dst_nid``.
    e_id : torch.Tensor or None
        int64 positions of the edges in the graph (``dgl.EID``), -1 for an
        edge the graph does not store, None when unknown.
    weight : torch.Tensor or None
        float32 edge values, None for a structural block.
    """

    src: object
    dst: object
    num_src_nodes: int
    num_dst_nodes: int
    src_nid: object
    dst_nid: object
    e_id: object
    weight: object


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
            rows = b.dst_nodes[row_ids(adj.indptr)]
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
        _check_chain(self.blocks, "MiniBatch.check_chain")

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
        torch = require_torch("MiniBatch.to_pyg")
        _check_chain(self.blocks, "MiniBatch.to_pyg")
        eids = self.edge_ids() if edge_ids else None
        adjs, weights = [], []
        for i, b in enumerate(self.blocks):
            e_id = None if eids is None else _tensor(torch, eids[i])
            adjs.append(Adj(_tensor(torch, b.edge_index()), e_id, (b.num_src, b.num_dst)))
            weights.append(_weights(torch, b.adj))
        n_id = _tensor(torch, self.input_nodes.astype(np.int64, copy=False))
        return PygBatch(self.batch_size, n_id, adjs, weights)

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
        func = "MiniBatch.to_pyg_data"
        torch = require_torch(func)
        try:
            from torch_geometric.data import Data
        except ImportError as exc:
            raise MissingDependency(
                f"{func}: needs torch_geometric; install it with "
                "`pip install -e \".[pyg]\"`") from exc
        _check_chain(self.blocks, func)
        L = len(self.blocks)
        nodes = [self.batch_size] + [b.num_src - b.num_dst for b in reversed(self.blocks)]
        eids = self.edge_ids() if edge_ids else None
        valued = any(b.adj.values is not None for b in self.blocks)
        parts, ids, weights, counts = [], [], [], []
        first = 0  # local id of the first vertex new at this hop
        for hop in range(L):
            b = self.blocks[L - 1 - hop]
            last = first + nodes[hop]
            ptr = backend.to_host(b.adj.indptr[[first, last]])
            e0, e1 = int(ptr[0]), int(ptr[1])
            parts.append(b.edge_index()[:, e0:e1])
            if eids is not None:
                ids.append(eids[L - 1 - hop][e0:e1])
            if valued:
                xp = b.adj.xp
                w = b.adj.values[e0:e1] if b.adj.values is not None else xp.ones(e1 - e0)
                weights.append(w.astype(np.float32))
            counts.append(e1 - e0)
            first = last
        xp = self.blocks[0].adj.xp
        data = Data(edge_index=_tensor(torch, xp.concatenate(parts, axis=1)),
                    n_id=_tensor(torch, self.input_nodes.astype(np.int64, copy=False)),
                    num_nodes=self.blocks[0].num_src)
        data.batch_size = self.batch_size
        data.num_sampled_nodes = nodes
        data.num_sampled_edges = counts
        if eids is not None:
            data.e_id = _tensor(torch, xp.concatenate(ids))
        if valued:
            data.edge_weight = _tensor(torch, xp.concatenate(weights))
        if self.x is not None:
            data.x = self.x
        if self.y is not None:
            data.y = self.y
        return data

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
        torch = require_torch("MiniBatch.to_dgl_layout")
        eids = self.edge_ids() if edge_ids else None
        out = []
        for i, b in enumerate(self.blocks):
            src, dst = b.edge_index()
            out.append(DglBlockLayout(
                _tensor(torch, src), _tensor(torch, dst), b.num_src, b.num_dst,
                _tensor(torch, b.src_nodes.astype(np.int64, copy=False)),
                _tensor(torch, b.dst_nodes.astype(np.int64, copy=False)),
                None if eids is None else _tensor(torch, eids[i]), _weights(torch, b.adj)))
        return out

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
        func = "MiniBatch.to_dgl"
        try:
            import dgl
        except ImportError as exc:
            raise MissingDependency(f"{func}: needs DGL; install it with `pip install dgl` "
                                    "(see https://www.dgl.ai for the build that matches "
                                    "your PyTorch and CUDA)") from exc
        blocks = []
        for lay in self.to_dgl_layout(edge_ids=edge_ids):
            blk = dgl.create_block((lay.src, lay.dst), num_src_nodes=lay.num_src_nodes,
                                   num_dst_nodes=lay.num_dst_nodes)
            blk.srcdata[dgl.NID] = lay.src_nid
            blk.dstdata[dgl.NID] = lay.dst_nid
            if lay.e_id is not None:
                blk.edata[dgl.EID] = lay.e_id
            if lay.weight is not None:
                blk.edata["w"] = lay.weight
            blocks.append(blk)
        return blocks

    def __eq__(self, other):
        if not isinstance(other, MiniBatch):
            return NotImplemented
        return (self.index == other.index and len(self.blocks) == len(other.blocks)
                and all(a == b for a, b in zip(self.blocks, other.blocks)))

    def __repr__(self):
        layers = ", ".join(f"{b.num_src}->{b.num_dst} ({b.num_edges} edges)" for b in self.blocks)
        return f"<MiniBatch index={self.index}, seeds={self.batch_size}, blocks=[{layers}]>"


def _check_chain(blocks, func):
    """``MiniBatch.check_chain``, raising under the name of the calling conversion."""
    for i, b in enumerate(blocks):
        if b.num_src < b.num_dst or not _equal(b.src_nodes[:b.num_dst], b.dst_nodes):
            fail(InvalidValue, func, f"blocks[{i}]",
                 "a block whose src_nodes begin with its dst_nodes",
                 f"{b.num_dst} destinations that are not the first of {b.num_src} sources")
        if i and not _equal(blocks[i - 1].dst_nodes, b.src_nodes):
            fail(InvalidValue, func, f"blocks[{i}]",
                 "src_nodes equal to the previous block's dst_nodes",
                 f"{b.num_src} sources against {blocks[i - 1].num_dst} destinations")



def _local_graph(graph):
    """The local matrix holding every row of ``graph``, or None."""
    if isinstance(graph, Matrix):
        return graph
    from spla.dist import DistMatrix
    if (isinstance(graph, DistMatrix) and graph.row_start == 0
            and graph.local.nrows == graph.nrows):
        return graph.local  # replicated, or a single rank: this rank holds every row
    return None


def _equal(a, b):
    if a.size != b.size:
        return False
    xp = backend.xp_of(backend.device_of(a))
    return bool(xp.array_equal(a, b))


def _tensor(torch, a):
    """A torch tensor sharing ``a``'s memory where it can (a copy of read-only host arrays)."""
    if isinstance(a, np.ndarray):
        # torch warns on read-only buffers (spla's arrays are): copy those.
        return torch.from_numpy(a if a.flags.writeable else np.array(a))
    return torch.from_dlpack(a)


def _weights(torch, adj):
    """A block's values as a float32 tensor, None for a structural block."""
    if adj.values is None:
        return None
    return _tensor(torch, adj.values.astype(np.float32))


def require_torch(func):
    try:
        import torch
    except ImportError as exc:
        raise MissingDependency(
            f"{func}: needs PyTorch; install it with `pip install -e .[train]`") from exc
    return torch
