"""BNS-GCN: partition-parallel full-graph training with random boundary-vertex sampling.

Wan et al. (MLSys 2022) train a GCN on the whole graph, each of p ranks
owning one part of the vertices (a row block of the adjacency).  The
*boundary* of a rank is the set of vertices that its rows read (columns
of its row block) but other ranks own; a layer needs their features
(forward) and sends back their gradients (backward), and that traffic
dominates time and memory.  BNS keeps each boundary vertex in an epoch
with probability ``q`` (drawn again every epoch) and drops the others; the
kept columns are scaled by ``1 / q``, so the aggregation stays unbiased.

The pieces, as spla compositions:

``normalized_adjacency(A, kind)``
    the aggregation matrix of the model (GCN's ``D^-1/2 (A + I) D^-1/2``,
    or GraphSAGE's row mean ``D^-1 A``), built once on the whole graph.
``BoundaryGraph(D)`` (collective)
    the inner/boundary structure of this rank's row block of the
    distributed aggregation matrix ``D``: its columns renumbered as
    ``[inner vertices | boundary vertices]`` (an ``extract`` over column
    ids), and the exchange plan, made with one all-to-allv of vertex ids:
    which of its inner rows each other rank reads.
``keep_mask(ids, q, seed=, epoch=)``
    the per-epoch decision, a pure function of ``(seed, epoch, global
    vertex id)`` (``spla.random.uniform``): every rank computes the same
    kept set without communicating, the owner for its rows, the reader for
    its boundary.
``BoundaryGraph.sample(q, seed=, epoch=)`` -> ``BoundarySample`` (local)
    the sampled local adjacency: an ``extract`` of the inner columns and
    the kept boundary columns, the latter rescaled by ``1 / q``; and this
    epoch's send and receive counts.
``exchange(h, sample)``
    a ``torch.autograd.Function``: forward, one all-to-allv of the kept
    boundary rows of ``h`` (this rank receives its kept boundary's rows,
    in the sample's column order); backward, the gradients of those rows go
    back to their owners (one all-to-allv) and are summed into the owners'
    rows.  ``q = 0`` sends nothing at all.
``BNSModel``
    a GCN (``sampling.models.GCNConv``) or GraphSAGE
    (``sampling.models.SAGEConv``) that runs layer by layer on a rank's
    inner rows: dropout, exchange, aggregate.
``BNSTrainer``
    the training loop: per epoch one sample, one forward and backward over
    the rank's training vertices, the gradients summed over the ranks by
    one Allreduce (every rank then takes the same Adam step), and a report
    (``BNSEpochStats``): per rank the inner, boundary and kept boundary
    vertices, bytes sent and received, the epoch's working memory and peak
    RSS, and the epoch's seconds split into compute and communication.

``q = 1`` is exact full-graph training: on any number of ranks and any
partition, the losses equal those of one process training on the whole
graph (up to float rounding; dropout masks are keyed by global vertex ids,
so they are the same too).  ``q = 0`` trains each part on its own (only the
gradients are summed).

Evaluation (validation every epoch, test at the end) is full-graph
inference: every boundary vertex kept (q = 1), outside the epoch's byte and
time counters.
"""

import dataclasses
import math
import numbers
import sys
import time
from dataclasses import dataclass

import numpy as np

import spla
from spla import comm as C
from spla.checks import as_int, as_u64, describe, fail
from spla.exceptions import (DimensionMismatch, DTypeError, InvalidValue, LayoutError,
                             MissingDependency)
from spla.random import uniform
from spla.util import row_ids

MODELS = ("gcn", "sage")
KINDS = {"gcn": "gcn", "sage": "mean"}  # the aggregation matrix of each model
# Streams of the dropout masks: far from the epochs (the boundary draws'
# streams), one per (epoch, layer).
_DROPOUT_STREAM = 1 << 48
_MAX_LAYERS = 1 << 8
_INT_MAX = 2 ** 31 - 1  # MPI counts are C ints


def _torch(func):
    try:
        import torch
    except ImportError:
        raise MissingDependency(f"{func} needs PyTorch; install it with "
                                "`pip install -e \".[train]\"`") from None
    return torch


# -- the aggregation matrix ---------------------------------------------------------
def normalized_adjacency(A, kind="gcn"):
    """The aggregation matrix of a full-graph GCN or GraphSAGE layer.

    Parameters
    ----------
    A : spla.Matrix, shape (n, n)
        The graph in sampler orientation (row ``v`` holds the vertices
        whose features flow into ``v``); values are ignored.
    kind : {'gcn', 'mean'}
        'gcn': ``D^-1/2 (A + I) D^-1/2`` with ``D`` the row degrees of
        ``A + I`` (Kipf and Welling; self loops already in ``A`` count
        once); 'mean': ``D^-1 A``, the mean over the neighbours
        (GraphSAGE's aggregator; a row without neighbours stays zero).

    Returns
    -------
    spla.Matrix
        float64 values.

    Examples
    --------
    >>> import numpy as np, spla
    >>> A = spla.Matrix.from_coo([0, 1, 1, 2], [1, 0, 2, 1], shape=(3, 3))
    >>> normalized_adjacency(A, "mean").to_dense()
    array([[0. , 1. , 0. ],
           [0.5, 0. , 0.5],
           [0. , 1. , 0. ]])
    >>> np.round(normalized_adjacency(A, "gcn").to_dense(), 3)
    array([[0.5  , 0.408, 0.   ],
           [0.408, 0.333, 0.408],
           [0.   , 0.408, 0.5  ]])
    """
    func = "normalized_adjacency"
    if not isinstance(A, spla.Matrix):
        fail(DTypeError, func, "A", "a spla.Matrix", describe(A))
    if A.nrows != A.ncols:
        fail(DimensionMismatch, func, "A", "a square matrix (a graph)", f"shape {A.shape}")
    if kind not in ("gcn", "mean"):
        fail(InvalidValue, func, "kind", "'gcn' or 'mean'", repr(kind))
    S = A.structure()
    if kind == "mean":
        return spla.normalize_rows(S.astype(np.float64))
    n = A.nrows
    eye = spla.Matrix.from_csr(np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64),
                               shape=(n, n), check=False)
    S = spla.ewise_add(S, eye, "any").structure()
    deg = S.row_degrees().astype(np.float64)
    inv = 1.0 / np.sqrt(deg)
    return S.with_values(inv[row_ids(S.indptr)] * inv[S.indices])


