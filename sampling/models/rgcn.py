"""R-GCN (Schlichtkrull et al., 2018) over the blocks of a ``HeteroMiniBatch``.

Layer ``l`` computes, for every destination vertex ``v`` of type ``d``::

    h'_v = W_0[d] h_v + b[d] + sum_r  mean_{u in N_r(v)} h_u  W_r
    W_r  = sum_b a[r, b] V_b              # basis decomposition

with one self weight per vertex type, and the relation weights ``W_r``
combinations of ``num_bases`` shared bases (each relation owns only its
``num_bases`` coefficients).  The inputs are first brought to the hidden
width by a linear map per type with features, or looked up in a
``sampling.Embedding`` for a type without.  The mean runs over the block's
edges (``index_add``), so the gradient is autograd's own.
"""

import numpy as np

from spla import backend
from spla.checks import as_int, fail
from spla.exceptions import InvalidValue

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover - exercised without torch only
    torch = nn = None

_Module = object if nn is None else nn.Module


def _key(rel):
    return "__".join(rel)


class RGCN(_Module):
    """Relational GCN with basis decomposition, for ``HeteroGraphSAGE`` minibatches.

    Parameters
    ----------
    G : sampling.HeteroGraph
        Gives the vertex types, the relations (in the sampler's order),
        the feature widths (``G.x``) and, for types without features, the
        vertex counts of their embeddings.
    hidden : int
    out_channels : int
    num_layers : int, default 2
        Must equal the sampler's number of layers.
    num_bases : int, optional
        Default: the number of relations (no sharing).
    dropout : float, default 0.0

    Notes
    -----
    The model runs where its parameters are (``model.to("cuda")``); the
    minibatch may come from a sampler on the host or on the GPU: each
    block's edges are copied to the parameters' device, and features given
    as numpy arrays too.

    Examples
    --------
    >>> import dataclasses, numpy as np, torch
    >>> from sampling import HeteroGraphSAGE
    >>> from sampling.datasets.mag import mag_dataset
    >>> from sampling.models import RGCN
    >>> G = mag_dataset(5).to_undirected()
    >>> mb, = HeteroGraphSAGE(G, [4, 4]).sample([np.arange(6)], node_type="paper", seed=0)
    >>> mb = dataclasses.replace(mb, x={t: G.x[t][v] for t, v in mb.input_nodes.items()})
    >>> RGCN(G, 16, G.num_classes, num_bases=2)(mb).shape
    torch.Size([6, 4])
    """

    def __init__(self, G, hidden, out_channels, *, num_layers=2, num_bases=None, dropout=0.0):
        from sampling.models.layers import require_torch
        from sampling.models.embedding import Embedding
        require_torch("RGCN")
        super().__init__()
        func = "RGCN"
        hidden = as_int(func, "hidden", hidden, minimum=1)
        out_channels = as_int(func, "out_channels", out_channels, minimum=1)
        self.num_layers = as_int(func, "num_layers", num_layers, minimum=1)
        self.relations = list(G.edge_types)
        R = len(self.relations)
        B = R if num_bases is None else as_int(func, "num_bases", num_bases, minimum=1)
        if not 0.0 <= float(dropout) < 1.0:
            fail(InvalidValue, func, "dropout", "a probability in [0, 1)", dropout)
        self.dropout = float(dropout)
        self.inputs = nn.ModuleDict()
        for t in G.node_types:
            if t in G.x:
                self.inputs[t] = nn.Linear(int(G.x[t].shape[1]), hidden)
            else:
                self.inputs[t] = Embedding(G.num_nodes[t], hidden)
        dims = [hidden] * self.num_layers + [out_channels]
        self.bases = nn.ParameterList()
        self.coeffs = nn.ParameterList()
        self.roots = nn.ModuleList()
        for i in range(self.num_layers):
            fi, fo = dims[i], dims[i + 1]
            self.bases.append(nn.Parameter(torch.randn(B, fi, fo) * (2.0 / (fi + fo)) ** 0.5))
            self.coeffs.append(nn.Parameter(torch.randn(R, B) / B ** 0.5))
            self.roots.append(nn.ModuleDict({t: nn.Linear(fi, fo) for t in G.node_types}))

    def embed(self, mb, x=None):
        """Per type, the input layer's hidden vectors of ``mb.input_nodes``."""
        x = mb.x if x is None else x
        h = {}
        for t, ids in mb.input_nodes.items():
            layer = self.inputs[t]
            if isinstance(layer, nn.Linear):
                if x is None or t not in x:
                    fail(InvalidValue, "RGCN.forward", "x", f"features of type {t!r}",
                         "none")
                xt = x[t]
                xt = xt if isinstance(xt, torch.Tensor) else torch.from_numpy(np.asarray(xt))
                h[t] = layer(xt.to(layer.weight.device, layer.weight.dtype))
            else:
                h[t] = layer(ids)
        return h

    def forward(self, mb, x=None):
        """Outputs of the seeds (``mb.batch_size`` rows), from ``mb.x`` (or ``x``) by type."""
        if len(mb.layers) != self.num_layers:
            fail(InvalidValue, "RGCN.forward", "mb",
                 f"a minibatch of {self.num_layers} layers", len(mb.layers))
        h = self.embed(mb, x)
        # The model's device: the blocks' edges (host or cupy arrays) go there.
        dev = self.bases[0].device
        for i, layer in enumerate(mb.layers):
            W = torch.einsum("rb,bio->rio", self.coeffs[i], self.bases[i])
            out = {}
            for t, dst in layer.dst_nodes.items():
                out[t] = self.roots[i][t](h[t][:dst.size])
            for r, rel in enumerate(self.relations):
                s, _, d = rel
                b = layer.blocks[rel]
                if not b.num_edges:
                    continue
                e = torch.from_numpy(np.asarray(backend.to_host(b.edge_index()))).to(dev)
                deg = torch.bincount(e[1], minlength=b.num_dst).clamp(min=1)
                msg = (h[s] @ W[r])[e[0]]
                agg = torch.zeros(b.num_dst, msg.shape[1], dtype=msg.dtype, device=dev)
                agg = agg.index_add(0, e[1], msg) / deg.unsqueeze(1).to(msg.dtype)
                out[d] = out[d] + agg
            if i + 1 < self.num_layers:
                out = {t: nn.functional.dropout(v.relu(), self.dropout, self.training)
                       for t, v in out.items()}
            h = out
        return h[mb.seed_type][:mb.batch_size]


__all__ = ["RGCN"]
