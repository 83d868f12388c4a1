"""Seeds of one vertex type of a ``HeteroGraph``: what ``NodeLoader`` needs for them.

``NodeLoader(sampler, ("paper", ids), batch_size)`` iterates seeds of one
type of a heterogeneous graph with the same epoch loop as homogeneous
seeds (shuffle, minibatch ids, bulks, prefetch, ranks); only the inputs
differ: each ``HeteroMiniBatch`` gets ``x`` (per type, the feature rows of
``input_nodes[t]``, float32 tensors) and ``y`` (``{type: labels of the
seeds}``, int64), gathered here once per bulk and type.

Under MPI (a sampler over distributed relations, more than one rank) the
features default to a ``HeteroFeatureStore`` built from the graph's: each
rank keeps its row block of every type (the blocks of the relations'
destination rows) and a bulk's rows of every type come in one exchange.
Features given as a dict stay whole on every rank and are gathered
locally; a ``HeteroFeatureStore`` may also be given.
"""

import numpy as np

from spla import backend
from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError
from spla.dist import DistMatrix
from spla.optional import require

from sampling.loading.hetero_features import HeteroFeatureStore


def is_typed_seeds(seeds):
    """True for seeds given as ``(vertex type, ids)``.

    Examples
    --------
    >>> from sampling.loading.hetero_loader import is_typed_seeds
    >>> is_typed_seeds(("paper", [0, 1])), is_typed_seeds([0, 1])
    (True, False)
    """
    return isinstance(seeds, tuple) and len(seeds) == 2 and isinstance(seeds[0], str)


def check_hetero_sampler(func, sampler, seeds):
    """(node type, number of vertices of that type) for typed seeds of a HeteroGraphSAGE."""
    from sampling.samplers.hetero import HeteroGraphSAGE
    if not isinstance(sampler, HeteroGraphSAGE):
        fail(DTypeError, func, "sampler", "a HeteroGraphSAGE for (type, ids) seeds",
             describe(sampler))
    t = seeds[0]
    counts = sampler.G.num_nodes
    if t not in counts:
        fail(InvalidValue, func, "seeds", f"a pair (vertex type, ids) with a type of the graph "
             f"({', '.join(map(repr, counts))})", f"type {t!r}")
    return t, int(counts[t])