def keep_mask(ids, q, *, seed, epoch):
    """Whether each boundary vertex is kept in an epoch: ``uniform(seed, epoch, id) < q``.

    A pure function of (seed, epoch, global vertex id): every rank that
    asks about a vertex gets the same answer, so the owner of a vertex and
    the ranks that read it agree on the kept set without communicating.
    Each vertex is kept with probability ``q``, independently of the other
    vertices and of the other epochs.

    Parameters
    ----------
    ids : array_like of int
        Global vertex ids.
    q : float in [0, 1]
    seed, epoch : int in [0, 2**64)

    Returns
    -------
    numpy.ndarray of bool

    Examples
    --------
    >>> m = keep_mask([3, 7, 11, 20], 0.5, seed=1, epoch=0)
    >>> m.dtype, m.shape
    (dtype('bool'), (4,))
    >>> keep_mask([3, 7], 1.0, seed=1, epoch=0).tolist(), keep_mask([3], 0.0, seed=1, epoch=0)
    ([True, True], array([False]))
    """
    func = "keep_mask"
    q = _as_keep(func, "q", q)
    seed = as_u64(func, "seed", seed)
    epoch = as_u64(func, "epoch", epoch)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    if q >= 1.0:
        return np.ones(ids.size, bool)
    if q <= 0.0:
        return np.zeros(ids.size, bool)
    return uniform(ids, seed=seed, stream=epoch) < q


def _as_keep(func, arg, q):
    if (isinstance(q, bool) or not isinstance(q, numbers.Real) or not math.isfinite(q)
            or not 0.0 <= float(q) <= 1.0):
        fail(InvalidValue, func, arg, "a probability in [0, 1] (the share of boundary "
             "vertices kept per epoch)", repr(q))
    return float(q)


# -- the inner/boundary structure and its per-epoch sample -------------------------
class BoundaryGraph:
    """Collective: the inner/boundary structure of this rank's rows of a distributed graph.

    Parameters
    ----------
    D : spla.DistMatrix
        The aggregation matrix (``normalized_adjacency``) distributed by 1D
        block rows (``spla.distribute(A, comm, partition=P)``; layout '1d',
        not replicated), square; every rank must hold at least one row.

    Attributes
    ----------
    comm : MPI communicator
    rank, size : int
    inner : numpy.ndarray of int64
        The global ids of this rank's vertices (its rows), ascending.
    boundary : numpy.ndarray of int64
        The global ids of the columns of this rank's rows owned by other
        ranks, ordered by owner rank, then id.
    owner : numpy.ndarray of int64
        The rank that owns each boundary vertex.
    local : spla.Matrix, shape (len(inner), len(inner) + len(boundary))
        This rank's rows with columns renumbered: column ``i <
        len(inner)`` is ``inner[i]``, column ``len(inner) + j`` is
        ``boundary[j]``.
    send_gids, send_pos, send_peer : numpy.ndarray of int64
        What the others read from this rank: the global ids, their
        positions in ``inner``, and the reading rank, grouped by rank.

    Raises
    ------
    DTypeError
        ``D`` is not a DistMatrix (on the ranks that passed it: there is no
        communicator to agree on).
    LayoutError, DimensionMismatch, InvalidValue
        On every rank: ``D`` is not 1D block rows, not square, or some rank
        holds no rows (an empty part).

    Examples
    --------
    >>> import spla
    >>> from sampling.datasets import load
    >>> ds = load("rmat:6")
    >>> G = BoundaryGraph(spla.distribute(normalized_adjacency(ds.A, "gcn")))  # 1 rank
    >>> G.num_inner, G.num_boundary, G.local.shape
    (64, 0, (64, 64))
    """

    def __init__(self, D):
        func = "BoundaryGraph"
        if not isinstance(D, spla.DistMatrix):
            # No communicator to agree on: raised where it was passed.
            fail(DTypeError, func, "D", "a spla.DistMatrix (spla.distribute(A, comm, "
                 "partition=P))", describe(D))
        comm = D.comm
        p, r = comm.Get_size(), comm.Get_rank()
        with C.collective_checks(comm):
            L = D.layout
            if L.replicated or L.c != 1 or L.kind == "local":
                fail(LayoutError, func, "D", "distributed by 1D block rows (layout '1d', "
                     "replication 1, not replicated)", f"layout {L.kind}, c = {L.c}"
                     f"{', replicated' if L.replicated else ''}")
            if D.nrows != D.ncols:
                fail(DimensionMismatch, func, "D", "a square matrix (a graph)",
                     f"shape {D.shape}")
        rows = C.allgather_int(comm, [D.local.nrows])[:, 0]
        with C.collective_checks(comm):
            if (rows == 0).any():
                empty = np.flatnonzero(rows == 0).tolist()
                fail(InvalidValue, func, "D", "a partition with at least one vertex per "
                     f"rank (every rank owns a part of the graph); use fewer ranks than "
                     f"{D.nrows} vertices or another partition",
                     f"empty parts on rank(s) {empty} of {p}")
        self.comm, self.rank, self.size = comm, r, p
        self.num_nodes = D.nrows
        inner = np.asarray(D.row_ids, np.int64)
        owner_of = _owner_function(D)
        cols = np.unique(np.asarray(D.local.indices, np.int64))
        cols_owner = owner_of(cols)
        outside = cols_owner != r
        bnd, bnd_owner = cols[outside], cols_owner[outside]
        order = np.lexsort((bnd, bnd_owner))  # by owner, then id
        self.inner = inner
        self.boundary = bnd[order]
        self.owner = bnd_owner[order]
        # Columns renumbered [inner | boundary]: a column extraction.
        self.local = spla.extract(D.local, cols=np.concatenate([inner, self.boundary]))
        # One all-to-allv of ids: each rank learns which of its rows the
        # others read (the kept part of it is then decided locally each epoch).
        counts = np.bincount(self.owner, minlength=p).astype(np.int64)
        got, got_counts = C.alltoallv(comm, self.boundary, counts, "bns.setup")
        self.send_gids = np.asarray(got, np.int64)
        self.send_peer = np.repeat(np.arange(p, dtype=np.int64), got_counts)
        self.send_pos = np.searchsorted(inner, self.send_gids)
        # The most rows any rank sends or receives in one exchange (q = 1
        # bounds every epoch): the same number on every rank, so every rank
        # takes the same path in ``_alltoallv_rows`` for a given width.
        mine = max(self.send_pos.size, self.boundary.size)
        self.rows_bound = int(C.allgather_int(comm, [mine])[:, 0].max())
        self._full = None

    @property
    def num_inner(self):
        return int(self.inner.size)

    @property
    def num_boundary(self):
        return int(self.boundary.size)

    def sample(self, q, *, seed, epoch):
        """This epoch's boundary sample (local: no communication).

        Keeps boundary vertex ``v`` iff ``keep_mask([v], q, seed=seed,
        epoch=epoch)``, for the columns of this rank's rows and for the rows
        it sends alike.

        Parameters
        ----------
        q : float in [0, 1]
        seed, epoch : int in [0, 2**64)

        Returns
        -------
        BoundarySample

        Examples
        --------
        >>> import spla
        >>> from sampling.datasets import load
        >>> G = BoundaryGraph(spla.distribute(normalized_adjacency(load("rmat:6").A)))
        >>> S = G.sample(0.5, seed=0, epoch=3)
        >>> S.adj.shape, S.num_kept                                       # 1 rank
        ((64, 64), 0)
        """
        func = "BoundaryGraph.sample"
        q = _as_keep(func, "q", q)
        seed = int(as_u64(func, "seed", seed))
        epoch = int(as_u64(func, "epoch", epoch))
        if q >= 1.0 and self._full is not None:
            # Nothing drawn at q = 1: the same structure every epoch (the
            # epoch still keys the dropout masks).
            return dataclasses.replace(self._full, seed=seed, epoch=epoch)
        kept = keep_mask(self.boundary, q, seed=seed, epoch=epoch)
        send = keep_mask(self.send_gids, q, seed=seed, epoch=epoch)
        n = self.num_inner
        cols = np.concatenate([np.arange(n, dtype=np.int64), n + np.flatnonzero(kept)])
        # The sampled adjacency: a selection of columns, the boundary ones
        # scaled by 1 / q (E[kept / q] = 1: the aggregation stays unbiased).
        adj = spla.extract(self.local, cols=cols)
        if 0.0 < q < 1.0 and adj.nnz:
            vals = np.array(adj.values, dtype=np.float64)
            vals[np.asarray(adj.indices) >= n] /= q
            adj = adj.with_values(vals)
        p = self.size
        out = BoundarySample(
            q=q, seed=seed, epoch=epoch, comm=self.comm, kept=kept,
            kept_ids=self.boundary[kept], adj=adj, num_inner=n,
            send_pos=self.send_pos[send], send_gids=self.send_gids[send],
            send_counts=np.bincount(self.send_peer[send], minlength=p).astype(np.int64),
            recv_counts=np.bincount(self.owner[kept], minlength=p).astype(np.int64),
            rows_bound=self.rows_bound)
        if q >= 1.0:
            self._full = out  # q = 1 draws nothing: the same every epoch
        return out

    def __repr__(self):
        return (f"<BoundaryGraph rank {self.rank} of {self.size}: {self.num_inner} inner, "
                f"{self.num_boundary} boundary vertices, {self.local.nnz} entries>")


