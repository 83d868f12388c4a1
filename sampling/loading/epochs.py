"""How an epoch is cut: seeds into minibatches, minibatches into ranks' steps and bulks.

One job, shared by ``NodeLoader`` and everything that iterates one (the
trainer): given the seeds, the batch size and the ranks, which seeds form
minibatch ``i`` of an epoch, which rank trains it at which step, and which
minibatches one ``sampler.sample`` call gets.  Everything here is pure and
deterministic, so every rank computes every rank's plan without
communicating.

The rules:

* the epoch's order is a permutation of the seeds keyed by ``(seed,
  epoch)`` (``sampling.epoch_batches``), or the seeds as given;
* one process: consecutive slices of ``batch_size``; ``p`` ranks: a
  multiple of ``p`` minibatches, step ``s`` of rank ``r`` training
  minibatch ``s * p + r``;
* with a partition (DistDGL's split): rank ``r`` trains the seeds
  ``seeds_by_part`` gives it, taken in the epoch's order;
* minibatch ``i`` is drawn from the random stream ``(seed, epoch, i)``, so
  the bulk never changes a minibatch.
"""

import numpy as np

from spla.checks import as_index_array, as_int, describe, fail
from spla.exceptions import DimensionMismatch, InvalidValue
from spla.layout import chunk

from sampling.datasets.validation import host_array
from sampling.samplers.batches import seeds_by_part

#: Epochs are below this (the shuffle's random stream holds 47 bits of epoch).
MAX_EPOCH = 2 ** 47


def as_epoch(func, epoch):
    """``epoch`` checked: an int in ``[0, MAX_EPOCH)``."""
    epoch = as_int(func, "epoch", epoch, minimum=0)
    if epoch >= MAX_EPOCH:
        fail(InvalidValue, func, "epoch", "an integer below 2**47", epoch)
    return epoch


def as_seeds(func, seeds, n):
    """Distinct vertex ids in [0, n) (host int64), from ids or a boolean mask."""
    a = host_array(func, "seeds", seeds)
    if a.dtype == np.bool_:
        if a.ndim != 1 or a.size != n:
            fail(DimensionMismatch, func, "seeds", f"a boolean mask of length {n} (one entry "
                 "per vertex) or an array of vertex ids", describe(a))
        a = np.flatnonzero(a)
        if not a.size:
            fail(InvalidValue, func, "seeds", "a mask selecting at least one vertex",
                 "a mask with no True entry")
    ids = np.asarray(as_index_array(func, "seeds", a, n, allow_empty=False), np.int64)
    s = np.sort(ids)
    dup = s[1:][s[1:] == s[:-1]]
    if dup.size:
        fail(InvalidValue, func, "seeds", "distinct vertex ids", f"vertex {int(dup[0])} twice")
    return ids


