"""A PinSAGE-style random-walk neighbourhood sampler, written only in spla calls.

For every destination vertex, ``walks`` random walks of ``length`` steps
start at the vertex; each step moves to a uniformly drawn out-neighbour, and
a walk that reaches a vertex without out-neighbours stops there.  The
vertices the walks visit, weighted by their visit counts (visits back to the
start do not count), form the vertex's neighbourhood, and the ``top`` most
visited are kept, as PinSAGE's importance-based neighbourhoods do (Ying et
al., "Graph Convolutional Neural Networks for Web-Scale Recommender
Systems", 2018).  The block's values are the visit counts: a GraphSAGE
model's mean aggregation then weighs each neighbour by how often it was
visited.

Every step of every walk is one ``sample_rows`` draw of one neighbour, keyed
by ``stream_of(epoch, layer * length + step)`` and by a row id unique to
(minibatch, vertex, walk), so a minibatch is the same sampled alone or in
any bulk, on any backend.
"""

from spla import Matrix, compact_columns_blockwise, sample_rows, select_topk
from spla import comm as C
from spla.checks import as_int, fail
from spla.exceptions import InvalidValue

from sampling import Sampler, stream_of
from sampling.samplers.base import as_graph, graph_comm, layer_sizes_tuple

#: streams per epoch: stream_of takes layers (here: walk steps) in [0, 256)
STEPS_PER_EPOCH = 256


class RandomWalkNeighbourhood(Sampler):
    """Random-walk neighbourhoods: the ``top`` most visited vertices per vertex.

    Parameters
    ----------
    A : spla.Matrix or spla.DistMatrix
        Square adjacency, row ``v`` = out-neighbours of ``v`` (its values are
        ignored: walks step uniformly).
    tops : list of int
        Output layer first: the number of most-visited vertices kept per
        destination vertex, one entry per block; -1
        (``sampling.ALL_NEIGHBORS``) keeps every visited vertex.
    walks : int, default 20
        Walks started from every destination vertex of a layer.
    length : int, default 3
        Steps per walk; ``len(tops) * length`` is at most 256 (one
        ``sample_rows`` stream per step and layer, see ``stream_of``).
    """

    def __init__(self, A, tops, walks=20, length=3):
        func = "RandomWalkNeighbourhood"
        # Collective on a DistMatrix: a bad argument raises on every rank.
        with C.collective_checks(graph_comm(A)):
            self.tops = layer_sizes_tuple(func, "tops", tops, allow_all=True)
            self.walks = as_int(func, "walks", walks, minimum=1)
            self.length = as_int(func, "length", length, minimum=1)
            if len(self.tops) * self.length > STEPS_PER_EPOCH:
                fail(InvalidValue, func, "length",
                     f"at most {STEPS_PER_EPOCH // len(self.tops)} steps for "
                     f"{len(self.tops)} layers (layers * length <= {STEPS_PER_EPOCH} "
                     "streams per epoch)", self.length)
            A, self.D = as_graph(func, A)
        self.A = A.structure()

    @property
    def num_layers(self):
        return len(self.tops)

    def check_bulk(self, func, B):
        # Walker row ids are (id * n + vertex) * walks + walk: they must fit
        # in int64, the type of sample_rows' row ids.
        top_id = max(B.ids, default=0)
        if (top_id + 1) * self.num_nodes * self.walks > 2 ** 63:
            fail(InvalidValue, func, "batch_ids",
                 f"ids with (id + 1) * {self.num_nodes} vertices * {self.walks} walks "
                 "<= 2**63 (walker row ids are int64)", top_id)

    def _sample_stacked(self, B, seed, epoch):
        A, n, W, L, xp = self.A, self.num_nodes, self.walks, self.length, self.A.xp
        ids = xp.asarray(list(B.ids), dtype=xp.int64)
        dst, ptr = B.nodes, B.ptr
        layers = []
        for layer, top in enumerate(self.tops):
            # 1. W walkers per destination row, each keyed by (minibatch, vertex, walk)
            group = xp.repeat(ids, xp.diff(ptr).tolist())
            row = xp.repeat(xp.arange(dst.size), W)
            walker = (group * n + dst)[row] * W + xp.tile(xp.arange(W), dst.size)
            here, seen_row, seen = dst[row], [], []
            for step in range(L):
                # 2. every live walker draws one out-neighbour of where it stands
                Q = Matrix.from_csr(xp.arange(here.size + 1), here, shape=(here.size, n))
                S = sample_rows(Q @ self._rows(A, self.D, here), 1, seed=seed,
                                stream=stream_of(epoch, layer * L + step), row_ids=walker)
                # 3. walkers at a dead end stop; the others move on
                alive = S.row_degrees() > 0
                row, walker, here = row[alive], walker[alive], S.indices.astype(xp.int64)
                seen_row.append(row)
                seen.append(here)
            # 4. visit counts (destinations x n; from_coo sums repeats), no returns home
            r, c = xp.concatenate(seen_row), xp.concatenate(seen)
            away = c != dst[r]
            V = Matrix.from_coo(r[away], c[away], xp.ones(r.size, xp.float32)[away],
                                shape=(dst.size, n))
            # 5. the `top` most visited per destination, relabelled per minibatch
            adj, src, src_ptr = compact_columns_blockwise(select_topk(V, top), ptr,
                                                          first=dst, first_ptr=ptr)
            layers.append((adj, dst, ptr, src, src_ptr))
            dst, ptr = src, src_ptr
        return layers


if __name__ == "__main__":
    import numpy as np
    from sampling.datasets import load

    data = load("cora")
    sampler = RandomWalkNeighbourhood(data.A, tops=[10, 5], walks=20, length=3)
    mb0, mb1 = sampler.sample([data.train_idx[:8], data.train_idx[8:16]], seed=0)
    print(mb0)                      # 2 blocks, input layer first
    top = mb0.blocks[-1]            # seeds <- their 10 most visited vertices
    print("visit counts of seed 0's neighbourhood:", top.adj.to_scipy()[0].data.tolist())
    assert np.array_equal(mb0.seeds, data.train_idx[:8])
