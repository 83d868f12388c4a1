"""The trainer: dataset, graph, sampler, features, model and optimizer of a run.

``Trainer(opts, comm)`` builds everything (collectively under MPI, the
pieces by ``sampling.train.build``); ``train_epoch(e)`` is one epoch of
bulk-sampled training, ``evaluate`` an accuracy, ``fit`` the whole run.  A
sampler instance and a model can be given in place of the built-in ones
(``Trainer(sampler=..., model=...)``).

There is one epoch loop: the trainer iterates a ``NodeLoader`` over the
training vertices (and one per evaluation split), so its minibatches,
bulks, prefetch and rank assignment are the loader's, and a run's losses
and parameters do not depend on ``--bulk``, ``--memory-budget``,
``--prefetch`` or the thread counts.

The trainer changes nothing in the process that outlives its work: the
thread counts (numba, torch) and torch's random generator are its own only
while it builds, trains or evaluates, and the caller's come back after.
"""

import contextlib
import time

import numpy as np

from spla import comm as C
from spla.checks import describe, fail
from spla.exceptions import DTypeError

from sampling.loading.feature_cache import bulk_access_counts
from sampling.loading.placement import cap_device_memory
from sampling.train.ahead import NextEpoch, mark_prefetch_stuck
from sampling.train.build import (check_cuda, check_logits, check_model, check_sampler,
                                  dense_features, features_of, load_dataset, make_partition,
                                  make_sampler, make_store, plan_bulk, resolve_placement,
                                  sampler_kind)
from sampling.train.hetero import build_hetero, homogeneous_only, is_hetero
from sampling.train.launch import default_threads, use_local_gpu, using_threads, world_comm
from sampling.train.state import RunState
from sampling.train.options import PHASES, TrainOptions, UsageError, check_options
from sampling.train.report import format_row, header
from sampling.train.stats import EpochStats, bytes_by_phase
from sampling.train.summary import progress_bar, wants_progress
from sampling.train.step import GradientSync, broadcast_model

_EVAL_STREAM = {"val": 1 << 40, "test": (1 << 40) + 1}  # fixed epochs of the eval draws
# The evaluation of a user's array of vertices.
_IDS_STREAM = (1 << 40) + 2
# The pre-sampled epoch that ranks vertices for a 'frequency' feature cache:
# its own stream, so it is none of the training epochs (nor the eval draws).
_CACHE_STREAM = (1 << 40) + 3

# Seconds an interrupted epoch waits for its prefetch thread under MPI.
_PREFETCH_GRACE_S = 5.0


