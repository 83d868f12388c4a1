"""The boundary exchange of BNS-GCN: rows to the ranks that read them, gradients back.

``exchange(h, sample)`` is a differentiable all-to-allv
(``BoundaryExchange``, a ``torch.autograd.Function``): forward, every rank
receives the rows of its kept boundary vertices from their owners;
backward, the gradients of those rows go back and are summed into the
owners' rows.  ``CommStats`` counts the seconds and bytes.
"""

import time
from dataclasses import dataclass

import numpy as np

from sampling.models import require_torch
from sampling.train.bns.graph import BoundarySample
from spla import comm as C
from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError

_INT_MAX = 2 ** 31 - 1  # MPI counts are C ints

try:
    import torch as _torch_module
    _Function = _torch_module.autograd.Function
except ImportError:  # pragma: no cover - exercised without torch only
    _torch_module, _Function = None, object


def _torch(func):
    """The torch module, or ``MissingDependency`` naming ``func``."""
    require_torch(func)
    return _torch_module


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


class BoundaryExchange(_Function):
    """Forward: the kept boundary rows from their owners; backward: their gradients back."""

    @staticmethod
    def forward(ctx, h, sample, stats):
        ctx.sample, ctx.stats, ctx.rows = sample, stats, h.shape[0]
        dim = h.shape[1]
        if not sample.communicates:
            return h.new_zeros((0, dim))
        # Gathered where h lives, then staged through host memory for MPI
        # (one copy of the rows to send, one of the rows received).
        pos = _torch_module.from_numpy(sample.send_pos).to(h.device)
        send = h.detach()[pos].cpu().numpy()
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
    >>> from sampling.train.bns import BoundaryGraph, normalized_adjacency
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
