"""Splitting an epoch into minibatches, minibatches into bulks, and stacking a bulk.

``epoch_batches`` shuffles the training vertices (a counter-based
permutation keyed by seed and epoch) and cuts them into disjoint minibatches
that cover the training set.  ``BulkPlanner`` chooses how many minibatches
to sample per pass from a memory budget and the sampler's estimate of the
bytes one minibatch needs.
"""

import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np

from spla import backend
from spla.checks import as_index_array, as_int, describe, fail, grouped_ids_stats
from spla.exceptions import DimensionMismatch, DTypeError, IndexOutOfRange, InvalidValue
from spla.random import permutation

_EPOCH_STREAM = 0xE70C  # keeps epoch shuffles apart from sampling streams


def epoch_batches(train_ids, batch_size, *, seed, epoch=0, drop_last=False):
    """The shuffled minibatches of one epoch: disjoint, covering ``train_ids``.

    Parameters
    ----------
    train_ids : 1-D array of int
        Distinct training vertex ids.
    batch_size : int
        Seeds per minibatch (the last one may be smaller; larger than the
        training set: one minibatch of all of it, as PyG's loaders do).
    seed : int
    epoch : int, default 0
        Each epoch has its own shuffle.
    drop_last : bool, default False
        Drop a final minibatch smaller than ``batch_size``.

    Returns
    -------
    list of int64 arrays

    Examples
    --------
    >>> import numpy as np
    >>> from sampling import epoch_batches
    >>> bs = epoch_batches(np.arange(10), 4, seed=0)
    >>> [b.size for b in bs], sorted(np.concatenate(bs).tolist()) == list(range(10))
    ([4, 4, 2], True)
    """
    func = "epoch_batches"
    ids = as_index_array(func, "train_ids", train_ids, allow_empty=False)
    ids = np.asarray(ids)
    if np.unique(ids).size != ids.size:
        fail(InvalidValue, func, "train_ids", "distinct vertex ids", "repeated ids")
    batch_size = as_int(func, "batch_size", batch_size, minimum=1)
    if drop_last and batch_size > ids.size:
        fail(InvalidValue, func, "batch_size", f"at most the training set size {ids.size} "
             "with drop_last=True (else the epoch is empty)", batch_size)
    epoch = as_int(func, "epoch", epoch, minimum=0)
    if epoch >= 2 ** 47:
        fail(InvalidValue, func, "epoch", "an integer below 2**47", epoch)
    seed = as_int(func, "seed", seed, minimum=0)
    if seed >= 2 ** 64:
        fail(InvalidValue, func, "seed", "an integer below 2**64", seed)
    order = permutation(ids.size, seed=seed, stream=(epoch << 16) | _EPOCH_STREAM)
    shuffled = ids[order]
    n_full = ids.size // batch_size
    out = [shuffled[i * batch_size:(i + 1) * batch_size] for i in range(n_full)]
    if not drop_last and ids.size % batch_size:
        out.append(shuffled[n_full * batch_size:])
    return out



def seeds_by_part(seeds, partition, ranks, replication=1):
    """Split training vertices over ranks by part, as evenly as possible (DistDGL's split).

    Rank ``r`` sits on process row ``r // replication``, which holds part
    ``r // replication``; the ranks of a process row share their part's
    seeds.  Each rank gets ``len(seeds) // ranks`` or one more seed (the
    first ``len(seeds) % ranks`` ranks get one more), taken from its own
    part first: seeds of parts with more than their ranks' share move to
    ranks whose part has fewer, so with a locality-aware partition (METIS)
    most minibatches of a rank are drawn from the vertices it holds, and
    every rank still trains on as many seeds.  Pure and deterministic, so
    every rank computes every rank's share without communicating.

    Parameters
    ----------
    seeds : 1-D int array
        Distinct vertex ids.
    partition : spla.partition.Partition
        With ``ranks / replication`` parts.
    ranks : int
        p, the number of ranks.
    replication : int, default 1
        c, the ranks per process row (divides ``ranks``).

    Returns
    -------
    list of ``ranks`` int64 arrays
        Ascending; disjoint; together ``seeds``.

    Raises
    ------
    InvalidValue, LayoutError, DTypeError
        Repeated seeds, ``replication`` not dividing ``ranks``, a partition
        of another number of parts, or not a Partition.

    Examples
    --------
    >>> import numpy as np
    >>> from spla.partition import Partition
    >>> P = Partition([0, 0, 0, 0, 1, 1], 2)          # part 0: 0..3, part 1: 4, 5
    >>> [a.tolist() for a in seeds_by_part(np.arange(6), P, 2)]
    [[0, 1, 2], [3, 4, 5]]
    """
    from spla.exceptions import DTypeError, LayoutError
    from spla.layout import chunk
    from spla.partition import Partition
    func = "seeds_by_part"
    ranks = as_int(func, "ranks", ranks, minimum=1)
    c = as_int(func, "replication", replication, minimum=1)
    if ranks % c:
        fail(LayoutError, func, "replication", f"a divisor of ranks = {ranks}", c)
    if not isinstance(partition, Partition):
        fail(DTypeError, func, "partition", "a spla.partition.Partition", describe(partition))
    rows = ranks // c
    if partition.parts != rows:
        fail(LayoutError, func, "partition", f"a Partition in ranks / replication = {rows} "
             "parts", f"{partition.parts} parts")
    ids = np.asarray(as_index_array(func, "seeds", seeds, partition.n), np.int64)
    ids = np.sort(ids)
    if ids.size > 1 and (np.diff(ids) == 0).any():
        fail(InvalidValue, func, "seeds", "distinct vertex ids", "repeated ids")
    part = np.asarray(partition.part)[ids]
    want = [chunk(ids.size, ranks, r)[1] - chunk(ids.size, ranks, r)[0] for r in range(ranks)]
    own, spare = [], []
    for i in range(rows):
        mine = ids[part == i]
        # The part's seeds go to its c ranks in turn; what they cannot take
        # (beyond their shares) is spare, the part's largest ids last.
        cap = sum(want[i * c:(i + 1) * c])
        for j in range(c):
            s, e = chunk(min(mine.size, cap), c, j)
            own.append(mine[s:e])
        spare.append(mine[cap:])
    pool = np.concatenate(spare) if spare else np.zeros(0, np.int64)
    out, at = [], 0
    for r in range(ranks):
        take = want[r] - own[r].size
        if take < 0:
            # chunk gave this rank one more than its share (c > 1): pass it on.
            pool = np.concatenate([pool, own[r][take:]])
            own[r] = own[r][:take]
            take = 0
        out.append(own[r])
    for r in range(ranks):
        take = want[r] - out[r].size
        if take:
            out[r] = np.sort(np.concatenate([out[r], pool[at:at + take]]))
            at += take
    return out

