"""A ShaDow-style k-hop subgraph sampler, written only in spla calls.

For each minibatch: sample ``fanouts[h]`` neighbours of every vertex reached
so far, hop after hop (as GraphSAGE does), take the union of the vertices
reached (the seeds first), and return the subgraph of A *induced* on that
union (every edge of A between two of its vertices, sampled or not), as in
ShaDow-GNN (Zeng et al., 2021).  A GNN of ``depth`` layers then runs on
that subgraph: ``depth - 1`` blocks union -> union, and a last block
union -> seeds that reads out the seeds' rows.

All k minibatches of a bulk are processed together; the draws are keyed by
(seed, epoch, hop, minibatch id, vertex) like GraphSAGE's, so a minibatch
is the same whether it is sampled alone or in a bulk.
"""

from spla import Matrix, compact_columns_blockwise, extract_blockwise, sample_rows
from sampling import Sampler
from sampling.samplers.base import stream_of


class KHopSubgraph(Sampler):
    """k-hop neighbourhood sampling, then the induced subgraph on the union.

    Parameters
    ----------
    A : spla.Matrix
        Square adjacency (its values are ignored).
    fanouts : list of int
        Neighbours drawn per vertex at each hop (``len(fanouts)`` hops).
    depth : int, optional
        Number of blocks (GNN layers) per minibatch; defaults to the number
        of hops.
    """

    def __init__(self, A, fanouts, depth=None):
        self.A = A.structure()
        self.fanouts = tuple(int(f) for f in fanouts)
        self.depth = len(self.fanouts) if depth is None else int(depth)

    @property
    def num_layers(self):
        return self.depth

    def _sample_stacked(self, B, seed, epoch):
        A, n, xp = self.A, self.A.nrows, self.A.xp
        ids = xp.asarray(B.ids, dtype=xp.int64)
        # 1. start from the seeds of every minibatch of the bulk
        nodes, ptr = B.nodes, B.ptr
        for hop, fanout in enumerate(self.fanouts):
            # 2. select the frontier's rows; key each row by (minibatch id, vertex)
            Q = Matrix.from_csr(xp.arange(nodes.size + 1), nodes, shape=(nodes.size, n))
            group = xp.repeat(ids, xp.diff(ptr).tolist())
            # 3. draw `fanout` distinct neighbours per row, straight from A's rows
            S = sample_rows(Q @ A, fanout, seed=seed, stream=stream_of(epoch, hop),
                            row_ids=group * n + nodes)
            # 4. grow each minibatch's union, the vertices already reached first
            _, nodes, ptr = compact_columns_blockwise(S, ptr, first=nodes, first_ptr=ptr)
        # 5. the subgraph induced on the union, and its rows of the seeds
        sub = extract_blockwise(A, nodes, ptr, nodes, ptr)
        top = extract_blockwise(A, B.nodes, B.ptr, nodes, ptr)
        # 6. the layers, output layer first: union -> seeds, then union -> union
        inner = [(sub, nodes, ptr, nodes, ptr)] * (self.depth - 1)
        return [(top, B.nodes, B.ptr, nodes, ptr)] + inner


if __name__ == "__main__":
    import numpy as np
    from sampling.datasets import load

    data = load("cora")
    sampler = KHopSubgraph(data.A, fanouts=[10, 5], depth=3)
    mb0, mb1 = sampler.sample([data.train_idx[:8], data.train_idx[8:16]], seed=0)
    print(mb0)                      # 3 blocks: union -> union twice, then union -> seeds
    sub = mb0.blocks[0]
    print(sub.num_src, "vertices,", sub.num_edges, "induced edges")
    assert np.array_equal(mb0.seeds, data.train_idx[:8])