def _owner_function(D):
    """Global vertex id -> owning rank (the partition's part, or the 1D block)."""
    P = D.partition
    if P is not None:
        part = np.asarray(P.part, np.int64)
        return lambda ids: part[ids]
    from spla.layout import chunk_bounds
    bounds = chunk_bounds(D.nrows, D.comm.Get_size())
    return lambda ids: np.searchsorted(bounds, ids, side="right").astype(np.int64) - 1


@dataclass
class BoundarySample:
    """One epoch's boundary sample on one rank (``BoundaryGraph.sample``).

    ``adj`` is ``num_inner x (num_inner + num_kept)``: the inner columns,
    then the kept boundary vertices ``kept_ids`` (ordered by owner, then
    id, as the exchange delivers them), scaled by ``1 / q``.
    ``send_pos`` are the inner rows this rank sends (grouped by receiving
    rank, ``send_counts`` per rank), ``recv_counts`` the rows it receives
    from each rank.
    """

    q: float
    seed: int
    epoch: int
    comm: object
    kept: np.ndarray
    kept_ids: np.ndarray
    adj: object
    num_inner: int
    send_pos: np.ndarray
    send_gids: np.ndarray
    send_counts: np.ndarray
    recv_counts: np.ndarray
    rows_bound: int = 0

    @property
    def num_kept(self):
        return int(self.kept_ids.size)

    @property
    def num_sent(self):
        """Rows this rank sends per exchange (to all other ranks)."""
        return int(self.send_pos.size)

    @property
    def communicates(self):
        """False for q = 0 (or one rank): the exchange moves nothing and is skipped.

        The same on every rank (it depends on q and p only), so the ranks
        call the all-to-allv together or not at all.
        """
        return self.q > 0.0 and self.comm.Get_size() > 1


@dataclass
class CommStats:
    """Seconds and bytes of one rank's exchanges (filled by ``exchange``)."""

    seconds: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    calls: int = 0

    def add(self, seconds, sent, received):
        self.seconds += seconds
        self.bytes_sent += int(sent)
        self.bytes_received += int(received)
        self.calls += 1


def _alltoallv_rows(comm, rows, send_counts, recv_counts, rows_bound, op, stats):
    """All-to-allv of the rows of a 2-D numpy array (grouped by destination rank).

    Both sides know the counts (the kept set is drawn, not negotiated), so
    one ``MPI_Alltoallv`` does it: ``spla.comm.alltoallv`` would first
    exchange the counts and agree on rounds (three more collectives per
    call, which cost more than the data on small graphs and oversubscribed
    cores).  Where some rank might move 2**31 - 1 elements or more
    (``rows_bound``, the most rows any rank sends or receives, times the
    width: the same on every rank, so all ranks choose alike) it goes
    through ``spla.comm.alltoallv``, which sends in rounds.  Bytes are
    counted under ``op`` (``spla.comm.counting``).
    """
    dim = rows.shape[1]
    t0 = time.perf_counter()
    send = np.ascontiguousarray(rows).reshape(-1)
    sc, rc = send_counts * dim, recv_counts * dim
    if rows_bound * dim < _INT_MAX:
        recv = np.empty(int(rc.sum()), send.dtype)
        mpitype = C.mpi_type(send.dtype)
        comm.Alltoallv([send, (sc.astype(np.int32), C.counts_displs(sc)[1].astype(np.int32)),
                        mpitype],
                       [recv, (rc.astype(np.int32), C.counts_displs(rc)[1].astype(np.int32)),
                        mpitype])
        me = comm.Get_rank()
        C.record(op, (int(sc.sum()) - int(sc[me])) * send.dtype.itemsize)
    else:
        recv, _ = C.alltoallv(comm, send, sc, op)
    if stats is not None:
        me = comm.Get_rank()
        item = rows.dtype.itemsize
        sent = (int(send_counts.sum()) - int(send_counts[me])) * dim * item
        got = (int(recv_counts.sum()) - int(recv_counts[me])) * dim * item
        stats.add(time.perf_counter() - t0, sent, got)
    return recv.reshape(-1, dim)


