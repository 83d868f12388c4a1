"""Minibatches of seeds of one vertex type, from a ``HeteroGraphSAGE``: ``HeteroNodeLoader``.

``NodeLoader(sampler, ("paper", ids), batch_size)`` hands its arguments
here when the seeds are a ``(type, ids)`` pair (``is_typed_seeds``).  Per
epoch, the seeds are shuffled and cut (``sampling.epoch_batches``), the
minibatches are sampled in bulks of ``bulk``, and each ``HeteroMiniBatch``
gets ``x`` (per type, the features of ``input_nodes[t]``, float32 tensors)
and ``y`` (``{type: labels of the seeds}``, int64).  Minibatch ``i`` of an
epoch has id ``i``, so the bulk size never changes a minibatch.
"""

import dataclasses

import numpy as np

from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DTypeError, InvalidValue
from spla.optional import require

from sampling.samplers.batches import epoch_batches


def is_typed_seeds(seeds):
    """True for seeds given as ``(vertex type, ids)``.

    Examples
    --------
    >>> from sampling.loading.hetero_loader import is_typed_seeds
    >>> is_typed_seeds(("paper", [0, 1])), is_typed_seeds([0, 1])
    (True, False)
    """
    return isinstance(seeds, tuple) and len(seeds) == 2 and isinstance(seeds[0], str)


class HeteroNodeLoader:
    """Epochs of ``HeteroMiniBatch`` objects for seeds of one vertex type.

    Parameters
    ----------
    sampler : sampling.HeteroGraphSAGE
    seeds : (str, 1-D int array)
        The seeds' type and ids (distinct).
    batch_size : int
    features : dict of type -> array, optional
        Default: the graph's ``x``.  Types left out get no ``x`` entry.
    labels : dict of type -> int array, optional
        Default: the graph's ``y``; it must hold the seeds' type.  Pass
        ``{}`` for minibatches without labels.
    shuffle : bool, default True
    drop_last : bool, default False
    seed : int, default 0
    bulk : int, default 8
        Minibatches sampled per bulk pass.

    Raises
    ------
    InvalidValue
        An unknown seed type, seeds of a type without labels, a bad size.

    Examples
    --------
    >>> import numpy as np
    >>> from sampling import HeteroGraphSAGE
    >>> from sampling.datasets.mag import mag_dataset
    >>> from sampling.loading.hetero_loader import HeteroNodeLoader
    >>> G = mag_dataset(5).to_undirected()
    >>> loader = HeteroNodeLoader(HeteroGraphSAGE(G, [3, 3]), ("paper", np.arange(10)), 4)
    >>> mb = next(iter(loader))
    >>> len(loader), mb.y["paper"].shape, mb.x["author"].shape[0] == mb.input_nodes["author"].size
    (3, torch.Size([4]), True)
    """

    def __init__(self, sampler, seeds, batch_size, *, features=None, labels=None, shuffle=True,
                 drop_last=False, seed=0, bulk=8, device="cpu"):
        from sampling.samplers.hetero import HeteroGraphSAGE
        func = "NodeLoader"
        if not isinstance(sampler, HeteroGraphSAGE):
            fail(DTypeError, func, "sampler", "a HeteroGraphSAGE for (type, ids) seeds",
                 describe(sampler))
        if not is_typed_seeds(seeds):
            fail(InvalidValue, func, "seeds", "a pair (vertex type, ids)", describe(seeds))
        G = sampler.G
        self.node_type = G._type(func, "seeds", seeds[0])
        self.seeds = as_index_array(func, "seeds", seeds[1], G.num_nodes[self.node_type],
                                    allow_empty=False)
        if np.unique(self.seeds).size != self.seeds.size:
            fail(InvalidValue, func, "seeds", "distinct vertex ids", "a repeated id")
        self.batch_size = as_int(func, "batch_size", batch_size, minimum=1)
        self.bulk = as_int(func, "bulk", bulk, minimum=1)
        self.seed = as_int(func, "seed", seed, minimum=0)
        self.features = dict(G.x if features is None else features)
        self.labels = dict(G.y if labels is None else labels)
        if labels is None and self.node_type not in self.labels:
            fail(InvalidValue, func, "seeds", "seeds of a type with labels (or labels={})",
                 f"type {self.node_type!r}, which has none")
        self.sampler, self.shuffle, self.drop_last = sampler, bool(shuffle), bool(drop_last)
        self.device = device
        self._next_epoch = 0

    def batches(self, epoch):
        """The seed arrays of ``epoch``'s minibatches."""
        if self.shuffle:
            return epoch_batches(self.seeds, self.batch_size, seed=self.seed, epoch=epoch,
                                 drop_last=self.drop_last)
        n = self.seeds.size
        stops = range(self.batch_size, n + self.batch_size, self.batch_size)
        out = [self.seeds[s - self.batch_size:min(s, n)] for s in stops]
        return [b for b in out if b.size == self.batch_size or not self.drop_last]

    def __len__(self):
        return len(self.batches(0))

    def epoch(self, epoch):
        """Iterate over the minibatches of ``epoch`` (any order of epochs)."""
        torch = require("torch", what="NodeLoader", needs="PyTorch")
        bs = self.batches(epoch)
        for start in range(0, len(bs), self.bulk):
            ids = list(range(start, min(start + self.bulk, len(bs))))
            for mb in self.sampler.sample([bs[i] for i in ids], node_type=self.node_type,
                                          seed=self.seed, epoch=epoch, batch_ids=ids):
                x = {t: torch.as_tensor(np.asarray(self.features[t])[v], dtype=torch.float32,
                                        device=self.device)
                     for t, v in mb.input_nodes.items() if t in self.features}
                y = {t: torch.as_tensor(np.asarray(self.labels[t])[mb.seeds], dtype=torch.int64,
                                        device=self.device)
                     for t in (self.node_type,) if t in self.labels}
                yield dataclasses.replace(mb, x=x, y=y or None)

    def __iter__(self):
        epoch, self._next_epoch = self._next_epoch, self._next_epoch + 1
        return self.epoch(epoch)


__all__ = ["HeteroNodeLoader", "is_typed_seeds"]
