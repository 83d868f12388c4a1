"""BNS-GCN: partition-parallel full-graph training with random boundary-vertex sampling."""

from sampling.train.bns import trainer as _trainer
from sampling.train.bns.trainer import *  # noqa: F401,F403

__all__ = list(_trainer.__all__)
