"""Node-wise sampling of heterogeneous graphs: ``HeteroGraphSAGE``.

One layer, for the stacked frontier of every vertex type (each type's
frontier is stacked per minibatch of the bulk)::

    for each relation r = (s, name, d):                 # rows d, columns s
        S_r = sample_rows(selection(frontier[d]) @ A_r, fanout_r,
                          row_ids=(minibatch * R + r) * n_d + v)
    for each source type s:                             # union of the new columns
        C = the S_r of the relations from s, rows grouped by minibatch
        M, src, src_ptr = compact_columns_blockwise(C, ..., first=frontier[s])

and the next frontier of type ``s`` is ``src``: its destinations first,
then the new vertices in order of first appearance, once per minibatch.
A draw is keyed by (seed, epoch, layer) through the stream and by
(minibatch, relation, vertex) through the row id, so a minibatch is the
same sampled alone or in any bulk.  With one vertex type and one relation
the blocks are exactly ``GraphSAGE``'s.  On local relations a source type's
hop is one ``spla.relation_hops.RelationStack.sample_hop`` (one fused
kernel on the CPU for uniform draws without replacement, the composition
above otherwise); distributed relations run the composition here, their
rows fetched per hop.
"""

import copy
from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from spla import backend, extract_rows, vstack
from spla import comm as C
from spla.checks import as_int, as_u64, check_weights, describe, fail
from spla.exceptions import DTypeError, InvalidValue, DimensionMismatch
from spla.hops import selection
from spla.matrix import Matrix
from spla.mxm import mxm
from spla.relation_hops import RelationStack
from spla.optional import require
from spla import semiring
from spla.sample import K_ALL, sample_rows
from spla.structure import compact_columns_blockwise, split_blocks

from sampling.samplers.base import (MAX_LAYER_SIZE, _own_share as own_share, owned_batches,
                                    stream_of)
from sampling.samplers.batches import stack_batches
from sampling.samplers.minibatch import Block, DglBlockLayout


@dataclass(frozen=True, eq=False)
class HeteroLayer:
    """One sampled layer: a ``Block`` per relation.

    Attributes
    ----------
    blocks : dict of relation -> Block
        ``blocks[(s, name, d)].adj`` is ``|dst_nodes[d]| x |src_nodes[s]|``.
    dst_nodes, src_nodes : dict of type -> int64 array
        Global ids per type; ``src_nodes[t]`` begins with ``dst_nodes[t]``.
    """

    blocks: Dict[tuple, Block]
    dst_nodes: Dict[str, object]
    src_nodes: Dict[str, object]


