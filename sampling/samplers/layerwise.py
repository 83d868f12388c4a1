"""LADIES and FastGCN layer-wise sampling as compositions of spla operators.

Per layer, for all k minibatches at once (one row of Q per minibatch)::

    P   = Q @ (Â ∘ Â)    # LADIES: column sums over the batch rows (reduce_row_groups)
    S   = sample_rows(P, s, ...)             # s distinct vertices per minibatch
    adj, src = importance_layer(Â, S, dst, s, W=P)   # spla.layer_ops, which is:
        src = compact_columns_blockwise(S, first=dst)   # dst first, then the sampled
        adj = extract_blockwise(Â, dst, src)            # per minibatch Â[dst, src]
        adj = normalize_rows(adj · diag(1 / (s p)))     # p: P's rows normalised

FastGCN uses the global column norms of Â instead of the batch's,
``vxm(1, Â ∘ Â)`` (distributed when Â is: bit-identical either way): one
probability row shared by all minibatches, sampled by the fused path.
"""

from dataclasses import dataclass
from typing import Tuple

import numpy as np

import spla
from spla import Vector, apply, normalize_rows, sample_rows, vxm
from spla import backend
from spla.agreement import collective_checks
from spla.checks import check_weights
from spla.layer_ops import importance_layer, reduce_row_groups
from spla.matrix import Matrix

from sampling.samplers.base import (Sampler, SamplerConfig, as_graph, graph_comm,
                           layer_sizes_tuple, stream_of)


@dataclass(frozen=True)
class LayerWiseConfig(SamplerConfig):
    """LADIES / FastGCN settings.

    Attributes
    ----------
    layer_sizes : tuple of int
        Vertices drawn per layer and minibatch, output layer first.
    normalize : bool
        Use Â = D⁻¹(A + I) (the original methods); False uses A's own values
        (ones for a structural A).
    """

    layer_sizes: Tuple[int, ...]
    normalize: bool = True

    def validate(self):
        object.__setattr__(self, "layer_sizes",
                           layer_sizes_tuple(type(self).__name__, "layer_sizes", self.layer_sizes))
        object.__setattr__(self, "normalize", bool(self.normalize))


def row_normalized_with_self_loops(A, row_offset=0, row_ids=None):
    """Â = D⁻¹(A + I), D the row sums of A + I (float32).

    ``A`` may be a block of rows of the graph starting at global row
    ``row_offset`` (the diagonal entry of local row i is column
    ``row_offset + i``), or any rows of it, ``row_ids`` (the diagonal entry
    of local row i is then column ``row_ids[i]``; a partitioned
    ``DistMatrix`` holds its part's vertices, ``D.row_ids``); every step is
    row-local, so a block gives exactly the rows of the whole matrix's Â.

    Examples
    --------
    >>> import numpy as np
    >>> import spla
    >>> A = spla.Matrix.from_dense(np.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> row_normalized_with_self_loops(A).to_dense()
    array([[0.5, 0.5],
           [0.5, 0.5]], dtype=float32)
    """
    m, n = A.shape
    xp = A.xp
    cols = (xp.arange(row_offset, row_offset + m, dtype=np.int64) if row_ids is None
            else xp.asarray(row_ids, dtype=np.int64))
    eye = Matrix.from_csr(xp.arange(m + 1, dtype=np.int64), cols, xp.ones(m, np.float32),
                          (m, n), check=False, copy=False)
    base = A.astype(np.float32) if A.values is None else A
    return normalize_rows(spla.ewise_add(base.astype(np.float32), eye))


