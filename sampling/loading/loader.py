"""``NodeLoader``: one epoch of bulk-sampled minibatches per ``iter(loader)``.

The loader does what a hand-written training loop over ``sampler.sample``
has to get right every time: a fresh shuffle and fresh neighbourhoods per
epoch (the epoch keys both), minibatch ids that keep counting across bulks
(the draws are keyed by ``(seed, epoch, batch id)``, so the bulk size never
changes a minibatch), disjoint bulks covering the seeds once, features and
labels gathered once per bulk, and, under MPI, the same number of steps on
every rank.
"""

import dataclasses
import threading
import time

from spla import Pending
from spla import comm as C
from spla.checks import as_int, as_u64, describe, fail
from spla.exceptions import DTypeError, InvalidValue
from spla.layout import chunk

from sampling.loading.epoch_iterator import EpochIterator, LoaderStats
from sampling.loading.epochs import (MAX_EPOCH, as_epoch, as_seeds, count_batches, cut,
                                     cut_epoch, fingerprint)
from sampling.loading.hetero_loader import HeteroInputs, check_hetero_sampler, is_typed_seeds
from sampling.loading.inputs import Inputs
from sampling.loading.pipeline import prefetch_allowed
from sampling.loading.ranks import comm_of, distribution, part_shares, show_args
from sampling.loading.staging import staging_for
from sampling.samplers.base import Sampler, owned_batches
from sampling.samplers.batches import BulkPlanner, epoch_batches, step_major_bulks

#: Minibatches sampled per pass on each rank when neither ``bulk`` nor
#: ``memory_budget`` is given.
DEFAULT_BULK = 16


