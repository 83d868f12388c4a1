"""Feeding training: the loader, the feature stores and background prefetch.

Modules: ``loader`` (``NodeLoader``: the one epoch loop, minibatches with
their features and labels), ``epochs`` (how an epoch is cut into
minibatches, ranks' steps and bulks), ``inputs`` (a loader's features and
labels, checked and gathered per bulk), ``features`` (``FeatureStore``, the
facade over ``feature_storage``: replicated or 1.5D rows and their fetch,
``feature_cache``: the hot-row cache, and ``labels``: labels and splits),
``ranks`` (which ranks iterate together, and their seeds under a partition),
``pipeline`` (``Prefetcher``: bounded lookahead in a background thread)
and ``hetero_loader`` (the inputs of seeds of one vertex type of a
``HeteroGraph``).
"""

from sampling.loading.device_cache import DeviceFeatureCache
from sampling.loading.features import FeatureStore
from sampling.loading.loader import NodeLoader
from sampling.loading.pipeline import Prefetcher, PrefetchWarning

__all__ = ["DeviceFeatureCache", "FeatureStore", "NodeLoader", "Prefetcher", "PrefetchWarning"]
