"""The model of BNS-GCN: a GCN or GraphSAGE run layer by layer on one rank's part of the graph.

``BNSModel`` applies, per layer, dropout on the rank's rows
(``dropout_by_id``, keyed by global vertex ids so that any partition drops
what one process would), the boundary exchange (``exchange``) and the
layer (``sampling.models.GCNConv`` or ``SAGEConv``).
"""

import numbers

import numpy as np

from sampling.train.bns.halo import _torch, exchange
from spla.checks import as_int, fail
from spla.exceptions import InvalidValue
from spla.optional import optional_import
from spla.random import uniform

MODELS = ("gcn", "sage")
KINDS = {"gcn": "gcn", "sage": "mean"}  # the aggregation matrix of each model
# Streams of the dropout masks: far from the epochs (the boundary draws'
# streams), one per (epoch, layer).
_DROPOUT_STREAM = 1 << 48
_MAX_LAYERS = 1 << 8


def dropout_by_id(h, ids, p, *, seed, epoch, layer):
    """Dropout whose mask is keyed by (seed, epoch, layer, global vertex id, feature).

    Row ``i`` of ``h`` belongs to vertex ``ids[i]``; its mask is the same
    wherever the vertex is computed and on every device (a dense ``h`` on a
    GPU draws it there, with cupy), so a partitioned run drops exactly what
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
    # The uniforms of flat positions ids[i] * d + j, drawn where h lives
    # (on a GPU through cupy when it is there: no host pass, no copy).
    cupy = optional_import("cupy") if h.device.type == "cuda" else None
    if cupy is not None:
        with cupy.cuda.Device(h.device.index if h.device.index is not None
                              else torch.cuda.current_device()):
            keep = uniform(cupy.asarray(ids), seed=seed, stream=stream, width=d) >= p
            mask = torch.from_dlpack(keep)
    else:
        mask = torch.from_numpy(uniform(ids, seed=seed, stream=stream, width=d) >= p)
    return h * (mask.to(device=h.device, dtype=h.dtype) / (1.0 - p))


def _check_dropout(func, dropout):
    """A dropout probability in [0, 1), or ``InvalidValue`` naming ``func``."""
    if (isinstance(dropout, bool) or not isinstance(dropout, numbers.Real)
            or not 0.0 <= dropout < 1.0):
        fail(InvalidValue, func, "dropout", "a probability in [0, 1)", repr(dropout))


def _module_base():
    torch = optional_import("torch")
    return object if torch is None else torch.nn.Module


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
        _check_dropout(func, dropout)
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