try:
    import torch as _torch_module
    _Function = _torch_module.autograd.Function
except ImportError:  # pragma: no cover - exercised without torch only
    _torch_module, _Function = None, object


class BoundaryExchange(_Function):
    """Forward: the kept boundary rows from their owners; backward: their gradients back."""

    @staticmethod
    def forward(ctx, h, sample, stats):
        ctx.sample, ctx.stats, ctx.rows = sample, stats, h.shape[0]
        dim = h.shape[1]
        if not sample.communicates:
            return h.new_zeros((0, dim))
        send = h.detach()[_torch_module.from_numpy(sample.send_pos)].cpu().numpy()
        recv = _alltoallv_rows(sample.comm, send, sample.send_counts, sample.recv_counts,
                               sample.rows_bound, "bns.features", stats)
        return _torch_module.from_numpy(recv).to(h.device)

    @staticmethod
    def backward(ctx, grad):
        sample = ctx.sample
        dim = grad.shape[1]
        out = grad.new_zeros((ctx.rows, dim))
        if not sample.communicates:
            return out, None, None
        g = grad.detach().contiguous().cpu().numpy()
        back = _alltoallv_rows(sample.comm, g, sample.recv_counts, sample.send_counts,
                               sample.rows_bound, "bns.gradients", ctx.stats)
        # A row read by several ranks sums their gradients.
        out.index_add_(0, _torch_module.from_numpy(sample.send_pos).to(out.device),
                       _torch_module.from_numpy(back).to(out.device))
        return out, None, None


def exchange(h, sample, stats=None):
    """Collective: the rows of the kept boundary vertices, from the ranks that own them.

    ``h`` holds one row per inner vertex of this rank (``sample.num_inner``
    rows); the result one row per kept boundary vertex
    (``sample.kept_ids``), in the column order of ``sample.adj``, so
    ``torch.cat([h, exchange(h, sample)])`` is the input of the sampled
    aggregation.  Differentiable in ``h``: the backward pass sends the
    gradients of the received rows back to their owners and adds them to
    the owners' rows.  One all-to-allv each way; none at all when
    ``sample.communicates`` is False (q = 0, one rank).  Every rank of
    the communicator calls it with its sample of the same (q, seed, epoch).

    Parameters
    ----------
    h : torch.Tensor, shape (sample.num_inner, d)
    sample : BoundarySample
    stats : CommStats, optional
        Receives the seconds and bytes of both directions.

    Examples
    --------
    >>> import torch, spla
    >>> from sampling.datasets import load
    >>> G = BoundaryGraph(spla.distribute(normalized_adjacency(load("rmat:6").A)))
    >>> S = G.sample(1.0, seed=0, epoch=0)
    >>> exchange(torch.ones(G.num_inner, 4), S).shape                 # 1 rank: no boundary
    torch.Size([0, 4])
    """
    func = "exchange"
    torch = _torch(func)
    if not isinstance(sample, BoundarySample):
        fail(DTypeError, func, "sample", "a BoundarySample (BoundaryGraph.sample)",
             describe(sample))
    if not torch.is_tensor(h) or h.dim() != 2 or h.shape[0] != sample.num_inner:
        fail(DimensionMismatch, func, "h", f"a 2-D tensor with {sample.num_inner} rows (one "
             "per inner vertex)", describe(h) if not torch.is_tensor(h)
             else f"tensor of shape {tuple(h.shape)}")
    return BoundaryExchange.apply(h, sample, stats)


def dropout_by_id(h, ids, p, *, seed, epoch, layer):
    """Dropout whose mask is keyed by (seed, epoch, layer, global vertex id, feature).

    Row ``i`` of ``h`` belongs to vertex ``ids[i]``; its mask is the same
    wherever the vertex is computed, so a partitioned run drops exactly what
    one process training on the whole graph drops.  Kept entries are
    scaled by ``1 / (1 - p)``.  ``h`` may be a sparse COO tensor (sparse
    input features): only its stored entries draw, the draws a dense ``h``
    would make for them (a zero stays zero whatever its mask).

    Examples
    --------
    >>> import torch
    >>> h = torch.ones(3, 4)
    >>> a = dropout_by_id(h, [5, 6, 7], 0.5, seed=0, epoch=0, layer=0)
    >>> b = dropout_by_id(h[1:], [6, 7], 0.5, seed=0, epoch=0, layer=0)
    >>> bool((a[1:] == b).all()), sorted(set(a.flatten().tolist())) <= [0.0, 2.0]
    (True, True)
    """
    torch = _torch("dropout_by_id")
    if p <= 0.0:
        return h
    ids = np.ascontiguousarray(ids, np.int64)
    d = h.shape[1]
    stream = _DROPOUT_STREAM + int(epoch) * _MAX_LAYERS + int(layer)
    if h.is_sparse:
        h = h.coalesce()
        r, c = (t.cpu().numpy() for t in h.indices())
        keep = uniform(ids[r] * d + c, seed=seed, stream=stream) >= p
        scale = torch.from_numpy(keep).to(device=h.device, dtype=h.dtype) / (1.0 - p)
        return torch.sparse_coo_tensor(h.indices(), h.values() * scale, h.shape,
                                       is_coalesced=True, check_invariants=False)
    keys = (ids[:, None] * d + np.arange(d, dtype=np.int64)).reshape(-1)
    keep = uniform(keys, seed=seed, stream=stream).reshape(ids.size, d) >= p
    mask = torch.from_numpy(keep).to(device=h.device, dtype=h.dtype) / (1.0 - p)
    return h * mask