class _LayerWise(Sampler):
    """Shared body of LADIES and FastGCN; subclasses define the layer's P."""

    _by_process_row = True

    def __init__(self, A, layer_sizes, normalize=True):
        name = type(self).__name__
        with collective_checks(graph_comm(A)):
            self.config = LayerWiseConfig(layer_sizes_tuple(name, "layer_sizes", layer_sizes),
                                          normalize)
            A, D = as_graph(name, A)
            if A.values is not None:
                check_weights(name, "A", A.values)
        # Edge ids index the graph as given, not the D^-1 (A + I) sampled from.
        self.graph = D if D is not None else A
        rows = None if D is None else D.row_ids
        # Probabilities and column scales are real numbers: integer or
        # structural graphs are sampled from float32 values.
        self.A = row_normalized_with_self_loops(A, row_ids=rows) if normalize else (
            A.astype(np.float32) if A.values is None or A.dtype.kind in "iu" else A)
        self.A_sq = _with_host_indptr(apply(self.A, "square"))
        if D is not None:
            self.D = _distributed_like(D, self.A)

    @property
    def layer_sizes(self):
        return self.config.layer_sizes

    @property
    def num_layers(self):
        return len(self.config.layer_sizes)

    def estimate_bytes(self, batch_size):
        """Bytes one minibatch's sampling needs (estimate).

        Per layer, the probability row (up to n entries, 24 bytes each with
        its prefix sum) and the extracted adjacency (destinations x their
        degree).  Sampling is without replacement, so a layer never holds
        more than n vertices whatever its size.  On a distributed graph the
        mean degree is this rank's block's: agree on anything derived from
        it (``spla.comm.agree_min``).

        Examples
        --------
        >>> import numpy as np, spla
        >>> A = spla.Matrix.from_dense(np.ones((8, 8)) - np.eye(8))
        >>> LADIES(A, [4, 4]).estimate_bytes(2) <= LADIES(A, [10**9] * 2).estimate_bytes(2) < 10**5
        True
        """
        deg = backend.to_host(self.A.row_degrees())
        n = self.num_nodes
        mean_deg = float(deg.mean()) if deg.size else 0.0
        dst = float(batch_size)
        total = 0.0
        for s in self.config.layer_sizes:
            row = min(float(n), dst * mean_deg)
            total += 24 * row + 32 * dst * mean_deg
            dst = min(float(n), dst + s)
        return int(total) + 4096

    def _probabilities(self, dst, dst_ptr, k, A_sq, dst_host=None):
        """(P, W, rows): P (k x n, one row per minibatch, possibly lazy) to
        sample from, and a materialised matrix W whose row ``rows[g]`` holds
        minibatch g's weights (probabilities once its row is normalised);
        ``rows`` on the host.  ``dst_host``: ``dst`` on the host, or None."""
        raise NotImplementedError

    def _column_probabilities(self):
        """Each column's probability shared by every minibatch (a dense
        array), or None where each minibatch's row of W gives them."""
        return None

    def _sample_stacked(self, B, seed, epoch):
        k = B.k
        # The minibatches' ids on the host: sample_rows checks them there
        # (on the device the check is a blocking read) and uploads them.
        ids = np.asarray(B.ids, np.int64)
        # Group pointers stay on the host (numpy): the operators read their
        # ends and sizes from them, where device pointers cost a blocking
        # read each time; one read per layer brings the new sources' pointer.
        dst, dst_ptr = B.nodes, B.ptr_host
        # The destinations on the host too, when that cost no read (the
        # minibatches given there; then each layer's columns, brought back
        # with its block): LADIES counts its sums' work from them.
        dst_host = B.nodes_host if self.D is None else None
        layers = []
        for hop, s in enumerate(self.config.layer_sizes):
            # Rows of Â for this layer's destinations (fetched when distributed).
            A = self._rows(self.A, self.D, dst)
            A_sq = self.A_sq if self.D is None else apply(A, "square")
            P, W, prow = self._probabilities(dst, dst_ptr, k, A_sq, dst_host)
            # Â's rows sum to 1, so P's weights are finite: checked already.
            # Only which vertices were drawn matters here: no values.
            S = sample_rows(P, s, seed=seed, stream=stream_of(epoch, hop), row_ids=ids,
                            check=not self.config.normalize, values=False)
            # The frontiers are spla's own (in range, distinct per group):
            # no checks, which on a GPU are blocking reads.
            p = self._column_probabilities()
            adj, src, src_ptr, src_host = importance_layer(
                A, S, dst, dst_ptr, s, W=W if p is None else None,
                w_rows=prow if p is None else None, p=p, check=False, host_src=True)
            layers.append((adj, dst, dst_ptr, src, src_ptr))
            dst, dst_ptr = src, src_ptr
            dst_host = src_host if self.D is None else None
        return layers


