"""The trainer: dataset, graph, sampler, features, model and optimizer of a run.

``Trainer(opts, comm)`` builds everything (collectively under MPI);
``train_epoch(e)`` is one epoch of bulk-sampled training, ``evaluate`` an
accuracy, ``fit`` the whole run.  A sampler instance and a model can be
given in place of the built-in ones (``Trainer(sampler=..., model=...)``).

The trainer changes nothing in the process that outlives its work: the
thread counts (numba, torch) and torch's random generator are its own only
while it builds, trains or evaluates, and the caller's come back after.
"""

import contextlib
import math
import sys
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from spla import comm as C
from spla.backend import concatenate
from spla.checks import describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue, LayoutError

from sampling.train.launch import default_threads, using_threads, world_comm
from sampling.train.options import PHASES, TrainOptions, UsageError, check_options
from sampling.train.report import format_row, header

_EVAL_STREAM = {"val": 1 << 40, "test": (1 << 40) + 1}  # fixed epochs of the eval draws
# The pre-sampled epoch that ranks vertices for a 'frequency' feature cache:
# its own stream, so it is none of the training epochs (nor the eval draws).
_CACHE_STREAM = (1 << 40) + 3

# Seconds an interrupted epoch waits for its prefetch thread under MPI.
_PREFETCH_GRACE_S = 5.0

_MODEL_PROTOCOL = ("a torch.nn.Module called as model(x, minibatch), with x the features "
                   "of minibatch.input_nodes, that returns the logits of minibatch.seeds")


