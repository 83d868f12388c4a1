"""P3-style training (Gandhi and Iyer, OSDI 2021): features by columns, push-pull first layer.

When the input features are wide and the hidden layers narrow, moving the
feature rows of a minibatch to the rank that trains it dominates a step.
P3 splits the feature matrix by **columns** instead: rank ``r`` of ``p``
holds columns ``[f*r//p, f*(r+1)//p)`` of every vertex.  The first layer,
linear in its input, then runs model-parallel:

* **push**: every rank multiplies its column slice of the layer-1 input
  rows of *every* minibatch of the step by its slice of the first-layer
  weight, ``x[ids, cols_r] @ W[cols_r, :]`` (a partial activation of width
  ``hidden``);
* **pull**: one reduce-scatter sums the partial activations over the
  ranks and hands each rank those of its own minibatch;
* layers 2..L run data-parallel as usual;
* backward: one all-gather gives every rank the gradient of every
  minibatch's first-layer output, and each rank computes the gradient of
  its own weight slice, ``x[ids, cols_r]^T @ G_all``.  The slices are not
  all-reduced: each rank owns its slice (every other parameter is).

Communication then scales with the hidden width, not the feature width.
Every rank needs the layer-1 input vertices of every minibatch of the
step; sampling is rank-invariant (the same seeds give the same samples on
every rank), so each rank can sample them all without communicating.

Why a separate store and not a mode of ``sampling.loading.features.FeatureStore``:
that class's job is to answer ``fetch(ids) -> rows`` with whole rows, and
its modes (replicated, 1.5D rows, hot-row cache) all keep that contract.
A column store cannot answer it (no rank holds a whole row); what it
offers is a local gather of a column slice, consumed by the push-pull
layer only.  Folding it into ``FeatureStore`` would give that class a
mode in which its main method must refuse to work.

Public names:

* ``column_range(f, p, r)``: the columns rank ``r`` holds;
* ``ColumnFeatureStore``: the column-partitioned store (dense numpy, or
  scipy CSR for sparse features such as Cora's bag of words);
* ``PushPull``: the torch.autograd.Function (push, reduce-scatter, and
  the all-gather backward), with ``push_pull`` its functional form;
* ``StepInput``, ``share_inputs``: every rank's layer-1 input vertices by
  one all-gather, for ranks that sample only their own minibatches;
* ``P3Model``: a ``sampling.models`` GraphSAGE / GCN whose first layer runs
  push-pull;
* ``byte_model``: bytes per step of the row fetch and of push-pull.

Bytes are counted by ``spla.comm`` under ``'p3.pull'`` (the reduce-scatter,
each rank's share of the summed buffer it does not keep), ``'p3.gradient'``
(the backward all-gather) and ``'p3.inputs'`` (``share_inputs``).
"""

import numpy as np

from spla import comm as C
from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError

from sampling.datasets.validation import as_features, check_targets, host_array, is_sparse

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - exercised without torch only
    torch = nn = None

_Module = object if nn is None else nn.Module
_Function = object if torch is None else torch.autograd.Function
_INT_MAX = 2 ** 31 - 1


def column_range(num_features, p, r):
    """Columns ``[f*r//p, f*(r+1)//p)`` that rank ``r`` of ``p`` holds.

    Examples
    --------
    >>> [column_range(10, 4, r) for r in range(4)]
    [(0, 2), (2, 5), (5, 7), (7, 10)]
    """
    f = as_int("column_range", "num_features", num_features, minimum=0)
    p = as_int("column_range", "p", p, minimum=1)
    r = as_int("column_range", "r", r, minimum=0)
    if r >= p:
        fail(LayoutError, "column_range", "r", f"a rank below p = {p}", r)
    return f * r // p, f * (r + 1) // p


def _comm_of(comm):
    """(comm or None, p, rank): ``None`` stays local (one rank, no MPI)."""
    if comm is None:
        return None, 1, 0
    comm = C.as_comm(comm, "ColumnFeatureStore")
    return comm, comm.Get_size(), comm.Get_rank()