class NodeLoader:
    """Iterate over the minibatches of one epoch per ``iter(loader)``, sampled in bulk.

    Like PyG's ``NeighborLoader`` and DGL's ``DataLoader``: each iteration
    shuffles ``seeds``, cuts them into minibatches of ``batch_size`` and
    yields one ``MiniBatch`` per minibatch, with its features (``mb.x``)
    and labels (``mb.y``) when given.  Minibatches are sampled ``bulk`` at
    a time (one ``sampler.sample`` call per bulk), optionally ahead of the
    training loop in a background thread (``prefetch``).

    Parameters
    ----------
    sampler : Sampler
        GraphSAGE, LADIES, FastGCN or any ``sampling.Sampler`` subclass, on
        a local graph (CPU or GPU) or a ``spla.DistMatrix``.
    seeds : 1-D int array or boolean mask, or (str, ids)
        The vertices to iterate (the training vertices, say): distinct ids
        in ``[0, n)``, or a boolean mask of length n (numpy, torch or cupy).
        With a ``HeteroGraphSAGE``: a pair ``(vertex type, ids)``; the
        minibatches are then ``HeteroMiniBatch`` objects whose ``x`` is a
        dict by type (``features``: a dict of type -> array, default the
        graph's) and whose ``y`` is ``{type: labels}`` (``labels``: a dict,
        default the graph's; ``{}`` for none).
    batch_size : int
        Seeds per minibatch.  Larger than the number of seeds: one minibatch
        of all of them (refused with ``drop_last=True``).
    features : optional
        Node features, ``n x f``: a numpy, cupy or torch array, a
        ``scipy.sparse`` matrix or a ``spla.Matrix`` (kept sparse, with
        float32 values, on the host, or on the GPU for a ``spla.Matrix``
        there and a CUDA ``device``; a bulk's rows are written dense by
        ``spla.take_rows`` where they are), or a ``sampling.FeatureStore``
        (replicated or partitioned).
        Each minibatch then has ``mb.x``: the rows of ``mb.input_nodes`` as
        a float32 torch tensor on ``device``.  They are gathered once per
        bulk (one collective ``FeatureStore.fetch`` per bulk on every rank
        when the store is partitioned).
    labels : 1-D int array of length n, optional
        Class labels (numpy, cupy or torch; -1 for unknown).  Each minibatch
        then has ``mb.y``: the labels of ``mb.seeds``, int64 on ``device``.
    shuffle : bool, default True
        Shuffle the seeds each epoch (``sampling.epoch_batches``: a
        permutation keyed by ``seed`` and the epoch); False cuts them in
        the given order.  The neighbourhoods are drawn afresh each epoch
        either way.
    drop_last : bool, default False
        Drop the last minibatch when it is smaller than ``batch_size``.
    seed : int, default 0
        User seed, ``0 <= seed < 2**64``: the shuffle and every draw.
    bulk : int, optional
        Minibatches sampled per ``sampler.sample`` call on each rank.
    memory_budget : int, optional
        Bytes one bulk's sampling may use on each rank: the bulk size is
        ``sampling.BulkPlanner``'s (the smallest over the ranks when
        distributed).  Not together with ``bulk``; when both are None the
        bulk is ``DEFAULT_BULK`` (16) minibatches.
    prefetch : int, default 0
        Sample (and fetch the features of) up to this many bulks ahead of
        the training loop, in a background thread (see Notes, Threads and
        MPI).
    device : str or torch.device, default "cpu"
        Where ``mb.x`` and ``mb.y`` go ("cpu", "cuda", "cuda:1", ...).  The
        blocks stay where the sampler's graph is (on the GPU for a graph
        on the GPU).
    staging : {"auto", True, False}, default "auto"
        With ``prefetch``, copy ``x`` and ``y`` to the device through
        pinned buffers on a side CUDA stream, in the background thread
        (``sampling.loading.staging``): the training loop waits on an
        event, never on a copy.  ``"auto"``: for a CUDA ``device`` and
        features on the host; ``True`` also on the CPU (same minibatches).
    comm : MPI communicator, optional
        Data parallelism over ``comm`` for a sampler on a local (replicated)
        graph, as ``torch``'s ``DistributedSampler``: each rank samples and
        yields its own share of every epoch (see Notes, MPI).  For a sampler
        on a ``DistMatrix`` it is the matrix's communicator (None or a
        congruent one).
    partition : spla.partition.Partition, optional
        Under MPI, each rank trains the seeds of its own part first
        (``sampling.samplers.batches.seeds_by_part``, DistDGL's split), so
        with a locality-aware partition (METIS) most of a rank's
        neighbourhoods and features are local.  ``p / c`` parts for ``p``
        ranks with replication ``c`` (the DistMatrix layout's; 1 for a local
        graph).  Default: the seeds are dealt over the ranks without regard
        to the graph.

    Attributes
    ----------
    epoch : int
        The epoch that the next ``iter(loader)`` samples (see Notes).
    bulk : int
        Minibatches per ``sampler.sample`` call on each rank.
    node_type : str or None
        The seeds' vertex type (typed seeds), else None.

    The iterator of an epoch (``it = iter(loader)``) has ``it.epoch`` and
    ``it.stats``, a ``LoaderStats`` of what producing its bulks cost so far
    (seconds sampling, seconds gathering features and labels, seconds the
    consumer waited for a prefetched bulk, sampled edges).

    Raises
    ------
    DTypeError, DimensionMismatch, IndexOutOfRange, InvalidValue
        A bad argument, named in the message: seeds not distinct, out of
        range, empty or a mask of the wrong length; features or labels of
        the wrong shape or dtype; ``bulk`` together with ``memory_budget``;
        a budget too small for one minibatch; under MPI, too few seeds for
        one minibatch per rank.
    LayoutError
        Under MPI, ranks that disagree on the arguments.
    MissingDependency
        ``features`` or ``labels`` without PyTorch (the loader works
        without torch otherwise), or a CUDA ``device`` torch cannot use.

    Notes
    -----
    **Epochs.**  The loader counts epochs from 0: each ``iter(loader)``
    samples the epoch ``loader.epoch`` and then adds one to it, so ``for mb
    in loader`` run three times samples epochs 0, 1 and 2, each with its
    own shuffle and neighbourhoods.  ``loader.set_epoch(e)`` sets the epoch
    of the next ``iter(loader)`` (as ``torch``'s
    ``DistributedSampler.set_epoch``; the iterations after it count on from
    ``e``): to resume a run at epoch ``e``, or to replay one.  The iterator
    carries its epoch (``it.epoch``) and every minibatch too
    (``mb.meta["epoch"]``).

    **Reproducibility.**  Minibatch ``i`` of epoch ``e`` is drawn from the
    random stream of ``(seed, e, i)`` alone: the same whatever ``bulk``,
    ``memory_budget``, ``prefetch`` or the number of threads; two loaders
    with the same arguments give the same epochs.  This is what a
    hand-written loop gets wrong most often: passing the same ``epoch`` to
    every ``sample`` call (each epoch then re-trains identical
    neighbourhoods), restarting ``batch_ids`` at 0 in each bulk (bulks then
    share their draws), or overlapping bulks.

    **MPI.**  When the sampler's graph is a ``DistMatrix`` the loader is
    collective: every rank builds it with the same arguments and iterates
    it in step.  Each rank yields its own share of the minibatches, and
    every rank yields the same number per epoch (``len(loader)``): an epoch
    is cut into ``p * ceil(N / (p * batch_size))`` minibatches of
    near-equal size (at most ``batch_size`` seeds each; so the minibatches
    are slightly smaller than ``batch_size`` when ``N`` is not a multiple of
    ``p * batch_size``), and with ``drop_last`` into ``p * floor(N / (p *
    batch_size))`` minibatches of exactly ``batch_size`` (the remaining
    seeds are skipped that epoch).  Step ``s`` of rank ``r`` is minibatch
    ``s * p + r`` of the epoch, whatever the bulk size.  ``bulk`` is per
    rank: every ``sampler.sample`` call gets ``p * bulk`` minibatches.
    With ``prefetch`` the background thread samples and fetches on
    duplicated communicators (``sampler.dup()``, ``features.dup()``, made
    collectively when the loader is built), so its collectives never mix
    with the training loop's (``sampling.loading.pipeline`` explains why this is
    safe under ``MPI_THREAD_MULTIPLE``, which the ``mpich`` wheel provides;
    at a lower thread level the loader warns once with
    ``sampling.PrefetchWarning`` and samples synchronously).  The
    minibatches are the same as without prefetch.  Iterate a distributed
    loader from one thread at a time.  An error in one rank's background
    thread is raised on that rank alone (at its next ``next()``) while
    the others may wait in a collective: run the loop inside
    ``spla.comm.abort_on_error`` (or ``python -m mpi4py``) so that the
    job ends instead of hanging.

    **Threads.**  Several threads may iterate one loader at once (each
    ``iter`` is independent; the epoch counter is advanced under a lock);
    one iterator must be consumed by one thread.  With ``prefetch``, the
    background thread stops when the epoch ends, when the iterator is
    closed (``it.close()``) or garbage-collected (breaking out of the loop,
    or an exception in it); an exception raised while sampling in the
    background is raised again, as is, by the ``next()`` that would have
    returned that bulk's first minibatch.  The bytes the background thread
    moves for a bulk are recorded in the consuming thread's
    ``spla.comm.counting`` blocks when the bulk is taken.

    Examples
    --------
    >>> import numpy as np
    >>> import spla
    >>> from sampling import GraphSAGE, NodeLoader
    >>> i = np.arange(50)                                  # a ring of 50 vertices
    >>> A = spla.Matrix.from_coo(np.r_[i, i], np.r_[(i + 1) % 50, (i - 1) % 50],
    ...                          shape=(50, 50))
    >>> x = np.random.default_rng(0).random((50, 8), dtype=np.float32)
    >>> y = i % 3
    >>> loader = NodeLoader(GraphSAGE(A, [2, -1]), np.arange(40), batch_size=16,
    ...                     features=x, labels=y, bulk=2)
    >>> len(loader)
    3
    >>> epoch0 = list(loader)                              # epoch 0
    >>> for mb in epoch0:
    ...     print(mb.index, mb.batch_size, tuple(mb.x.shape) == (mb.input_nodes.size, 8),
    ...           bool((mb.y.numpy() == y[mb.seeds]).all()))
    0 16 True True
    1 16 True True
    2 8 True True
    >>> loader.epoch                                       # the next iteration's
    1
    >>> loader.set_epoch(0)                                # replay epoch 0
    >>> list(loader) == epoch0
    True
    """

    def __init__(self, sampler, seeds, batch_size, *, features=None, labels=None,
                 shuffle=True, drop_last=False, seed=0, bulk=None, memory_budget=None,
                 prefetch=0, device="cpu", comm=None, partition=None, staging="auto"):
        func = "NodeLoader"
        typed = is_typed_seeds(seeds)
        if not typed and not isinstance(sampler, Sampler):
            # No communicator can be known without a sampler: a local error.
            fail(DTypeError, func, "sampler", "a sampling.Sampler (GraphSAGE, LADIES, "
                 "FastGCN or a subclass), or a HeteroGraphSAGE with (type, ids) seeds",
                 describe(sampler))
        self.node_type, n = (check_hetero_sampler(func, sampler, seeds) if typed
                              else (None, sampler.num_nodes))
        comm = comm_of(func, sampler, features, comm)
        self.sampler = sampler
        self.comm = comm
        self._lock = threading.Lock()
        self._next_epoch = 0
        with C.collective_checks(comm):
            self._check_args(func, seeds[1] if typed else seeds, n, batch_size, shuffle,
                             drop_last, seed, prefetch, partition)
            per_rank, self.memory_budget = self._bulk_option(
                func, bulk, memory_budget, min(self.batch_size, int(self._seeds.size)))
            self._inputs = (HeteroInputs(func, sampler.G, self.node_type, features, labels,
                                         device) if typed
                            else Inputs(func, n, features, labels, device))
        self.device = self._inputs.device
        if comm is not None:
            per_rank = self._agree(func, per_rank, bulk)
        self.bulk = per_rank
        # What the background thread samples and fetches with: under MPI,
        # twins on duplicated communicators (see sampling.loading.pipeline),
        # made here because construction is collective and happens once, in
        # the same order on every rank (iter() may be called from several
        # threads).
        self._bg = None
        if self.prefetch and prefetch_allowed(comm, func):
            F = self._inputs.features
            if comm is None:
                self._bg = (sampler, F)
            else:
                # A local sampler and a replicated store are their own twins.
                self._bg = (sampler.dup(), F.dup() if self._inputs.kind == "store" else F)
        self._staging = None
        if self._bg is not None and comm is None and not typed:
            self._staging = staging_for(func, self._inputs, n, features, labels,
                                        self.prefetch, staging)

    def _check_args(self, func, seeds, n, batch_size, shuffle, drop_last, seed, prefetch,
                    partition):
        """The epoch's arguments, checked (collectively under MPI)."""
        self._seeds = as_seeds(func, seeds, n)
        N = int(self._seeds.size)
        self.batch_size = as_int(func, "batch_size", batch_size, minimum=1)
        self.shuffle = bool(shuffle)
        self.drop_last = bool(drop_last)
        self.seed = as_u64(func, "seed", seed)
        self.prefetch = as_int(func, "prefetch", prefetch, minimum=0)
        if self.prefetch and self.comm is not None and not hasattr(self.sampler, "dup"):
            fail(InvalidValue, func, "prefetch", f"0 under MPI for a "
                 f"{type(self.sampler).__name__} (it has no dup() to sample on a duplicated "
                 "communicator in the background)", self.prefetch)
        self._p = 1 if self.comm is None else self.comm.Get_size()
        self._shares = None
        if partition is not None:
            self._shares = part_shares(func, self, partition)
            self._num_batches = self._shares.num_batches
        else:
            self._num_batches = count_batches(func, N, self.batch_size, self._p,
                                              self.drop_last)

    def _agree(self, func, per_rank, bulk):
        """Collective: the ranks agree on everything that steers an epoch's collectives."""
        budget = -1 if self.memory_budget is None else min(self.memory_budget, 2 ** 62)
        fp = fingerprint(self._seeds)
        C.check_same(self.comm, func, "seeds, batch_size, shuffle, drop_last, seed, bulk and "
                     "memory_budget",
                     [int(self._seeds.size), fp >> 32, fp & 0xFFFFFFFF, self.batch_size,
                      int(self.shuffle), int(self.drop_last), self.seed >> 32,
                      self.seed & 0xFFFFFFFF, -1 if bulk is None else per_rank, budget],
                     show=show_args)
        if self.memory_budget is not None:
            # Each rank's estimate reads its own block of the graph.
            per_rank = C.agree_min(self.comm, per_rank)
        return per_rank

    # -- construction helpers ---------------------------------------------------
    def _bulk_option(self, func, bulk, memory_budget, largest):
        """(minibatches per pass on each rank, the budget or None)."""
        if bulk is not None and memory_budget is not None:
            fail(InvalidValue, func, "bulk", "None when memory_budget is given (the budget "
                 "chooses the bulk size)", bulk)
        if bulk is not None:
            return as_int(func, "bulk", bulk, minimum=1), None
        if memory_budget is None:
            return DEFAULT_BULK, None
        budget = as_int(func, "memory_budget", memory_budget, minimum=1)
        estimate = getattr(self.sampler, "estimate_bytes", None)
        if not callable(estimate):
            fail(InvalidValue, func, "memory_budget", "None for a sampler without "
                 "estimate_bytes(batch_size) (pass bulk instead)",
                 f"{budget} with a {type(self.sampler).__name__}")
        need = int(estimate(largest))
        if need > budget:
            fail(InvalidValue, func, "memory_budget",
                 f"at least {need} bytes (one minibatch of {largest} seeds); raise it or "
                 "lower batch_size", budget)
        return BulkPlanner(self.sampler, budget).bulk_size(largest), budget

    # -- epochs -------------------------------------------------------------------
    @property
    def epoch(self):
        """The epoch that the next ``iter(loader)`` samples."""
        with self._lock:
            return self._next_epoch

    def set_epoch(self, epoch):
        """Make the next ``iter(loader)`` sample epoch ``epoch`` (later ones count on).

        Parameters
        ----------
        epoch : int
            ``0 <= epoch < 2**47``.

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import GraphSAGE, NodeLoader
        >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
        >>> loader = NodeLoader(GraphSAGE(A, [2]), np.arange(6), 2)
        >>> loader.set_epoch(5)
        >>> it = iter(loader)
        >>> it.epoch, loader.epoch
        (5, 6)
        """
        epoch = as_epoch("NodeLoader.set_epoch", epoch)
        with self._lock:
            self._next_epoch = epoch

    def __iter__(self):
        with self._lock:
            epoch = self._next_epoch
            self._next_epoch = epoch + 1
        # A counter run past the shuffle's range (or set there) raises here.
        as_epoch("NodeLoader", epoch)
        return EpochIterator(self, epoch)

    def __len__(self):
        """Minibatches this rank yields per epoch."""
        return self._num_batches // self._p

    def __repr__(self):
        kind = self._inputs.kind or "none"
        return (f"<NodeLoader {type(self.sampler).__name__}, {self._seeds.size} seeds, "
                f"batch_size {self.batch_size}, {len(self)} minibatches per epoch"
                + (f" on each of {self._p} ranks" if self._p > 1 else "")
                + (" (seeds by part)" if self._shares is not None else "")
                + f", bulk {self.bulk}, shuffle={self.shuffle}, drop_last={self.drop_last}, "
                f"seed {self.seed}, next epoch {self.epoch}, prefetch {self.prefetch}, "
                f"features: {kind}, labels: "
                f"{'yes' if self._inputs.labels is not None else 'none'}, "
                f"device {self.device}>")

    def batches(self, epoch):
        """Every rank's minibatches of epoch ``epoch`` (seed arrays, in batch-id order).

        Minibatch ``i`` is sampled with ``batch_ids=[i]``; under MPI rank
        ``r`` trains minibatches ``r, r + p, r + 2p, ...``.

        Examples
        --------
        >>> import numpy as np, spla
        >>> from sampling import GraphSAGE, NodeLoader
        >>> A = spla.Matrix.from_dense(np.ones((6, 6)) - np.eye(6))
        >>> loader = NodeLoader(GraphSAGE(A, [2]), np.arange(6), 4, shuffle=False)
        >>> [b.tolist() for b in loader.batches(0)]
        [[0, 1, 2, 3], [4, 5]]
        """
        epoch = as_epoch("NodeLoader.batches", epoch)
        seeds = self._seeds
        # epoch_batches with one minibatch of all the seeds is its whole
        # permutation: cut by b on one process, this is epoch_batches(seeds, b).
        order = (epoch_batches(seeds, seeds.size, seed=self.seed, epoch=epoch)[0]
                 if self.shuffle else seeds)
        if self._shares is not None:
            return self._shares.cut(order)
        return cut(order, self.batch_size, self._num_batches, self._p, self.drop_last)

    def _bulks(self):
        """Batch ids of each bulk, in the order handed to ``sampler.sample``.

        One process: consecutive ids.  p ranks: step ``s`` of rank ``r``
        trains minibatch ``s * p + r``, whatever the bulk size; each bulk
        covers ``bulk`` steps and its ids are placed at the positions the
        sampler assigns to each rank (``owned_batches``; a local sampler's
        rank r samples the r-th of p equal slices), so every rank gets its
        own minibatches, in step order.
        """
        m, p, q = self._num_batches, self._p, self.bulk
        if p == 1:
            return [list(range(i, min(m, i + q))) for i in range(0, m, q)]
        return step_major_bulks(m // p, p, q, self._positions)

    def _positions(self, k, rank):
        """Positions, in a bulk of ``k``, of the minibatches ``rank`` samples and trains."""
        dist = distribution(self.sampler)
        if dist is not None:
            return owned_batches(k, dist[1], rank, dist[2])
        return list(range(*chunk(k, self._p, rank)))

    def _launch_bulk(self, epoch, batches, ids, sampler):
        """Start sampling one bulk: (a ``spla.Pending`` of this rank's minibatches,
        the seconds it took).  A node-wise sampler on a GPU graph leaves its
        hops queued on the device (``Sampler.sample(wait=False)``); every
        other sampler samples here."""
        t0 = time.perf_counter()
        if self.comm is not None and distribution(sampler) is None:
            # A local sampler samples only this rank's minibatches: the draws
            # are keyed by batch id, so they are those of the whole bulk.
            ids = [ids[i] for i in self._positions(len(ids), self.comm.Get_rank())]
        mine = [batches[i] for i in ids]
        if not ids:
            pending = Pending.ready([])
        elif self.node_type is None and type(sampler).sample is Sampler.sample:
            # (A subclass's own ``sample`` may not take ``wait``: called as before.)
            pending = sampler.sample(mine, seed=self.seed, epoch=epoch, batch_ids=ids,
                                     wait=False)
        else:
            typed = {} if self.node_type is None else {"node_type": self.node_type}
            pending = Pending.ready(sampler.sample(mine, seed=self.seed, epoch=epoch,
                                                   batch_ids=ids, **typed))
        return pending, time.perf_counter() - t0

    def _sample_bulk(self, epoch, batches, ids, sampler, features, inputs=None, launched=None,
                     gather=True):
        """Sample one bulk and attach its features and labels: this rank's minibatches.

        ``sampler`` and ``features`` are the loader's, or their twins on
        duplicated communicators in the background thread; ``launched`` the
        bulk's ``_launch_bulk`` when it was started earlier.  Without
        ``gather`` the minibatches get no ``x`` or ``y`` (a staging ring
        gathers them into its own buffers).  Returns the minibatches, the
        seconds sampling and the seconds gathering.
        """
        pending, ts = launched or self._launch_bulk(epoch, batches, ids, sampler)
        t0 = time.perf_counter()
        mbs = pending.wait()
        t1 = time.perf_counter()
        inputs = self._inputs if inputs is None else inputs
        xs = inputs.gather_x([mb.input_nodes for mb in mbs], features) if gather else None
        ys = inputs.gather_y([mb.seeds for mb in mbs]) if gather else None
        mbs = [dataclasses.replace(mb, x=None if xs is None else xs[j],
                                   y=None if ys is None else ys[j],
                                   meta={**mb.meta, "epoch": epoch})
               for j, mb in enumerate(mbs)]
        return mbs, ts + (t1 - t0), time.perf_counter() - t1


__all__ = ["NodeLoader", "LoaderStats", "DEFAULT_BULK", "MAX_EPOCH", "cut_epoch"]