@dataclass(frozen=True, eq=False)
class HeteroMiniBatch:
    """The sampled computation graph of one minibatch of a heterogeneous graph.

    Attributes
    ----------
    layers : list of HeteroLayer
        Input layer first; ``layers[-1].dst_nodes[seed_type]`` are the seeds.
    seed_type : str
    index : int
        The minibatch's id (keys its draws).
    x : dict of type -> array, optional
        Features of ``input_nodes[t]`` per type (set by the loader).
    y : dict of type -> array, optional
        Labels of the seeds, ``{seed_type: labels}`` (set by the loader).

    Examples
    --------
    >>> import numpy as np
    >>> from sampling import HeteroGraph, HeteroGraphSAGE
    >>> G = HeteroGraph.from_edge_index({"p": 4, "a": 3},
    ...     {("a", "w", "p"): [[0, 1, 2, 2], [0, 0, 1, 3]], ("p", "c", "p"): [[1, 2], [0, 0]]})
    >>> mb, = HeteroGraphSAGE(G, [5]).sample([[0]], node_type="p", seed=0)
    >>> {t: v.tolist() for t, v in mb.input_nodes.items()}
    {'p': [0, 1, 2], 'a': [0, 1]}
    """

    layers: List[HeteroLayer]
    seed_type: str
    index: int = 0
    x: object = None
    y: object = None
    meta: dict = field(default_factory=dict)

    @property
    def seeds(self):
        return self.layers[-1].dst_nodes[self.seed_type]

    @property
    def batch_size(self):
        return int(self.seeds.size)

    @property
    def input_nodes(self):
        """Per type, the vertices whose features the first layer reads."""
        return self.layers[0].src_nodes

    @property
    def num_sampled_edges(self):
        return sum(b.num_edges for layer in self.layers for b in layer.blocks.values())

    def merged_edges(self):
        """Per relation, ``(src, dst)`` local ids of the merged graph ``to_pyg_data`` returns.

        Local ids index ``input_nodes``.  Each vertex keeps its in-edges from
        the first layer (from the output layer inward) where it is a
        destination, so with full neighbourhoods the merged graph is
        exactly the full graph's L-hop neighbourhood of the seeds.
        """
        out = {}
        for rel in self.layers[0].blocks:
            d = rel[2]
            parts_s, parts_d, done = [], [], 0
            for layer in reversed(self.layers):  # output layer first
                adj = layer.blocks[rel].adj
                rows = np.repeat(np.arange(adj.nrows, dtype=np.int64), np.diff(adj.indptr))
                keep = rows >= done
                parts_s.append(np.asarray(adj.indices, np.int64)[keep])
                parts_d.append(rows[keep])
                done = layer.dst_nodes[d].size
            out[rel] = (np.concatenate(parts_s), np.concatenate(parts_d))
        return out

    def to_pyg_data(self):
        """The minibatch as a ``torch_geometric.data.HeteroData`` (as PyG's ``NeighborLoader``).

        Node type ``t`` holds ``n_id`` (``input_nodes[t]``, destinations
        first), ``x`` when the minibatch has features for it, and, for the
        seed type, ``batch_size`` and ``y`` (the seeds' labels).  Each
        relation holds ``edge_index`` (local ids, row 0 sources) of the
        merged graph (``merged_edges``), on which a ``to_hetero`` model
        run on full neighbourhoods gives the full-graph outputs.

        Examples
        --------
        >>> import numpy as np
        >>> from sampling import HeteroGraph, HeteroGraphSAGE
        >>> G = HeteroGraph.from_edge_index({"p": 3, "a": 2}, {("a", "w", "p"): [[0, 1], [0, 2]]})
        >>> mb, = HeteroGraphSAGE(G, [-1]).sample([[0, 2]], node_type="p", seed=0)
        >>> d = mb.to_pyg_data()
        >>> d["p"].batch_size, d["a", "w", "p"].edge_index.tolist()
        (2, [[0, 1], [0, 1]])
        """
        torch = require("torch", what="HeteroMiniBatch.to_pyg_data", needs="PyTorch")
        HeteroData = require("torch_geometric.data", what="HeteroMiniBatch.to_pyg_data",
                             needs="PyTorch Geometric").HeteroData
        data = HeteroData()
        for t, ids in self.input_nodes.items():
            data[t].n_id = torch.from_numpy(np.array(ids, np.int64))
            data[t].num_nodes = int(ids.size)
            if self.x is not None and t in self.x:
                data[t].x = _as_tensor(torch, self.x[t])
        data[self.seed_type].batch_size = self.batch_size
        if self.y is not None and self.seed_type in self.y:
            data[self.seed_type].y = _as_tensor(torch, self.y[self.seed_type])
        for rel, (s, d) in self.merged_edges().items():
            data[rel].edge_index = torch.from_numpy(np.stack([s, d]))
        return data

    def to_dgl_layout(self):
        """Per layer (input first), a dict relation -> ``DglBlockLayout`` (DGL's hetero blocks).

        ``dgl.create_block({rel: (L.src, L.dst) ...}, num_src_nodes={...},
        num_dst_nodes={...})`` builds the DGL block of a layer.

        Examples
        --------
        >>> from sampling import HeteroGraph, HeteroGraphSAGE
        >>> G = HeteroGraph.from_edge_index({"p": 3, "a": 2}, {("a", "w", "p"): [[0, 1], [0, 2]]})
        >>> mb, = HeteroGraphSAGE(G, [-1]).sample([[0]], node_type="p", seed=0)
        >>> L = mb.to_dgl_layout()[0][("a", "w", "p")]
        >>> L.src.tolist(), L.dst.tolist(), L.num_src_nodes, L.num_dst_nodes
        ([0], [0], 1, 1)
        """
        torch = require("torch", what="HeteroMiniBatch.to_dgl_layout", needs="PyTorch")
        out = []
        for layer in self.layers:
            per = {}
            for (s, name, d), b in layer.blocks.items():
                e = b.edge_index()
                w = None if b.adj.values is None else torch.from_numpy(
                    np.array(b.adj.values, np.float32))
                per[(s, name, d)] = DglBlockLayout(
                    torch.from_numpy(np.array(e[0])), torch.from_numpy(np.array(e[1])),
                    int(layer.src_nodes[s].size), int(layer.dst_nodes[d].size),
                    torch.from_numpy(np.array(layer.src_nodes[s])),
                    torch.from_numpy(np.array(layer.dst_nodes[d])), None, w)
            out.append(per)
        return out

    def __eq__(self, other):
        if not isinstance(other, HeteroMiniBatch):
            return NotImplemented
        if self.seed_type != other.seed_type or len(self.layers) != len(other.layers):
            return False
        for a, b in zip(self.layers, other.layers):
            if a.blocks.keys() != b.blocks.keys():
                return False
            if any(not (a.blocks[r] == b.blocks[r]) for r in a.blocks):
                return False
            for t in a.src_nodes:
                if not (np.array_equal(a.src_nodes[t], b.src_nodes[t])
                        and np.array_equal(a.dst_nodes[t], b.dst_nodes[t])):
                    return False
        return True


