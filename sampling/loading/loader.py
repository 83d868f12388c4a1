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
import sys
import threading

import numpy as np

from spla import backend
from spla import comm as C
from spla.checks import as_index_array, as_int, as_u64, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, MissingDependency
from spla.layout import chunk
from spla.matrix import Matrix

from sampling.samplers.base import Sampler, owned_batches
from sampling.samplers.batches import BulkPlanner, epoch_batches, step_major_bulks
from sampling.loading.features import FeatureStore
from sampling.samplers.minibatch import _require_torch
from sampling.loading.pipeline import Prefetcher, prefetch_allowed
from sampling.datasets.validation import check_labels, host_array

#: Minibatches sampled per pass on each rank when neither ``bulk`` nor
#: ``memory_budget`` is given.
DEFAULT_BULK = 16

#: Epochs are below this (the shuffle's random stream holds 47 bits of epoch).
MAX_EPOCH = 2 ** 47


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
    seeds : 1-D int array or boolean mask
        The vertices to iterate (the training vertices, say): distinct ids
        in ``[0, n)``, or a boolean mask of length n (numpy, torch or cupy).
    batch_size : int
        Seeds per minibatch.  Larger than the number of seeds: one minibatch
        of all of them (refused with ``drop_last=True``).
    features : optional
        Node features, ``n x f``: a numpy, cupy or torch array, a
        ``scipy.sparse`` matrix or a ``spla.Matrix`` (rows densified per
        fetch), or a ``sampling.FeatureStore`` (replicated or partitioned).
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

    Attributes
    ----------
    epoch : int
        The epoch that the next ``iter(loader)`` samples (see Notes).

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
                 prefetch=0, device="cpu"):
        func = "NodeLoader"
        if not isinstance(sampler, Sampler):
            # No communicator can be known without a sampler: a local error.
            fail(DTypeError, func, "sampler", "a sampling.Sampler (GraphSAGE, LADIES, "
                 "FastGCN or a subclass)", describe(sampler))
        D = getattr(sampler, "D", None)
        partitioned = isinstance(features, FeatureStore) and not features.replicated
        comm = D.comm if D is not None else (features.comm if partitioned else None)
        self.sampler = sampler
        self._lock = threading.Lock()
        self._next_epoch = 0
        with C.collective_checks(comm):
            n = sampler.num_nodes
            self._seeds = _as_seeds(func, seeds, n)
            N = int(self._seeds.size)
            self.batch_size = as_int(func, "batch_size", batch_size, minimum=1)
            self.shuffle = bool(shuffle)
            self.drop_last = bool(drop_last)
            self.seed = as_u64(func, "seed", seed)
            self.prefetch = as_int(func, "prefetch", prefetch, minimum=0)
            self._p = 1 if D is None else comm.Get_size()
            self._num_batches = _count_batches(func, N, self.batch_size, self._p,
                                               self.drop_last)
            per_rank, self.memory_budget = self._bulk_option(func, bulk, memory_budget,
                                                             min(self.batch_size, N))
            self._features, self._feature_kind = _as_features(func, features, n)
            need_torch = features is not None or labels is not None
            self._torch = _require_torch(func) if need_torch else None
            self.device = _as_device(func, device, self._torch)
            self._labels = None if labels is None else _as_labels(func, labels, n,
                                                                  self._torch, self.device)
        if comm is not None:
            # Everything that steers the collectives of an epoch (how many
            # bulks, of how many minibatches, of which seeds) must agree.
            budget = -1 if self.memory_budget is None else min(self.memory_budget, 2 ** 62)
            fp = _fingerprint(self._seeds)
            C.check_same(comm, func, "seeds, batch_size, shuffle, drop_last, seed, bulk and "
                         "memory_budget",
                         [N, fp >> 32, fp & 0xFFFFFFFF, self.batch_size, int(self.shuffle),
                          int(self.drop_last), self.seed >> 32, self.seed & 0xFFFFFFFF,
                          -1 if bulk is None else per_rank, budget],
                         show=_show_args)
            if self.memory_budget is not None:
                # Each rank's estimate reads its own block of the graph.
                per_rank = C.agree_min(comm, per_rank)
        self.bulk = per_rank
        # What the background thread samples and fetches with: under MPI,
        # twins on duplicated communicators (see sampling.loading.pipeline), made here
        # because construction is collective and happens once, in the same
        # order on every rank (iter() may be called from several threads).
        self._bg = None
        if self.prefetch and prefetch_allowed(comm, func):
            if comm is None:
                self._bg = (sampler, self._features)
            else:
                store = self._features if self._feature_kind == "store" else None
                self._bg = (sampler.dup(), self._features if store is None else store.dup())

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
        epoch = _as_epoch("NodeLoader.set_epoch", epoch)
        with self._lock:
            self._next_epoch = epoch

    def __iter__(self):
        with self._lock:
            epoch = self._next_epoch
            self._next_epoch = epoch + 1
        # A counter run past the shuffle's range (or set there) raises here.
        _as_epoch("NodeLoader", epoch)
        return _EpochIterator(self, epoch)

    def __len__(self):
        """Minibatches this rank yields per epoch."""
        return self._num_batches // self._p

    def __repr__(self):
        # "scipy" is how sparse features (scipy or spla) are held internally.
        kind = {"scipy": "sparse", None: "none"}.get(self._feature_kind, self._feature_kind)
        return (f"<NodeLoader {type(self.sampler).__name__}, {self._seeds.size} seeds, "
                f"batch_size {self.batch_size}, {len(self)} minibatches per epoch"
                + (f" on each of {self._p} ranks" if self._p > 1 else "")
                + f", bulk {self.bulk}, shuffle={self.shuffle}, drop_last={self.drop_last}, "
                f"seed {self.seed}, next epoch {self.epoch}, prefetch {self.prefetch}, "
                f"features: {kind}, labels: {'yes' if self._labels is not None else 'none'}, "
                f"device {self.device}>")

    def _batches(self, epoch):
        """The epoch's minibatches (every rank's), in batch-id order."""
        seeds = self._seeds
        # epoch_batches with one minibatch of all the seeds is its whole
        # permutation: cut by b on one process, this is epoch_batches(seeds, b).
        order = (epoch_batches(seeds, seeds.size, seed=self.seed, epoch=epoch)[0]
                 if self.shuffle else seeds)
        return _cut(order, self.batch_size, self._num_batches, self._p, self.drop_last)

    def _bulks(self):
        """Batch ids of each bulk, in the order handed to ``sampler.sample``.

        One process: consecutive ids.  p ranks: step ``s`` of rank ``r``
        trains minibatch ``s * p + r``, whatever the bulk size; each bulk
        covers ``bulk`` steps and its ids are placed at the positions the
        sampler assigns to each rank (``owned_batches``), so every rank gets
        its own minibatches, in step order.
        """
        m, p, q = self._num_batches, self._p, self.bulk
        if p == 1:
            return [list(range(i, min(m, i + q))) for i in range(0, m, q)]
        D = self.sampler.D
        return step_major_bulks(m // p, p, q, lambda k, r: owned_batches(
            k, D.layout, r, self.sampler._by_process_row))

    def _sample_bulk(self, epoch, batches, ids, sampler, features):
        """Sample one bulk and attach its features and labels: this rank's minibatches.

        ``sampler`` and ``features`` are the loader's, or their twins on
        duplicated communicators in the background thread.
        """
        mbs = sampler.sample([batches[i] for i in ids], seed=self.seed, epoch=epoch,
                             batch_ids=ids)
        xs = self._gather_x([mb.input_nodes for mb in mbs], features)
        ys = self._gather_y([mb.seeds for mb in mbs])
        return [dataclasses.replace(mb, x=None if xs is None else xs[j],
                                    y=None if ys is None else ys[j],
                                    meta={**mb.meta, "epoch": epoch})
                for j, mb in enumerate(mbs)]

    # -- features and labels ------------------------------------------------------
    def _gather_x(self, parts, F):
        """The feature rows of each array of ``parts``, from one gather per bulk of ``F``."""
        kind = self._feature_kind
        if kind is None:
            return None
        torch = self._torch
        ids = backend.concatenate(parts)
        if kind == "store":
            # Collective when partitioned: called once per bulk on every rank.
            X = torch.from_numpy(F.fetch(ids)).to(self.device)
        elif kind == "torch":
            X = F[_torch_index(torch, ids, F.device)].to(self.device, torch.float32)
        elif kind == "scipy":
            rows = F[backend.to_host(ids)].toarray()
            X = torch.from_numpy(np.ascontiguousarray(rows, np.float32)).to(self.device)
        else:  # numpy
            rows = F[backend.to_host(ids)]
            X = torch.from_numpy(np.ascontiguousarray(rows, np.float32)).to(self.device)
        return list(X.split([int(a.size) for a in parts]))

    def _gather_y(self, parts):
        if self._labels is None:
            return None
        Y = self._labels[_torch_index(self._torch, backend.concatenate(parts),
                                      self._labels.device)]
        return list(Y.split([int(a.size) for a in parts]))