def _dense_or_csr(func, arg, x, dtype):
    """Checked features: a C-contiguous dense array or a scipy CSR matrix of ``dtype``."""
    if is_sparse(x):
        M = as_features(func, arg, x)  # checks shape and finiteness
        csr = M.to("cpu").to_scipy().tocsr()
        if dtype is None:  # a structural matrix (no dtype) becomes float32 ones
            dtype = np.float64 if M.dtype == np.float64 else np.float32
        return csr.astype(dtype)
    a = host_array(func, arg, x)
    if a.ndim != 2:
        fail(DimensionMismatch, func, arg, "a 2-D (n, f) matrix", describe(a))
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool) or \
            np.issubdtype(a.dtype, np.complexfloating):
        fail(DTypeError, func, arg, "real numbers", describe(a))
    if dtype is None:
        dtype = np.float64 if a.dtype == np.float64 else np.float32
    out = np.ascontiguousarray(a, dtype=dtype)
    bad = np.flatnonzero(~np.isfinite(out.reshape(-1)))
    if bad.size:
        fail(InvalidValue, func, arg, "finite values", f"{out.reshape(-1)[bad[0]]} at entry "
             f"{int(bad[0])}")
    return out


def _as_dtype(func, dtype):
    if dtype is None:
        return None
    try:
        d = np.dtype(dtype)
    except TypeError:
        d = None
    if d not in (np.dtype(np.float32), np.dtype(np.float64)):
        # A numpy scalar type is a class: describe() would read its dtype
        # attribute as an array's, so name it.
        got = dtype.__name__ if isinstance(dtype, type) else describe(dtype)
        fail(DTypeError, func, "dtype", "float32 or float64 (or None)", got)
    return d