def count_batches(func, N, b, p, drop_last):
    """Minibatches of an epoch of ``N`` seeds over ``p`` ranks (a multiple of p when p > 1).

    Examples
    --------
    >>> count_batches("f", 10, 4, 1, False), count_batches("f", 10, 4, 2, False)
    (3, 4)
    """
    if p == 1:
        if drop_last:
            if b > N:
                fail(InvalidValue, func, "batch_size", f"at most the number of seeds ({N}) "
                     "when drop_last=True (else the epoch is empty)", b)
            return N // b
        return -(-N // b)
    if drop_last:
        m = p * (N // (p * b))
        if m == 0:
            fail(InvalidValue, func, "batch_size",
                 f"at most N / p = {N} / {p} with drop_last=True (every rank needs a full "
                 f"minibatch of batch_size seeds)", b)
        return m
    m = p * -(-N // (p * b))
    if m > N:
        # Each rank needs a non-empty minibatch per step: m minibatches of
        # at most b seeds need m <= N seeds.
        if N < p:
            fail(InvalidValue, func, "seeds", f"at least one seed per rank ({p} ranks)",
                 f"{N} seeds")
        q = N // p
        fail(InvalidValue, func, "batch_size",
             f"at least {-(-N // (p * q))} (with {N} seeds on {p} ranks a smaller batch "
             f"cannot give every rank the same number of non-empty minibatches)", b)
    return m


def cut(order, b, m, p, drop_last):
    """``order`` cut into the ``m`` minibatches of an epoch (``count_batches``'s m).

    One process: consecutive slices of ``b`` (the last one shorter, or
    dropped).  p > 1: with ``drop_last``, m slices of exactly ``b``; else m
    near-equal slices (sizes differ by at most one, each at most ``b``).

    Examples
    --------
    >>> import numpy as np
    >>> [c.size for c in cut(np.arange(10), 4, 3, 1, False)]
    [4, 4, 2]
    >>> [c.size for c in cut(np.arange(10), 4, 4, 2, False)]
    [3, 3, 2, 2]
    """
    if p == 1 or drop_last:
        return [order[i * b:(i + 1) * b] for i in range(m)]
    return [order[slice(*chunk(order.size, m, i))] for i in range(m)]


def cut_epoch(func, order, b, p, drop_last=False):
    """An epoch's shuffle ``order`` cut into minibatches for ``p`` ranks, as ``NodeLoader`` cuts it.

    The number of minibatches is a multiple of ``p`` (when ``p > 1``), so
    every rank trains the same number of steps, step ``s`` of rank ``r``
    training minibatch ``s * p + r``; ``func`` names the caller in errors
    (a batch size that cannot give every rank a non-empty minibatch).

    Examples
    --------
    >>> import numpy as np
    >>> [c.tolist() for c in cut_epoch("f", np.arange(7), 2, 2)]
    [[0, 1], [2, 3], [4, 5], [6]]
    """
    m = count_batches(func, int(order.size), b, p, drop_last)
    return cut(order, b, m, p, drop_last)


class PartShares:
    """Each rank's seeds under a partition (``seeds_by_part``), and its steps per epoch.

    Rank ``r`` trains its share in the epoch's order, cut into ``steps``
    near-equal minibatches (``steps = ceil(largest share / batch_size)``),
    or, with ``drop_last``, into ``floor(smallest share / batch_size)``
    minibatches of exactly ``batch_size``.  Minibatch ``s * p + r`` is rank
    ``r``'s step ``s``, as without a partition.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.partition import Partition
    >>> P = Partition([0, 0, 0, 0, 1, 1, 1, 1], 2)
    >>> shares = PartShares("f", np.arange(8), P, 2, 1, batch_size=2, drop_last=False)
    >>> shares.steps, [c.tolist() for c in shares.cut(np.arange(8)[::-1])]
    (2, [[3, 2], [7, 6], [1, 0], [5, 4]])
    """

    def __init__(self, func, seeds, partition, ranks, replication, batch_size, drop_last):
        self.ranks = ranks
        self.drop_last = drop_last
        self.batch_size = batch_size
        self.shares = seeds_by_part(seeds, partition, ranks, replication)
        sizes = [int(a.size) for a in self.shares]
        if drop_last:
            self.steps = min(sizes) // batch_size
            if self.steps == 0:
                fail(InvalidValue, func, "batch_size", f"at most {min(sizes)} with "
                     "drop_last=True (the fewest seeds a rank's part gives it)", batch_size)
        else:
            self.steps = -(-max(sizes) // batch_size)
            if min(sizes) < self.steps:
                fail(InvalidValue, func, "batch_size", f"at least "
                     f"{-(-max(sizes) // max(min(sizes), 1))} (a rank with {min(sizes)} seeds "
                     f"of its part cannot fill {self.steps} minibatches, as many as the rank "
                     f"with {max(sizes)})", batch_size)

    @property
    def num_batches(self):
        """Minibatches of an epoch over all ranks."""
        return self.steps * self.ranks

    def cut(self, order):
        """The epoch's minibatches in id order (``order``: the epoch's permutation of the seeds)."""
        per_rank = []
        for share in self.shares:
            mine = order[np.isin(order, share, assume_unique=True)]
            if self.drop_last:
                b = self.batch_size
                per_rank.append([mine[s * b:(s + 1) * b] for s in range(self.steps)])
            else:
                per_rank.append(np.array_split(mine, self.steps))
        return [per_rank[r][s] for s in range(self.steps) for r in range(self.ranks)]


def fingerprint(ids):
    """A 63-bit hash of an id array, order-sensitive (to compare the ranks' seeds).

    Examples
    --------
    >>> import numpy as np
    >>> fingerprint(np.arange(3)) != fingerprint(np.arange(3)[::-1])
    True
    """
    pos = np.arange(ids.size, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    h = (ids.astype(np.uint64) + np.uint64(1)) * (pos | np.uint64(1))
    h ^= h >> np.uint64(29)
    return int(h.sum(dtype=np.uint64)) >> 1  # 63 bits: fits check_same's int64


__all__ = ["MAX_EPOCH", "as_epoch", "as_seeds", "count_batches", "cut", "cut_epoch",
           "PartShares", "fingerprint"]
