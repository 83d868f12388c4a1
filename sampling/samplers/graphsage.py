"""GraphSAGE node-wise sampling as a composition of spla operators.

Per layer, for the stacked frontier of all k minibatches::

    Q = selection(frontier)              # one row per frontier vertex
    S = sample_rows(Q @ A, fanout, ...)  # fused: never forms Q @ A
    adj, src = compact_columns_blockwise(S, groups, first=frontier)

and the next frontier is ``src`` (the destination vertices, then the newly
sampled ones, each once per minibatch).  ``spla.sample_hops`` runs these
hops: operator by operator on the CPU, fused into a few launches per hop
with no host read between hops on a GPU.
"""

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from spla import backend
from spla import comm as C
from spla.checks import check_weights, fail
from spla.exceptions import InvalidValue
from spla.hops import ALL, sample_hops, selection  # noqa: F401 - selection: public here too

from sampling.samplers.base import (ALL_NEIGHBORS, BYTES_PER_DRAW, Sampler, SamplerConfig, as_graph,
                           graph_comm, layer_sizes_tuple, memory_limit, stream_of)


@dataclass(frozen=True)
class GraphSAGEConfig(SamplerConfig):
    """GraphSAGE settings.

    Attributes
    ----------
    fanouts : tuple of int
        Neighbours drawn per vertex, output layer first (``fanouts[0]`` for
        the seeds), each >= 1, or -1 (``ALL_NEIGHBORS``) for every neighbour.
    replace : bool
        Draw with replacement (block values then count the draws); a -1
        layer takes each neighbour once all the same.
    weighted : bool
        Draw neighbours with probability proportional to the edge values of A
        (else uniformly; values are ignored).
    materialize : bool
        Form each layer's ``Q @ A`` before sampling it (the method's literal
        reading, for ablations): the same picks as the default fused path,
        more work and memory.
    """

    fanouts: Tuple[int, ...]
    replace: bool = False
    weighted: bool = False
    materialize: bool = False

    def validate(self):
        object.__setattr__(self, "fanouts", layer_sizes_tuple("GraphSAGE", "fanouts", self.fanouts,
                                                              allow_all=True))
        object.__setattr__(self, "replace", bool(self.replace))
        object.__setattr__(self, "weighted", bool(self.weighted))
        object.__setattr__(self, "materialize", bool(self.materialize))