class ColumnFeatureStore:
    """Node features split by columns: rank ``r`` holds columns ``column_range(f, p, r)``.

    Parameters
    ----------
    features : array or sparse matrix of shape (n, f)
        The whole feature matrix, on every rank (each keeps its columns
        only): numpy or torch (dense), or scipy.sparse / spla.Matrix (kept
        as scipy CSR).  Use ``from_local`` when each rank has only its
        columns.
    comm : MPI communicator, optional
        ``None``: one rank, no MPI.
    labels : 1-D int array of length n, optional
        Kept replicated (``store.labels``, int64).
    splits : dict of name -> 1-D int array, optional
        Vertex ids of each split, kept replicated.
    num_classes : int, optional
    dtype : {None, float32, float64}
        ``None``: float64 input stays float64, anything else becomes
        float32.

    Attributes
    ----------
    local : numpy array or scipy CSR, shape (n, col_stop - col_start)
    col_start, col_stop : int
        This rank's columns.
    num_nodes, num_features, p, rank, comm, labels, splits

    Raises
    ------
    LayoutError
        More ranks than columns (a rank would hold none), on every rank.
    DimensionMismatch
        Not 2-D, or ranks disagreeing on ``(n, f)``.
    DTypeError, InvalidValue
        Non-numeric or non-finite features, bad labels or splits.

    Collective when ``comm`` has several ranks: every check raises on every
    rank.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.arange(12.0).reshape(3, 4)
    >>> store = ColumnFeatureStore(x)            # one rank: every column
    >>> store.columns, store.shape
    ((0, 4), (3, 4))
    >>> store.gather(np.array([2, 0])).tolist()
    [[8.0, 9.0, 10.0, 11.0], [0.0, 1.0, 2.0, 3.0]]
    """

    def __init__(self, features, *, comm=None, labels=None, splits=None, num_classes=None,
                 dtype=None, _local=None, _shape=None):
        func = type(self).__name__ if _local is None else "ColumnFeatureStore.from_local"
        comm, p, rank = _comm_of(comm)
        with C.collective_checks(comm):
            dtype = _as_dtype(func, dtype)
            if _local is None:
                x = _dense_or_csr(func, "features", features, dtype)
                n, f = (int(s) for s in x.shape)
            else:
                x = None
                n, f = _shape
            if p > f:
                fail(LayoutError, func, "features", f"at least as many columns as ranks "
                     f"(p = {p}; a rank would hold no column)", f"{f} column(s)")
            start, stop = column_range(f, p, rank)
            if x is not None:
                local = x[:, start:stop]
                local = local.tocsr() if hasattr(local, "tocsr") else np.ascontiguousarray(local)
            else:
                local = _local
            num_classes, labels, splits = check_targets(func, labels, splits, n, num_classes)
        if comm is not None and p > 1:
            C.check_same(comm, func, "features", [n, f], cls=DimensionMismatch,
                         expected="of the same shape (n, f) on every rank",
                         show=lambda v: f"shape {tuple(v.tolist())}")
        self.comm, self.p, self.rank = comm, p, rank
        self.num_nodes, self.num_features = n, f
        self.col_start, self.col_stop = start, stop
        self.local = local
        self.dtype = np.dtype(local.dtype)
        self.labels, self.splits, self.num_classes = labels, splits, num_classes

    @classmethod
    def from_local(cls, local, num_features, *, comm=None, labels=None, splits=None,
                   num_classes=None, dtype=None):
        """Collective: a store from this rank's own columns ``column_range(f, p, rank)``.

        Examples
        --------
        >>> import numpy as np
        >>> ColumnFeatureStore.from_local(np.ones((5, 3)), 3).shape   # one rank
        (5, 3)
        """
        func = "ColumnFeatureStore.from_local"
        comm, p, rank = _comm_of(comm)
        with C.collective_checks(comm):
            f = as_int(func, "num_features", num_features, minimum=0)
            block = _dense_or_csr(func, "local", local, _as_dtype(func, dtype))
            if p > f:
                fail(LayoutError, func, "num_features", f"at least as many columns as ranks "
                     f"(p = {p}; a rank would hold no column)", f)
            s, e = column_range(f, p, rank)
            if block.shape[1] != e - s:
                fail(DimensionMismatch, func, "local", f"{e - s} columns (columns {s}:{e} "
                     f"of {f})", f"shape {tuple(block.shape)}")
        return cls(None, comm=comm, labels=labels, splits=splits, num_classes=num_classes,
                   dtype=dtype, _local=block, _shape=(int(block.shape[0]), f))

    @property
    def shape(self):
        """``(n, f)`` of the whole matrix."""
        return (self.num_nodes, self.num_features)

    @property
    def columns(self):
        """``(col_start, col_stop)``: the columns this rank holds."""
        return (self.col_start, self.col_stop)

    @property
    def sparse(self):
        """Whether the local columns are a scipy CSR matrix."""
        return not isinstance(self.local, np.ndarray)

    def __repr__(self):
        return (f"<ColumnFeatureStore {self.num_nodes}x{self.num_features}, columns "
                f"{self.col_start}:{self.col_stop} on rank {self.rank} of {self.p}, "
                f"{'sparse' if self.sparse else 'dense'} {self.dtype}>")

    def rows(self, ids):
        """This rank's columns of rows ``ids``, as stored (dense array or CSR); local.

        Examples
        --------
        >>> import numpy as np, scipy.sparse as sp
        >>> s = ColumnFeatureStore(sp.csr_matrix(np.eye(3)))
        >>> s.rows([1]).toarray().tolist()
        [[0.0, 1.0, 0.0]]
        """
        ids = as_index_array("ColumnFeatureStore.rows", "ids",
                             host_array("ColumnFeatureStore.rows", "ids", ids), self.num_nodes)
        return self.local[np.asarray(ids)]

    def gather(self, ids):
        """This rank's columns of rows ``ids`` as a dense array (len(ids), col_stop - col_start).

        Local: no communication.

        Examples
        --------
        >>> import numpy as np
        >>> ColumnFeatureStore(np.eye(2)).gather([1, 1]).tolist()
        [[0.0, 1.0], [0.0, 1.0]]
        """
        r = self.rows(ids)
        return np.ascontiguousarray(r.toarray()) if hasattr(r, "toarray") else r

    def mask(self, name):
        """Boolean mask of split ``name`` (length n)."""
        m = np.zeros(self.num_nodes, bool)
        m[self.splits[name]] = True
        return m


# -- push-pull -----------------------------------------------------------------------------

def _require_torch(what):
    if torch is None:
        from spla.exceptions import MissingDependency
        raise MissingDependency(f"{what} needs PyTorch; install it with "
                                "`pip install -e \".[train]\"`")


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


def _as_2d_numpy(t):
    t = t.detach()
    return (t if t.is_contiguous() else t.contiguous()).cpu().numpy()


