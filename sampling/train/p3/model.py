"""``P3Model``: a ``sampling.models`` GraphSAGE / GCN whose first layer runs push-pull.

This rank keeps its columns of the first layer's weights (never
all-reduced); the first layer's bias and layers 2..L are the wrapped
model's own modules, trained data-parallel.  A step's forward and backward
passes are collective.
"""

import numpy as np

from spla import comm as C
from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue

from sampling.datasets.validation import host_array
from sampling.train.p3._torch import Module, host_numpy, nn, numpy_float, require_torch, torch
from sampling.train.p3.columns import ColumnFeatureStore
from sampling.train.p3.inputs import StepInput
from sampling.train.p3.pushpull import PushPull, PushPullPlan


def _layer_one(mb):
    """(input rows, destinations) of a MiniBatch or StepInput."""
    if isinstance(mb, StepInput):
        return mb.input_nodes, mb.num_dst
    return mb.input_nodes, int(mb.blocks[0].num_dst)


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


def _check_wrappable(func, model, store):
    """The kind of ``model``'s first layer ('sage' or 'gcn'), checked against ``store``."""
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
    return kind


def _stacked_ids(minibatches):
    """The layer-1 input vertices of every minibatch of the step, rank 0's first."""
    ids = [_layer_one(mb)[0] for mb in minibatches if mb is not None]
    return np.concatenate([np.asarray(host_array("P3Model.forward", "minibatches", a))
                           for a in ids]) if ids else np.zeros(0, np.int64)


class P3Model(Module):
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
        require_torch("P3Model")
        super().__init__()
        func = "P3Model"
        comm = getattr(store, "comm", None) if comm is None else comm
        comm = None if comm is None else C.as_comm(comm, func)
        with C.collective_checks(comm):
            kind = _check_wrappable(func, model, store)
        first = model.layers[0]
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
            piece = host_numpy(mine)  # (f_r, hidden): rows are this rank's columns
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
            self._check_minibatches(minibatches, rank)
            x_local = self.store.rows(_stacked_ids(minibatches))
            plan = self.plan(minibatches)
        weights = self.local_parameters()
        if not self.store.sparse:
            x_local = x_local.astype(numpy_float(weights[0].dtype), copy=False)
        if seeds is not None:
            x_local = self._input_dropout(x_local, plan, seeds)
        heads = PushPull.apply(x_local, plan, self.comm, *weights)
        if mb is None:
            # Keep the (empty) output in the graph so backward reaches PushPull.
            tie = sum(h.sum() for h in heads) * 0
            return heads[0].new_zeros((0, self.num_classes)) + tie
        return self._after_push_pull(mb, heads)

    def _check_minibatches(self, minibatches, rank):
        """Each entry holds one block per layer; another rank's StepInput is its own to check."""
        for i, one in enumerate(minibatches):
            if isinstance(one, StepInput) and i != rank:
                continue  # checked by its own rank, in share_inputs
            if one is not None and len(getattr(one, "blocks", ())) != self.num_layers:
                fail(DimensionMismatch, "P3Model.forward", f"minibatches[{i}]",
                     f"a MiniBatch of {self.num_layers} blocks (the model's layers)",
                     describe(one) if not hasattr(one, "blocks")
                     else f"{len(one.blocks)} blocks")

    def _after_push_pull(self, mb, heads):
        """Logits of ``mb`` from push-pull's heads: the first layer's aggregation, then 2..L."""
        from sampling.models import block_matmul, block_operators, feature_dropout
        # On the heads' device: the blocks (sampled on the host) are copied there.
        ops = block_operators(mb, self.normalize, heads[0].dtype, heads[0].device)
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


__all__ = ["P3Model"]