class Trainer:
    """Everything a run needs: dataset, graph, sampler, features, model, optimizer.

    Parameters
    ----------
    opts : TrainOptions, optional
        Default ``TrainOptions()``.
    comm : MPI communicator, optional
        None for a single process (no MPI); COMM_WORLD under mpiexec.
    dataset : sampling.datasets.Dataset, optional
        Default: ``load(opts.dataset)`` (with ``root=opts.root`` when set).
        ``dataset.x`` is a ``spla.Matrix`` (sparse bag-of-words features,
        row-normalised here as PyG's ``NormalizeFeatures`` does) or a dense
        ``(n, f)`` float numpy array (used as given, in float32).
    sampler : sampling.Sampler, optional
        Used as given instead of the one ``opts`` names; its graph must have
        the dataset's number of vertices.  ``opts.sampler``, ``fanouts`` and
        ``layer_sizes`` are then not used (``describe()`` says what is).  A
        sampler on a ``DistMatrix`` must be distributed over ``comm``; a
        sampler on a local graph under MPI samples, on each rank, that
        rank's share of every bulk.
    model : torch.nn.Module, optional
        Called as ``model(x, minibatch)``: ``x`` is a float32 tensor of the
        features of ``minibatch.input_nodes`` (on ``opts.device``), and the
        result must be the logits of ``minibatch.seeds``, a float tensor of
        shape ``(minibatch.batch_size, num_classes)`` (checked at the first
        step, on every rank together).  Default: the built-in GraphSAGE
        model (or GCN for LADIES / FastGCN samplers) of ``opts.hidden``
        width.  ``opts.hidden`` and ``opts.dropout`` do not apply to a given
        model.  Under MPI, rank 0's parameters and buffers are broadcast to
        every rank when the trainer is built, so every rank starts from the
        same model however each built it (the architecture must be the
        same).

    Notes
    -----
    Threads: ``opts.threads`` (default: numba and torch get
    ``default_threads()``) hold only while the trainer works (construction,
    ``train_epoch``, ``evaluate``, ``fit``); the caller's counts are
    restored afterwards, also after an exception.  Randomness: the trainer
    seeds its own torch random state with ``opts.seed`` (the model
    initialisation, dropout) and leaves the global one as it found it.  A
    trainer is used by one thread at a time.

    Collective: under MPI every rank builds its Trainer and calls the same
    methods in the same order.

    Examples
    --------
    A custom model follows the built-in models' protocol: it reads the
    minibatch's blocks (input layer first) and returns the seeds' logits.

    >>> import torch
    >>> from sampling import GraphSAGE
    >>> from sampling.datasets import load
    >>> from sampling.models import BlockOperator
    >>> class MeanMLP(torch.nn.Module):
    ...     def __init__(self, f, classes):
    ...         super().__init__()
    ...         self.lin = torch.nn.Linear(f, classes)
    ...     def forward(self, x, minibatch):
    ...         for block in minibatch.blocks:     # mean over the sampled neighbours
    ...             x = BlockOperator(block) @ x
    ...         return self.lin(x)
    >>> ds = load("cora")
    >>> trainer = Trainer(TrainOptions(epochs=1, bulk=8, threads=1), dataset=ds,
    ...                   sampler=GraphSAGE(ds.A, [5, 5]),
    ...                   model=MeanMLP(ds.num_features, ds.num_classes))
    >>> 0.0 <= trainer.fit() <= 1.0
    True
    """

    def __init__(self, opts=None, comm=None, dataset=None, *, sampler=None, model=None):
        import torch
        opts = TrainOptions() if opts is None else opts
        if not isinstance(opts, TrainOptions):
            fail(DTypeError, "Trainer", "opts", "a sampling.train.TrainOptions (or None for "
                 "the defaults)", describe(opts))
        check_options(opts, sizes=sampler is None)
        if opts.mode != "sampled":
            raise UsageError(f"Trainer trains minibatches (mode 'sampled'); mode {opts.mode!r} "
                             "is run by sampling.train.run (sampling.train.bns.BNSTrainer)")
        self.opts = opts
        self.torch = torch
        if opts.graph == "partitioned" and comm is None:
            comm = world_comm(need_mpi=True)
        self.comm = comm
        self.size = 1 if comm is None else comm.Get_size()
        self.rank = 0 if comm is None else comm.Get_rank()
        # With a partition, each rank trains and evaluates its own part's
        # vertices first unless told otherwise (DistDGL's split).
        self.split = opts.split or ("part" if opts.graph == "partitioned" else "global")
        # --threads N: N numba and N torch threads.  By default both get the
        # cores of this rank: the models' dropout and aggregation run on
        # spla's kernels, and torch's share is the dense layers, which a
        # second thread speeds up.  Idle OpenMP threads sleep instead of
        # spinning (kernels sets OMP_WAIT_POLICY=PASSIVE before torch loads),
        # so a second torch thread does not slow a loaded machine down.
        self.threads = opts.threads or default_threads()
        self.torch_threads = opts.threads or self.threads
        # --device cuda: this rank's GPU on its node (ranks spread over a node's GPUs).
        self.device = use_local_gpu(torch) if opts.device == "cuda" else torch.device(opts.device)
        self.given_sampler = sampler is not None
        self.given_model = model is not None
        self._state = RunState(torch, self.device, self.threads, self.torch_threads)
        self._model_checked = False
        self._ahead, self._cache_mark = NextEpoch(), None
        self._show_progress = self.rank == 0 and wants_progress(opts.progress)
        self.history = []
        with using_threads(self.threads, self.torch_threads):
            self._build(dataset, sampler, model)

    # -- building -----------------------------------------------------------------
    def _build(self, dataset, sampler, model):
        opts = self.opts
        # Checks that can fail on one rank (a missing GPU, a dataset that does
        # not load) or on all (the options) raise on every rank together.
        with C.collective_checks(self.comm):
            self.device_cap = None
            if opts.device == "cuda":
                check_cuda(self.torch)
                # The cap is what the placement sees as free and what the
                # allocators may hold: a graph "larger than the GPU" then
                # really runs without the GPU's memory.
                self.device_cap = cap_device_memory(opts.device_memory_limit,
                                                    device=self.device, torch=self.torch)
            ds = load_dataset(opts) if dataset is None else dataset
            if opts.graph == "partitioned" and self.size % opts.replication:
                raise UsageError(f"--replication {opts.replication} must divide the number "
                                 f"of ranks ({self.size})")
            self.hetero_target = None
            if is_hetero(ds):
                self.dataset = ds
                net = build_hetero(self, ds, sampler, model)
            else:
                homogeneous_only(opts)
                features = features_of(ds)
                self.placement = (resolve_placement(opts, self.comm, ds.A, features)
                                  if sampler is None else None)
                if sampler is not None:
                    check_sampler(opts, self.comm, sampler, ds)
                if model is not None:
                    check_model(self.torch, model)
        if self.hetero_target is not None:
            self._adopt_model(net)
            return
        self.dataset = ds
        self.num_classes = ds.num_classes
        kind = self._place_graph(ds, sampler)
        splits = {"train": ds.train_idx, "val": ds.val_idx, "test": ds.test_idx}
        self.columns = opts.features == "columns"
        self.store = make_store(opts, self.comm, dense_features(features), ds, self.graph,
                                self.partition, splits)
        self._x_all = None
        if not self.columns and self.store.replicated:
            # Placement 'cpu': the features stay on the host, and the loader
            # stages each bulk's rows to the device (sampling.loading.staging).
            self._x_all = self.torch.from_numpy(self.store.local)
            if self.placement != "cpu":
                self._x_all = self._x_all.to(self.device)
        # --batch-size is the global batch of a step: each rank trains a
        # minibatch of ceil(batch / p) seeds per step, so a step covers about
        # the same seeds, and an epoch has about as many steps, for every p.
        self.minibatch_size = -(-opts.batch_size // self.size)
        self.bulk = plan_bulk(opts, self.comm, self.sampler, self.minibatch_size,
                              self._epoch_steps())
        self.bulk_size = self.bulk * self.size
        self._eval_loaders = {}
        self.train_loader = self._loader(self.store.splits["train"], shuffle=True,
                                         prefetch=opts.prefetch)
        if self._cache_fraction() > 0 and self.store.cache_policy == "frequency":
            self._warm_cache()
        self._build_model(model, kind)

    def _place_graph(self, ds, sampler):
        """The partition, the graph and the sampler; returns the model kind."""
        opts = self.opts
        partitioned = opts.graph == "partitioned"
        P = (make_partition(opts, self.comm, ds.A) if partitioned and sampler is None
             else None)
        if sampler is None:
            G, sampler = make_sampler(opts, self.comm, ds.A, P, self.placement)
            kind = opts.sampler
        else:
            G = sampler.D if sampler.D is not None else sampler.A
            kind = sampler_kind(sampler)
            if sampler.D is not None and not sampler.D.layout.replicated:
                P = sampler.D.partition  # the features go where its rows are
        if partitioned and P is None and self.split == "part":
            import spla
            P = spla.partition.block(ds.A, self.size // opts.replication)
        self.partition = P
        self.graph = G
        self.sampler = sampler
        self.depth = sampler.num_layers
        # A sampler on a local graph under MPI: each rank samples its share
        # of a bulk, as a sampler on a replicated DistMatrix would.
        self._split = sampler.D is None and self.size > 1
        return kind

    def _build_model(self, model, kind):
        from sampling.models import model_for
        opts = self.opts
        with self._fork_rng():
            self._seed(opts.seed)  # identical initialisation on every rank
            if model is None:
                model = model_for(kind, self.store.num_features, opts.hidden,
                                  self.num_classes, self.depth, opts.dropout)
            self._save_rng()
        self._adopt_model(model)

    def _adopt_model(self, model):
        """The model on the device, identical on every rank, with its optimizer."""
        opts = self.opts
        self.model = model.to(self.device)
        self._net = self.model  # the model as built or given (before any P3 wrapper)
        broadcast_model(self.torch, self.comm, self.model)
        local = set()
        if self.columns:
            from sampling.train.p3 import P3Model
            # The first layer's weights split by the store's columns (this
            # rank's slice is its own: never all-reduced); the rest are
            # model's own modules, trained data-parallel.
            self.model = P3Model(self.model, self.store, self.comm)
            local = {id(q) for q in self.model.local_parameters()}
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.sync = GradientSync(self.torch, self.params, self.comm, local)
        self.optimizer = self.torch.optim.Adam(self.params, lr=opts.lr,
                                               weight_decay=opts.weight_decay)

    def _loader(self, seeds, *, shuffle, prefetch=0, fetch=True):
        """A ``NodeLoader`` over ``seeds`` with the run's sampler, features and ranks."""
        from sampling.loading.loader import NodeLoader
        if self.hetero_target is not None:
            # The graph's per-type features and labels (NodeLoader's default).
            return NodeLoader(self.sampler, (self.hetero_target, seeds), self.minibatch_size,
                              labels=None if fetch else {}, shuffle=shuffle,
                              seed=self.opts.seed, bulk=self.bulk, prefetch=prefetch,
                              device=self.device)
        features = None
        if fetch and not self.columns:
            features = self._x_all if self._x_all is not None else self.store
        return NodeLoader(self.sampler, seeds, self.minibatch_size, features=features,
                          labels=self.store.labels if fetch else None, shuffle=shuffle,
                          seed=self.opts.seed, bulk=self.bulk, prefetch=prefetch,
                          device=self.device, comm=self.comm if self._split else None,
                          partition=self.partition if self.split == "part" else None)

    def _epoch_steps(self):
        """Training steps of an epoch (each rank's minibatches per epoch)."""
        n = int(self.store.splits["train"].size)
        return max(1, -(-n // (self.minibatch_size * self.size)))

    def partition_report(self):
        """Lines on the partition of a partitioned run: edge cut and per-part balance.

        Empty without a partition.  The balance table has the vertices,
        stored entries and training vertices of each part, and ``max/mean``.
        """
        P = self.partition
        if P is None:
            return []
        A = self.dataset.A
        cut = P.edge_cut(A)
        lines = [f"partition {P.method}: {P.parts} parts, edge cut {cut} of {A.nnz} stored "
                 f"entries ({100 * cut / max(A.nnz, 1):.1f} %), training split {self.split}"]
        lines += P.balance(A, self.store.splits["train"]).table().splitlines()
        return lines

    def _warm_cache(self):
        """Fill a 'frequency' feature cache from one pre-sampled epoch (Quiver's placement).

        The training minibatches of stream ``_CACHE_STREAM`` are sampled in
        bulks as an epoch would be (collectively), and each rank counts, per
        vertex, the bulks whose fetch would ask for it: a row wanted by
        several minibatches of one bulk travels once, so that is what its
        bytes depend on.  ``warm_cache`` sums the counts over the ranks.
        """
        loader = self._loader(self.store.splits["train"], shuffle=True, fetch=False)
        loader.set_epoch(_CACHE_STREAM)
        self.store.warm_cache(bulk_access_counts(iter(loader), self.store.num_nodes))

    # -- the trainer's own threads and random state -------------------------------------
    def _fork_rng(self):
        return self._state.fork()

    def _seed(self, seed):
        self._state.seed(seed)

    def _save_rng(self):
        self._state.save()

    def _working(self):
        """The trainer's threads and random state for the block, the caller's after it."""
        return self._state.working()

    def describe(self):
        """One paragraph: the dataset, and what the run uses (sampler, model, layout, threads)."""
        from sampling.train.summary import describe_run
        return describe_run(self)

    # -- steps ---------------------------------------------------------------------
    @contextlib.contextmanager
    def _first_forward(self):
        """Until the model's output has been checked once: the block's errors are collective.

        The first forward pass checks the model's output (``_forward``); run
        inside ``collective_checks``, a model that fails there (or raises)
        stops every rank together.
        """
        if self._model_checked:
            yield
            return
        with C.collective_checks(self.comm):
            yield
        self._model_checked = True

    def _step_inputs(self, mb):
        """Every rank's minibatch of the step (this rank's own, the others' layer-1 inputs)."""
        from sampling.train.p3 import share_inputs
        step = share_inputs(mb, self.comm)
        step[self.rank] = mb
        return step

    def _labels(self, mb):
        """The labels of ``mb``'s seeds (of the labelled type on a heterogeneous graph)."""
        return mb.y if self.hetero_target is None else mb.y[self.hetero_target]

    def _cache_fraction(self):
        return 0.0 if self.columns else self.store.cache_fraction

    def _cache_stats(self):
        return None if self._cache_fraction() == 0 else self.store.cache_stats()

    def _forward(self, mb, step=None):
        """The logits of ``mb`` (``step``: every rank's minibatch, with P3's columns)."""
        if self.hetero_target is not None:
            out = self.model(mb)
        else:
            out = self.model(step) if self.columns else self.model(mb.x, mb)
        if not self._model_checked:
            check_logits(self.torch, out, mb, self.num_classes, type(self.model).__name__)
        return out

    def _train_step(self, mb, t, sums, where):
        """Forward, backward, gradient Allreduce and optimizer step of one minibatch."""
        t0 = time.perf_counter()
        self.optimizer.zero_grad(set_to_none=True)
        step = None
        if self.columns:
            # Every rank's layer-1 inputs, for the push-pull.
            step = self._step_inputs(mb)
            shared = time.perf_counter()
            t["fetch"] += shared - t0
            t0 = shared
        with self._first_forward():
            loss = self.torch.nn.functional.cross_entropy(self._forward(mb, step),
                                                          self._labels(mb), reduction="sum")
            loss.backward()
            step_loss = float(loss.detach())
        t1 = time.perf_counter()
        self.sync.step(mb.batch_size, step_loss, where)
        t2 = time.perf_counter()
        self.optimizer.step()
        t3 = time.perf_counter()
        t["fwd/bwd"] += (t1 - t0) + (t3 - t2)
        t["allreduce"] += t2 - t1
        sums["loss"] += step_loss
        sums["seeds"] += mb.batch_size
        sums["steps"] += 1

    def _reduce(self, values, op="sum"):
        if self.size == 1:
            return np.asarray(values, np.float64)
        # op=None: scalars for the report are not part of the training step's bytes.
        return C.allreduce_array(self.comm, np.asarray(values, np.float64), op, None)

    # -- training and evaluation --------------------------------------------------
    def train_epoch(self, epoch):
        """Collective: one epoch of bulk-sampled training; returns ``EpochStats``."""
        with self._working():
            return self._train_epoch(epoch)

    def _train_epoch(self, epoch):
        t = dict.fromkeys(PHASES, 0.0)
        # fit's next epoch: its iterator starts when this training loop ends.
        then, self._ahead.follows = self._ahead.follows, None
        sums = dict.fromkeys(("loss", "seeds", "steps"), 0)
        started = time.perf_counter()
        # An epoch started ahead counts the cache's requests from its start.
        cache_before = self._cache_mark if self._cache_mark is not None else self._cache_stats()
        self._cache_mark = cache_end = None
        it = None
        with C.counting() as moved:
            bar = progress_bar(self._show_progress, len(self.train_loader), epoch)
            try:
                # Inside the try: Ctrl-C right after the prefetch thread
                # starts must still stop it (the finally below).
                it = self._ahead.iterator(self.train_loader, epoch)
                self.model.train()
                bulk = step = 0
                for mb in it:
                    bulk, step = it.stats.bulks, (step + 1 if it.stats.bulks == bulk else 1)
                    self._train_step(mb, t, sums, f"epoch {epoch + 1}, bulk {bulk}, step {step}")
                    if bar is not None:
                        bar.update(1)
                t0 = time.perf_counter()
                loop = t0 - started
                if then is not None:
                    it.close()  # its producer is done: the slots are the next one's
                    self._cache_mark = cache_end = self._cache_stats()
                    self._ahead.start(self.train_loader, then)
                if bar is not None:
                    bar.set_postfix_str("validating")
                val = self.evaluate("val")
                t["eval"] = time.perf_counter() - t0
            except BaseException as exc:
                if it is not None and self.size > 1 and not it.stop(_PREFETCH_GRACE_S):
                    # The ranks' background threads need not be at the same
                    # bulk when the epoch stops: this rank's may wait in a
                    # collective that the others never join.  Say so on the
                    # exception, and the main job aborts every rank (MPI
                    # cannot finalize under a thread blocked in a collective).
                    mark_prefetch_stuck(exc)
                raise
            finally:
                if it is not None:
                    it.close()
                if bar is not None:
                    bar.close()
        return self._epoch_stats(epoch, t, sums, it.stats, moved, (cache_before, cache_end),
                                 started, val, loop)

    def _epoch_stats(self, epoch, t, sums, loaded, moved, cache_window, started, val, loop):
        """The epoch's row: sums over the ranks, times of the slowest rank."""
        t["sample"] += loaded.sample
        t["fetch"] += loaded.fetch
        hits = asked = 0
        if self._cache_fraction() > 0:
            before, end = cache_window
            cache = (self._cache_stats() if end is None else end) - before
            hits, asked = cache.hits, cache.requested
        phases = bytes_by_phase(moved)
        tot = self._reduce([sums["loss"], sums["seeds"], loaded.sampled_edges, hits, asked]
                           + list(phases.values()))
        elapsed = time.perf_counter() - started
        tmax = self._reduce([t[k] for k in PHASES]
                            + [loaded.wait, loaded.copy, loop, elapsed], "max")
        by_phase = {k: int(v) for k, v in zip(phases, tot[5:])}
        stats = EpochStats(epoch + 1, tot[0] / max(tot[1], 1.0), val,
                           dict(zip(PHASES, tmax[:-4].tolist())), int(tot[2]),
                           sum(by_phase.values()), sums["steps"], int(tot[3]), int(tot[4]),
                           wait=float(tmax[-4]), prefetch=self.train_loader.prefetch
                           if self.train_loader._bg is not None else 0,
                           wall=float(tmax[-1]), bytes_by_phase=by_phase, copy=float(tmax[-3]),
                           train_wall=float(tmax[-2]))
        self.history.append(stats)
        return stats

    def evaluate(self, split):
        """Collective: accuracy on split 'val' or 'test' (or an array of vertex ids).

        The evaluation vertices are sampled like training minibatches (the
        same sampler and loader, a fixed random stream per split, so every
        call sees the same neighbourhoods), spread over the ranks as a
        training epoch is (by part with ``split='part'``), and the correct
        counts are summed over the ranks.
        """
        with self._working():
            return self._evaluate(split)

    def _eval_loader(self, split):
        if not isinstance(split, str):
            loader = self._loader(np.asarray(split, np.int64), shuffle=False)
            loader.set_epoch(_IDS_STREAM)
            return loader
        loader = self._eval_loaders.get(split)
        if loader is None:
            loader = self._eval_loaders[split] = self._loader(self.store.splits[split],
                                                              shuffle=False)
        loader.set_epoch(_EVAL_STREAM[split])
        return loader

    def _evaluate(self, split):
        torch = self.torch
        loader = self._eval_loader(split)
        correct = total = 0
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                for mb in loader:
                    step = self._step_inputs(mb) if self.columns else None
                    with self._first_forward():
                        pred = self._forward(mb, step).argmax(dim=1)
                    correct += int((pred == self._labels(mb)).sum())
                    total += mb.batch_size
        finally:
            self.model.train(was_training)
        c, n = self._reduce([correct, total])
        return float(c / n) if n else float("nan")

    def fit(self, epochs=None, log=None):
        """Collective: train ``epochs`` epochs (default ``opts.epochs``), then test.

        ``log(line)`` receives the table (header, one row per epoch) on
        rank 0.  Returns the test accuracy.
        """
        with self._working():
            epochs = self.opts.epochs if epochs is None else epochs
            start = len(self.history)
            cols = dict(cache=self._cache_fraction() > 0, prefetch=self.opts.prefetch > 0,
                        gpu=self.opts.device == "cuda")
            if log and self.rank == 0:
                log(header(**cols))
            try:
                for e in range(start, start + epochs):
                    # The next epoch starts producing during this one's
                    # validation pass (sampling.train.ahead; one process).
                    self._ahead.follows = (e + 1 if e + 1 < start + epochs and self.size == 1
                                           else None)
                    stats = self.train_epoch(e)
                    if log and self.rank == 0:
                        log(format_row(stats, **cols))
            finally:
                self._ahead.drop()
            return self.evaluate("test")

    def parameter_checksum(self):
        """float64 sum of |parameters| and of their positions-weighted values.

        Those of the whole model: with ``features='columns'`` the first
        layer's slices are gathered first (collective then), so the
        checksum compares with a ``features='rows'`` run's.
        """
        params = self.params
        if self.columns:
            params = [p for p in self.model.gather_model().parameters() if p.requires_grad]
        flat = self.torch.cat([p.detach().reshape(-1).double().cpu() for p in params])
        w = self.torch.arange(flat.numel(), dtype=self.torch.float64) % 97 + 1
        return float(flat.abs().sum()), float((flat * w).sum())


__all__ = ["Trainer", "EpochStats"]
