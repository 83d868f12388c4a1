"""GNN models (PyTorch) that consume ``MiniBatch`` blocks directly.

* ``GraphSAGE``: mean aggregation with a root weight, ReLU and dropout
  (Hamilton et al., 2017): for each block,
  ``h_dst = lin_root(h[:n_dst]) + lin_neigh(mean of the sampled neighbours)``,
  where the mean is the block adjacency, row-normalised (its values, or ones
  for a structural block; with replacement the values are draw counts, so
  the mean counts a neighbour drawn twice twice), times ``h``.
* ``GCN``: the model LADIES and FastGCN train, ``h = act(adj @ (h W) + b)``
  with the block's adjacency as the sampler normalised it.

Aggregation is a sparse-dense product, ``SparseMatMul``, a custom
``torch.autograd.Function`` (forward ``A @ X``, backward ``A^T @ G``) on
torch sparse CSR tensors, so there is no Python loop over vertices and the
backward pass is exactly the transpose product (checked with
``torch.autograd.gradcheck`` in the tests).

The model protocol (what ``sampling.train.Trainer`` calls, and what a
custom model given to it as ``Trainer(..., model=...)`` implements):
``model(x, minibatch)`` takes ``x``, a float32 tensor of the features of
``minibatch.input_nodes`` (one row per vertex of ``blocks[0].src_nodes``),
and the ``MiniBatch`` itself, and returns the logits of
``minibatch.seeds``: a float tensor of shape ``(minibatch.batch_size,
num_classes)``.  The blocks run input layer first; block ``i``'s rows are
its destinations, whose features are the first ``num_dst`` rows of its
sources, so ``h[:block.num_dst]`` are a layer's root features and
``BlockOperator(block) @ h`` the mean over the sampled neighbours.  For
example, a model that averages twice and classifies::

    class MeanMLP(torch.nn.Module):
        def __init__(self, in_dim, num_classes):
            super().__init__()
            self.lin = torch.nn.Linear(in_dim, num_classes)

        def forward(self, x, minibatch):
            for block in minibatch.blocks:      # input layer first
                x = BlockOperator(block) @ x    # n_src rows -> n_dst rows
            return self.lin(x)                  # one row per seed

PyTorch is an optional dependency (``pip install -e ".[train]"``): this
module imports without it, and building a model or an operator then raises
``spla.MissingDependency`` saying what to install.
"""

import warnings

import numpy as np

from spla.util import row_ids
from spla.exceptions import DimensionMismatch, InvalidValue, MissingDependency

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - exercised without torch only
    torch = nn = None

_Module = object if nn is None else nn.Module
_Function = object if torch is None else torch.autograd.Function


def require_torch(what="sampling.models"):
    """Raise ``MissingDependency`` when PyTorch is not installed."""
    if torch is None:
        raise MissingDependency(f"{what} needs PyTorch; install it with "
                                "`pip install -e \".[train]\"`")


def _to_torch(a, device, dtype=None):
    """A torch tensor from a numpy or cupy array (cupy through DLPack, no copy)."""
    if isinstance(a, np.ndarray):
        t = torch.from_numpy(np.array(a, copy=True) if not a.flags.writeable else a)
    else:  # cupy
        t = torch.from_dlpack(a)
    if dtype is not None:
        t = t.to(dtype)
    return t.to(device)


class BlockOperator:
    """A block's adjacency as torch sparse CSR tensors: ``A`` and ``A^T``.

    Parameters
    ----------
    block : sampling.Block or spla.Matrix
        ``n_dst x n_src``.
    normalize : bool, default True
        Scale each row to sum 1 (a row with no entries stays zero): the mean
        over the sampled neighbours.  False keeps the values as they are.
    dtype : torch dtype, default torch.float32
    device : torch device, default 'cpu'
    """

    def __init__(self, block, normalize=True, dtype=None, device="cpu"):
        require_torch("BlockOperator")
        adj = getattr(block, "adj", block)
        dtype = dtype or torch.float32
        m, n = adj.shape
        xp = adj.xp
        indptr = adj.indptr
        indices = adj.indices
        vals = (xp.ones(adj.nnz, np.float64) if adj.values is None
                else adj.values.astype(np.float64))
        if normalize and adj.nnz:
            rows = row_ids(indptr)
            sums = xp.bincount(rows, weights=vals, minlength=m)
            sums = xp.where(sums == 0, 1.0, sums)
            vals = vals / sums[rows]
        self.shape = (m, n)
        self.num_dst, self.num_src = m, n
        self.device = torch.device(device)
        crow = _to_torch(indptr, self.device, torch.int64)
        col = _to_torch(indices, self.device, torch.int64)
        val = _to_torch(vals, self.device, dtype)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support")
            self.A = torch.sparse_csr_tensor(crow, col, val, size=(m, n), check_invariants=False)
            # The transpose, built once (CSR of A^T = CSC of A).
            if adj.nnz:
                self.AT = self.A.t().to_sparse_csr()
            else:
                self.AT = torch.sparse_csr_tensor(
                    torch.zeros(n + 1, dtype=torch.int64, device=self.device), col, val,
                    size=(n, m), check_invariants=False)

    def __matmul__(self, x):
        return SparseMatMul.apply(x, self)


