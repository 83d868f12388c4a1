"""Samplers and what they produce.

Modules: ``base`` (the ``Sampler`` base class, its config and the graph
checks), ``graphsage`` (node-wise), ``layerwise`` (LADIES, FastGCN),
``minibatch`` (``MiniBatch``, ``Block`` and their conversions), ``batches``
(cutting seeds into minibatches and bulks) and ``distributed`` (gathering
the minibatches of every rank).
"""

from sampling.samplers.base import (ALL_NEIGHBORS, DirectedGraphWarning, Sampler,
                                    SamplerConfig, stream_of)
from sampling.samplers.batches import BulkPlanner, epoch_batches
from sampling.samplers.distributed import gather_minibatches
from sampling.samplers.graphsage import GraphSAGE, GraphSAGEConfig
from sampling.samplers.layerwise import FastGCN, LADIES, LayerWiseConfig
from sampling.samplers.minibatch import Block, MiniBatch

__all__ = ["ALL_NEIGHBORS", "DirectedGraphWarning", "Sampler", "SamplerConfig", "stream_of",
           "BulkPlanner", "epoch_batches", "gather_minibatches", "GraphSAGE", "GraphSAGEConfig",
           "FastGCN", "LADIES", "LayerWiseConfig", "Block", "MiniBatch"]
