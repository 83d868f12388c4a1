"""A ``MiniBatch``'s blocks in other libraries' conventions: PyG's and DGL's.

The ``MiniBatch`` methods ``to_pyg``, ``to_pyg_data``, ``to_dgl_layout``
and ``to_dgl`` call the functions of the same name here; this module holds
their work and the small types they return.
"""

from typing import List, NamedTuple, Optional, Tuple

import numpy as np

from spla import backend
from spla.checks import fail
from spla.exceptions import InvalidValue
from spla.optional import require


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


def check_chain(blocks, func):
    """``MiniBatch.check_chain`` of ``blocks``, raising under the name ``func``."""
    for i, b in enumerate(blocks):
        if b.num_src < b.num_dst or not _equal(b.src_nodes[:b.num_dst], b.dst_nodes):
            fail(InvalidValue, func, f"blocks[{i}]",
                 "a block whose src_nodes begin with its dst_nodes",
                 f"{b.num_dst} destinations that are not the first of {b.num_src} sources")
        if i and not _equal(blocks[i - 1].dst_nodes, b.src_nodes):
            fail(InvalidValue, func, f"blocks[{i}]",
                 "src_nodes equal to the previous block's dst_nodes",
                 f"{b.num_src} sources against {blocks[i - 1].num_dst} destinations")


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
    """``torch``, or ``MissingDependency`` naming ``func`` and the extra to install."""
    return require("torch", what=func, needs="PyTorch")


def to_pyg(mb, *, edge_ids=True):
    """``MiniBatch.to_pyg`` of ``mb``."""
    torch = require_torch("MiniBatch.to_pyg")
    check_chain(mb.blocks, "MiniBatch.to_pyg")
    eids = mb.edge_ids() if edge_ids else None
    adjs, weights = [], []
    for i, b in enumerate(mb.blocks):
        e_id = None if eids is None else _tensor(torch, eids[i])
        adjs.append(Adj(_tensor(torch, b.edge_index()), e_id, (b.num_src, b.num_dst)))
        weights.append(_weights(torch, b.adj))
    n_id = _tensor(torch, mb.input_nodes.astype(np.int64, copy=False))
    return PygBatch(mb.batch_size, n_id, adjs, weights)


def to_pyg_data(mb, *, edge_ids=True):
    """``MiniBatch.to_pyg_data`` of ``mb``."""
    func = "MiniBatch.to_pyg_data"
    torch = require_torch(func)
    Data = require("torch_geometric.data", what=func, needs="torch_geometric").Data
    check_chain(mb.blocks, func)
    L = len(mb.blocks)
    nodes = [mb.batch_size] + [b.num_src - b.num_dst for b in reversed(mb.blocks)]
    eids = mb.edge_ids() if edge_ids else None
    valued = any(b.adj.values is not None for b in mb.blocks)
    parts, ids, weights, counts = [], [], [], []
    first = 0  # local id of the first vertex new at this hop
    for hop in range(L):
        b = mb.blocks[L - 1 - hop]
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
    xp = mb.blocks[0].adj.xp
    data = Data(edge_index=_tensor(torch, xp.concatenate(parts, axis=1)),
                n_id=_tensor(torch, mb.input_nodes.astype(np.int64, copy=False)),
                num_nodes=mb.blocks[0].num_src)
    data.batch_size = mb.batch_size
    data.num_sampled_nodes = nodes
    data.num_sampled_edges = counts
    if eids is not None:
        data.e_id = _tensor(torch, xp.concatenate(ids))
    if valued:
        data.edge_weight = _tensor(torch, xp.concatenate(weights))
    if mb.x is not None:
        data.x = mb.x
    if mb.y is not None:
        data.y = mb.y
    return data


def to_dgl_layout(mb, *, edge_ids=True):
    """``MiniBatch.to_dgl_layout`` of ``mb``."""
    torch = require_torch("MiniBatch.to_dgl_layout")
    eids = mb.edge_ids() if edge_ids else None
    out = []
    for i, b in enumerate(mb.blocks):
        src, dst = b.edge_index()
        out.append(DglBlockLayout(
            _tensor(torch, src), _tensor(torch, dst), b.num_src, b.num_dst,
            _tensor(torch, b.src_nodes.astype(np.int64, copy=False)),
            _tensor(torch, b.dst_nodes.astype(np.int64, copy=False)),
            None if eids is None else _tensor(torch, eids[i]), _weights(torch, b.adj)))
    return out


def to_dgl(mb, *, edge_ids=True):
    """``MiniBatch.to_dgl`` of ``mb``."""
    func = "MiniBatch.to_dgl"
    dgl = require("dgl", what=func, needs="DGL", extra="",
                  note="(see https://www.dgl.ai for the build that matches your PyTorch "
                       "and CUDA)")
    blocks = []
    for lay in mb.to_dgl_layout(edge_ids=edge_ids):
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


__all__ = ["Adj", "PygBatch", "DglBlockLayout", "check_chain", "require_torch", "to_pyg",
           "to_pyg_data", "to_dgl_layout", "to_dgl"]