class HeteroInputs:
    """Per-type features and the seed type's labels of a loader, gathered per bulk.

    Parameters
    ----------
    func : str
        The caller, named in errors.
    G : sampling.HeteroGraph
    node_type : str
        The seeds' type.
    features : dict of type -> array, or HeteroFeatureStore, optional
        Default: the graph's ``x`` (under MPI, with more than one rank, a
        ``HeteroFeatureStore`` of them placed as the relations' row
        blocks).  Types left out get no ``x`` entry.
    labels : dict of type -> int array, optional
        Default: the graph's ``y``; it must hold the seeds' type.  ``{}``:
        minibatches without labels.
    device : str or torch.device

    Examples
    --------
    >>> import numpy as np
    >>> from sampling.datasets.mag import mag_dataset
    >>> G = mag_dataset(5)
    >>> inp = HeteroInputs("f", G, "paper", None, None, "cpu")
    >>> x, = inp.gather_x([{"paper": np.array([3, 1])}], inp.features)
    >>> tuple(x["paper"].shape) == (2, G.x["paper"].shape[1])
    True
    """

    def __init__(self, func, G, node_type, features, labels, device):
        self.node_type = node_type
        self.features = _features(func, G, features)
        # "store": NodeLoader gives its background thread a twin (dup()) of
        # a store that exchanges rows, as for a partitioned FeatureStore.
        distributed = isinstance(self.features, HeteroFeatureStore) and \
            not self.features.replicated
        self.kind = "store" if distributed else "hetero"
        self.labels = dict(G.y if labels is None else labels)
        if labels is None and node_type not in self.labels:
            fail(InvalidValue, func, "seeds", "seeds of a type with labels (or labels={})",
                 f"type {node_type!r}, which has none")
        if node_type in self.labels:
            y = np.asarray(backend.to_host(self.labels[node_type]))
            if y.dtype.kind not in "iu" or y.shape != (G.num_nodes[node_type],):
                fail(DTypeError, func, "labels", f"for type {node_type!r}, integer labels, one "
                     "per vertex of the type", describe(y))
            self.labels[node_type] = y
        need = self.features or node_type in self.labels
        self.torch = require("torch", what=func, needs="PyTorch") if need else None
        self.device = device if self.torch is None else self.torch.device(device)

    def gather_x(self, parts, F):
        """Per minibatch, ``{type: rows of input_nodes[type]}``.

        One gather per type from a dict; from a ``HeteroFeatureStore`` one
        fetch for every type (collective under MPI: every rank calls it
        once per bulk, also with no minibatch).
        """
        store = isinstance(F, HeteroFeatureStore)
        if not store and not F:
            return None
        types = F.types if store else tuple(F)
        have = {t: [j for j, p in enumerate(parts) if t in p] for t in types}
        ids = {t: np.concatenate([np.zeros(0, np.int64)] + [
            np.asarray(backend.to_host(parts[j][t])) for j in have[t]]) for t in types}
        if store:
            rows = F.fetch(ids)
        else:
            rows = {t: F[t][ids[t]] for t in types if have[t]}
        out = [dict() for _ in parts]
        for t in types:
            if not have[t]:
                continue
            X = self.torch.as_tensor(np.ascontiguousarray(rows[t], np.float32),
                                     device=self.device)
            for j, piece in zip(have[t], X.split([int(parts[j][t].size) for j in have[t]])):
                out[j][t] = piece
        return out

    def gather_y(self, parts):
        """Per minibatch, ``{seed type: labels of its seeds}``, or None without labels."""
        t = self.node_type
        if t not in self.labels:
            return None
        ids = np.concatenate([np.asarray(backend.to_host(p)) for p in parts])
        Y = self.torch.as_tensor(self.labels[t][ids].astype(np.int64), device=self.device)
        return [{t: y} for y in Y.split([int(p.size) for p in parts])]


def _features(func, G, features):
    """The loader's features: a dict by type, or a ``HeteroFeatureStore``."""
    first = next(iter(G.relations.values()))
    comm = getattr(first, "comm", None) if all(
        isinstance(A, DistMatrix) for A in G.relations.values()) else None
    if isinstance(features, HeteroFeatureStore):
        for t, n in features.num_nodes.items():
            if G.num_nodes.get(t) != n:
                fail(DimensionMismatch, func, "features", f"a store of the graph's types and "
                     f"counts ({G.num_nodes})", repr(features))
        ranks = 1 if comm is None else comm.Get_size()
        if features.p != ranks:
            # Its fetch is collective over its ranks: the loader's must be the same.
            fail(LayoutError, func, "features", f"a HeteroFeatureStore over the {ranks} "
                 "rank(s) of the sampler's relations", repr(features))
        return features
    F = {t: _rows(func, t, X, G.num_nodes[t])
         for t, X in dict(G.x if features is None else features).items()}
    if features is None and F and comm is not None and comm.Get_size() > 1:
        c = first.layout.c
        # A type's rows go where the relations into it keep theirs.
        placed = {key[2]: A.partition for key, A in G.relations.items()
                  if A.partition is not None and not A.layout.replicated}
        # Every rank holds the same graph: no agreement message (this runs
        # inside the loader's argument checks, where no rank may send).
        return HeteroFeatureStore(F, comm=comm, replication=c, partition=placed or None,
                                  agree=False)
    return F


def _rows(func, t, X, n):
    X = np.asarray(backend.to_host(X))
    if X.ndim != 2 or X.shape[0] != n:
        fail(DimensionMismatch, func, "features", f"for type {t!r}, an ({n}, f) array (one row "
             "per vertex of the type)", describe(X))
    return X


__all__ = ["HeteroInputs", "check_hetero_sampler", "is_typed_seeds"]
