"""Helpers for samplers over MPI: collecting the minibatches of every rank.

In distributed mode ``sampler.sample(batches, ...)`` returns, on each rank,
the minibatches that rank sampled (``MiniBatch.index`` is the position in
``batches``).  ``gather_minibatches`` gives every rank all of them, in order.
"""

import numpy as np

from spla import comm as C
from spla.checks import index_dtype
from spla.matrix import Matrix

from sampling.samplers.minibatch import Block, MiniBatch


def gather_minibatches(minibatches, comm=None):
    """Collective: every rank's minibatches, on every rank, sorted by ``index``.

    Parameters
    ----------
    minibatches : list of MiniBatch
        This rank's minibatches (possibly none).
    comm : MPI communicator, default COMM_WORLD

    Returns
    -------
    list of MiniBatch

    Examples
    --------
    >>> import numpy as np, spla
    >>> from sampling import GraphSAGE, gather_minibatches
    >>> A = spla.distribute(spla.Matrix.from_dense(np.ones((4, 4)) - np.eye(4)))
    >>> mbs = GraphSAGE(A, [2]).sample([np.array([0]), np.array([3])], seed=0)
    >>> [mb.index for mb in gather_minibatches(mbs)]
    [0, 1]
    """
    comm = C.as_comm(comm)
    meta, ints, vals = [], [], []
    for mb in minibatches:
        meta += [mb.index, len(mb.blocks)]
        for b in mb.blocks:
            adj = b.adj.to("cpu")
            meta += [b.num_dst, b.num_src, adj.nnz, C.dtype_code(adj.dtype)]
            ints += [np.asarray(b.dst_nodes, np.int64), np.asarray(b.src_nodes, np.int64),
                     np.asarray(adj.indptr, np.int64), np.asarray(adj.indices, np.int64)]
            if adj.values is not None:
                vals.append(adj.values.astype(np.float64))
    cat = (lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt))
    meta_all, meta_counts = C.allgatherv(comm, np.asarray(meta, np.int64), "gather_minibatches")
    ints_all, _ = C.allgatherv(comm, cat(ints, np.int64), "gather_minibatches")
    vals_all, _ = C.allgatherv(comm, cat(vals, np.float64), "gather_minibatches")
    out = []
    mi = ii = vi = 0
    while mi < meta_all.size:
        index, nblocks = int(meta_all[mi]), int(meta_all[mi + 1])
        mi += 2
        blocks = []
        for _ in range(nblocks):
            nd, ns, nnz, dc = (int(v) for v in meta_all[mi:mi + 4])
            mi += 4
            dst = ints_all[ii:ii + nd]
            src = ints_all[ii + nd:ii + nd + ns]
            ptr = ints_all[ii + nd + ns:ii + nd + ns + nd + 1]
            idx = ints_all[ii + nd + ns + nd + 1:ii + nd + ns + nd + 1 + nnz]
            ii += nd + ns + nd + 1 + nnz
            v = None
            if C.code_dtype(dc) is not None:
                v = vals_all[vi:vi + nnz].astype(C.code_dtype(dc))
                vi += nnz
            # The arrays are copies of what valid matrices sent: trusted, owned here.
            adj = Matrix.from_csr(ptr.copy(), idx.astype(index_dtype(ns)), v, (nd, ns),
                                  check=False, copy=False)
            blocks.append(Block(adj, dst.copy(), src.copy()))
        out.append(MiniBatch(blocks, index=index))
    out.sort(key=lambda mb: mb.index)
    return out
