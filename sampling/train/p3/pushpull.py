"""Push-pull: P3's model-parallel first layer, as a torch autograd function.

* **push**: every rank multiplies its column slice of the layer-1 input
  rows of *every* minibatch of the step by its slice of the first-layer
  weight, ``x[ids, cols_r] @ W[cols_r, :]`` (a partial activation of width
  ``hidden``);
* **pull**: one reduce-scatter sums the partial activations over the
  ranks and hands each rank those of its own minibatch;
* backward: one all-gather gives every rank the gradient of every
  minibatch's first-layer output, and each rank computes the gradient of
  its own weight slice, ``x[ids, cols_r]^T @ G_all``.

``PushPullPlan`` says where each rank's rows lie in the stacked input;
``PushPull`` is the function, ``push_pull`` its functional form.  Bytes are
counted by ``spla.comm`` under ``'p3.pull'`` (each rank's share of the
summed buffer it does not keep) and ``'p3.gradient'`` (the all-gather).
"""

import numpy as np

from spla import comm as C
from spla.checks import as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue

from sampling.train.p3._torch import Function, host_numpy, numpy_float, require_torch, torch

# mpi4py's Reduce_scatter takes C int counts.
_INT_MAX = 2 ** 31 - 1


class PushPullPlan:
    """Where each rank's rows lie in the step's stacked input, and how many each head uses.

    Parameters
    ----------
    row_counts : sequence of p ints
        Rows (layer-1 input vertices) of each rank's minibatch, in rank
        order; 0 for a rank without a minibatch this step.
    head_rows : sequence of K sequences of p ints, optional
        Head ``k`` uses the first ``head_rows[k][i]`` rows of rank ``i``'s
        minibatch (GraphSAGE's root weight reads the destinations, which
        come first).  Default: one head using every row.

    Examples
    --------
    >>> plan = PushPullPlan([3, 0, 2], [[3, 0, 2], [1, 0, 1]])
    >>> plan.starts.tolist(), plan.recv_rows(0)
    ([0, 3, 3, 5], [3, 1])
    """

    def __init__(self, row_counts, head_rows=None):
        func = "PushPullPlan"
        counts = np.asarray([as_int(func, "row_counts", c, minimum=0) for c in row_counts],
                            np.int64)
        if head_rows is None:
            head_rows = [counts]
        heads = np.asarray([[as_int(func, "head_rows", c, minimum=0) for c in h]
                            for h in head_rows], np.int64).reshape(len(head_rows), -1)
        if heads.shape[1] != counts.size or (heads > counts).any():
            fail(DimensionMismatch, func, "head_rows", f"{len(head_rows)} rows of "
                 f"{counts.size} counts, each at most row_counts", describe(heads))
        self.p = int(counts.size)
        self.row_counts = counts
        self.head_rows = heads
        self.starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    @property
    def num_heads(self):
        return int(self.head_rows.shape[0])

    @property
    def total_rows(self):
        return int(self.starts[-1])

    def recv_rows(self, rank):
        """Rows of each head that ``rank`` receives (its own minibatch's)."""
        return [int(h[rank]) for h in self.head_rows]


def _reduce_scatter(comm, send, counts, op):
    """Sum ``send`` over the ranks; rank ``i`` keeps the ``counts[i]`` elements of block ``i``.

    Counted under ``op`` as what a ring reduce-scatter sends: the buffer
    less this rank's own block.
    """
    me = comm.Get_rank()
    counts = np.asarray(counts, np.int64)
    recv = np.empty(int(counts[me]), send.dtype)
    comm.Reduce_scatter(send, recv, counts.astype(np.int32).tolist(), op=C.mpi().SUM)
    C.record(op, (int(counts.sum()) - int(counts[me])) * send.itemsize)
    return recv


