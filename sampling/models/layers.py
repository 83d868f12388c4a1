"""GNN models (PyTorch) that consume ``MiniBatch`` blocks directly.

* ``SAGE``: GraphSAGE, mean aggregation with a root weight, ReLU and dropout
  (Hamilton et al., 2017): for each block,
  ``h_dst = lin_root(h[:n_dst]) + lin_neigh(mean of the sampled neighbours)``,
  where the mean is the block adjacency, row-normalised (its values, or ones
  for a structural block; with replacement the values are draw counts, so
  the mean counts a neighbour drawn twice twice), times ``h``.
* ``GCN``: the model LADIES and FastGCN train, ``h = act(adj @ (h W) + b)``
  with the block's adjacency as the sampler normalised it.

Aggregation is a sparse-dense product, ``SparseMatMul``, a custom
``torch.autograd.Function`` (forward ``A @ X``, backward ``A^T @ G``), so
there is no Python loop over vertices and the backward pass is exactly the
transpose product (checked with ``torch.autograd.gradcheck`` in the tests).
On the CPU both products are ``spla.spmm``, parallel numba kernels on the
block's CSR arrays sharing memory with the tensors (``A^T`` is never
formed: its pattern is a counting sort, made only when a gradient needs
it); on a GPU they are ``torch.sparse.mm`` on CSR tensors.

Speed on the CPU, where a training step is mostly these layers:

* dropout draws its mask with ``spla.dropout`` (a counter-based hash keyed
  by a seed from torch's generator; torch's own Bernoulli draws took over
  half of a GraphSAGE step);
* a GraphSAGE layer takes its root rows and the aggregation from one
  autograd node (``h[:n_dst]`` and ``A @ h``), so their gradients meet in one
  tensor instead of a zero-filled copy of ``h`` per slice, and adds the two
  linear maps in place;
* each layer aggregates before or after its linear map, whichever costs
  fewer multiply-adds for that block's shape (``(A h) W = A (h W)``).

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

import spla
from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.optional import optional_import, require
from spla.util import row_ids

torch = optional_import("torch")
nn = None if torch is None else torch.nn

_Module = object if nn is None else nn.Module
_Function = object if torch is None else torch.autograd.Function


def require_torch(what="sampling.models.layers"):
    """Raise ``MissingDependency`` when PyTorch is not installed."""
    if torch is None:
        require("torch", what=what, needs="PyTorch")


def _to_torch(a, device, dtype=None):
    """A torch tensor from a numpy or cupy array (cupy through DLPack, no copy)."""
    if isinstance(a, np.ndarray):
        t = torch.from_numpy(np.array(a, copy=True) if not a.flags.writeable else a)
    else:  # cupy
        t = torch.from_dlpack(a)
    if dtype is not None:
        t = t.to(dtype)
    return t.to(device)


def _numpy_dtype(dtype):
    """The numpy twin of a torch float32/float64 dtype, else None (torch.sparse then)."""
    return {torch.float32: np.float32, torch.float64: np.float64}.get(dtype)


def _as_numpy(t):
    """A CPU tensor's data as a C-contiguous numpy array, without a copy when it is one."""
    t = t.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    return t.numpy()