class SparseMatMul(_Function):
    """``A @ X`` for a ``BlockOperator`` A; the gradient is ``A^T @ G``.

    Only ``X`` is differentiable (the adjacency is data).
    """

    @staticmethod
    def forward(ctx, x, op):
        ctx.op = op
        if x.shape[0] != op.num_src:
            raise DimensionMismatch(f"SparseMatMul: argument 'x' must have {op.num_src} rows "
                                    f"(the block's source vertices); got {tuple(x.shape)}")
        return _spmm(op.A, x)

    @staticmethod
    def backward(ctx, grad):
        return _spmm(ctx.op.AT, grad.contiguous()), None


def _spmm(A, x):
    if A.dtype != x.dtype:
        A = A.to(x.dtype)
    if A._nnz() == 0:
        return x.new_zeros((A.shape[0],) + tuple(x.shape[1:]))
    return torch.sparse.mm(A, x)


def spmm(op, x):
    """``op.A @ x`` with the exact transpose-product gradient."""
    return SparseMatMul.apply(x, op)


def block_operators(blocks, normalize, dtype=None, device="cpu"):
    """``BlockOperator`` of each block of a MiniBatch (or a list of blocks)."""
    blocks = getattr(blocks, "blocks", blocks)
    return [b if isinstance(b, BlockOperator) else BlockOperator(b, normalize, dtype, device)
            for b in blocks]


class SAGEConv(_Module):
    """One GraphSAGE layer, mean aggregator with root weight."""

    def __init__(self, in_dim, out_dim):
        require_torch(type(self).__name__)
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.lin_root = nn.Linear(in_dim, out_dim, bias=True)
        self.lin_neigh = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, h, op):
        h_dst = h[:op.num_dst]
        if self.out_dim < self.in_dim:
            # mean(h) W = mean(h W): transform first when it shrinks the rows.
            neigh = spmm(op, self.lin_neigh(h))
        else:
            neigh = self.lin_neigh(spmm(op, h))
        return self.lin_root(h_dst) + neigh


class GCNConv(_Module):
    """One GCN layer on a layer-wise sampled block: ``adj @ (h W) + b``."""

    def __init__(self, in_dim, out_dim):
        require_torch(type(self).__name__)
        super().__init__()
        self.lin = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(self, h, op):
        return spmm(op, self.lin(h)) + self.bias


class _BlockModel(_Module):
    """Layers applied block by block, ReLU and dropout between them."""

    normalize = True
    conv = None

    def __init__(self, in_dim, hidden, out_dim, num_layers=2, dropout=0.5):
        require_torch(type(self).__name__)
        super().__init__()
        if int(num_layers) < 1:
            raise InvalidValue(f"{type(self).__name__}: argument 'num_layers' must be an "
                               f"integer >= 1; got {num_layers}")
        if not 0.0 <= float(dropout) < 1.0:
            raise InvalidValue(f"{type(self).__name__}: argument 'dropout' must be in [0, 1); "
                               f"got {dropout}")
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        self.layers = nn.ModuleList(self.conv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = float(dropout)
        self.num_layers = int(num_layers)

    def forward(self, x, blocks):
        """Logits of the seeds.

        Parameters
        ----------
        x : torch.Tensor (n_input, in_dim)
            Features of ``minibatch.input_nodes`` (``blocks[0].src_nodes``).
        blocks : MiniBatch, list of Block, or list of BlockOperator
            Input layer first.
        """
        ops = block_operators(blocks, self.normalize, x.dtype, x.device)
        if len(ops) != self.num_layers:
            raise DimensionMismatch(f"{type(self).__name__}: the minibatch has {len(ops)} "
                                    f"blocks; the model has {self.num_layers} layers (use as "
                                    "many fanouts / layer sizes as layers)")
        h = x
        for i, (layer, op) in enumerate(zip(self.layers, ops)):
            h = nn.functional.dropout(h, self.dropout, self.training)
            h = layer(h, op)
            if i < len(ops) - 1:
                h = torch.relu(h)
        return h


class GraphSAGE(_BlockModel):
    """GraphSAGE with mean aggregation (for ``sampling.GraphSAGE`` minibatches).

    Parameters
    ----------
    in_dim, hidden, out_dim : int
    num_layers : int, default 2
        Must equal the number of blocks (the sampler's fanouts).
    dropout : float, default 0.5
        Applied to the input of every layer while training.

    Use it as ``model(features_of(mb.input_nodes), mb)`` for a MiniBatch
    ``mb`` of ``sampling.GraphSAGE``; the result holds the seeds' logits.
    """

    conv = SAGEConv
    normalize = True


class GCN(_BlockModel):
    """A GCN for LADIES / FastGCN minibatches (block values used as given)."""

    conv = GCNConv
    normalize = False


def model_for(sampler_name, in_dim, hidden, out_dim, num_layers, dropout):
    """The model a sampler trains: 'sage' -> GraphSAGE, 'ladies'/'fastgcn' -> GCN."""
    if sampler_name == "sage":
        return GraphSAGE(in_dim, hidden, out_dim, num_layers, dropout)
    if sampler_name in ("ladies", "fastgcn"):
        return GCN(in_dim, hidden, out_dim, num_layers, dropout)
    raise InvalidValue(f"model_for: argument 'sampler_name' must be 'sage', 'ladies' or "
                       f"'fastgcn'; got {sampler_name!r}")


__all__ = ["require_torch", "BlockOperator", "SparseMatMul", "spmm", "block_operators", "SAGEConv", "GCNConv",
           "GraphSAGE", "GCN", "model_for"]