@dataclass
class EpochStats:
    """One row of the table (over all ranks: times are the slowest rank's).

    With prefetch (``prefetch > 0``), ``times["sample"]`` and
    ``times["fetch"]`` are seconds spent in the background thread, and
    ``wait`` the seconds the training loop was blocked waiting for the
    next bulk: the part of sample + fetch that training did not hide.
    """

    epoch: int
    loss: float
    val_acc: float
    times: dict = field(default_factory=dict)
    sampled_edges: int = 0
    bytes_moved: int = 0
    steps: int = 0
    cache_hits: int = 0
    cache_requests: int = 0
    wait: float = 0.0
    prefetch: int = 0
    #: elapsed seconds of the whole epoch (training and validation), slowest rank
    wall: float = float("nan")

    @property
    def overlap(self):
        """Fraction of the background sample + fetch seconds hidden behind training:
        ``1 - wait / (sample + fetch)``, in [0, 1]; NaN without prefetch."""
        busy = self.times.get("sample", 0.0) + self.times.get("fetch", 0.0)
        if not self.prefetch or busy <= 0:
            return float("nan")
        return min(1.0, max(0.0, 1.0 - self.wait / busy))

    @property
    def cache_hit_rate(self):
        """Feature rows served by the hot-feature cache over the rows fetched (all
        ranks, distinct rows per fetch); NaN without a cache."""
        return self.cache_hits / self.cache_requests if self.cache_requests else float("nan")

    @property
    def seps(self):
        t = self.times.get("sample", 0.0)
        return self.sampled_edges / t if t > 0 else float("nan")

    @property
    def total_time(self):
        """Seconds of the epoch on the training loop's path: the sum of the phases,
        with the background sample + fetch replaced by the wait for them."""
        total = sum(self.times.values())
        if self.prefetch:
            total += self.wait - self.times.get("sample", 0.0) - self.times.get("fetch", 0.0)
        return total


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
        # --threads N: N numba and N torch threads.  By default both get the
        # cores of this rank: since the models' dropout and aggregation run
        # on spla's kernels, torch's share is the dense layers, which a
        # second thread speeds up (1.1 -> 0.7 s of forward/backward per
        # rmat:16 epoch on 2 cores).  Idle OpenMP threads sleep instead of
        # spinning (kernels sets OMP_WAIT_POLICY=PASSIVE before torch
        # loads), which is what once made a second torch thread 5-15x
        # slower on a loaded machine.
        self.threads = opts.threads or default_threads()
        self.torch_threads = opts.threads or self.threads
        self.device = torch.device(opts.device)
        self.given_sampler = sampler is not None
        self.given_model = model is not None
        self._local = threading.local()
        self._rng_state = None
        self._model_checked = False
        self._show_progress = self.rank == 0 and _wants_progress(opts.progress)
        self.history = []
        with using_threads(self.threads, self.torch_threads):
            self._build(dataset, sampler, model)

    def _build(self, dataset, sampler, model):
        import spla
        from sampling import FastGCN, GraphSAGE, LADIES
        from sampling.loading.features import FeatureStore
        from sampling.models import model_for

        torch, opts = self.torch, self.opts
        partitioned = opts.graph == "partitioned"
        # Checks that can fail on one rank (a missing GPU, a dataset that does
        # not load) or on all (the options) raise on every rank together.
        with C.collective_checks(self.comm):
            if opts.device == "cuda":
                self._check_cuda()
            ds = _load(opts) if dataset is None else dataset
            if partitioned and self.size % opts.replication:
                raise UsageError(f"--replication {opts.replication} must divide the number "
                                 f"of ranks ({self.size})")
            features = _features_of(ds)
            if sampler is not None:
                self._check_sampler(sampler, ds)
            if model is not None:
                _check_model(torch, model)
        self.dataset = ds
        self.num_classes = ds.num_classes
        if isinstance(features, spla.Matrix):
            # Row-normalised bag-of-words features (as PyG's NormalizeFeatures).
            x = spla.normalize_rows(features.astype(np.float32))
        else:
            x = np.ascontiguousarray(features, dtype=np.float32)

        P = self._make_partition(ds.A) if partitioned and sampler is None else None
        if sampler is None:
            distributed = partitioned or self.size > 1
            layout = "1.5d" if opts.replication > 1 else "1d"
            A = ds.A
            if distributed:
                G = spla.distribute(A, self.comm, layout=layout, replication=opts.replication,
                                    replicate_graph=not partitioned, partition=P)
            else:
                G = A.to("cuda") if opts.device == "cuda" else A
            sizes = opts.sizes
            sampler = {"sage": lambda: GraphSAGE(G, sizes),
                       "ladies": lambda: LADIES(G, sizes),
                       "fastgcn": lambda: FastGCN(G, sizes)}[opts.sampler]()
            kind = opts.sampler
        else:
            G = sampler.D if sampler.D is not None else sampler.A
            kind = "ladies" if isinstance(sampler, (LADIES, FastGCN)) else "sage"
            if sampler.D is not None and not sampler.D.layout.replicated:
                P = sampler.D.partition  # the features go where its rows are
        if partitioned and P is None and opts.split == "part":
            P = spla.partition.block(ds.A, self.size // opts.replication)
        self.partition = P
        self.graph = G
        self.sampler = sampler
        self.depth = sampler.num_layers
        # A sampler on a local graph under MPI: each rank samples its share
        # of a bulk, as a sampler on a replicated DistMatrix would.
        self._split = sampler.D is None and self.size > 1
        splits = {"train": ds.train_idx, "val": ds.val_idx, "test": ds.test_idx}
        self.columns = opts.features == "columns"
        if self.columns:
            from sampling.train.p3 import ColumnFeatureStore
            # Collective checks inside (more ranks than columns raises everywhere).
            self.store = ColumnFeatureStore(x, comm=self.comm, labels=ds.y, splits=splits,
                                            num_classes=ds.num_classes, dtype=np.float32)
        elif partitioned:
            # --feature-cache: by degree, the store ranks the vertices of the
            # sampler's graph (a DistMatrix: one Allgatherv of row degrees);
            # by frequency, it is filled below from a pre-sampled epoch.
            cache = {}
            if opts.feature_cache > 0:
                cache = dict(cache=opts.feature_cache, cache_policy=opts.cache_policy,
                             cache_graph=G if opts.cache_policy == "degree" else None)
            # Features live where the graph's rows do (a METIS part's vertices
            # and their features on the same process row).
            placed = P if isinstance(G, spla.DistMatrix) and G.partition is P else None
            self.store = FeatureStore(x, labels=ds.y, splits=splits, mode="partitioned",
                                      comm=self.comm, replication=opts.replication,
                                      num_classes=ds.num_classes, partition=placed, **cache)
        else:
            self.store = FeatureStore(x, labels=ds.y, splits=splits, num_classes=ds.num_classes)
        self._x_all = None
        if not self.columns and self.store.replicated:
            self._x_all = torch.from_numpy(self.store.local).to(self.device)
        self._y_all = torch.from_numpy(self.store.labels).to(self.device)

        # --batch-size is the global batch of a step: each rank trains a
        # minibatch of ceil(batch / p) seeds per step, so a step covers about
        # the same seeds, and an epoch has about as many steps, for every p.
        self.minibatch_size = -(-opts.batch_size // self.size)
        self.bulk_size = self._plan_bulk()
        self._shares = None
        if self.partition is not None and opts.split == "part":
            from sampling.samplers.batches import seeds_by_part
            # Fixed for the run: every epoch cuts these shares in its own order.
            self._shares = seeds_by_part(self.store.splits["train"], self.partition, self.size,
                                         opts.replication)
            steps = self._part_steps()
            fewest = min(a.size for a in self._shares)
            with C.collective_checks(self.comm):
                if fewest < steps:
                    raise UsageError(f"--split part: {fewest} training vertices on some "
                                     f"rank cannot fill {steps} minibatches; lower "
                                     "--batch-size or use --split global")
        if self._cache_fraction() > 0 and self.store.cache_policy == "frequency":
            self._warm_cache()

        with self._fork_rng():
            self._seed(opts.seed)  # identical initialisation on every rank
            if model is None:
                model = model_for(kind, self.store.num_features, opts.hidden,
                                  ds.num_classes, self.depth, opts.dropout)
            self._save_rng()
        self.model = model.to(self.device)
        self._net = self.model  # the model as built or given (before any P3 wrapper)
        self._broadcast_model()
        self._local_params = set()
        if self.columns:
            from sampling.train.p3 import P3Model
            # The first layer's weights split by the store's columns (this
            # rank's slice is its own: never all-reduced); the rest are
            # model's own modules, trained data-parallel.
            self.model = P3Model(self.model, self.store, self.comm)
            self._local_params = {id(q) for q in self.model.local_parameters()}
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(self.params, lr=opts.lr,
                                          weight_decay=opts.weight_decay)

    def _make_partition(self, A):
        """Collective: ``opts.partition`` of the graph into ``p / c`` parts.

        'block' and 'hash' are computed by every rank.  For 'metis', rank 0
        partitions (METIS is deterministic for a seed, but one run is
        cheaper than p) and broadcasts the part of every vertex; an error
        there (pymetis missing) raises on every rank.
        """
        import spla
        from spla.partition import Partition
        parts = self.size // self.opts.replication
        if self.opts.partition == "block":
            return spla.partition.block(A, parts)
        if self.opts.partition == "hash":
            # Seeded and cheap: every rank computes the same placement itself.
            return spla.partition.hashed(A, parts, seed=self.opts.seed)
        P = None
        with C.collective_checks(self.comm):
            if self.rank == 0:
                P = spla.partition.metis(A, parts, seed=self.opts.seed)
        if self.size == 1:
            return P
        part = C.bcast_int(self.comm, None if P is None else P.part, 0, A.nrows)
        return P if P is not None else Partition(part, parts, method="metis")

    def _epoch_plan(self, epoch):
        """(minibatches, bulks) of one epoch: ``bulks`` are lists of ids into minibatches.

        ``split='global'``: the epoch's shuffle of all training vertices cut
        into minibatches, bulks of ``bulk_size`` consecutive ones, each rank
        sampling its share.  ``split='part'``: rank r trains on its
        ``seeds_by_part`` share, taken in the order of the same shuffle and
        cut into as many minibatches as every other rank's; minibatch ``s *
        p + r`` is rank r's step s, placed in each bulk where the sampler
        hands it to rank r.
        """
        from sampling import epoch_batches
        from sampling.samplers.batches import step_major_bulks
        from sampling.loading.loader import cut_epoch
        o = self.opts
        train = self.store.splits["train"]
        batches = epoch_batches(train, self.minibatch_size, seed=o.seed, epoch=epoch)
        p = self.size
        if p == 1:
            return batches, self._bulks(len(batches))
        order = np.concatenate(batches)  # the epoch's shuffle
        if self._shares is None:
            # As NodeLoader cuts an epoch for p ranks: step s of rank r trains
            # minibatch s * p + r, whatever the bulk size, so the steps (and
            # so the parameters) do not depend on --bulk.
            batches = cut_epoch("Trainer", order, self.minibatch_size, p)
            steps = len(batches) // p
        else:
            steps = self._part_steps()
            per_rank = []
            for share in self._shares:
                mine = order[np.isin(order, share, assume_unique=True)]
                per_rank.append(np.array_split(mine, steps))
            batches = [per_rank[r][s] for s in range(steps) for r in range(p)]
        bulks = step_major_bulks(steps, p, max(1, self.bulk_size // p), self._own)
        return batches, bulks

    def _part_steps(self):
        """Steps per epoch with ``split='part'``: enough minibatches for the largest share."""
        return -(-max(a.size for a in self._shares) // self.minibatch_size)

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
                 f"entries ({100 * cut / max(A.nnz, 1):.1f} %), training split "
                 f"{self.opts.split}"]
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
        from spla.backend import to_host
        counts = np.zeros(self.store.num_nodes, np.int64)
        batches, bulks = self._epoch_plan(_CACHE_STREAM)
        for bulk in bulks:
            mbs = self._sample(batches, bulk, _CACHE_STREAM)
            if mbs:
                ids = np.asarray(to_host(concatenate([mb.input_nodes for mb in mbs])))
                counts[np.unique(ids)] += 1
        self.store.warm_cache(counts)

    def _check_sampler(self, sampler, ds):
        from sampling import Sampler
        if not isinstance(sampler, Sampler):
            fail(DTypeError, "Trainer", "sampler", "a sampling.Sampler instance (e.g. "
                 "sampling.GraphSAGE(dataset.A, [10, 10]))", describe(sampler))
        name = type(sampler).__name__
        if sampler.num_nodes != ds.num_nodes:
            fail(DimensionMismatch, "Trainer", "sampler", f"a sampler on a graph of "
                 f"{ds.num_nodes} vertices (those of the dataset {ds.name})",
                 f"{name} on a graph of {sampler.num_nodes} vertices")
        o = self.opts
        if o.layers is not None and o.layers != sampler.num_layers:
            raise UsageError(f"opts.layers is {o.layers} but the sampler {name} samples "
                             f"{sampler.num_layers} layers; leave opts.layers unset or make "
                             "them equal")
        D = sampler.D
        if D is None:
            return
        MPI = C.mpi()
        if self.comm is None or self.comm.Compare(D.comm) not in (MPI.IDENT, MPI.CONGRUENT):
            got = ("comm=None" if self.comm is None else
                   f"another communicator (of {self.size} rank(s))")
            fail(LayoutError, "Trainer", "comm", f"the communicator of the sampler's "
                 f"distributed graph ({name} on a DistMatrix over {D.comm.Get_size()} "
                 "rank(s)): pass comm=sampler.D.comm", got)

    def _plan_bulk(self):
        """Minibatches per bulk over all ranks: ``--bulk``, or what the budget allows.

        Each rank estimates a minibatch's bytes from its own block of the
        graph, so the ranks' estimates differ when the graph is
        partitioned.  The bulk size steers every collective of an epoch (the
        minibatches handed to ``sample``, the gradient steps): the ranks
        take the smallest of their sizes (``agree_min``), which fits every
        rank's budget, and a budget too small on any rank stops every rank.
        """
        opts = self.opts
        if opts.bulk is not None:
            return opts.bulk
        from sampling import BulkPlanner
        with C.collective_checks(self.comm):
            if not callable(getattr(self.sampler, "estimate_bytes", None)):
                fail(InvalidValue, "Trainer", "opts.bulk", "set (minibatches per bulk): "
                     f"the sampler {type(self.sampler).__name__} has no "
                     "estimate_bytes(batch_size), so opts.memory_budget cannot size the "
                     "bulks", None)
            need = self.sampler.estimate_bytes(self.minibatch_size)
            if need > opts.memory_budget:
                raise UsageError(f"--memory-budget {opts.memory_budget} bytes is too small for "
                                 f"one minibatch of {self.minibatch_size} seeds (about {need} "
                                 "bytes on this rank); raise it or lower --batch-size")
            per_rank = BulkPlanner(self.sampler, opts.memory_budget).bulk_size(
                self.minibatch_size)
        if opts.prefetch:
            # Bulks a prefetch can overlap: an epoch of one bulk would be
            # sampled whole before its first step, with nothing to train
            # meanwhile.
            per_rank = min(per_rank, max(1, -(-self._epoch_steps() // (opts.prefetch + 1))))
        return C.agree_min(self.comm, per_rank) * self.size

    def _epoch_steps(self):
        """Training steps of an epoch (each rank's minibatches per epoch)."""
        n = int(self.store.splits["train"].size)
        return max(1, -(-n // (self.minibatch_size * self.size)))

    def _check_cuda(self):
        from spla.exceptions import MissingDependency
        if not self.torch.cuda.is_available():
            raise MissingDependency("--device cuda: this PyTorch build sees no CUDA GPU; "
                                    "install a CUDA build of torch or use --device cpu")
        try:
            import cupy  # noqa: F401
        except ImportError:
            raise MissingDependency("--device cuda needs cupy; install it with "
                                    "`pip install -e \".[gpu]\"`") from None

    def _broadcast_model(self):
        """Rank 0's parameters and buffers on every rank (one broadcast of their bytes)."""
        if self.size == 1:
            return
        torch = self.torch
        tensors = list(self.model.parameters()) + list(self.model.buffers())
        nbytes = [t.numel() * t.element_size() for t in tensors]
        C.check_same(self.comm, "Trainer", "model", [len(tensors), sum(nbytes)],
                     expected="the same architecture on every rank (as many parameter and "
                              "buffer tensors and bytes)", cls=InvalidValue,
                     show=lambda v: f"{v[0]} tensors of {v[1]} bytes")
        if not tensors:
            return
        flat = torch.cat([t.detach().reshape(-1).contiguous().cpu().view(torch.uint8)
                          for t in tensors])
        buf = C.bcast_array(self.comm, flat.numpy().copy(), 0, "train.broadcast")
        if self.rank == 0:
            return
        data, off = torch.from_numpy(buf), 0
        with torch.no_grad():
            for t, nb in zip(tensors, nbytes):
                t.copy_(data[off:off + nb].view(t.dtype).view(t.shape))
                off += nb

    # -- the trainer's own threads and random state -------------------------------------
    def _fork_rng(self):
        """torch's global random state, put back when the block ends."""
        torch = self.torch
        devices = []
        if self.device.type == "cuda":
            devices = [self.device.index if self.device.index is not None
                       else torch.cuda.current_device()]
        return torch.random.fork_rng(devices=devices)

    def _seed(self, seed):
        torch = self.torch
        torch.default_generator.manual_seed(seed)
        if self.device.type == "cuda":
            with torch.cuda.device(self.device):
                torch.cuda.manual_seed(seed)

    def _save_rng(self):
        torch = self.torch
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        self._rng_state = (torch.get_rng_state(), cuda)

    def _load_rng(self):
        torch = self.torch
        cpu, cuda = self._rng_state
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state(cuda, self.device)

    @contextlib.contextmanager
    def _working(self):
        """The trainer's threads and random state for the block, the caller's after it."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        try:
            if depth:  # nested (fit -> train_epoch -> evaluate): already set
                yield
                return
            with using_threads(self.threads, self.torch_threads), self._fork_rng():
                self._load_rng()
                try:
                    yield
                finally:
                    self._save_rng()
        finally:
            self._local.depth = depth

    # -- helpers ---------------------------------------------------------------
    def describe(self):
        """One paragraph: the dataset, and what the run uses (sampler, model, layout, threads)."""
        o, s = self.opts, self.sampler
        mode = (f"graph {o.graph}" + (f", c = {o.replication}" if o.graph == "partitioned"
                                      else ""))
        if self.given_sampler:
            shown = f"{self.depth} layers"
            for attr in ("fanouts", "layer_sizes"):
                sizes = getattr(s, attr, None)
                if sizes:
                    shown = f"{attr.replace('_', ' ')} {','.join(map(str, sizes))}"
                    break
            where = ("on a DistMatrix" if s.D is not None else
                     "local graph" + (", each rank samples its share" if self._split else ""))
            sampler = (f"sampler {type(s).__name__} instance ({shown}, {where}; "
                       "opts.sampler, fanouts and layer_sizes not used)")
            mode = f"features {o.graph}" + (f", c = {o.replication}"
                                            if o.graph == "partitioned" else "")
        else:
            what = "fanouts" if o.sampler == "sage" else "layer sizes"
            sampler = f"sampler {o.sampler} ({what} {','.join(map(str, o.sizes))})"
        if self.given_model:
            model = (f"model {type(self._net).__name__} (given; opts.hidden and dropout "
                     "not used)")
        else:
            model = f"model {type(self._net).__name__} {self.depth} layers x {o.hidden}"
        if self.columns:
            lo, hi = self.store.columns
            mode += (f", features columns (P3 push-pull first layer; columns {lo}:{hi} of "
                     f"{self.store.num_features} on rank {self.rank})")
        if self._cache_fraction() > 0:
            st = self.store.cache_stats()
            mode += (f", feature cache {self.store.cache_fraction:g} by {o.cache_policy} "
                     f"({st.cached_rows} rows, {st.memory_bytes / 1e6:.2f} MB per rank)")
        if o.graph == "partitioned" and self.size == 1:
            mode += (" (one process holds the one part: start P processes with "
                     "`mpiexec -n P python -m sampling.train ...` for P parts)")
        if o.prefetch and self._epoch_steps() == 1:
            mode += (f", --prefetch {o.prefetch} has nothing to overlap (an epoch is one "
                     "minibatch per rank: lower --batch-size for more)")
        text = (f"{self.dataset!r}\n"
                f"{sampler}, {model}, batch "
                f"{o.batch_size} ({self.minibatch_size} per rank), bulk {self.bulk_size}, "
                f"{self.size} rank(s), {mode}, "
                f"device {o.device}, threads: {self.threads} numba, {self.torch_threads} torch")
        return "\n".join([text] + self.partition_report())

    def _bulks(self, n):
        k = self.bulk_size
        return [list(range(i, min(n, i + k))) for i in range(0, n, k)]

    def _own(self, k, rank):
        """Positions of the minibatches of a bulk of k that ``rank`` trains."""
        D = self.sampler.D
        if D is not None:
            from sampling.samplers.base import owned_batches
            return owned_batches(k, D.layout, rank, self.sampler._by_process_row)
        if self._split:
            from spla.layout import chunk
            s, e = chunk(k, self.size, rank)
            return list(range(s, e))
        return list(range(k))

    def _steps(self, k):
        """Steps of a bulk of k minibatches: the most any rank owns."""
        if self.sampler.D is None and not self._split:
            return k
        return max(len(self._own(k, r)) for r in range(self.size))

    def _sample(self, batches, bulk, stream, sampler=None):
        """This rank's minibatches of one bulk (``bulk``: ids into ``batches``).

        ``sampler``: default the trainer's; the prefetch thread passes its twin.
        """
        sampler = self.sampler if sampler is None else sampler
        if self._split:
            bulk = [bulk[i] for i in self._own(len(bulk), self.rank)]
            if not bulk:
                return []
        return sampler.sample([batches[i] for i in bulk], seed=self.opts.seed,
                              epoch=stream, batch_ids=bulk)

    def _features(self, ids, store=None):
        """Features of ``ids`` as a torch tensor on the device (collective when partitioned).

        ``store``: default the trainer's; the prefetch thread passes its twin.
        """
        torch = self.torch
        store = self.store if store is None else store
        if self._x_all is not None:
            if isinstance(ids, np.ndarray):
                idx = torch.from_numpy(np.ascontiguousarray(ids, np.int64))
            else:
                idx = torch.from_dlpack(ids)
            return self._x_all[idx.to(self.device)]
        return torch.from_numpy(store.fetch(ids)).to(self.device)

    def _labels(self, ids):
        torch = self.torch
        idx = (torch.from_numpy(np.ascontiguousarray(ids, np.int64))
               if isinstance(ids, np.ndarray) else torch.from_dlpack(ids))
        return self._y_all[idx.to(self.device)]

    def _fetch_bulk(self, mbs, store=None):
        """Features of every minibatch's input vertices, in one (collective) fetch.

        None with ``features='columns'``: nothing is fetched, the first
        layer reads each rank's columns where they are.
        """
        if self.columns:
            return None
        ins = [mb.input_nodes for mb in mbs]
        X = self._features(concatenate(ins), store)
        return list(X.split([int(a.size) for a in ins]))

    @contextlib.contextmanager
    def _first_forward(self):
        """Until the model's output has been checked once: the block's errors are collective.

        The first forward pass checks the model's output (``_forward``); run
        inside ``collective_checks``, a model that fails there (or raises)
        stops every rank together, also ranks without a minibatch in that
        step.
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

    def _cache_fraction(self):
        return 0.0 if self.columns else self.store.cache_fraction

    def _cache_stats(self):
        return None if self.columns else self.store.cache_stats()

    def _forward(self, x, mb, step=None):
        """The logits of ``mb`` (``x``: its features; ``step``: every rank's, columns)."""
        out = self.model(step) if self.columns else self.model(x, mb)
        if not self._model_checked:
            self._check_logits(out, mb)
        return out

    def _check_logits(self, out, mb):
        name = type(self.model).__name__
        want = (mb.batch_size, self.num_classes)
        expected = (f"{_MODEL_PROTOCOL}: a float tensor of shape (seeds, classes) = {want} "
                    "for this minibatch")
        if not self.torch.is_tensor(out):
            fail(DTypeError, "Trainer", "model", expected,
                 f"{name}(x, minibatch) -> {type(out).__name__}")
        if tuple(out.shape) != want:
            fail(DimensionMismatch, "Trainer", "model", expected,
                 f"{name}(x, minibatch) -> tensor of shape {tuple(out.shape)}")
        if not out.is_floating_point():
            fail(DTypeError, "Trainer", "model", expected,
                 f"{name}(x, minibatch) -> tensor of dtype {out.dtype}")

    def _allreduce_grads(self, n_seeds, loss, where):
        """Sum gradients, seed counts and losses over the ranks; divide by the total seeds.

        The loss travels in the same Allreduce, so every rank sees the same
        total and stops together (``FloatingPointError``) when it is not
        finite: NaN features or labels slipped past the checks, or the
        learning rate made the model diverge.  Training on would only print
        ``loss nan`` and exit 0.
        """
        torch = self.torch
        # features='columns': this rank's first-layer slices hold gradients
        # complete already (push-pull's backward sums every rank's
        # minibatch); only their division by the step's seeds is shared.
        local = [p for p in self.params if id(p) in self._local_params]
        params = [p for p in self.params if id(p) not in self._local_params]
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        for p in local:
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        if self.size == 1:
            total, total_loss = float(n_seeds), float(loss)
            self._check_loss(total_loss, where)
            if total > 0:
                for p, g in zip(params, grads):
                    p.grad = g / total
                for p in local:
                    p.grad /= total
            return total
        flat = torch.cat([g.reshape(-1) for g in grads] +
                         [torch.tensor([float(loss), float(n_seeds)], device=grads[0].device)])
        buf = flat.detach().to("cpu", torch.float32).numpy().copy()
        out = C.allreduce_array(self.comm, buf, "sum", "train.allreduce")
        self._check_loss(float(out[-2]), where)
        total = float(out[-1])
        if total > 0:
            res = torch.from_numpy(out[:-2] / total).to(self.device)
            off = 0
            for p in params:
                k = p.numel()
                p.grad = res[off:off + k].view_as(p).to(p.dtype).clone()
                off += k
            for p in local:
                p.grad /= total
        return total

    def _check_loss(self, total_loss, where):
        if math.isfinite(total_loss):
            return
        # Every rank holds the same summed loss: all raise here, and the
        # collective block marks the error as raised everywhere.
        with C.collective_checks(self.comm):
            raise FloatingPointError(
                f"Trainer.train_epoch: the training loss must be finite; got {total_loss} "
                f"(summed over the ranks) at {where}.  Check the features and labels for "
                "NaN or infinite values, or lower --lr")

    def _reduce(self, values, op="sum"):
        if self.size == 1:
            return np.asarray(values, np.float64)
        # op=None: scalars for the report are not part of the training step's bytes.
        return C.allreduce_array(self.comm, np.asarray(values, np.float64), op, None)

    def _progress_bar(self, total, epoch):
        """A tqdm bar on stderr over the epoch's steps (rank 0), or None."""
        if not self._show_progress:
            return None
        try:
            from tqdm import tqdm
        except ImportError:
            return None
        # leave=False: the bar is cleared when closed, before the epoch's row
        # is printed, so the table stays clean.
        return tqdm(total=total, desc=f"epoch {epoch + 1}", unit="minibatch",
                    file=sys.stderr, leave=False)

    # -- prefetch -------------------------------------------------------------------
    def _background(self):
        """(sampler, store) for the prefetch thread, or None to run synchronously.

        Made at the first prefetching epoch (``train_epoch`` is collective:
        every rank gets here in the same order) and kept: under MPI, twins
        on duplicated communicators (``Sampler.dup``, ``FeatureStore.dup``;
        a local sampler or a replicated store is its own twin), so the
        background collectives never mix with the gradient Allreduce on
        ``self.comm`` (see ``sampling.loading.pipeline``).  Below
        MPI_THREAD_MULTIPLE: one ``PrefetchWarning``, then synchronous.
        """
        if not self.opts.prefetch:
            return None
        bg = getattr(self, "_bg", False)
        if bg is False:
            from sampling.loading.pipeline import prefetch_allowed
            bg = None
            if prefetch_allowed(self.comm, "Trainer"):
                # A column store is only read, by the training loop: no twin.
                bg = (self.sampler.dup(), self.store if self.columns else self.store.dup())
            self._bg = bg
        return bg

    def _prefetcher(self, batches, bulks, epoch):
        """A Prefetcher sampling and fetching the epoch's bulks, or None (prefetch off)."""
        bg = self._background()
        if bg is None or not bulks:
            return None
        from sampling.loading.pipeline import Prefetcher
        sampler, store = bg

        def make(i):
            t0 = time.perf_counter()
            mbs = self._sample(batches, bulks[i], epoch, sampler)
            t1 = time.perf_counter()
            xs = self._fetch_bulk(mbs, store)
            return mbs, xs, t1 - t0, time.perf_counter() - t1

        return Prefetcher(make, len(bulks), self.opts.prefetch, name="Trainer-prefetch")

    # -- training and evaluation --------------------------------------------------
    def train_epoch(self, epoch):
        """Collective: one epoch of bulk-sampled training; returns ``EpochStats``."""
        with self._working():
            return self._train_epoch(epoch)

    def _train_epoch(self, epoch):
        torch = self.torch
        t = dict.fromkeys(PHASES, 0.0)
        loss_sum = seeds = edges = wait = 0.0
        steps = 0
        started = time.perf_counter()
        cache_before = self._cache_stats()
        with C.counting() as moved:
            batches, bulks = self._epoch_plan(epoch)
            # Both steer every collective of the epoch (how many bulks are
            # sampled, how many steps each trains).
            C.check_same(self.comm, "Trainer.train_epoch",
                         "(number of minibatches, bulk size)", [len(batches), self.bulk_size])
            bar = self._progress_bar(sum(self._steps(len(b)) for b in bulks), epoch)
            ahead = None
            try:
                # Inside the try: Ctrl-C right after the thread starts must
                # still stop it (the finally below).
                ahead = self._prefetcher(batches, bulks, epoch)
                self.model.train()
                for bi, bulk in enumerate(bulks):
                    if ahead is None:
                        t0 = time.perf_counter()
                        mbs = self._sample(batches, bulk, epoch)
                        t1 = time.perf_counter()
                        t["sample"] += t1 - t0
                        xs = self._fetch_bulk(mbs)
                        t["fetch"] += time.perf_counter() - t1
                    else:
                        # Sampled and fetched in the background while the
                        # previous bulks trained; its bytes are handed back
                        # into `moved` by get().
                        item = ahead.get()
                        mbs, xs, ts, tf = item.value
                        t["sample"] += ts
                        t["fetch"] += tf
                        wait += item.waited
                    edges += sum(mb.num_sampled_edges for mb in mbs)
                    for j in range(self._steps(len(bulk))):
                        t0 = time.perf_counter()
                        self.optimizer.zero_grad(set_to_none=True)
                        n, step_loss = 0, 0.0
                        mb = mbs[j] if j < len(mbs) else None
                        step = None
                        if self.columns:
                            # Every rank's layer-1 inputs, for the push-pull.
                            step = self._step_inputs(mb)
                            shared = time.perf_counter()
                            t["fetch"] += shared - t0
                            t0 = shared
                        with self._first_forward():
                            if mb is not None:
                                logits = self._forward(None if xs is None else xs[j], mb,
                                                       step)
                                loss = torch.nn.functional.cross_entropy(
                                    logits, self._labels(mb.seeds), reduction="sum")
                                loss.backward()
                                step_loss = float(loss.detach())
                                loss_sum += step_loss
                                n = mb.batch_size
                                seeds += n
                            elif self.columns:
                                # No minibatch here this step, but the
                                # push-pull and its backward are collective.
                                self.model(step).sum().backward()
                        t1 = time.perf_counter()
                        self._allreduce_grads(n, step_loss,
                                              f"epoch {epoch + 1}, bulk {bi + 1}, step {j + 1}")
                        t2 = time.perf_counter()
                        self.optimizer.step()
                        t3 = time.perf_counter()
                        t["fwd/bwd"] += (t1 - t0) + (t3 - t2)
                        t["allreduce"] += t2 - t1
                        steps += 1
                        if bar is not None:
                            bar.update(1)
                if bar is not None:
                    bar.set_postfix_str("validating")
                t0 = time.perf_counter()
                val = self.evaluate("val")
                t["eval"] = time.perf_counter() - t0
            except BaseException as exc:
                if ahead is not None and self.size > 1:
                    # The ranks' background threads need not be at the same
                    # bulk when the epoch stops (each runs up to `prefetch`
                    # bulks ahead of its own loop): this rank's may wait in
                    # a collective that the others never join.  Give it a
                    # moment; if it is stuck, say so on the exception, and
                    # the main job aborts every rank (MPI cannot finalize
                    # under a thread blocked in a collective).
                    ahead.stop(wait=False)
                    if not ahead.join(_PREFETCH_GRACE_S):
                        _mark_prefetch_stuck(exc)
                raise
            finally:
                if ahead is not None:
                    ahead.stop()
                if bar is not None:
                    bar.close()
            nbytes = sum(moved.values())
        hits = asked = 0
        if self._cache_fraction() > 0:
            cache = self._cache_stats() - cache_before
            hits, asked = cache.hits, cache.requested
        tot = self._reduce([loss_sum, seeds, edges, nbytes, hits, asked])
        elapsed = time.perf_counter() - started
        tmax = self._reduce([t[k] for k in PHASES] + [wait, elapsed], "max")
        stats = EpochStats(epoch + 1, tot[0] / max(tot[1], 1.0), val,
                           dict(zip(PHASES, tmax[:-2].tolist())), int(tot[2]), int(tot[3]),
                           steps, int(tot[4]), int(tot[5]), wait=float(tmax[-2]),
                           prefetch=0 if ahead is None else self.opts.prefetch,
                           wall=float(tmax[-1]))
        self.history.append(stats)
        return stats

    def evaluate(self, split):
        """Collective: accuracy on split 'val' or 'test' (or an array of vertex ids).

        The evaluation vertices are sampled like training minibatches (the
        same sampler, a fixed random stream per split, so every call sees
        the same neighbourhoods), spread over the ranks like a bulk, and
        the correct counts are summed over the ranks.
        """
        with self._working():
            return self._evaluate(split)

    def _evaluate(self, split):
        torch = self.torch
        if isinstance(split, str):
            ids = self.store.splits[split]
            stream = _EVAL_STREAM[split]
        else:
            ids, stream = np.asarray(split, np.int64), (1 << 40) + 2
        b = self.minibatch_size
        batches = [ids[i:i + b] for i in range(0, ids.size, b)]
        C.check_same(self.comm, "Trainer.evaluate", "(number of minibatches, bulk size)",
                     [len(batches), self.bulk_size])
        correct = total = 0
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                for bulk in self._bulks(len(batches)):
                    mbs = self._sample(batches, bulk, stream)
                    xs = self._fetch_bulk(mbs)
                    with self._first_forward():
                        for j in range(self._steps(len(bulk)) if self.columns else len(mbs)):
                            mb = mbs[j] if j < len(mbs) else None
                            if self.columns:
                                step = self._step_inputs(mb)
                                if mb is None:
                                    self.model(step)  # collective: the others' push-pull
                                    continue
                            else:
                                step = None
                            pred = self._forward(None if xs is None else xs[j], mb,
                                                 step).argmax(dim=1)
                            correct += int((pred == self._labels(mb.seeds)).sum())
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
            cache = self._cache_fraction() > 0
            prefetch = self.opts.prefetch > 0
            if log and self.rank == 0:
                log(header(cache=cache, prefetch=prefetch))
            for e in range(start, start + epochs):
                stats = self.train_epoch(e)
                if log and self.rank == 0:
                    log(format_row(stats, cache=cache, prefetch=prefetch))
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


def _mark_prefetch_stuck(exc):
    """Flag ``exc``: this rank's prefetch thread is blocked in a collective (see job.py)."""
    try:
        exc.prefetch_stuck = True
    except Exception:  # noqa: BLE001 - an exception type that refuses attributes
        pass


def _wants_progress(progress):
    """``progress`` if set, else whether stderr (where the bar goes) is a terminal."""
    if progress is not None:
        return bool(progress)
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


def _load(opts):
    from sampling.datasets import load
    if opts.root is None:
        return load(opts.dataset)
    return load(opts.dataset, root=opts.root)


def _what(x):
    """``describe`` for a received value, naming its type when it is not numpy."""
    if isinstance(x, np.ndarray) or not (hasattr(x, "shape") and hasattr(x, "dtype")):
        return describe(x)
    return (f"a {type(x).__module__}.{type(x).__name__} of shape {tuple(x.shape)} and dtype "
            f"{x.dtype}")


def _features_of(ds):
    """``dataset.x`` checked: a spla.Matrix, or a dense float (n, f) numpy array."""
    from spla import Matrix
    x = getattr(ds, "x", None)
    expected = ("a spla.Matrix (sparse features, row-normalised by the trainer) or a dense "
                "float32 numpy array of shape (n, f) (used as given)")
    if isinstance(x, Matrix):
        if x.nrows != ds.num_nodes:
            fail(DimensionMismatch, "Trainer", "dataset.x", f"{ds.num_nodes} rows (one per "
                 "vertex)", f"shape {x.shape}")
        return x
    if not isinstance(x, np.ndarray):
        fail(DTypeError, "Trainer", "dataset.x", expected, _what(x))
    if x.ndim != 2 or x.shape[0] != ds.num_nodes:
        fail(DimensionMismatch, "Trainer", "dataset.x", f"a 2-D array of shape (n, f) with n = "
             f"{ds.num_nodes} (one row per vertex)", describe(x))
    if x.dtype.kind != "f":
        fail(DTypeError, "Trainer", "dataset.x", expected, describe(x))
    return x


def _check_model(torch, model):
    if not isinstance(model, torch.nn.Module):
        fail(DTypeError, "Trainer", "model", _MODEL_PROTOCOL, _what(model))
    if not any(p.requires_grad for p in model.parameters()):
        fail(InvalidValue, "Trainer", "model", "a module with trainable parameters",
             f"{type(model).__name__} without any")