class BulkPlanner:
    """Choose the bulk size k (minibatches sampled per pass) from a memory budget.

    Parameters
    ----------
    sampler : Sampler
        Provides ``estimate_bytes(batch_size)``, an upper-side estimate of
        the memory one minibatch's sampling needs (from the graph's degree
        statistics).
    memory_budget : int
        Bytes the sampling of one bulk may use.
    max_bulk : int, optional
        Cap on k.

    Examples
    --------
    >>> import numpy as np
    >>> import spla
    >>> from sampling import GraphSAGE, BulkPlanner, epoch_batches
    >>> A = spla.Matrix.from_dense(np.ones((50, 50)) - np.eye(50))
    >>> planner = BulkPlanner(GraphSAGE(A, [5, 5]), memory_budget=10**6)
    >>> batches = epoch_batches(np.arange(50), 10, seed=0)
    >>> [len(p) for p in planner.plan(batches)]
    [5]
    """

    def __init__(self, sampler, memory_budget, max_bulk=None):
        func = "BulkPlanner"
        self.sampler = sampler
        self.memory_budget = as_int(func, "memory_budget", memory_budget, minimum=1)
        self.max_bulk = None if max_bulk is None else as_int(func, "max_bulk", max_bulk, minimum=1)

    def bulk_size(self, batch_size):
        """The number of minibatches of ``batch_size`` seeds per pass."""
        per = self.sampler.estimate_bytes(batch_size)
        k = self.memory_budget // max(1, per)
        if k < 1:
            fail(InvalidValue, "BulkPlanner", "memory_budget",
                 f"at least {per} bytes (one minibatch of {batch_size} seeds); "
                 "raise the budget or lower the batch size", self.memory_budget)
        if self.max_bulk is not None:
            k = min(k, self.max_bulk)
        return int(k)

    def plan(self, batches):
        """Split a list of minibatches into consecutive bulks (lists of indices)."""
        if not isinstance(batches, (list, tuple)) or not batches:
            fail(InvalidValue, "BulkPlanner.plan", "batches", "a non-empty list of minibatches",
                 describe(batches))
        k = self.bulk_size(max(len(b) for b in batches))
        idx = list(range(len(batches)))
        return [idx[i:i + k] for i in range(0, len(idx), k)]

    def passes(self, n_batches, batch_size):
        """Number of passes for ``n_batches`` minibatches."""
        return math.ceil(n_batches / self.bulk_size(batch_size))


def step_major_bulks(steps, ranks, per_bulk, positions):
    """Bulks of minibatch ids where step ``s`` of rank ``r`` trains minibatch ``s * ranks + r``.

    Each bulk covers up to ``per_bulk`` consecutive steps of every rank;
    ``positions(k, r)`` names the places, in a bulk of ``k`` minibatches,
    that the sampler hands to rank ``r`` (``sampling.samplers.base.owned_batches``
    for a distributed sampler), and rank r's minibatches are put there in
    step order.  Returns a list of lists of ids.

    Examples
    --------
    >>> step_major_bulks(3, 2, 2, lambda k, r: list(range(r * k // 2, (r + 1) * k // 2)))
    [[0, 2, 1, 3], [4, 5]]
    """
    out = []
    for first in range(0, steps, per_bulk):
        mine = range(first, min(steps, first + per_bulk))
        k = ranks * len(mine)
        ids = [None] * k
        for r in range(ranks):
            pos = positions(k, r)
            if len(pos) != len(mine):  # pragma: no cover - every layout splits p | k evenly
                raise AssertionError(f"step_major_bulks: rank {r} would own {len(pos)} of "
                                     f"{k} minibatches, not {len(mine)}")
            for j, at in zip(mine, pos):
                ids[at] = j * ranks + r
        out.append(ids)
    return out