def _as_tensor(torch, a):
    return a if isinstance(a, torch.Tensor) else torch.from_numpy(np.array(a))


def _fanouts(func, G, fanouts):
    """Per relation (graph order), a list of per-layer counts (-1, 0 or >= 1)."""
    rels = G.edge_types
    if isinstance(fanouts, dict):
        per = {}
        for key, f in fanouts.items():
            if not (isinstance(key, (tuple, str))
                    and (key in G.relations or sum(k[1] == key for k in rels) == 1)):
                fail(InvalidValue, func, "fanouts",
                     f"keys among the relations {list(rels)} (or a unique name)", key)
            per[G.edge_type(key, func)] = f
        missing = [r for r in rels if r not in per]
        if missing:
            fail(InvalidValue, func, "fanouts", "a list for every relation",
                 f"none for {missing[0]}")
    elif isinstance(fanouts, (list, tuple)):
        per = {r: fanouts for r in rels}
    else:
        fail(DTypeError, func, "fanouts", "a list of ints or a dict relation -> list",
             describe(fanouts))
    out, depth = [], None
    for r in rels:
        f = per[r]
        if isinstance(f, (str, bytes)) or not hasattr(f, "__len__") or not len(f):
            fail(InvalidValue, func, f"fanouts[{r}]", "a non-empty list of ints", describe(f))
        f = [as_int(func, f"fanouts[{r}][{h}]", k) for h, k in enumerate(f)]
        for h, k in enumerate(f):
            if k < -1 or k > MAX_LAYER_SIZE:
                fail(InvalidValue, func, f"fanouts[{r}][{h}]",
                     f"-1 (all), 0 (skip) or a count in [1, {MAX_LAYER_SIZE}]", k)
        if depth is not None and len(f) != depth:
            fail(DimensionMismatch, func, f"fanouts[{r}]", f"{depth} layers", len(f))
        depth = len(f)
        out.append(f)
    return out