class _EpochIterator:
    """The minibatches of one epoch (one consumer thread).

    ``epoch`` is the epoch it samples.  With ``prefetch`` it owns a
    ``sampling.loading.pipeline.Prefetcher`` (a background thread), stopped by
    ``close()``, at the end of the epoch, on an error, or when the iterator
    is garbage-collected.
    """

    def __init__(self, loader, epoch):
        self.epoch = epoch
        batches = loader._batches(epoch)
        bulks = loader._bulks()
        self._count = len(bulks)
        self._next_bulk = 0
        self._pending = []
        self._done = False
        self._worker = None
        if loader._bg is not None and bulks:
            sampler, features = loader._bg

            def make(i):
                return loader._sample_bulk(epoch, batches, bulks[i], sampler, features)

            # The prefetcher stops itself when this iterator drops it: its
            # thread never refers to the iterator.
            self._worker = Prefetcher(make, len(bulks), loader.prefetch,
                                      name="NodeLoader-prefetch")
        else:
            def make(i):
                return loader._sample_bulk(epoch, batches, bulks[i], loader.sampler,
                                           loader._features)
        self._make = make

    def __iter__(self):
        return self

    def __next__(self):
        while not self._pending:
            if self._done or self._next_bulk >= self._count:
                self.close()
                raise StopIteration
            try:
                if self._worker is None:
                    bulk = self._make(self._next_bulk)
                else:
                    bulk = self._worker.get().value
            except BaseException:
                self.close()
                raise
            self._next_bulk += 1
            self._pending = list(reversed(bulk))
        return self._pending.pop()

    def close(self):
        """Stop sampling ahead (joins the background thread); the epoch ends here."""
        self._done = True
        self._pending = []
        if self._worker is not None:
            self._worker.stop()


