"""Feeding training: the loader, the feature stores and background prefetch.

Modules: ``loader`` (``NodeLoader``: the one epoch loop, minibatches with
their features and labels), ``features`` (``FeatureStore``: replicated or
partitioned features, the hot-row cache, labels and splits) and
``pipeline`` (``Prefetcher``: bounded lookahead in a background thread).
"""

from sampling.loading.features import FeatureStore
from sampling.loading.loader import NodeLoader
from sampling.loading.pipeline import Prefetcher, PrefetchWarning

__all__ = ["FeatureStore", "NodeLoader", "Prefetcher", "PrefetchWarning"]