def _matmul(x, w):
    """``x @ w`` for a dense array or CSR ``x`` and a numpy ``w``: a dense numpy array.

    Dense products run in torch, not numpy: numpy's BLAS starts one thread
    per core whatever ``torch.set_num_threads`` says, and under ``mpiexec``
    the ranks' spinning BLAS threads oversubscribe the cores; torch honours
    ``torch.set_num_threads``.  Scipy's sparse product is single-threaded.
    """
    if hasattr(x, "tocsr"):
        out = x @ w
        return np.asarray(out.toarray() if hasattr(out, "toarray") else out)
    dtype = np.result_type(x.dtype, w.dtype)
    # torch wraps read-only memory (a memory-mapped store) only with a warning.
    x, w = (a.astype(dtype, copy=not a.flags.writeable) for a in (np.asarray(x), np.asarray(w)))
    return (torch.from_numpy(x) @ torch.from_numpy(w)).numpy()


class PushPull(Function):
    """Model-parallel first layer: ``x[:, cols_r] @ W_r`` on every rank, then a reduce-scatter.

    ``PushPull.apply(x_local, plan, comm, *weights)`` returns one tensor
    per head, ``(plan.recv_rows(rank)[k], hidden)``: the rows of this rank's
    minibatch of ``sum over ranks of x_local @ weights[k]``, restricted
    to the head's rows.

    Parameters (of ``apply``)
    -------------------------
    x_local : numpy array or scipy CSR, (plan.total_rows, f_r)
        This rank's columns of the stacked input rows of every rank's
        minibatch (rank 0's first).  Data: no gradient.
    plan : PushPullPlan
    comm : MPI communicator or None
        ``None``: one rank, no communication.
    *weights : torch tensors (f_r, hidden)
        This rank's rows of each head's weight (``W^T`` of a Linear).

    The backward pass (collective too: every rank must call backward when
    one does) all-gathers the gradient of every minibatch's output and
    returns ``x_local[rows of head k]^T @ G_k``, summed over the ranks'
    minibatches.  Collective: every rank calls it with the same plan.
    """

    @staticmethod
    def forward(ctx, x_local, plan, comm, *weights):
        # Agreed over the ranks (one small Allreduce): a shape error on one
        # rank must not leave the others in the reduce-scatter.
        with C.collective_checks(comm):
            _check_push_pull(x_local, plan, comm, weights)
        hidden = int(weights[0].shape[1])
        dtype = weights[0].dtype
        np_w = [host_numpy(w) for w in weights]
        p = plan.p
        rank = 0 if comm is None else comm.Get_rank()
        # Send buffer: for each destination rank, each head's rows of its
        # minibatch (prefixes of its stacked rows).
        pieces, counts = [], np.zeros(p, np.int64)
        for i in range(p):
            s = int(plan.starts[i])
            for k, w in enumerate(np_w):
                m = int(plan.head_rows[k][i])
                if m:
                    pieces.append(_matmul(x_local[s:s + m], w).reshape(-1))
                counts[i] += m * hidden
        send = (np.concatenate(pieces) if pieces else np.zeros(0, np_w[0].dtype))
        send = send.astype(np_w[0].dtype, copy=False)
        if comm is None or comm.Get_size() == 1:
            mine = send
        else:
            mine = _reduce_scatter(comm, send, counts, "p3.pull")
        ctx.x_local, ctx.plan, ctx.comm, ctx.hidden = x_local, plan, comm, hidden
        ctx.weight_dtype, ctx.weight_device = dtype, weights[0].device
        outs, off = [], 0
        for m in plan.recv_rows(rank):
            # The exchange runs on host buffers; results go back to the weights' device.
            outs.append(torch.from_numpy(mine[off:off + m * hidden].reshape(m, hidden).copy())
                        .to(device=weights[0].device, dtype=dtype))
            off += m * hidden
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        # Not wrapped in once_differentiable at class creation (torch may be
        # missing); the weight gradient is computed outside autograd, so a
        # second derivative through it is not available.
        plan, comm, hidden, x = ctx.plan, ctx.comm, ctx.hidden, ctx.x_local
        rank = 0 if comm is None else comm.Get_rank()
        mine_rows = plan.recv_rows(rank)
        dtype = next((g.dtype for g in grads if g is not None), torch.float64)
        np_dtype = numpy_float(dtype)
        flat = [(host_numpy(g).astype(np_dtype, copy=False) if g is not None
                 else np.zeros((m, hidden), np_dtype)).reshape(-1)
                for g, m in zip(grads, mine_rows)]
        flat = np.concatenate(flat) if flat else np.zeros(0, np_dtype)
        if comm is None or comm.Get_size() == 1:
            allg = flat
        else:
            allg, _ = C.allgatherv(comm, flat, "p3.gradient")
        wgrads = [np.zeros((x.shape[1], hidden), np_dtype) for _ in range(plan.num_heads)]
        off = 0
        for i in range(plan.p):
            s = int(plan.starts[i])
            for k in range(plan.num_heads):
                m = int(plan.head_rows[k][i])
                if m:
                    g = allg[off:off + m * hidden].reshape(m, hidden)
                    wgrads[k] += _matmul(x[s:s + m].T, g)
                off += m * hidden
        out = [None, None, None]
        for k in range(plan.num_heads):
            out.append(torch.from_numpy(wgrads[k]).to(device=ctx.weight_device,
                                                      dtype=ctx.weight_dtype)
                       if ctx.needs_input_grad[3 + k] else None)
        return tuple(out)