# -- argument checks ----------------------------------------------------------------
def _as_epoch(func, epoch):
    epoch = as_int(func, "epoch", epoch, minimum=0)
    if epoch >= MAX_EPOCH:
        fail(InvalidValue, func, "epoch", "an integer below 2**47", epoch)
    return epoch


def _torch_module_of(x):
    torch = sys.modules.get("torch")
    return torch if torch is not None and isinstance(x, torch.Tensor) else None


def _as_seeds(func, seeds, n):
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


def _count_batches(func, N, b, p, drop_last):
    """Minibatches of an epoch over all ranks (a multiple of p when p > 1)."""
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
    m = _count_batches(func, int(order.size), b, p, drop_last)
    return _cut(order, b, m, p, drop_last)


def _cut(order, b, m, p, drop_last):
    """``order`` cut into the ``m`` minibatches of an epoch (``_count_batches``'s m).

    One process: consecutive slices of ``b`` (the last one shorter, or
    dropped).  p > 1: with ``drop_last``, m slices of exactly ``b``; else m
    near-equal slices (sizes differ by at most one, each at most ``b``).

    Examples
    --------
    >>> import numpy as np
    >>> [c.size for c in _cut(np.arange(10), 4, 3, 1, False)]
    [4, 4, 2]
    >>> [c.size for c in _cut(np.arange(10), 4, 4, 2, False)]
    [3, 3, 2, 2]
    """
    if p == 1 or drop_last:
        return [order[i * b:(i + 1) * b] for i in range(m)]
    return [order[slice(*chunk(order.size, m, i))] for i in range(m)]