class BlockOperator:
    """A block's adjacency, row-normalised, as the operand of ``A @ X`` and ``A^T @ G``.

    On the CPU the products run spla's parallel kernels (``spla.spmm``) on
    the block's CSR arrays, sharing memory with the torch tensors (no
    copies); ``A^T`` is never formed as a matrix (its pattern is built by a
    counting sort the first time a gradient needs it).  On a GPU they run
    ``torch.sparse.mm`` on CSR tensors.

    Parameters
    ----------
    block : sampling.Block or spla.Matrix
        ``n_dst x n_src``.
    normalize : bool, default True
        Scale each row to sum 1 (a row with no entries stays zero): the mean
        over the sampled neighbours.  False keeps the values as they are.
    dtype : torch dtype, default torch.float32
        The values' precision; a product runs in its operand's precision.
    device : torch device, default 'cpu'

    Attributes
    ----------
    shape, num_dst, num_src, nnz
    matrix : spla.Matrix
        The (normalised) adjacency with values of ``dtype``, on the block's
        device.
    A, AT : torch sparse CSR tensors
        ``A`` and its transpose, built on first access (the GPU products use
        them; on the CPU they are only for inspection).

    Examples
    --------
    >>> import numpy as np, torch, spla
    >>> from sampling.models.layers import BlockOperator
    >>> op = BlockOperator(spla.Matrix.from_coo([0, 0, 1], [0, 2, 1], shape=(2, 3)))
    >>> op @ torch.tensor([[1.0], [2.0], [3.0]])     # the mean over each row's columns
    tensor([[2.],
            [2.]])
    """

    def __init__(self, block, normalize=True, dtype=None, device="cpu"):
        require_torch("BlockOperator")
        adj = getattr(block, "adj", block)
        if not isinstance(adj, spla.Matrix):
            fail(DTypeError, "BlockOperator", "block", "a sampling.Block or a spla.Matrix",
                 describe(adj))
        dtype = dtype or torch.float32
        m, n = adj.shape
        np_dtype = _numpy_dtype(dtype) or np.float64
        # Normalise in float64, then round once to the operator's precision.
        if normalize and adj.nnz and adj.is_structural:
            # A sampled block's usual case: the mean is 1 / degree (what
            # normalize_rows gives a structural row, bit for bit), in a few
            # array operations and no device-to-host read on a GPU.
            xp, deg = adj.xp, adj.row_degrees()
            inv = (1.0 / xp.maximum(deg, 1)).astype(np_dtype)
            M = adj.with_values(np.repeat(inv, deg) if xp is np
                                else inv[row_ids(adj.indptr, adj.nnz)])
        else:
            M = adj.astype(np.float64) if adj.dtype != np.float64 else adj
            if normalize and adj.nnz:
                M = spla.normalize_rows(M)
        self.matrix = M if M.dtype == np_dtype else M.astype(np_dtype)
        self.shape = (m, n)
        self.num_dst, self.num_src = m, n
        self.nnz = adj.nnz
        self.dtype = dtype
        self.device = torch.device(device)
        self._by_dtype = {np.dtype(np_dtype): self.matrix}
        self._A = self._AT = None

    # -- torch sparse tensors (GPU products, inspection) -------------------------------
    @property
    def A(self):
        if self._A is None:
            M = self.matrix
            crow = _to_torch(M.indptr, self.device, torch.int64)
            col = _to_torch(M.indices, self.device, torch.int64)
            val = _to_torch(M.values, self.device, self.dtype)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support")
                self._A = torch.sparse_csr_tensor(crow, col, val, size=self.shape,
                                                  check_invariants=False)
        return self._A

    @property
    def AT(self):
        if self._AT is None:
            m, n = self.shape
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support")
                if self.nnz:
                    # CSR of A^T = CSC of A.
                    self._AT = self.A.t().to_sparse_csr()
                else:
                    A = self.A
                    self._AT = torch.sparse_csr_tensor(
                        torch.zeros(n + 1, dtype=torch.int64, device=self.device),
                        A.col_indices(), A.values(), size=(n, m), check_invariants=False)
        return self._AT

    def _on_cpu(self, x):
        return (x.device.type == "cpu" and self.matrix.device == "cpu"
                and _numpy_dtype(x.dtype) is not None)

    def _matrix_in(self, np_dtype):
        """The operator's matrix with values in ``np_dtype`` (kept for the next call)."""
        np_dtype = np.dtype(np_dtype)
        M = self._by_dtype.get(np_dtype)
        if M is None:
            M = self.matrix.astype(np_dtype)
            self._by_dtype[np_dtype] = M
        return M

    def product(self, x, transpose=False):
        """``A @ x`` (``A^T @ x`` with ``transpose``), outside autograd: a new tensor."""
        rows = self.num_src if transpose else self.num_dst
        if self._on_cpu(x):
            out = torch.empty((rows,) + tuple(x.shape[1:]), dtype=x.dtype)
            spla.spmm(self._matrix_in(_numpy_dtype(x.dtype)), _as_numpy(x),
                      transpose=transpose, out=out.numpy())
            return out
        A = self.AT if transpose else self.A
        if A.dtype != x.dtype:
            A = A.to(x.dtype)
        if self.nnz == 0:
            return x.new_zeros((rows,) + tuple(x.shape[1:]))
        return torch.sparse.mm(A, x)

    def __matmul__(self, x):
        return SparseMatMul.apply(x, self)