class GraphSAGE(Sampler):
    """Node-wise neighbour sampling (Hamilton et al., 2017), in bulk.

    Parameters
    ----------
    A : spla.Matrix
        Square adjacency, row ``v`` = neighbours of ``v`` (messages flow from
        the sampled neighbours to ``v``).
    fanouts : list of int
        Output layer first: ``[15, 10, 5]`` draws 15 neighbours per seed,
        then 10 per vertex of the next frontier, then 5.  A fanout of -1
        (``sampling.ALL_NEIGHBORS``, PyG's ``num_neighbors=-1``) takes every
        neighbour: ``[-1, 10]`` keeps the seeds' whole neighbourhoods and
        draws 10 neighbours for each vertex of the next hop.
    replace : bool, default False
        Draw with replacement: every vertex with a neighbour draws exactly
        ``fanout`` times (repeats fold into one edge whose value counts
        them), so the work grows with the fanout whatever the degrees.  A
        -1 layer is not drawn: it takes each neighbour once (block value 1),
        as PyG treats -1 whatever ``replace`` says.
    weighted : bool, default False
        Draw by edge value (A must then have non-negative finite values).
        A -1 layer then takes every neighbour of positive weight (an edge
        of weight 0 is never drawn, whatever the fanout).
    materialize : bool, default False
        Ablation: form ``Q @ A`` before sampling (same picks, more work).

    Raises
    ------
    InvalidValue
        A fanout other than -1 below 1, or above
        ``sampling.samplers.base.MAX_LAYER_SIZE``; weighted
        sampling of a structural graph or of negative / non-finite weights.
        On a DistMatrix every rank raises (the checks are collective).

    Examples
    --------
    >>> import numpy as np
    >>> import spla
    >>> from sampling import GraphSAGE
    >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
    >>> mb, = GraphSAGE(A, fanouts=[2, 2]).sample([np.array([0, 1])], seed=0)
    >>> mb.seeds.tolist(), len(mb.blocks), mb.blocks[-1].adj.row_degrees().tolist()
    ([0, 1], 2, [2, 2])
    """

    def __init__(self, A, fanouts, replace=False, weighted=False, materialize=False):
        with C.collective_checks(graph_comm(A)):
            self.config = GraphSAGEConfig(fanouts, replace, weighted, materialize)
            A, self.D = as_graph("GraphSAGE", A)
            if self.config.weighted:
                if A.values is None:
                    fail(InvalidValue, "GraphSAGE", "A",
                         "a matrix with edge values when weighted=True", "a structural matrix")
                check_weights("GraphSAGE", "A", A.values)
        self.A = A if self.config.weighted else A.structure()
        self._max_degree = self._global_max_degree(A)

    def _global_max_degree(self, A):
        """The largest row degree of the whole graph (for ``check_bulk``'s bound).

        Collective on a partitioned DistMatrix (one small allreduce; every
        rank builds the sampler, whatever its options, so every rank takes
        part); local otherwise.
        """
        local = backend.to_host(A.row_degrees())
        deg = int(local.max()) if local.size else 0
        D = self.D
        if D is not None and not D.layout.replicated and D.comm.Get_size() > 1:
            deg = int(C.allreduce_array(D.comm, np.array([deg], np.int64), "max", None)[0])
        return deg
    @property
    def fanouts(self):
        return self.config.fanouts

    @property
    def num_layers(self):
        return len(self.config.fanouts)

    def estimate_bytes(self, batch_size):
        """Bytes the sampling of one minibatch of ``batch_size`` seeds needs (estimate).

        Frontier sizes follow the expected picks per vertex: E[min(f, deg)]
        for the seeds (uniform vertices) and its degree-biased mean for later
        hops (a sampled neighbour is reached with probability ∝ degree),
        capped by the number of vertices.  About 48 bytes per sampled edge
        (positions, indices, relabelling, values) and 32 per frontier vertex.
        With replacement every vertex with a neighbour draws ``f`` times
        whatever its degree, and each draw holds ``BYTES_PER_DRAW`` bytes
        until the repeats are folded: those bytes are added.  A fanout of
        -1 picks every neighbour (``deg`` picks per vertex) and draws
        nothing, with or without replacement.

        On a distributed graph the degrees are this rank's block: ranks may
        disagree, and a bulk size derived from this must be agreed
        (``spla.comm.agree_min``) before it steers a collective.

        Examples
        --------
        >>> import numpy as np, spla
        >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
        >>> small = GraphSAGE(A, [2]).estimate_bytes(4)
        >>> GraphSAGE(A, [10**6], replace=True).estimate_bytes(4) > 10**6 * 4 * 16 > small
        True
        """
        deg = backend.to_host(self.A.row_degrees()).astype(np.float64)
        n = self.num_nodes
        total_deg = max(deg.sum(), 1.0)
        frontier = float(batch_size)
        edges = draws = 0.0
        for hop, f in enumerate(self.config.fanouts):
            picks = deg if f == ALL_NEIGHBORS else np.minimum(f, deg)
            per = picks.mean() if hop == 0 else float((deg * picks).sum() / total_deg)
            if self.config.replace and f != ALL_NEIGHBORS:
                # Vertices with a neighbour draw f times; a later-hop vertex
                # (reached through an edge) always has one.
                has = float((deg > 0).mean()) if hop == 0 else 1.0
                draws += frontier * f * has
            e = frontier * per
            edges += e
            frontier = min(float(n), frontier + e)
        return int(48 * edges + 32 * frontier + BYTES_PER_DRAW * draws) + 4096

    def check_bulk(self, func, B):
        """Refuse a bulk whose draws with replacement cannot be allocated.

        With replacement each frontier vertex draws ``fanout`` picks, held
        until repeats are folded.  An upper bound of the draws (every
        frontier at most ``(1 + fanout)`` times the previous one, at most n
        vertices per minibatch) is compared with the machine's memory, and
        the fanout that exceeds it is named.  A -1 layer draws nothing (it
        takes each neighbour once); the frontier after it is bounded by
        ``1 +`` the graph's largest degree times the previous one.
        """
        if not self.config.replace or not B.k:
            return
        limit = memory_limit()
        if limit is None:
            return
        n = self.num_nodes
        rows = np.diff(B.ptr_host).astype(object)  # Python ints: no overflow
        for hop, f in enumerate(self.config.fanouts):
            if f == ALL_NEIGHBORS:
                rows = np.array([min(n, r * (1 + self._max_degree)) for r in rows], dtype=object)
                continue
            draws = int(sum(rows)) * f
            need = draws * BYTES_PER_DRAW
            if need > limit:
                fail(InvalidValue, func, f"fanouts[{hop}]",
                     f"a fanout whose draws fit in memory (with replace=True each of the "
                     f"up to {int(sum(rows))} frontier vertices of layer {hop} draws "
                     f"{f} times: {need / 2**30:.3g} GiB, more than this machine's "
                     f"{limit / 2**30:.3g} GiB); lower it or sample without replacement", f)
            rows = np.array([min(n, r * (1 + f)) for r in rows], dtype=object)

    def _hops_check_ids(self, xp):
        # spla's fused hops check the seeds as they go (a repeat found while
        # relabelling, on a GPU a bad range too, read with the sizes), and
        # its other paths before they start: no sort of the seeds here.
        return True

    def _sample_stacked(self, B, seed, epoch):
        # Every hop is ``sample_rows(selection(frontier) @ A)`` then
        # ``compact_columns_blockwise``; spla runs them (fused on a GPU,
        # where they are left queued: ``sample`` waits for them as asked).
        ks = [ALL if f == ALL_NEIGHBORS else f for f in self.config.fanouts]
        return sample_hops(self.A if self.D is None else self.D, B.nodes, B.ptr_host, ks,
                           seed=seed, streams=[stream_of(epoch, h) for h in range(len(ks))],
                           group_ids=B.ids, replace=self.config.replace,
                           weighted=self.config.weighted,
                           materialize=self.config.materialize, check=not B.checked,
                           wait=False)
