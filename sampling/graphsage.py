"""GraphSAGE node-wise sampling as a composition of spla operators.

Per layer, for the stacked frontier of all k minibatches::

    Q = selection(frontier)              # one row per frontier vertex
    S = sample_rows(Q @ A, fanout, ...)  # fused: never forms Q @ A
    adj, src = compact_columns_blockwise(S, groups, first=frontier)

and the next frontier is ``src`` (the destination vertices, then the newly
sampled ones, each once per minibatch).
"""

from dataclasses import dataclass
from typing import Tuple

import numpy as np

from spla import compact_columns_blockwise, mxm, sample_rows, semiring
from spla.checks import check_weights
from spla.matrix import Matrix

from sampling.base import (Sampler, SamplerConfig, as_graph, layer_sizes_tuple,
                           stream_of)


@dataclass(frozen=True)
class GraphSAGEConfig(SamplerConfig):
    """GraphSAGE settings.

    Attributes
    ----------
    fanouts : tuple of int
        Neighbours drawn per vertex, output layer first (``fanouts[0]`` for
        the seeds), each >= 1.
    replace : bool
        Draw with replacement (block values then count the draws).
    weighted : bool
        Draw neighbours with probability proportional to the edge values of A
        (else uniformly; values are ignored).
    """

    fanouts: Tuple[int, ...]
    replace: bool = False
    weighted: bool = False

    def validate(self):
        object.__setattr__(self, "fanouts", layer_sizes_tuple("GraphSAGE", "fanouts", self.fanouts))
        object.__setattr__(self, "replace", bool(self.replace))
        object.__setattr__(self, "weighted", bool(self.weighted))


def selection(vertices, n):
    """The structural matrix with row i selecting row ``vertices[i]`` of an n-row matrix.

    Examples
    --------
    >>> import numpy as np
    >>> selection(np.array([2, 0]), 3).to_dense()
    array([[0., 0., 1.],
           [1., 0., 0.]])
    """
    xp = np if isinstance(vertices, np.ndarray) else __import__("cupy")
    ptr = xp.arange(vertices.size + 1, dtype=np.int64)
    return Matrix._new(ptr, vertices, None, (int(vertices.size), n))


class GraphSAGE(Sampler):
    """Node-wise neighbour sampling (Hamilton et al., 2017), in bulk.

    Parameters
    ----------
    A : spla.Matrix
        Square adjacency, row ``v`` = neighbours of ``v`` (messages flow from
        the sampled neighbours to ``v``).
    fanouts : list of int
        Output layer first: ``[15, 10, 5]`` draws 15 neighbours per seed,
        then 10 per vertex of the next frontier, then 5.
    replace : bool, default False
    weighted : bool, default False
        Draw by edge value (A must then have non-negative finite values).

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

    def __init__(self, A, fanouts, replace=False, weighted=False):
        self.config = GraphSAGEConfig(fanouts, replace, weighted)
        A, self.D = as_graph("GraphSAGE", A)
        err = None
        try:
            if self.config.weighted:
                if A.values is None:
                    from spla.checks import fail
                    from spla.exceptions import InvalidValue
                    fail(InvalidValue, "GraphSAGE", "A",
                         "a matrix with edge values when weighted=True", "a structural matrix")
                check_weights("GraphSAGE", "A", A.values)
        except Exception as e:  # noqa: BLE001 - raised on every rank when distributed
            err = e
        if self.D is not None:
            from spla import comm as C
            C.agree(self.D.comm, err)
        elif err is not None:
            raise err
        self.A = A if self.config.weighted else A.structure()

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
        """
        deg = self.A.xp.asarray(self.A.row_degrees(), dtype=np.float64)
        deg = deg if isinstance(deg, np.ndarray) else deg.get()
        n = self.num_nodes
        total_deg = max(deg.sum(), 1.0)
        frontier = float(batch_size)
        edges = 0.0
        for hop, f in enumerate(self.config.fanouts):
            picks = np.minimum(f, deg)
            per = picks.mean() if hop == 0 else float((deg * picks).sum() / total_deg)
            e = frontier * per
            edges += e
            frontier = min(float(n), frontier + e)
        return int(48 * edges + 32 * frontier) + 4096

    def _sample_stacked(self, B, seed, epoch):
        n, xp = self.num_nodes, self.A.xp
        frontier, ptr = B.nodes, B.ptr
        ids = xp.asarray(np.asarray(B.ids, np.int64))
        layers = []
        for hop, fanout in enumerate(self.config.fanouts):
            group = xp.repeat(ids, xp.diff(ptr).tolist() if xp is not np else xp.diff(ptr))
            A = self._rows(self.A, self.D, frontier)
            if self.config.weighted:
                P = selection(frontier, n) @ A
            else:  # uniform: a structural product, no values to carry
                P = mxm(selection(frontier, n), A.structure(), semiring.any_pair)
            S = sample_rows(P, fanout, seed=seed, stream=stream_of(epoch, hop),
                            row_ids=group * n + frontier, replace=self.config.replace,
                            return_counts=self.config.replace)
            if self.config.replace:
                S, counts = S
                S = S.with_values(counts.astype(np.float32))
            adj, src, src_ptr = compact_columns_blockwise(S, ptr, first=frontier, first_ptr=ptr)
            layers.append((adj, frontier, ptr, src, src_ptr))
            frontier, ptr = src, src_ptr
        return layers