class SparseMatMul(_Function):
    """``A @ X`` for a ``BlockOperator`` A; the gradient is ``A^T @ G``.

    Only ``X`` is differentiable (the adjacency is data).  The backward pass
    is itself a differentiable product (``A^T @ G``, whose gradient is
    ``A @ G'``), so higher derivatives work too.
    """

    @staticmethod
    def forward(ctx, x, op):
        ctx.op = op
        if x.dim() not in (1, 2) or x.shape[0] != op.num_src:
            raise DimensionMismatch(f"SparseMatMul: argument 'x' must have {op.num_src} rows "
                                    f"(the block's source vertices); got {tuple(x.shape)}")
        return op.product(x)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None
        return _SparseMatMulT.apply(grad, ctx.op), None


class _SparseMatMulT(_Function):
    """``A^T @ G``, the backward of ``SparseMatMul``; its own gradient is ``A @ G'``."""

    @staticmethod
    def forward(ctx, g, op):
        ctx.op = op
        return op.product(g, transpose=True)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None
        return SparseMatMul.apply(grad, ctx.op), None


class _RootAndMean(_Function):
    """``(h[:n_dst], A @ h)``: a layer's root rows and aggregation, one gradient.

    Autograd would send the root rows' gradient through a slice (a zero
    tensor of ``h``'s shape, a copy into it, and a sum with the aggregation's
    gradient); here the gradient is ``A^T @ G_mean`` with ``G_root`` added to
    its first rows in place.
    """

    @staticmethod
    def forward(ctx, h, op):
        ctx.op = op
        mean = SparseMatMul.forward(ctx, h, op)
        return h[:op.num_dst], mean

    @staticmethod
    def backward(ctx, g_root, g_mean):
        if not ctx.needs_input_grad[0]:
            return None, None
        op = ctx.op
        if g_mean is None:
            g_mean = g_root.new_zeros((op.num_dst,) + tuple(g_root.shape[1:]))
        grad = _SparseMatMulT.apply(g_mean, op)
        if g_root is not None:
            if torch.is_grad_enabled():  # double backward: keep the sum in the graph
                return grad.index_add(0, torch.arange(op.num_dst, device=grad.device),
                                      g_root), None
            grad[:op.num_dst] += g_root
        return grad, None


def block_matmul(op, x):
    """``op.A @ x`` with the exact transpose-product gradient (``op`` a ``BlockOperator``)."""
    return SparseMatMul.apply(x, op)


def block_operators(blocks, normalize, dtype=None, device="cpu"):
    """``BlockOperator`` of each block of a MiniBatch (or a list of blocks)."""
    blocks = getattr(blocks, "blocks", blocks)
    return [b if isinstance(b, BlockOperator) else BlockOperator(b, normalize, dtype, device)
            for b in blocks]


class _Dropout(_Function):
    """Dropout with a counter-based mask (``spla.dropout``): the backward is the same call."""

    @staticmethod
    def forward(ctx, x, p, seed):
        ctx.p, ctx.seed = p, seed
        out = torch.empty(x.shape, dtype=x.dtype)
        spla.dropout(_as_numpy(x), p, seed=seed, out=out.numpy())
        return out

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return None, None, None
        return _Dropout.apply(grad, ctx.p, ctx.seed), None, None


