"""GNN models (PyTorch) that consume ``MiniBatch`` blocks directly.

``SAGE`` (GraphSAGE's model) and ``GCN`` (``sampling.models.layers``) train on the blocks
of any sampler; ``RGCN`` (``sampling.models.rgcn``) those of
``HeteroGraphSAGE``, with ``Embedding`` for featureless vertex types;
``model_for`` picks the one a sampler's name calls for.
``BlockOperator`` turns a block into a sparse operator with an exact
transpose-product gradient, the building block of custom models.

``spmm``, ``dropout`` and ``GraphSAGE`` are the former names of
``block_matmul``, ``feature_dropout`` and ``SAGE`` (they shadowed
``spla.spmm``, ``spla.dropout`` and the sampler ``sampling.GraphSAGE``);
they still work and warn.
"""

import warnings

from sampling.models.layers import (GCN, BlockOperator, GCNConv, SAGE, SAGEConv,
                                    SparseMatMul, block_matmul, block_operators,
                                    feature_dropout, model_for, require_torch)
from sampling.models.embedding import DistEmbedding, Embedding
from sampling.models.rgcn import RGCN

_RENAMED = {"spmm": "block_matmul", "dropout": "feature_dropout", "GraphSAGE": "SAGE"}


def __getattr__(name):
    if name in _RENAMED:
        new = _RENAMED[name]
        warnings.warn(f"sampling.models.{name} is deprecated: use sampling.models.{new}",
                      DeprecationWarning, stacklevel=2)
        return globals()[new]
    raise AttributeError(f"module 'sampling.models' has no attribute {name!r}")


__all__ = ["require_torch", "BlockOperator", "SparseMatMul", "block_matmul", "block_operators",
           "feature_dropout", "SAGEConv", "GCNConv", "SAGE", "GCN", "model_for", "RGCN",
           "Embedding", "DistEmbedding"]