class LADIES(_LayerWise):
    """Layer-dependent importance sampling (Zou et al., 2019), in bulk.

    For each minibatch and layer, vertex ``j`` is drawn with probability
    ∝ Σ_{i ∈ batch} Â[i, j]², ``s`` of them without replacement; the layer's
    adjacency is Â[batch, sampled ∪ batch] with column ``j`` scaled by
    ``1 / (s p_j)`` and rows renormalised.  Any number of layers.

    Parameters
    ----------
    A : spla.Matrix
        Square adjacency.
    layer_sizes : list of int
        Output layer first.
    normalize : bool, default True
        Â = D⁻¹(A + I); False samples from A's own values.

    Examples
    --------
    >>> import numpy as np
    >>> import spla
    >>> from sampling import LADIES
    >>> A = spla.Matrix.from_dense(np.ones((8, 8)) - np.eye(8))
    >>> mb, = LADIES(A, layer_sizes=[3]).sample([np.array([0, 1])], seed=1)
    >>> mb.blocks[0].dst_nodes.tolist(), mb.blocks[0].num_src <= 2 + 3
    ([0, 1], True)
    """

    def _probabilities(self, dst, dst_ptr, k, A_sq, dst_host=None):
        # Q @ (Â ∘ Â) for the group selection Q: summed group by group (the
        # work counted on the host from host destinations: a read fewer).
        P = reduce_row_groups(A_sq, dst if dst_host is None else dst_host, dst_ptr,
                              check=False)
        return P, P, np.arange(k)


class FastGCN(_LayerWise):
    """FastGCN layer-wise sampling (Chen et al., 2018), in bulk.

    Like LADIES, but vertex ``j`` is drawn with probability ∝ ‖Â[:, j]‖²,
    the same distribution for every minibatch (computed once).

    Examples
    --------
    >>> import numpy as np
    >>> import spla
    >>> from sampling import FastGCN
    >>> A = spla.Matrix.from_dense(np.ones((8, 8)) - np.eye(8))
    >>> mb, = FastGCN(A, layer_sizes=[4, 4]).sample([np.array([5])], seed=3)
    >>> [b.num_dst for b in mb.blocks][-1]
    1
    """

    def __init__(self, A, layer_sizes, normalize=True):
        super().__init__(A, layer_sizes, normalize)
        xp, n = self.A.xp, self.num_nodes
        # Collective when distributed; every rank gets the single-process sums.
        A_sq = self.A_sq if self.D is None else _distributed_like(self.D, self.A_sq)
        norms = vxm(Vector.from_dense(xp.ones(n, self.A_sq.dtype)), A_sq)
        keep = norms.values > 0
        nz, col = norms.indices[keep], norms.values[keep].astype(np.float64)
        # One row holding the global distribution; minibatches select it.
        self._global = Matrix.from_csr(xp.asarray([0, nz.size], dtype=np.int64), nz, col,
                                       (1, n), check=False, copy=False)
        # The same values as a dense vector: a kept column's p is one load,
        # not a scan of the n-entry row per minibatch and layer.
        self._p_dense = Vector.from_coo(nz, normalize_rows(self._global).values, n).to_dense()

    def _column_probabilities(self):
        return self._p_dense

    def _probabilities(self, dst, dst_ptr, k, A_sq, dst_host=None):
        xp = self.A.xp
        ptr = np.arange(k + 1, dtype=np.int64)
        # Its rows' lengths are known here: the fused path reads them from
        # the host copy, not from the device.
        # Pointer and column ids go to the device in one copy.
        both = xp.asarray(np.concatenate([ptr, np.zeros(k, np.int64)]))
        pick_row0 = Matrix.from_csr(both[:k + 1], both[k + 1:], None, (k, 1), check=False,
                                    copy=False, host_indptr=ptr)
        # Lazy: sampled by the fused path from the one global row.
        return pick_row0 @ self._global, self._global, np.zeros(k, np.int64)


def _with_host_indptr(M):
    """``M``, on a GPU with a host copy of its row pointer (one read, once;
    8 bytes of host memory a vertex): LADIES' sums count their work from it
    instead of reading it per layer."""
    if M.device == backend.CPU:
        return M
    return Matrix.from_csr(M.indptr, M.indices, M.values, M.shape, check=False, copy=False,
                           host_indptr=backend.to_host(M.indptr))


def _distributed_like(D, local):
    """Collective: ``local`` (rows of D's graph) distributed as D is."""
    from spla.dist import DistMatrix
    return DistMatrix.from_local(local, D.shape, comm=D.comm, layout=D.layout.kind,
                                 replication=D.layout.c, replicate_graph=D.layout.replicated,
                                 partition=D.partition)