# -- the model ----------------------------------------------------------------------
def _module_base():
    try:
        import torch
        return torch.nn.Module
    except ImportError:  # pragma: no cover - exercised without torch only
        return object


class BNSModel(_module_base()):
    """A GCN or GraphSAGE that runs on one rank's part of the graph.

    Each layer: dropout on the rank's rows (``dropout_by_id``), the kept
    boundary rows from their owners (``exchange``), then the layer
    (``sampling.models.GCNConv``: ``adj @ (h W) + b``; or
    ``sampling.models.SAGEConv``: root weight plus the mean over the
    neighbours) on ``[inner | kept boundary]``; ReLU between layers.

    Parameters
    ----------
    model : {'gcn', 'sage'}
    in_dim, hidden, out_dim : int
    num_layers : int, default 2
    dropout : float in [0, 1), default 0.5

    Examples
    --------
    >>> m = BNSModel("sage", 8, 16, 3, num_layers=2)
    >>> [type(layer).__name__ for layer in m.layers]
    ['SAGEConv', 'SAGEConv']
    """

    def __init__(self, model, in_dim, hidden, out_dim, num_layers=2, dropout=0.5):
        func = "BNSModel"
        _torch(func)
        from torch import nn
        from sampling.models import GCNConv, SAGEConv
        super().__init__()
        if model not in MODELS:
            fail(InvalidValue, func, "model", "'gcn' or 'sage'", repr(model))
        num_layers = as_int(func, "num_layers", num_layers, minimum=1)
        for arg, v in (("in_dim", in_dim), ("hidden", hidden), ("out_dim", out_dim)):
            as_int(func, arg, v, minimum=1)
        if (isinstance(dropout, bool) or not isinstance(dropout, numbers.Real)
                or not 0.0 <= dropout < 1.0):
            fail(InvalidValue, func, "dropout", "a probability in [0, 1)", repr(dropout))
        conv = GCNConv if model == "gcn" else SAGEConv
        dims = [int(in_dim)] + [int(hidden)] * (num_layers - 1) + [int(out_dim)]
        self.layers = nn.ModuleList(conv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.kind = model
        self.dropout = float(dropout)
        self.num_layers = num_layers

    def forward(self, x, graph, sample, op, stats=None):
        """Logits of this rank's inner vertices.

        ``x``: the features of ``graph.inner``; ``sample``: this epoch's
        ``BoundarySample``; ``op``: ``sampling.models.BlockOperator`` of
        ``sample.adj`` (values as given); ``stats``: a ``CommStats``.
        ``x`` may be a sparse COO tensor (bag-of-words features).
        Collective (one exchange per layer).
        """
        import torch
        h = x
        last = self.num_layers - 1
        for i, layer in enumerate(self.layers):
            if self.training:
                h = dropout_by_id(h, graph.inner, self.dropout, seed=sample.seed,
                                  epoch=sample.epoch, layer=i)
            h = self._layer(layer, h, sample, op, stats)
            if i < last:
                h = torch.relu(h)
        return h

    @staticmethod
    def _layer(layer, h, sample, op, stats):
        """One layer on ``[inner | kept boundary]``, exchanging the narrower rows.

        Aggregation is linear: ``adj @ (h W) = (adj @ h) W``.  When the
        layer narrows the rows (``out_dim < in_dim``: the input layer of a
        bag-of-words graph), the owners transform their rows first and the
        exchange carries ``h W``; otherwise it carries ``h``.  Same result,
        fewer bytes.
        """
        import torch
        from sampling.models import GCNConv, block_matmul
        gcn = isinstance(layer, GCNConv)
        lin = layer.lin if gcn else layer.lin_neigh
        if lin.out_features >= lin.in_features:
            if h.is_sparse:
                h = h.to_dense()
            return layer(torch.cat([h, exchange(h, sample, stats)]), op)
        z = _linear(lin, h)
        agg = block_matmul(op, torch.cat([z, exchange(z, sample, stats)]))
        return agg + layer.bias if gcn else _linear(layer.lin_root, h) + agg


def _linear(lin, h):
    """``lin(h)`` for a dense or a sparse COO ``h``."""
    import torch
    if not h.is_sparse:
        return lin(h)
    out = torch.sparse.mm(h, lin.weight.t())
    return out if lin.bias is None else out + lin.bias


# -- training -----------------------------------------------------------------------
@dataclass
class BNSEpochStats:
    """One epoch of BNS training: totals and the per-rank breakdown.

    Per-rank arrays (index = rank): ``inner``, ``boundary``, ``kept``
    (boundary vertices kept this epoch), ``bytes_sent``,
    ``bytes_received`` (boundary features and gradients; the gradient
    Allreduce is ``allreduce_bytes``), ``work_bytes`` (the epoch's
    q-dependent working memory: sampled adjacency, halo rows and the
    activations kept for backward), ``peak_rss`` (the process's peak
    resident memory so far), ``compute_s`` and ``comm_s`` (the epoch's
    seconds outside and inside the exchanges and the Allreduce; waiting
    for a slower rank counts as communication).
    """

    epoch: int
    loss: float
    val_acc: float
    q: float
    inner: np.ndarray
    boundary: np.ndarray
    kept: np.ndarray
    bytes_sent: np.ndarray
    bytes_received: np.ndarray
    work_bytes: np.ndarray
    peak_rss: np.ndarray
    compute_s: np.ndarray
    comm_s: np.ndarray
    allreduce_bytes: int = 0
    eval_s: float = 0.0

    @property
    def epoch_s(self):
        """Seconds of the epoch's training step on the slowest rank (without evaluation)."""
        return float((self.compute_s + self.comm_s).max())

    @property
    def total_bytes(self):
        """Bytes of boundary features and gradients sent by all ranks."""
        return int(self.bytes_sent.sum())


_BNS_COLS = [("epoch", 5), ("loss", 7), ("val acc", 7), ("kept", 9), ("MB sent", 8),
             ("MB recv", 8), ("work MB", 8), ("compute s", 9), ("comm s", 7),
             ("epoch s", 7), ("eval s", 6)]


def bns_header():
    """The header of the per-epoch table (``format_bns_row``).

    Examples
    --------
    >>> bns_header().split()[:4]
    ['epoch', 'loss', 'val', 'acc']
    """
    return "  ".join(name.rjust(w) for name, w in _BNS_COLS)


def format_bns_row(s):
    """One row of the per-epoch table: totals over the ranks (kept boundary
    vertices, MB sent and received), the largest working memory, and the
    slowest rank's compute and communication seconds."""
    vals = [f"{s.epoch:d}", f"{s.loss:.4f}", f"{s.val_acc:.4f}", f"{int(s.kept.sum()):d}",
            f"{s.bytes_sent.sum() / 1e6:.3f}", f"{s.bytes_received.sum() / 1e6:.3f}",
            f"{s.work_bytes.max() / 1e6:.2f}", f"{s.compute_s.max():.3f}",
            f"{s.comm_s.max():.3f}", f"{s.epoch_s:.3f}", f"{s.eval_s:.3f}"]
    return "  ".join(v.rjust(w) for v, (_, w) in zip(vals, _BNS_COLS))


def rank_table(history):
    """Per-rank breakdown over epochs (the paper's imbalance and breakdown tables).

    One line per rank: inner and boundary vertices, kept boundary vertices
    per epoch (mean), MB sent and received per epoch (mean), working memory
    and peak RSS (max, MB), compute and communication seconds per epoch
    (mean), then ``max/mean`` of each column.

    Examples
    --------
    >>> rank_table([])
    []
    """
    if not history:
        return []
    H = history
    cols = [("rank", 8), ("inner", 8), ("boundary", 8), ("kept/ep", 9), ("MB sent/ep", 10),
            ("MB recv/ep", 10), ("work MB", 8), ("peak RSS MB", 11), ("compute s/ep", 12),
            ("comm s/ep", 9)]
    data = np.stack([
        H[-1].inner.astype(float), H[-1].boundary.astype(float),
        np.mean([s.kept for s in H], axis=0),
        np.mean([s.bytes_sent for s in H], axis=0) / 1e6,
        np.mean([s.bytes_received for s in H], axis=0) / 1e6,
        np.max([s.work_bytes for s in H], axis=0) / 1e6,
        np.max([s.peak_rss for s in H], axis=0) / 1e6,
        np.mean([s.compute_s for s in H], axis=0),
        np.mean([s.comm_s for s in H], axis=0)], axis=1)
    fmt = ["{:.0f}", "{:.0f}", "{:.1f}", "{:.3f}", "{:.3f}", "{:.2f}", "{:.1f}", "{:.3f}",
           "{:.3f}"]
    lines = ["  ".join(n.rjust(w) for n, w in cols)]
    for r in range(data.shape[0]):
        vals = [str(r)] + [f.format(v) for f, v in zip(fmt, data[r])]
        lines.append("  ".join(v.rjust(w) for v, (_, w) in zip(vals, cols)))
    mean = data.mean(axis=0)
    ratio = np.where(mean > 0, data.max(axis=0) / np.where(mean > 0, mean, 1), np.nan)
    vals = ["max/mean"] + [f"{v:.2f}" if math.isfinite(v) else "-" for v in ratio]
    lines.append("  ".join(v.rjust(w) for v, (_, w) in zip(vals, cols)))
    return lines


def _features(torch, x, rows, dtype):
    """The features of ``rows`` as a torch tensor: sparse COO when mostly zeros.

    A ``spla.Matrix`` (bag-of-words) is row-normalised first, as PyG's
    ``NormalizeFeatures`` (and ``sampling.train.Trainer``) do.
    """
    if isinstance(x, spla.Matrix):
        X = spla.normalize_rows(spla.extract(x.astype(np.float64), rows=rows))
        if 2 * X.nnz < X.nrows * X.ncols:
            r = torch.from_numpy(np.array(row_ids(X.indptr), np.int64))
            c = torch.from_numpy(np.array(X.indices, np.int64))
            v = torch.from_numpy(np.array(X.values)).to(dtype)
            return torch.sparse_coo_tensor(torch.stack([r, c]), v, X.shape,
                                           is_coalesced=True, check_invariants=False)
        return torch.from_numpy(X.to_dense()).to(dtype)
    return torch.from_numpy(np.array(np.asarray(x)[rows])).to(dtype)


def _float_bits(v):
    """A float's bit pattern as an int (exact comparison of floats between ranks)."""
    return int(np.float64(v).view(np.int64))


def _peak_rss():
    """The process's peak resident memory in bytes (0 where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not a Unix
        return 0
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb if sys.platform == "darwin" else kb * 1024


class BNSTrainer:
    """Collective: BNS-GCN training of a GCN or GraphSAGE on the whole graph over MPI.

    Every rank owns one part of the vertices (``partition``), their rows
    of the aggregation matrix and their features; an epoch is one forward
    and backward pass over the whole graph with the epoch's boundary sample
    (``BoundaryGraph.sample``), then one Allreduce of the gradients (summed
    over the ranks, divided by the number of training vertices: the mean
    cross-entropy of the whole training set) and one Adam step, the same on
    every rank.

    Parameters
    ----------
    dataset : sampling.datasets.Dataset
        Loaded on every rank (the graph, features and labels).
    comm : MPI communicator, optional
        Default COMM_WORLD (one rank without mpiexec: single-process
        full-graph training).
    model : {'gcn', 'sage'}, default 'gcn'
    boundary_keep : float in [0, 1], default 1.0
        q, the probability of keeping a boundary vertex in an epoch.
    partition : 'block', 'metis', 'hash' or spla.partition.Partition, default 'block'
        One part per rank ('metis' needs pymetis; computed on rank 0 and
        broadcast; it balances ``1 + degree`` per part, the entries of the
        rows; 'hash' is ``spla.partition.hashed`` with ``seed``).  Every
        part must be non-empty.
    hidden, layers, dropout, lr, weight_decay, seed
        Model width and depth, dropout probability, Adam settings, and the
        seed of the initialisation, dropout masks and boundary draws.
    dtype : torch dtype, default torch.float32

    Raises
    ------
    InvalidValue, DTypeError, DimensionMismatch
        On every rank, for a bad argument on any rank (q outside [0, 1], a
        depth < 1, a partition with other than p parts, of another number
        of vertices, or with an empty part), or settings that differ
        between the ranks.

    Examples
    --------
    >>> from sampling.datasets import load
    >>> t = BNSTrainer(load("rmat:7"), boundary_keep=0.5, hidden=8, dropout=0.0)
    >>> stats = t.train_epoch(0)                                       # 1 rank
    >>> stats.inner.tolist(), stats.boundary.tolist(), 0 <= t.evaluate("test") <= 1
    ([128], [0], True)
    """

    def __init__(self, dataset, comm=None, *, model="gcn", boundary_keep=1.0,
                 partition="block", hidden=64, layers=2, dropout=0.5, lr=0.01,
                 weight_decay=5e-4, seed=0, dtype=None):
        func = "BNSTrainer"
        torch = _torch(func)
        comm = C.as_comm(comm, func)
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        with C.collective_checks(comm):
            self.q = _as_keep(func, "boundary_keep", boundary_keep)
            if model not in MODELS:
                fail(InvalidValue, func, "model", "'gcn' or 'sage'", repr(model))
            layers = as_int(func, "layers", layers, minimum=1)
            if layers > _MAX_LAYERS:
                fail(InvalidValue, func, "layers", f"a depth in [1, {_MAX_LAYERS}]", layers)
            hidden = as_int(func, "hidden", hidden, minimum=1)
            self.seed = int(as_u64(func, "seed", seed))
            for arg, v, lo in (("lr", lr, False), ("weight_decay", weight_decay, True)):
                if (isinstance(v, bool) or not isinstance(v, numbers.Real)
                        or not math.isfinite(v) or v < 0 or (v == 0 and not lo)):
                    fail(InvalidValue, func, arg, "a finite number > 0" if not lo else
                         "a finite number >= 0", repr(v))
            if (isinstance(dropout, bool) or not isinstance(dropout, numbers.Real)
                    or not 0.0 <= dropout < 1.0):
                fail(InvalidValue, func, "dropout", "a probability in [0, 1)", repr(dropout))
            for attr in ("A", "x", "y", "train_idx", "val_idx", "test_idx", "num_classes"):
                if not hasattr(dataset, attr):
                    fail(DTypeError, func, "dataset", "a sampling.datasets.Dataset (graph A, "
                         "features x, labels y, splits)", describe(dataset))
            if not isinstance(partition, (str, spla.Partition)) or (
                    isinstance(partition, str) and partition not in ("block", "metis", "hash")):
                fail(InvalidValue, func, "partition", "'block', 'metis', 'hash' or a "
                     "spla.partition.Partition", describe(partition))
            if isinstance(partition, spla.Partition) and partition.parts != self.size:
                fail(InvalidValue, func, "partition", f"a partition into {self.size} parts "
                     "(one per rank)", f"{partition.parts} parts")
            if isinstance(partition, spla.Partition) and partition.n != dataset.A.nrows:
                fail(DimensionMismatch, func, "partition", f"a partition of the dataset's "
                     f"{dataset.A.nrows} vertices", f"a partition of {partition.n}")
            if dataset.A.nrows < self.size:
                fail(InvalidValue, func, "comm", f"at most {dataset.A.nrows} ranks (one "
                     "vertex per rank at least)", f"{self.size} ranks")
        # The exchanges and the Allreduce need the same settings everywhere
        # (a different q on one rank would mismatch the all-to-allv counts).
        bits = _float_bits
        C.check_same(comm, func, "(boundary_keep, seed, model, layers, hidden, dropout, lr, "
                     "weight_decay)", [bits(self.q), self.seed % (1 << 62), MODELS.index(model),
                                       layers, hidden, bits(dropout), bits(lr),
                                       bits(weight_decay)], cls=InvalidValue)
        self.model_name, self.hidden, self.layers = model, hidden, layers
        self.num_classes = int(dataset.num_classes)
        self.dtype = torch.float32 if dtype is None else dtype
        self.dataset = dataset
        self.P = self._partition(dataset.A, partition)
        Ahat = normalized_adjacency(dataset.A, KINDS[model])
        D = spla.distribute(Ahat, comm, partition=self.P)
        self.graph = G = BoundaryGraph(D)
        self.x = _features(torch, dataset.x, G.inner, self.dtype)
        self.y = torch.from_numpy(np.asarray(dataset.y, np.int64)[G.inner])
        pos = {}
        for name in ("train", "val", "test"):
            ids = np.asarray(getattr(dataset, f"{name}_idx"), np.int64)
            local = np.flatnonzero(np.isin(G.inner, ids))
            pos[name] = (torch.from_numpy(local), int(ids.size))
        self.splits = pos
        with torch.random.fork_rng():
            torch.manual_seed(self.seed)
            self.model = BNSModel(model, self.x.shape[1], hidden, int(dataset.num_classes),
                                  layers, dropout).to(self.dtype)
        self._broadcast_model()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(self.params, lr=lr, weight_decay=weight_decay)
        self.history = []
        self._full_op = None

    def _partition(self, A, partition):
        if isinstance(partition, spla.Partition):
            return partition
        if partition == "block":
            return spla.partition.block(A, self.size)
        if partition == "hash":
            return spla.partition.hashed(A, self.size, seed=self.seed)
        P = None
        with C.collective_checks(self.comm):
            if self.rank == 0:
                # Balance the rows' entries (1 + degree per vertex), not the
                # vertex counts: the aggregation's work and the activations
                # follow the entries (BNS-GCN balances edges too).
                P = spla.partition.metis(A, self.size, seed=self.seed % (2 ** 31),
                                         vertex_weights=1 + A.row_degrees())
        if self.size == 1:
            return P
        part = C.bcast_int(self.comm, None if P is None else P.part, 0, A.nrows)
        return P if P is not None else spla.Partition(part, self.size, method="metis")

    def _broadcast_model(self):
        """Rank 0's initial parameters on every rank (they are equal already: one check)."""
        if self.size == 1:
            return
        torch = _torch("BNSTrainer")
        flat = torch.cat([p.detach().reshape(-1) for p in self.model.parameters()])
        buf = C.bcast_array(self.comm, flat.numpy().copy(), 0, "bns.broadcast")
        off = 0
        with torch.no_grad():
            for p in self.model.parameters():
                k = p.numel()
                p.copy_(torch.from_numpy(buf[off:off + k]).view_as(p))
                off += k

    def _full_operator(self):
        """The operator of the unsampled adjacency (q = 1), built once."""
        if self._full_op is None:
            self._full_op = self._op(self.graph.sample(1.0, seed=self.seed, epoch=0))
        return self._full_op

    def _op(self, sample):
        from sampling.models import BlockOperator
        return BlockOperator(sample.adj, normalize=False, dtype=self.dtype)

    def _work_bytes(self, sample):
        """Working memory of one epoch on this rank (an estimate from the shapes).

        The sampled adjacency and its transpose (CSR), the features, and per
        layer the rows ``[inner | kept boundary]`` that the aggregation reads
        (of the exchanged width, see ``BNSModel._layer``) and the layer's
        output, both kept for the backward pass.
        """
        adj = sample.adj
        total = adj.nnz * 2 * (8 + 8) + (adj.nrows + adj.ncols + 2) * 8
        x = self.x
        item = x.element_size()
        total += x.values().numel() * (16 + item) if x.is_sparse else x.numel() * item
        rows = sample.num_inner + sample.num_kept
        dims = [x.shape[1]] + [self.hidden] * (self.layers - 1) + [self.num_classes]
        for d_in, d_out in zip(dims[:-1], dims[1:]):
            total += rows * min(d_in, d_out) * item + sample.num_inner * d_out * item
        return int(total)

    def train_epoch(self, epoch, validate=True):
        """Collective: one epoch (a sample, forward, backward, Allreduce, step); ``BNSEpochStats``.

        ``validate=False`` skips the validation accuracy (``val_acc`` NaN).
        """
        torch = _torch("BNSTrainer")
        t_start = time.perf_counter()
        stats = CommStats()
        sample = self.graph.sample(self.q, seed=self.seed, epoch=epoch)
        op = self._full_operator() if self.q >= 1.0 else self._op(sample)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        idx, n_train = self.splits["train"]
        logits = self.model(self.x, self.graph, sample, op, stats)
        loss = torch.nn.functional.cross_entropy(logits[idx], self.y[idx], reduction="sum")
        (loss / n_train).backward()
        t0 = time.perf_counter()
        total_loss, ar_bytes = self._allreduce_grads(float(loss.detach()), epoch)
        t_ar = time.perf_counter() - t0
        self.optimizer.step()
        elapsed = time.perf_counter() - t_start
        comm_s = stats.seconds + t_ar
        t0 = time.perf_counter()
        val = self.evaluate("val") if validate else float("nan")
        eval_s = time.perf_counter() - t0
        row = [self.graph.num_inner, self.graph.num_boundary, sample.num_kept,
               stats.bytes_sent, stats.bytes_received, self._work_bytes(sample), _peak_rss(),
               elapsed - comm_s, comm_s, eval_s]
        # One Allgather for the report (counts below 2**53 are exact in float64).
        allr = self._gather_float(row)
        ints = allr[:, :7].astype(np.int64)
        s = BNSEpochStats(epoch + 1, total_loss / n_train, val, self.q, *ints.T,
                          compute_s=allr[:, 7], comm_s=allr[:, 8], allreduce_bytes=ar_bytes,
                          eval_s=float(allr[:, 9].max()))
        self.history.append(s)
        return s

    def _gather_float(self, values):
        v = np.asarray(values, np.float64)
        if self.size == 1:
            return v[None, :]
        out = np.empty((self.size, v.size), np.float64)
        self.comm.Allgather(v, out)
        return out

    def _allreduce_grads(self, loss, epoch):
        """Sum the gradients and the loss over the ranks; returns (total loss, bytes sent)."""
        torch = _torch("BNSTrainer")
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        if self.size == 1:
            total = loss
        else:
            flat = torch.cat([g.reshape(-1).double() for g in grads]
                             + [torch.tensor([loss], dtype=torch.float64)])
            with C.counting() as moved:
                out = C.allreduce_array(self.comm, flat.numpy(), "sum", "bns.allreduce")
            total = float(out[-1])
            off = 0
            for p in self.params:
                k = p.numel()
                p.grad = torch.from_numpy(out[off:off + k]).view_as(p).to(p.dtype).clone()
                off += k
        if not math.isfinite(total):
            with C.collective_checks(self.comm):  # the same total on every rank
                raise FloatingPointError(
                    f"BNSTrainer.train_epoch: the training loss must be finite; got {total} "
                    f"(summed over the ranks) at epoch {epoch + 1}; lower the learning rate "
                    "or check the features for NaN")
        return total, (0 if self.size == 1 else sum(moved.values()))

    def evaluate(self, split):
        """Collective: accuracy on 'train', 'val' or 'test' by full-graph inference (q = 1)."""
        torch = _torch("BNSTrainer")
        if split not in self.splits:
            with C.collective_checks(self.comm):
                fail(InvalidValue, "BNSTrainer.evaluate", "split", "'train', 'val' or "
                     "'test'", repr(split))
        full = self.graph.sample(1.0, seed=self.seed, epoch=0)
        op = self._full_operator()
        idx, n = self.splits[split]
        was = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                pred = self.model(self.x, self.graph, full, op).argmax(dim=1)
                correct = int((pred[idx] == self.y[idx]).sum())
        finally:
            self.model.train(was)
        if self.size > 1:
            correct = int(C.allreduce_array(self.comm, np.array([correct], np.int64), "sum",
                                            None)[0])
        return correct / n if n else float("nan")

    def fit(self, epochs, log=None, validate=True):
        """Collective: train ``epochs`` epochs, then return the test accuracy.

        ``log(line)`` (rank 0) receives the table: header, one row per epoch.
        ``validate=False``: no validation accuracy per epoch.
        """
        epochs = as_int("BNSTrainer.fit", "epochs", epochs, minimum=0)
        if log and self.rank == 0:
            log(bns_header())
        start = len(self.history)
        for e in range(start, start + epochs):
            s = self.train_epoch(e, validate)
            if log and self.rank == 0:
                log(format_bns_row(s))
        return self.evaluate("test")

    def describe(self):
        """One paragraph: dataset, model, q, partition and its edge cut, ranks."""
        P, A = self.P, self.dataset.A
        cut = P.edge_cut(A)
        return (f"{self.dataset!r}\nBNS-GCN: model {self.model_name} {self.layers} layers x "
                f"{self.hidden}, boundary keep q = {self.q:g}, {self.size} rank(s), partition "
                f"{P.method} (edge cut {cut} of {A.nnz} entries, "
                f"{100 * cut / max(A.nnz, 1):.1f} %)")


__all__ = ["normalized_adjacency", "keep_mask", "BoundaryGraph", "BoundarySample",
           "CommStats", "exchange", "dropout_by_id", "BNSModel", "BNSTrainer",
           "BNSEpochStats", "bns_header", "format_bns_row", "rank_table", "MODELS"]