def _as_features(func, features, n):
    """(the features in a gatherable form, their kind) or (None, None)."""
    if features is None:
        return None, None
    if isinstance(features, FeatureStore):
        if features.num_nodes != n:
            fail(DimensionMismatch, func, "features", f"a FeatureStore of {n} rows (one per "
                 "vertex of the sampler's graph)", repr(features))
        return features, "store"
    if isinstance(features, Matrix):
        _check_rows(func, features.shape, n, describe(features))
        return features.to("cpu").to_scipy(copy=False), "scipy"
    torch = _torch_module_of(features)
    if torch is not None:
        _check_rows(func, tuple(features.shape), n, f"tensor of shape {tuple(features.shape)}"
                    f" and dtype {features.dtype}")
        if features.dtype.is_complex:
            fail(DTypeError, func, "features", "a real-valued tensor", str(features.dtype))
        return features, "torch"
    if backend.device_of(features) == "cuda":
        _check_rows(func, features.shape, n, describe(features))
        _check_dtype(func, features)
        torch = _require_torch(func)
        return torch.from_dlpack(features), "torch"
    try:
        import scipy.sparse as sp
        if sp.issparse(features):
            _check_rows(func, features.shape, n, describe(features))
            return sp.csr_matrix(features), "scipy"
    except ImportError:  # pragma: no cover - scipy is a dependency
        pass
    if not isinstance(features, np.ndarray):
        fail(DTypeError, func, "features", "a numpy, cupy or torch array, a scipy.sparse "
             "matrix, a spla.Matrix or a sampling.FeatureStore", describe(features))
    _check_rows(func, features.shape, n, describe(features))
    _check_dtype(func, features)
    return features, "numpy"


def _check_rows(func, shape, n, got):
    if len(shape) != 2 or shape[0] != n:
        fail(DimensionMismatch, func, "features", f"an ({n}, f) matrix (one row per vertex "
             "of the sampler's graph)", got)


def _check_dtype(func, a):
    if a.dtype.kind not in "fiub":
        fail(DTypeError, func, "features", "a numeric array", describe(a))


def _as_device(func, device, torch):
    """The torch.device for x and y (checked only when torch is needed)."""
    if torch is None:
        if not isinstance(device, str) and type(device).__name__ != "device":
            fail(DTypeError, func, "device", "a device name ('cpu', 'cuda', 'cuda:1') or a "
                 "torch.device", describe(device))
        return device
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        fail(InvalidValue, func, "device", "a device name ('cpu', 'cuda', 'cuda:1') or a "
             "torch.device", describe(device))
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise MissingDependency(f"{func}: argument 'device' is {str(dev)!r}, but this PyTorch "
                                "build sees no CUDA GPU; install a CUDA build of torch or use "
                                "device='cpu'")
    return dev


def _as_labels(func, labels, n, torch, device):
    a = check_labels(func, "labels", host_array(func, "labels", labels), n)
    return torch.from_numpy(np.ascontiguousarray(a, np.int64)).to(device)


def _fingerprint(ids):
    """A 64-bit hash of an id array, order-sensitive (to compare the ranks' seeds)."""
    pos = np.arange(ids.size, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    h = (ids.astype(np.uint64) + np.uint64(1)) * (pos | np.uint64(1))
    h ^= h >> np.uint64(29)
    return int(h.sum(dtype=np.uint64)) >> 1  # 63 bits: fits check_same's int64


def _show_args(v):
    v = v.tolist()
    return (f"{v[0]} seeds (fingerprint {(v[1] << 32) | v[2]:#x}), batch_size {v[3]}, "
            f"shuffle={bool(v[4])}, drop_last={bool(v[5])}, seed {(v[6] << 32) | v[7]}, "
            f"bulk {'None' if v[8] < 0 else v[8]}, "
            f"memory_budget {'None' if v[9] < 0 else v[9]}")


# -- small helpers --------------------------------------------------------------------
def _torch_index(torch, ids, device):
    """``ids`` (numpy or cupy) as an int64 torch tensor on ``device``."""
    if isinstance(ids, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(ids, np.int64))
    else:
        t = torch.from_dlpack(ids.astype(np.int64, copy=False))
    return t.to(device)


__all__ = ["NodeLoader", "DEFAULT_BULK"]
