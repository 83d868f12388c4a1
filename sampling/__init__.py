"""Graph samplers composed from spla operators, sampled in bulk.

``GraphSAGE`` (node-wise), ``LADIES`` and ``FastGCN`` (layer-wise) share one
interface: ``sampler.sample(batches, seed=..., epoch=...)`` returns a
``MiniBatch`` per minibatch.  Layer sizes are given output layer first.

Subpackages, one job each:

* ``sampling.samplers``: the samplers, ``MiniBatch``/``Block``, cutting
  seeds into minibatches and bulks;
* ``sampling.loading``: ``NodeLoader``, ``FeatureStore``, prefetch;
* ``sampling.datasets``: the ``Dataset`` type, embedded, synthetic, OGB
  and users' graphs;
* ``sampling.models``: PyTorch models over the blocks;
* ``sampling.train``: the main job and the training strategies
  (minibatch training, ``bns`` for BNS-GCN, ``p3`` for P3).
"""

from sampling import _moved
from sampling.loading import DeviceFeatureCache, FeatureStore, NodeLoader, PrefetchWarning
from sampling.samplers import (ALL_NEIGHBORS, Block, BulkPlanner, DirectedGraphWarning,
                               FastGCN, GraphSAGE, GraphSAGEConfig, LADIES, LayerWiseConfig,
                               MiniBatch, Sampler, SamplerConfig, epoch_batches,
                               gather_minibatches, stream_of)

from sampling.datasets.hetero import HeteroGraph
from sampling.samplers.hetero import HeteroGraphSAGE, HeteroMiniBatch

_moved.install()


def __getattr__(name):
    # ``Embedding`` is a torch module: it is imported when first asked for,
    # so that ``import sampling`` (samplers, loaders, datasets; the main
    # job's ``--help``) does not import torch, which takes longer than
    # everything else here together.
    if name == "Embedding":
        from sampling.models.embedding import Embedding
        return Embedding
    raise AttributeError(f"module 'sampling' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"Embedding"})

__all__ = ["DeviceFeatureCache",
           "Sampler", "SamplerConfig", "GraphSAGE", "GraphSAGEConfig", "LADIES",
           "FastGCN", "LayerWiseConfig", "MiniBatch", "Block", "epoch_batches",
           "BulkPlanner", "gather_minibatches", "FeatureStore", "NodeLoader", "ALL_NEIGHBORS",
           "stream_of", "DirectedGraphWarning", "PrefetchWarning", "HeteroGraph",
           "HeteroGraphSAGE", "HeteroMiniBatch", "Embedding"]