class HeteroGraphSAGE:
    """Node-wise neighbour sampling per relation of a ``HeteroGraph``, in bulk.

    Parameters
    ----------
    G : sampling.HeteroGraph
        Its relations all ``spla.Matrix``, or all ``spla.DistMatrix`` on one
        communicator: then building the sampler and ``sample`` are
        collective (every rank calls them with the same arguments) and
        each rank samples its share of a bulk's minibatches.
    fanouts : list of int, or dict relation -> list of int
        Output layer first, per relation (a list alone applies to every
        relation; a dict must name every relation, by triple or by a name
        only one relation has).  -1 takes every neighbour, 0 skips the
        relation in that layer (its block is empty).
    replace : bool, default False
        Draw with replacement (block values count the draws).
    weighted : bool, default False
        Draw by the relations' edge values.

    Raises
    ------
    InvalidValue
        An unknown relation in ``fanouts``, a count below -1, weighted
        sampling of a structural relation.
    DimensionMismatch
        Relations with different numbers of layers.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling import HeteroGraph, HeteroGraphSAGE
    >>> G = HeteroGraph.from_edge_index({"p": 4, "a": 3},
    ...     {("a", "w", "p"): [[0, 1, 2, 2], [0, 0, 1, 3]], ("p", "c", "p"): [[1, 2], [0, 0]]})
    >>> s = HeteroGraphSAGE(G, {"w": [1, 1], "c": [2, 0]})
    >>> mb, = s.sample([[0, 3]], node_type="p", seed=1)
    >>> mb.layers[-1].blocks[("p", "c", "p")].adj.row_degrees().tolist()
    [2, 0]
    >>> mb.layers[0].blocks[("p", "c", "p")].num_edges     # skipped in layer 2
    0
    """

    def __init__(self, G, fanouts, replace=False, weighted=False):
        from sampling.datasets.hetero import HeteroGraph
        func = "HeteroGraphSAGE"
        if not isinstance(G, HeteroGraph):
            fail(DTypeError, func, "G", "a sampling.HeteroGraph", describe(G))
        self.G = G
        self.fanouts = _fanouts(func, G, fanouts)
        self.replace, self.weighted = bool(replace), bool(weighted)
        from spla.dist import DistMatrix
        dist = [isinstance(A, DistMatrix) for A in G.relations.values()]
        if any(dist) and not all(dist):
            fail(InvalidValue, func, "G", "relations all local or all distributed", "a mix")
        self.comm = next(iter(G.relations.values())).comm if all(dist) else None
        with C.collective_checks(self.comm):
            mats = []
            for r, A in G.relations.items():
                M = A.local if self.comm is not None else A
                if self.weighted:
                    if M.values is None:
                        fail(InvalidValue, func, "weighted",
                             f"False: relation {r} is structural", True)
                    check_weights(func, f"G.relations[{r}]", M.values)
                    mats.append(A)
                else:
                    # A distributed relation keeps its values; the hop
                    # samples its rows' pattern (a structural product).
                    mats.append(A if self.comm is not None else A.structure())
        devices = sorted({M.device for M in (A.local if self.comm is not None else A
                                             for A in mats)})
        if len(devices) > 1:
            fail(InvalidValue, func, "G", "relations on one device", f"on {devices}")
        self.mats = mats
        self._by_src = None

    @property
    def num_layers(self):
        return len(self.fanouts[0])

    def dup(self):
        """Collective when distributed: a twin that samples on duplicated communicators.

        As ``Sampler.dup``: the twin samples exactly what this sampler
        samples, but every distributed relation it fetches rows of is a
        ``DistMatrix.dup()``, so a background thread may sample with it
        while this thread communicates (``NodeLoader(prefetch=k)`` under
        MPI).  A sampler of local relations returns itself.  Every rank must
        call it.

        Returns
        -------
        HeteroGraphSAGE

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import HeteroGraph, HeteroGraphSAGE
        >>> A = spla.Matrix.from_dense(np.ones((3, 3)))
        >>> G = HeteroGraph({"p": 3}, {("p", "c", "p"): spla.distribute(A)})   # on 1 rank
        >>> s = HeteroGraphSAGE(G, [2])
        >>> t = s.dup()
        >>> t.comm is s.comm, t.mats[0].comm is t.comm
        (False, True)
        >>> t.sample([[0, 1]], node_type="p", seed=4) == s.sample([[0, 1]], node_type="p", seed=4)
        True
        """
        if self.comm is None:
            return self
        twin = copy.copy(self)
        twins = {}
        # In relation order, the same on every rank: each dup is collective.
        for A in self.mats:
            if id(A) not in twins:
                twins[id(A)] = A.dup()
        twin.mats = [twins[id(A)] for A in self.mats]
        twin.comm = twin.mats[0].comm
        twin._by_src = None
        return twin

    def sample(self, batches, *, node_type, seed, epoch=0, batch_ids=None):
        """Sample k minibatches of seeds of ``node_type`` in one bulk pass.

        Parameters
        ----------
        batches : list of 1-D int arrays, or a (k, b) int array
        node_type : str
            The seeds' vertex type.
        seed, epoch, batch_ids
            As ``Sampler.sample``: the draws of a minibatch depend only on
            (seed, epoch, its id, its seeds).

        Returns
        -------
        list of HeteroMiniBatch
        """
        func = "HeteroGraphSAGE.sample"
        G, comm = self.G, self.comm
        # Checked on every rank at once: a bad argument on one rank raises
        # on all instead of leaving them in a row fetch.
        with C.collective_checks(comm):
            G._type(func, "node_type", node_type)
            seed = as_u64(func, "seed", seed)
            epoch = as_int(func, "epoch", epoch, minimum=0)
            stream_of(epoch, 0)  # range check
            # Seeds on the relations' device (the host for distributed ones).
            xp = np if comm is not None else self.mats[0].xp
            B = stack_batches(func, batches, G.num_nodes[node_type], xp, batch_ids)
            k = B.k
            ids = np.asarray(B.ids, np.int64)
            R, nmax = len(self.mats), max(G.num_nodes.values())
            if ids.size and (int(ids.max()) + 1) * R * max(nmax, 1) >= 2 ** 63:
                fail(InvalidValue, func, "batch_ids",
                     "ids with (id + 1) * relations * n < 2**63", int(ids.max()))
        if comm is not None:
            C.check_same(comm, func, "(len(batches), epoch, seed >> 32, seed % 2**32)",
                         [k, epoch, seed >> 32, seed & 0xFFFFFFFF])
            # Each rank samples its share of the minibatches (as GraphSAGE).
            layout = self.mats[0].layout
            B = own_share(B, owned_batches(k, layout, comm.Get_rank(), False))
            ids = np.asarray(B.ids, np.int64)
        empty = np.zeros(ids.size + 1, np.int64)
        front = {t: (xp.zeros(0, np.int64), empty) for t in G.node_types}
        front[node_type] = (B.nodes.astype(np.int64, copy=False),
                            np.asarray(B.ptr_host, np.int64))
        layers = []
        for hop in range(self.num_layers):
            blocks, nxt = self._layer(front, hop, seed, stream_of(epoch, hop), ids)
            layers.append((blocks, front, nxt))
            front = nxt
        return _assemble(layers, G.edge_types, ids, node_type)

    def _sample_relation(self, r, rel, front, hop, seed, stream, ids):
        """Relation r's picks for its destination frontier (rows grouped by minibatch)."""
        s, _, d = rel
        nodes, ptr = front[d]
        k = self.fanouts[r][hop]
        n_d, n_s = self.G.num_nodes[d], self.G.num_nodes[s]
        A = self.mats[r]
        if self.comm is not None and k != 0:
            A = A.rows_view(nodes)  # collective: every rank, even with no rows
            if not self.weighted:
                A = A.structure()
        if k == 0 or nodes.size == 0:
            # Valued like the sampled blocks, so that vstack can join them.
            M = self.mats[r].local if self.comm is not None else A
            vals = (np.zeros(0, np.float32) if self.replace else
                    np.zeros(0, M.values.dtype) if self.weighted else None)
            return Matrix.from_csr(np.zeros(nodes.size + 1, np.int64), np.zeros(0, np.int64),
                                   vals, (nodes.size, n_s), check=False, copy=False)
        Q = selection(nodes, n_d)
        P = Q @ A if self.weighted else mxm(Q, A, semiring.any_pair)
        group = np.repeat(ids, np.diff(ptr))
        every = k == -1
        S = sample_rows(P, K_ALL if every else k, seed=seed, stream=stream,
                        row_ids=(group * len(self.mats) + r) * n_d + nodes,
                        replace=self.replace and not every, return_counts=self.replace)
        if self.replace:
            S, counts = S
            S = S.with_values(counts.astype(np.float32))
        return S

    def _stacks(self):
        """Per source type, its relations' ``RelationStack`` and their ids (built once)."""
        if self._by_src is None:
            rels = self.G.edge_types
            by = {t: [r for r, rel in enumerate(rels) if rel[0] == t] for t in self.G.node_types}
            self._by_src = {t: (RelationStack([self.mats[r] for r in rs], rs, len(rels)), rs)
                            for t, rs in by.items() if rs}
        return self._by_src

    def _layer(self, front, hop, seed, stream, ids):
        if self.comm is not None:
            return self._layer_dist(front, hop, seed, stream, ids)
        # One RelationStack hop per source type: fused on the CPU for uniform
        # draws without replacement, else the same composition as below.
        rels, blocks, nxt = self.G.edge_types, {}, {}
        stacks = self._stacks()
        for t in self.G.node_types:
            if t not in stacks:
                nxt[t] = front[t]
                continue
            st, rs = stacks[t]
            nodes, ptr = front[t]
            per, src, src_ptr = st.sample_hop(
                [front[rels[r][2]] for r in rs], [self.fanouts[r][hop] for r in rs], nodes, ptr,
                seed=seed, stream=stream, group_ids=ids, replace=self.replace,
                weighted=self.weighted)
            nxt[t] = (src.astype(np.int64, copy=False), src_ptr)
            for j, r in enumerate(rs):
                blocks[rels[r]] = per[j]
        return blocks, nxt

    def _layer_dist(self, front, hop, seed, stream, ids):
        G = self.G
        per_src = {t: [] for t in G.node_types}
        for r, rel in enumerate(G.edge_types):
            S = self._sample_relation(r, rel, front, hop, seed, stream, ids)
            per_src[rel[0]].append((rel, S, front[rel[2]][1]))
        blocks, nxt = {}, {}
        for t in G.node_types:
            nodes, ptr = front[t]
            mats = per_src[t]
            if not mats:
                nxt[t] = front[t]
                continue
            if len(mats) == 1:
                # One relation leaves t: its rows are already grouped by
                # minibatch, so there is nothing to interleave or cut back.
                (rel, S, p), = mats
                M, src, src_ptr = compact_columns_blockwise(S, p, first=nodes, first_ptr=ptr)
                src_ptr = np.asarray(backend.to_host(src_ptr), np.int64)
                nxt[t] = (np.asarray(src, np.int64), src_ptr)
                blocks[rel] = split_blocks(M, p, src_ptr, check=False)
                continue
            # Rows minibatch-major, relation-minor, so that one blockwise
            # compaction unions every relation's new columns per minibatch.
            grp = np.concatenate([np.repeat(np.arange(ids.size), np.diff(p)) for _, _, p in mats])
            rel_of = np.concatenate([np.full(S.nrows, j, np.int64)
                                     for j, (_, S, _) in enumerate(mats)])
            order = np.lexsort((rel_of, grp))
            C = extract_rows(vstack([S for _, S, _ in mats]), order)
            row_ptr = np.zeros(ids.size + 1, np.int64)
            np.cumsum(np.bincount(grp, minlength=ids.size), out=row_ptr[1:])
            M, src, src_ptr = compact_columns_blockwise(C, row_ptr, first=nodes, first_ptr=ptr)
            src_ptr = np.asarray(backend.to_host(src_ptr), np.int64)
            nxt[t] = (np.asarray(src, np.int64), src_ptr)
            rel_sorted = rel_of[order]
            for j, (rel, S, p) in enumerate(mats):
                Mj = extract_rows(M, np.flatnonzero(rel_sorted == j))
                blocks[rel] = split_blocks(Mj, p, src_ptr, check=False)
        return blocks, nxt


def _assemble(layers, rels, ids, seed_type):
    out = []
    for g in range(ids.size):
        per = []
        for blocks, front, nxt in reversed(layers):  # input layer first
            def cut(fr, t):
                nodes, ptr = fr[t]
                return nodes[ptr[g]:ptr[g + 1]]
            dst = {t: cut(front, t) for t in front}
            src = {t: cut(nxt, t) for t in nxt}
            per.append(HeteroLayer({r: Block(blocks[r][g], dst[r[2]], src[r[0]]) for r in rels},
                                   dst, src))
        out.append(HeteroMiniBatch(per, seed_type, index=int(ids[g])))
    return out


__all__ = ["HeteroGraphSAGE", "HeteroMiniBatch", "HeteroLayer"]
