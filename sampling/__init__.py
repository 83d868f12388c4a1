"""Graph samplers (GraphSAGE, LADIES, FastGCN) composed from spla operators."""