def _check_push_pull(x_local, plan, comm, weights):
    func = "PushPull"
    if not isinstance(plan, PushPullPlan):
        fail(DTypeError, func, "plan", "a PushPullPlan", describe(plan))
    p = 1 if comm is None else comm.Get_size()
    if plan.p != p:
        fail(DimensionMismatch, func, "plan", f"one row count per rank ({p})",
             f"{plan.p} row counts")
    if len(weights) != plan.num_heads:
        fail(DimensionMismatch, func, "weights", f"one weight per head ({plan.num_heads})",
             f"{len(weights)} weights")
    shape = tuple(getattr(x_local, "shape", ()))
    if len(shape) != 2 or shape[0] != plan.total_rows:
        fail(DimensionMismatch, func, "x_local", f"a 2-D array of {plan.total_rows} rows "
             "(every rank's minibatch rows, stacked)", describe(x_local))
    for k, w in enumerate(weights):
        if not (torch.is_tensor(w) and w.dim() == 2 and w.is_floating_point()):
            fail(DTypeError, func, f"weights[{k}]", "a 2-D float tensor", describe(w))
        if w.shape[0] != shape[1] or w.shape[1] != weights[0].shape[1]:
            fail(DimensionMismatch, func, f"weights[{k}]", f"shape ({shape[1]}, "
                 f"{int(weights[0].shape[1])}) (x_local's columns, the hidden width)",
                 f"shape {tuple(w.shape)}")
    total = int(plan.head_rows.sum()) * int(weights[0].shape[1])
    if total > _INT_MAX:
        # The reduce-scatter's buffer is one message: its counts must fit a C int.
        fail(InvalidValue, func, "plan", f"a step of at most {_INT_MAX} partial activations "
             "(rows x hidden, over every rank's minibatch; use smaller batches)", total)


def push_pull(x_local, plan, comm, *weights):
    """Functional form of ``PushPull``: a tuple of one tensor per head.

    Examples
    --------
    >>> import numpy as np, torch
    >>> x = np.arange(6.0).reshape(3, 2)
    >>> w = torch.ones(2, 1, dtype=torch.float64, requires_grad=True)
    >>> (h,) = push_pull(x, PushPullPlan([3]), None, w)   # one rank: x @ w
    >>> h.flatten().tolist()
    [1.0, 5.0, 9.0]
    >>> h.sum().backward(); w.grad.flatten().tolist()     # x^T @ ones
    [6.0, 9.0]
    """
    require_torch("push_pull")
    return PushPull.apply(x_local, plan, comm, *weights)


__all__ = ["PushPullPlan", "PushPull", "push_pull"]
