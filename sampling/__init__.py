"""Graph samplers composed from spla operators, sampled in bulk.

``GraphSAGE`` (node-wise), ``LADIES`` and ``FastGCN`` (layer-wise) share one
interface: ``sampler.sample(batches, seed=..., epoch=...)`` returns a
``MiniBatch`` per minibatch.  Layer sizes are given output layer first.
"""

from sampling.base import (ALL_NEIGHBORS, DirectedGraphWarning, Sampler, SamplerConfig,
                           stream_of)
from sampling.batches import BulkPlanner, epoch_batches
from sampling.distributed import gather_minibatches
from sampling.features import FeatureStore
from sampling.graphsage import GraphSAGE, GraphSAGEConfig
from sampling.layerwise import FastGCN, LADIES, LayerWiseConfig
from sampling.loader import NodeLoader
from sampling.minibatch import Block, MiniBatch
from sampling.pipeline import PrefetchWarning

__all__ = ["Sampler", "SamplerConfig", "GraphSAGE", "GraphSAGEConfig", "LADIES",
           "FastGCN", "LayerWiseConfig", "MiniBatch", "Block", "epoch_batches",
           "BulkPlanner", "gather_minibatches", "FeatureStore", "NodeLoader", "ALL_NEIGHBORS",
           "stream_of", "DirectedGraphWarning", "PrefetchWarning"]
