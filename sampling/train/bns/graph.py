"""The graph side of BNS-GCN: the aggregation matrix, the boundary and its per-epoch sample.

``normalized_adjacency`` builds the model's aggregation matrix on the whole
graph; ``BoundaryGraph`` splits this rank's rows of its distribution into
inner and boundary columns and plans the exchange (collective, once);
``keep_mask`` and ``BoundaryGraph.sample`` draw an epoch's kept boundary
without communicating (``BoundarySample``).
"""

import dataclasses
import math
import numbers
from dataclasses import dataclass

import numpy as np

import spla
from spla import comm as C
from spla.checks import as_u64, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError
from spla.random import uniform
from spla.util import row_ids


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
    return S.with_values(inv[row_ids(S.indptr, S.nnz)] * inv[S.indices])


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
        # takes the same path in the exchange (``halo``) for a given width.
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