def _matmul(x, w):
    """``x @ w`` for a dense array or CSR ``x`` and a numpy ``w``: a dense numpy array.

    Dense products run in torch, not numpy: numpy's BLAS starts one thread
    per core whatever ``torch.set_num_threads`` says, and under ``mpiexec``
    the ranks' spinning BLAS threads oversubscribe the cores (measured: an
    epoch 20x slower on 2 ranks of a 2-core machine).  Scipy's sparse
    product is single-threaded.
    """
    if hasattr(x, "tocsr"):
        out = x @ w
        return np.asarray(out.toarray() if hasattr(out, "toarray") else out)
    dtype = np.result_type(x.dtype, w.dtype)
    # torch wraps read-only memory (a memory-mapped store) only with a warning.
    x, w = (a.astype(dtype, copy=not a.flags.writeable) for a in (np.asarray(x), np.asarray(w)))
    return (torch.from_numpy(x) @ torch.from_numpy(w)).numpy()


class PushPull(_Function):
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
        np_w = [_as_2d_numpy(w) for w in weights]
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
        np_dtype = np.float64 if dtype == torch.float64 else np.float32
        flat = [(_as_2d_numpy(g).astype(np_dtype, copy=False) if g is not None
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
        # mpi4py's Reduce_scatter takes C int counts: the buffer is one message.
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
    _require_torch("push_pull")
    return PushPull.apply(x_local, plan, comm, *weights)


# -- every rank's layer-1 inputs --------------------------------------------------------------

class StepInput:
    """What push-pull needs of another rank's minibatch: its layer-1 input rows.

    Attributes
    ----------
    input_nodes : int64 array
        ``blocks[0].src_nodes`` of that minibatch.
    num_dst : int
        ``blocks[0].num_dst`` (its first rows: GraphSAGE's root weight
        reads them).

    Examples
    --------
    >>> import numpy as np
    >>> StepInput(np.array([4, 1, 7]), 1)
    StepInput(3 input rows, 1 destinations)
    """

    __slots__ = ("input_nodes", "num_dst")

    def __init__(self, input_nodes, num_dst):
        self.input_nodes = np.asarray(input_nodes, np.int64)
        self.num_dst = as_int("StepInput", "num_dst", num_dst, minimum=0)
        if self.num_dst > self.input_nodes.size:
            fail(DimensionMismatch, "StepInput", "num_dst", f"at most the {self.input_nodes.size}"
                 " input rows", self.num_dst)

    @classmethod
    def of(cls, minibatch):
        """The layer-1 input of a MiniBatch."""
        return cls(minibatch.input_nodes, minibatch.blocks[0].num_dst)

    def __repr__(self):
        return f"StepInput({self.input_nodes.size} input rows, {self.num_dst} destinations)"


def share_inputs(minibatch, comm):
    """Collective: every rank's layer-1 input (``StepInput`` or None), in rank order.

    The alternative to sampling every minibatch of the step on every rank
    (rank-invariant sampling makes both give the same lists).  Which is
    cheaper: this all-gather sends ``(p - 1) * n_in * 8`` bytes per rank,
    under 2 % of push-pull's own ``2 (p - 1) * n_in * hidden * 4`` for
    ``hidden >= 64``; sampling every minibatch costs no bytes but ``p``
    times the sampling work.  Share the inputs unless sampling is much
    cheaper than moving ``8 * n_in`` bytes per minibatch (a fast sampler on
    a slow network).  Bytes are counted under ``'p3.inputs'``.

    Parameters
    ----------
    minibatch : MiniBatch or None
        This rank's minibatch of the step (None when it has none).
    comm : MPI communicator or None
        ``None``: one rank, returns ``[StepInput.of(minibatch)]``.

    Examples
    --------
    >>> import numpy as np, spla
    >>> from sampling import GraphSAGE as Sampler
    >>> A = spla.Matrix.from_coo([0, 1], [1, 0], shape=(2, 2))
    >>> mb = Sampler(A, [1]).sample([np.array([0])], seed=0)[0]
    >>> share_inputs(mb, None)
    [StepInput(2 input rows, 1 destinations)]
    """
    mine = None if minibatch is None else (minibatch if isinstance(minibatch, StepInput)
                                           else StepInput.of(minibatch))
    if comm is None or comm.Get_size() == 1:
        return [mine]
    with C.collective_checks(comm):
        ids = (np.zeros(0, np.int64) if mine is None
               else as_index_array("share_inputs", "minibatch", mine.input_nodes))
    meta = C.allgather_int(comm, [0 if mine is None else 1,
                                  0 if mine is None else mine.num_dst])
    allids, counts = C.allgatherv(comm, np.ascontiguousarray(ids, np.int64), "p3.inputs")
    starts = np.concatenate([[0], np.cumsum(counts)])
    return [StepInput(allids[starts[i]:starts[i + 1]], int(meta[i, 1])) if meta[i, 0] else None
            for i in range(comm.Get_size())]


def _layer_one(mb):
    """(input rows, destinations) of a MiniBatch or StepInput."""
    if isinstance(mb, StepInput):
        return mb.input_nodes, mb.num_dst
    return mb.input_nodes, int(mb.blocks[0].num_dst)


# -- the model -----------------------------------------------------------------------------

def _first_layer_kind(model):
    """'sage' or 'gcn' for a sampling.models GraphSAGE / GCN, else None."""
    from sampling.models import GCN, GCNConv, SAGE, SAGEConv
    layers = getattr(model, "layers", None)
    if not layers:
        return None
    first = layers[0]
    if isinstance(model, SAGE) and type(first) is SAGEConv:
        return "sage"
    if isinstance(model, GCN) and type(first) is GCNConv:
        return "gcn"
    return None


class P3Model(_Module):
    """A GraphSAGE / GCN of ``sampling.models`` whose first layer runs push-pull.

    Built from the data-parallel model (the same parameters on every rank,
    as ``Trainer`` broadcasts them): this rank copies the columns
    ``store.columns`` of the first layer's weights into its own parameters
    (``local_parameters()``, never all-reduced); the first layer's bias
    and layers 2..L are the very modules of ``model`` (shared, not copied)
    and train data-parallel (``replicated_parameters()``).

    Parameters
    ----------
    model : sampling.models.SAGE or sampling.models.GCN
        Its first layer must be linear in its input (SAGEConv, GCNConv);
        anything else is refused: push-pull relies on
        ``sum_r x[:, cols_r] W[cols_r] == x W``.
    store : ColumnFeatureStore
    comm : MPI communicator, optional
        Default ``store.comm``.

    Notes
    -----
    Dropout is ``model``'s, mask for mask: ``sampling.models.feature_dropout`` masks
    element ``(i, j)`` of a minibatch's input by a hash of (a seed drawn
    from torch's generator, ``i * f + j``).  The rank that owns a
    minibatch draws that seed as ``model`` would, the step's seeds are
    all-gathered (one small collective while training with dropout), and
    each rank masks its columns of every minibatch's rows with
    ``spla.dropout(..., row_offsets=)``.  So a training step equals
    ``model``'s on the same minibatch and torch random state, dropout
    included, up to floating-point rounding.

    ``forward(minibatches)`` is collective, and so is the backward pass:
    every rank calls both every step, with the same list of minibatches.

    Examples
    --------
    >>> import numpy as np, torch, spla
    >>> from sampling import GraphSAGE as Sampler
    >>> from sampling.models import SAGE
    >>> A = spla.Matrix.from_coo([0, 1, 2, 3], [1, 2, 3, 0], shape=(4, 4))
    >>> mb = Sampler(A, [2]).sample([np.array([0, 2])], seed=1)[0]
    >>> store = ColumnFeatureStore(np.eye(4))
    >>> _ = torch.manual_seed(0)
    >>> net = SAGE(4, 3, 2, num_layers=1, dropout=0.0).double()
    >>> p3 = P3Model(net, store)
    >>> x = torch.from_numpy(np.eye(4)[mb.input_nodes])
    >>> torch.allclose(p3([mb]), net(x, mb))
    True
    """

    def __init__(self, model, store, comm=None):
        _require_torch("P3Model")
        super().__init__()
        func = "P3Model"
        comm = getattr(store, "comm", None) if comm is None else comm
        comm = None if comm is None else C.as_comm(comm, func)
        with C.collective_checks(comm):
            if not isinstance(store, ColumnFeatureStore):
                fail(DTypeError, func, "store", "a ColumnFeatureStore", describe(store))
            kind = _first_layer_kind(model)
            if kind is None:
                layers = list(getattr(model, "layers", None) or [None])
                fail(InvalidValue, func, "model", "a sampling.models SAGE (GraphSAGE) or GCN (a first "
                     "layer linear in its input: SAGEConv or GCNConv)",
                     f"{type(model).__name__} with first layer {type(layers[0]).__name__}")
            first = model.layers[0]
            if first.in_dim != store.num_features:
                fail(DimensionMismatch, func, "model", f"a first layer of input width "
                     f"{store.num_features} (the store's features)",
                     f"input width {first.in_dim}")
        s, e = store.columns
        self.kind, self.store, self.comm = kind, store, comm
        self.normalize = model.normalize
        self.dropout = model.dropout
        self.num_layers = model.num_layers
        self.hidden = first.out_dim
        self.num_classes = model.layers[-1].out_dim
        # The weight rows of this rank's columns, stored as (f_r, hidden).
        if kind == "sage":
            self.w_root = nn.Parameter(first.lin_root.weight.detach()[:, s:e].t().clone())
            self.w_neigh = nn.Parameter(first.lin_neigh.weight.detach()[:, s:e].t().clone())
            self.bias = first.lin_root.bias
        else:
            self.w = nn.Parameter(first.lin.weight.detach()[:, s:e].t().clone())
            self.bias = first.bias
        self.rest = nn.ModuleList(list(model.layers)[1:])
        # Not a submodule: its first layer's full weights are not this
        # model's parameters (gather_model writes them).
        self.__dict__["_model"] = model

    def local_parameters(self):
        """This rank's weight slices: their gradients are complete, never all-reduce them."""
        return [self.w_root, self.w_neigh] if self.kind == "sage" else [self.w]

    def replicated_parameters(self):
        """The parameters trained data-parallel (all-reduce their gradients)."""
        local = {id(q) for q in self.local_parameters()}
        return [q for q in self.parameters() if id(q) not in local]

    def gather_model(self):
        """Collective: the model given to the constructor, holding this model's parameters.

        Its first layer's weights are gathered from every rank's columns
        (one all-gather per weight, bytes not counted); every other
        parameter is shared with this model already.  For a checkpoint, or
        to compare with a data-parallel run.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from sampling.models import GCN
        >>> net = GCN(4, 3, 2, num_layers=1)
        >>> p3 = P3Model(net, ColumnFeatureStore(np.eye(4, dtype=np.float32)))
        >>> with torch.no_grad():
        ...     _ = p3.w.fill_(0.5)
        >>> p3.gather_model() is net, bool((net.layers[0].lin.weight == 0.5).all())
        (True, True)
        """
        model = self.__dict__["_model"]
        first = model.layers[0]
        if self.kind == "sage":
            pairs = [(self.w_root, first.lin_root.weight), (self.w_neigh, first.lin_neigh.weight)]
        else:
            pairs = [(self.w, first.lin.weight)]
        for mine, full in pairs:
            piece = _as_2d_numpy(mine)  # (f_r, hidden): rows are this rank's columns
            if self.comm is not None and self.comm.Get_size() > 1:
                piece, _ = C.allgatherv(self.comm, piece.reshape(-1), None)
            with torch.no_grad():
                full.copy_(torch.from_numpy(piece.reshape(self.store.num_features, -1).T))
        return model

    def plan(self, minibatches):
        """The ``PushPullPlan`` of a step (one minibatch or None per rank)."""
        rows = [(None, 0) if mb is None else _layer_one(mb) for mb in minibatches]
        counts = [0 if ids is None else int(np.asarray(ids).size) for ids, _ in rows]
        if self.kind == "sage":
            roots = [d for _, d in rows]
            return PushPullPlan(counts, [roots, counts])
        return PushPullPlan(counts)

    def forward(self, minibatches):
        """Logits of this rank's minibatch (``minibatches[rank]``).

        Parameters
        ----------
        minibatches : list of p MiniBatch, StepInput or None
            Every rank's minibatch of this step, in rank order (None for a
            rank without one), the same on every rank: this rank's entry is
            its MiniBatch; another rank's may be its ``StepInput`` (from
            ``share_inputs``) when this rank did not sample it.

        Returns
        -------
        torch.Tensor (batch_size, num_classes)
            ``(0, num_classes)`` on a rank without a minibatch, still tied
            to the graph: call backward on it (``out.sum()``) so the
            collective backward meets the other ranks.
        """
        from sampling.models import block_operators, feature_dropout
        p = 1 if self.comm is None else self.comm.Get_size()
        rank = 0 if self.comm is None else self.comm.Get_rank()
        minibatches = list(minibatches)
        if len(minibatches) != p:  # the same list on every rank: every rank raises
            raise DimensionMismatch(f"P3Model.forward: argument 'minibatches' must hold one "
                                    f"minibatch (or None) per rank, {p}; got {len(minibatches)}")
        # Agreed before the reduce-scatter: this rank's own entry is checked
        # differently from the others (it must be a MiniBatch).
        mb = minibatches[rank]
        # Drawn first, as model's first dropout draws it (nothing is drawn on
        # a rank without a minibatch: its model would not run this step).
        seeds = self._dropout_seeds(mb is not None)
        with C.collective_checks(self.comm):
            for i, one in enumerate(minibatches):
                if isinstance(one, StepInput) and i != rank:
                    continue  # checked by its own rank, in share_inputs
                if one is not None and len(getattr(one, "blocks", ())) != self.num_layers:
                    fail(DimensionMismatch, "P3Model.forward", f"minibatches[{i}]",
                         f"a MiniBatch of {self.num_layers} blocks (the model's layers)",
                         describe(one) if not hasattr(one, "blocks")
                         else f"{len(one.blocks)} blocks")
            ids = [_layer_one(mb)[0] for mb in minibatches if mb is not None]
            ids = np.concatenate([np.asarray(host_array("P3Model.forward", "minibatches", a))
                                  for a in ids]) if ids else np.zeros(0, np.int64)
            x_local = self.store.rows(ids)
            plan = self.plan(minibatches)
        weights = self.local_parameters()
        if not self.store.sparse:
            x_local = x_local.astype(_numpy_of(weights[0].dtype), copy=False)
        if seeds is not None:
            x_local = self._input_dropout(x_local, plan, seeds)
        heads = PushPull.apply(x_local, plan, self.comm, *weights)
        if mb is None:
            # Keep the (empty) output in the graph so backward reaches PushPull.
            tie = sum(h.sum() for h in heads) * 0
            return heads[0].new_zeros((0, self.num_classes)) + tie
        ops = block_operators(mb, self.normalize, heads[0].dtype)
        from sampling.models import block_matmul
        if self.kind == "sage":
            root, neigh = heads
            h = root + self.bias + block_matmul(ops[0], neigh)
        else:
            h = block_matmul(ops[0], heads[0]) + self.bias
        for layer, op in zip(self.rest, ops[1:]):
            h = torch.relu(h)
            h = feature_dropout(h, self.dropout, self.training)
            h = layer(h, op)
        return h


    def _dropout_seeds(self, has_minibatch):
        """Every rank's seed of its first-layer dropout this step (0: none), or None.

        Collective while training with dropout.
        """
        if not (self.training and self.dropout > 0):
            return None
        mine = int(torch.randint(0, 2 ** 62, (1,))) if has_minibatch else 0
        if self.comm is None or self.comm.Get_size() == 1:
            return [mine]
        return [int(v) for v in C.allgather_int(self.comm, [mine])[:, 0]]

    def _input_dropout(self, x_local, plan, seeds):
        """``x_local`` with each minibatch's rows masked as ``model`` masks its input.

        Row ``i`` of a minibatch's input is its ``i``-th input vertex: the
        element of column ``c`` is at flat position ``i * f + c`` there.
        """
        import scipy.sparse as sp
        import spla
        f, (c0, _) = self.store.num_features, self.store.columns
        pieces = []
        for i in range(plan.p):
            a, b = int(plan.starts[i]), int(plan.starts[i + 1])
            if a == b:
                continue
            offsets = np.arange(b - a, dtype=np.int64) * f + c0
            piece = x_local[a:b]
            if sp.issparse(piece):
                M = spla.Matrix.from_csr(piece.indptr, piece.indices, piece.data, piece.shape)
                D = spla.dropout(M, self.dropout, seed=seeds[i], row_offsets=offsets)
                piece = sp.csr_matrix((D.values, D.indices, D.indptr), shape=piece.shape)
            else:
                piece = spla.dropout(np.ascontiguousarray(piece), self.dropout,
                                     seed=seeds[i], row_offsets=offsets)
            pieces.append(piece)
        if not pieces:
            return x_local
        if sp.issparse(x_local):
            return sp.vstack(pieces, format="csr")
        return np.concatenate(pieces)


def _numpy_of(dtype):
    return np.float64 if dtype == torch.float64 else np.float32


# -- bytes ---------------------------------------------------------------------------------

def byte_model(*, f, hidden, batch, fanouts, p, itemsize=4, index_size=8, sage=True,
               input_rows=None, dst_rows=None):
    """Bytes one rank sends per step: row fetch versus push-pull.

    A minibatch of ``batch`` seeds sampled with ``fanouts`` (output layer
    first, as the samplers take them) reads at most
    ``n_in = batch * prod(1 + k)`` input vertices, ``n_dst = n_in / (1 +
    fanouts[-1])`` of them destinations of the first block.  That bound
    ignores repeated vertices, which real graphs have (measured on a
    random graph: 1.5-2.3x fewer rows than the bound); pass the measured
    means as ``input_rows`` / ``dst_rows`` for a prediction to compare
    with counted bytes.

    * Row fetch (1D rows, uniform owners): ``(p-1)/p`` of the rows live
      elsewhere; each costs an id (``index_size``) and a row
      (``f * itemsize``).
    * Push-pull: the reduce-scatter sends the summed buffer of all ``p``
      minibatches less this rank's own, ``(p-1) * rows * hidden`` values
      (``rows = n_in``, plus ``n_dst`` for GraphSAGE's root head); the
      backward all-gather sends this rank's gradients to ``p-1`` ranks,
      the same count.  (Every minibatch the same size: with unequal ones
      these are the means over the ranks.)

    Returns
    -------
    dict
        'row_fetch', 'push_pull' (bytes per rank per step), 'input_rows',
        'dst_rows' and 'crossover_f' (the f above which push-pull sends
        less).

    Examples
    --------
    >>> m = byte_model(f=1024, hidden=64, batch=10, fanouts=[], p=4, sage=False)
    >>> m["row_fetch"], m["push_pull"]
    (30780, 15360)
    >>> byte_model(f=8, hidden=4, batch=2, fanouts=[3, 2], p=2)["input_rows"]
    24
    """
    func = "byte_model"
    f = as_int(func, "f", f, minimum=1)
    hidden = as_int(func, "hidden", hidden, minimum=1)
    batch = as_int(func, "batch", batch, minimum=0)
    p = as_int(func, "p", p, minimum=1)
    fan = [as_int(func, "fanouts", k, minimum=0) for k in fanouts]
    n_in, n_dst = batch, 0
    for k in fan:  # output layer first: the last fanout reaches the input layer
        n_in, n_dst = n_in * (1 + k), n_in
    if input_rows is not None:
        n_in = _as_count(func, "input_rows", input_rows)
    if dst_rows is not None:
        n_dst = _as_count(func, "dst_rows", dst_rows)
    if n_dst > n_in:
        fail(InvalidValue, func, "dst_rows", f"at most the input rows ({n_in})", n_dst)
    frac = (p - 1) / p
    fetch = frac * n_in * (index_size + f * itemsize)
    rows = n_in + (n_dst if sage else 0)
    push = 2 * (p - 1) * rows * hidden * itemsize
    # Push-pull wins once f * itemsize * frac * n_in exceeds push - id bytes.
    per_f = frac * n_in * itemsize
    cross = (push - frac * n_in * index_size) / per_f if per_f else float("inf")
    return {"row_fetch": int(round(fetch)), "push_pull": int(round(push)),
            "input_rows": n_in, "dst_rows": n_dst, "crossover_f": cross}


def _as_count(func, arg, x):
    """A non-negative count, integral or a measured mean (float)."""
    if isinstance(x, (float, np.floating)):
        if not (np.isfinite(x) and x >= 0):
            fail(InvalidValue, func, arg, "a count >= 0 (an integer or a finite mean)", x)
        return float(x)
    return as_int(func, arg, x, minimum=0)


__all__ = ["column_range", "ColumnFeatureStore", "PushPullPlan", "PushPull", "push_pull",
           "StepInput", "share_inputs", "P3Model", "byte_model"]