def feature_dropout(x, p, training=True):
    """``torch.nn.functional.dropout(x, p, training)``, faster on the CPU.

    On the CPU (float32/float64) the mask comes from ``spla.dropout``, a
    hash of (a seed drawn from torch's default generator, element index): a
    few times faster than torch's Bernoulli draws, and reproducible under
    ``torch.manual_seed`` as torch's own dropout is.  Elsewhere it is
    torch's dropout.

    Examples
    --------
    >>> import torch
    >>> from sampling.models import feature_dropout
    >>> _ = torch.manual_seed(0)
    >>> y = feature_dropout(torch.ones(2, 3), 0.5)
    >>> sorted(set(y.flatten().tolist())) in ([0.0, 2.0], [0.0], [2.0])
    True
    >>> torch.equal(feature_dropout(torch.ones(2, 3), 0.5, training=False), torch.ones(2, 3))
    True
    """
    if not training or p == 0.0:
        return x
    if x.device.type != "cpu" or _numpy_dtype(x.dtype) is None:
        return nn.functional.dropout(x, p, True)
    seed = int(torch.randint(0, 2 ** 62, (1,)))
    return _Dropout.apply(x, float(p), seed)


def _transform_first(op, in_dim, out_dim):
    """Whether ``A @ (h W)`` costs less than ``(A @ h) W`` for this block.

    The two are equal; the cost counts multiply-adds, a sparse one (a
    gathered row) as ``_SPARSE_COST`` dense ones (a measured ratio of the
    CPU kernels: the dense product runs from cache, the gather from memory).
    """
    aggregate_first = op.nnz * in_dim * _SPARSE_COST + op.num_dst * in_dim * out_dim
    transform_first = op.num_src * in_dim * out_dim + op.nnz * out_dim * _SPARSE_COST
    return transform_first < aggregate_first


#: Cost of one sparse multiply-add in dense ones (2 threads: spla.spmm runs
#: ~3.7e9 of them per second on a sampled block, torch's mm ~3e10).
_SPARSE_COST = 8


class SAGEConv(_Module):
    """One GraphSAGE layer, mean aggregator with root weight."""

    def __init__(self, in_dim, out_dim):
        require_torch(type(self).__name__)
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.lin_root = nn.Linear(in_dim, out_dim, bias=True)
        self.lin_neigh = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, h, op):
        if _transform_first(op, self.in_dim, self.out_dim):
            return self.lin_root(h[:op.num_dst]) + block_matmul(op, self.lin_neigh(h))
        h_dst, mean = _RootAndMean.apply(h, op)
        # root + mean W_neigh^T accumulated in place into the root product: no
        # pass for the sum, no copy (autograd needs neither addmm's output nor
        # the root product's).
        return self.lin_root(h_dst).addmm_(mean, self.lin_neigh.weight.t())


class GCNConv(_Module):
    """One GCN layer on a layer-wise sampled block: ``adj @ (h W) + b``."""

    def __init__(self, in_dim, out_dim):
        require_torch(type(self).__name__)
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.lin = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_dim))

    def forward(self, h, op):
        if _transform_first(op, self.in_dim, self.out_dim):
            return block_matmul(op, self.lin(h)) + self.bias
        return self.lin(block_matmul(op, h)) + self.bias


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
            h = feature_dropout(h, self.dropout, self.training)
            h = layer(h, op)
            if i < len(ops) - 1:
                h = torch.relu(h)
        return h


class SAGE(_BlockModel):
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
    """The model a sampler trains: 'sage' -> SAGE, 'ladies'/'fastgcn' -> GCN."""
    if sampler_name == "sage":
        return SAGE(in_dim, hidden, out_dim, num_layers, dropout)
    if sampler_name in ("ladies", "fastgcn"):
        return GCN(in_dim, hidden, out_dim, num_layers, dropout)
    raise InvalidValue(f"model_for: argument 'sampler_name' must be 'sage', 'ladies' or "
                       f"'fastgcn'; got {sampler_name!r}")


__all__ = ["require_torch", "BlockOperator", "SparseMatMul", "block_matmul", "block_operators",
           "feature_dropout",
           "SAGEConv", "GCNConv",
           "SAGE", "GCN", "model_for"]