@dataclass(frozen=True)
class Batches:
    """k minibatches stacked: ``nodes[ptr[g]:ptr[g+1]]`` is minibatch g."""

    nodes: object
    ptr: object
    ids: Tuple[int, ...]
    #: ``ptr`` on the host (int64 numpy), for sizes without a device read
    ptr_host: object = None
    #: Whether the ids were checked (range, distinct per minibatch); False
    #: when the sampler's GPU hops check them as they go
    checked: bool = True
    #: ``nodes`` on the host (numpy) when the minibatches were given there,
    #: else None: a sampler may count its first layer's work from them
    nodes_host: object = None

    @property
    def k(self):
        return len(self.ids)


def stack_batches(func, batches, n, xp, batch_ids=None, check_ids=True):
    """Validate and stack minibatches given as a list of 1-D arrays or a k x b array.

    ``check_ids=False`` leaves the vertex ids' range and repeats unchecked
    (the one device read of a GPU bulk's check), for a sampler whose hops
    check them as they go; every other check runs.
    """
    if isinstance(batches, np.ndarray) or backend.device_of(batches) == "cuda":
        arr = batches
        if arr.ndim == 1:
            fail(DimensionMismatch, func, "batches",
                 "a list of 1-D arrays or a 2-D (k, b) array (wrap one minibatch in a list)",
                 describe(arr))
        if arr.ndim != 2:
            fail(DimensionMismatch, func, "batches", "a 2-D (k, b) array", describe(arr))
        parts = [arr[i] for i in range(arr.shape[0])]
    elif isinstance(batches, (list, tuple)):
        parts = list(batches)
    else:
        fail(DTypeError, func, "batches", "a list of 1-D arrays or a 2-D array", describe(batches))
    if not parts:
        fail(InvalidValue, func, "batches", "at least one minibatch", "none")
    # Minibatches given on the host for a device sampler (a loader's are) are
    # checked and stacked on the host and uploaded once: one copy instead of
    # one per minibatch, and a check that reads nothing back from the device.
    host = xp is np or all(backend.device_of(b) == backend.CPU for b in parts)
    mod = np if host else xp
    arrays = []
    for i, b in enumerate(parts):
        a = mod.asarray(b)
        if a.ndim != 1:
            fail(DimensionMismatch, func, f"batches[{i}]", "a 1-D array of vertex ids", describe(a))
        if a.size == 0:
            fail(InvalidValue, func, f"batches[{i}]", "a non-empty minibatch", "an empty one")
        if a.dtype.kind not in "iu":
            fail(DTypeError, func, f"batches[{i}]", "integer vertex ids", describe(a))
        arrays.append(a.astype(np.int64, copy=False))
    nodes = mod.concatenate(arrays)
    sizes = np.array([a.size for a in arrays], np.int64)
    ptr = np.zeros(len(arrays) + 1, np.int64)
    np.cumsum(sizes, out=ptr[1:])
    if check_ids:
        _check_ids(func, arrays, nodes, sizes, n)
    if batch_ids is None:
        ids = tuple(range(len(arrays)))
    else:
        ids = tuple(as_int(func, f"batch_ids[{i}]", b, minimum=0)
                    for i, b in enumerate(batch_ids))
        if len(ids) != len(arrays):
            fail(DimensionMismatch, func, "batch_ids", f"{len(arrays)} ids", len(ids))
    if ids and (max(ids) + 1) * n >= 2 ** 63:
        fail(InvalidValue, func, "batch_ids", "ids with id * n_vertices < 2**63", max(ids))
    return Batches(xp.asarray(nodes), xp.asarray(ptr), ids, ptr, check_ids,
                   nodes if host else None)


def _check_ids(func, arrays, nodes, sizes, n):
    """Every minibatch's ids in ``[0, n)`` and distinct (one device read)."""
    group = np.repeat(np.arange(len(arrays)), sizes)
    lo, hi, repeat = grouped_ids_stats(nodes, group, n)
    if lo < 0 or hi >= n:
        bad = lo if lo < 0 else hi
        g = _group_of(arrays, bad)
        fail(IndexOutOfRange, func, f"batches[{g}]", f"vertex ids in [0, {n})", bad)
    if repeat is not None:
        fail(InvalidValue, func, f"batches[{repeat[0]}]", "distinct seed vertices",
             f"vertex {repeat[1]} twice")


def _group_of(arrays, value):
    for i, a in enumerate(arrays):
        if bool((a == value).any()):
            return i
    return 0
