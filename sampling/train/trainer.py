"""The trainer: dataset, graph, sampler, features, model and optimizer of a run.

``Trainer(opts, comm)`` builds everything (collectively under MPI);
``train_epoch(e)`` is one epoch of bulk-sampled training, ``evaluate`` an
accuracy, ``fit`` the whole run.
"""

import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from spla import comm as C

from sampling.train.launch import default_threads, set_threads, world_comm
from sampling.train.options import PHASES, UsageError, check_options
from sampling.train.report import format_row, header

_EVAL_STREAM = {"val": 1 << 40, "test": (1 << 40) + 1}  # fixed epochs of the eval draws


@dataclass
class EpochStats:
    """One row of the table (over all ranks: times are the slowest rank's)."""

    epoch: int
    loss: float
    val_acc: float
    times: dict = field(default_factory=dict)
    sampled_edges: int = 0
    bytes_moved: int = 0
    steps: int = 0

    @property
    def seps(self):
        t = self.times.get("sample", 0.0)
        return self.sampled_edges / t if t > 0 else float("nan")

    @property
    def total_time(self):
        return sum(self.times.values())


class Trainer:
    """Everything a run needs: dataset, graph, sampler, features, model, optimizer.

    Parameters
    ----------
    opts : TrainOptions
    comm : MPI communicator, optional
        None for a single process (no MPI); COMM_WORLD under mpiexec.
    dataset : sampling.datasets.Dataset, optional
        Default: ``load(opts.dataset)``.

    Collective: under MPI every rank builds its Trainer and calls the same
    methods in the same order.
    """

    def __init__(self, opts, comm=None, dataset=None):
        import torch
        import spla
        from sampling import FastGCN, GraphSAGE, LADIES
        from sampling.datasets import load
        from sampling.features import FeatureStore
        from sampling.models import model_for

        check_options(opts)
        self.opts = opts
        self.torch = torch
        partitioned = opts.graph == "partitioned"
        if partitioned and comm is None:
            comm = world_comm(need_mpi=True)
        self.comm = comm
        self.size = 1 if comm is None else comm.Get_size()
        self.rank = 0 if comm is None else comm.Get_rank()
        # --threads N: N numba and N torch threads.  By default the sampling
        # kernels get the cores of this rank and torch one thread: the dense
        # layers of a minibatch are small, and a second torch thread mostly
        # spins (on a loaded 2-core machine it made an epoch 5-15x slower).
        self.threads = opts.threads or default_threads()
        self.torch_threads = opts.threads or 1
        set_threads(self.threads, self.torch_threads)
        self.device = torch.device(opts.device)

        # Checks that can fail on one rank (a missing GPU, a dataset that does
        # not load) or on all (the options) raise on every rank together.
        with C.collective_checks(comm):
            if opts.device == "cuda":
                self._check_cuda()
            ds = load(opts.dataset) if dataset is None else dataset
            n_train = int(ds.train_idx.size)
            if opts.batch_size > n_train:
                raise UsageError(f"--batch-size {opts.batch_size} is larger than the training "
                                 f"set ({n_train} vertices of {ds.name}); use at most {n_train}")
            if partitioned and self.size % opts.replication:
                raise UsageError(f"--replication {opts.replication} must divide the number "
                                 f"of ranks ({self.size})")
        self.dataset = ds
        # Row-normalised bag-of-words features (as PyG's NormalizeFeatures).
        x = spla.normalize_rows(ds.x.astype(np.float32))

        distributed = partitioned or self.size > 1
        layout = "1.5d" if opts.replication > 1 else "1d"
        A = ds.A
        if distributed:
            G = spla.distribute(A, self.comm, layout=layout, replication=opts.replication,
                                replicate_graph=not partitioned)
        else:
            G = A.to("cuda") if opts.device == "cuda" else A
        self.graph = G
        sizes = opts.sizes
        self.sampler = {"sage": lambda: GraphSAGE(G, sizes),
                        "ladies": lambda: LADIES(G, sizes),
                        "fastgcn": lambda: FastGCN(G, sizes)}[opts.sampler]()
        splits = {"train": ds.train_idx, "val": ds.val_idx, "test": ds.test_idx}
        if partitioned:
            self.store = FeatureStore(x, labels=ds.y, splits=splits, mode="partitioned",
                                      comm=self.comm, replication=opts.replication,
                                      num_classes=ds.num_classes)
        else:
            self.store = FeatureStore(x, labels=ds.y, splits=splits, num_classes=ds.num_classes)
        self._x_all = None
        if self.store.replicated:
            self._x_all = torch.from_numpy(self.store.local).to(self.device)
        self._y_all = torch.from_numpy(self.store.labels).to(self.device)

        # --batch-size is the global batch of a step: each rank trains a
        # minibatch of ceil(batch / p) seeds per step, so a step covers about
        # the same seeds, and an epoch has about as many steps, for every p.
        self.minibatch_size = -(-opts.batch_size // self.size)
        self.bulk_size = self._plan_bulk()

        torch.manual_seed(opts.seed)  # identical initialisation on every rank
        self.model = model_for(opts.sampler, self.store.num_features, opts.hidden,
                               ds.num_classes, opts.depth, opts.dropout).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=opts.lr,
                                          weight_decay=opts.weight_decay)
        self.params = [p for p in self.model.parameters()]
        self.history = []

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
            need = self.sampler.estimate_bytes(self.minibatch_size)
            if need > opts.memory_budget:
                raise UsageError(f"--memory-budget {opts.memory_budget} bytes is too small for "
                                 f"one minibatch of {self.minibatch_size} seeds (about {need} "
                                 "bytes on this rank); raise it or lower --batch-size")
            per_rank = BulkPlanner(self.sampler, opts.memory_budget).bulk_size(
                self.minibatch_size)
        return C.agree_min(self.comm, per_rank) * self.size

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

    # -- helpers ---------------------------------------------------------------
    def describe(self):
        o = self.opts
        sizes = ",".join(map(str, o.sizes))
        what = "fanouts" if o.sampler == "sage" else "layer sizes"
        mode = (f"graph {o.graph}" + (f", c = {o.replication}" if o.graph == "partitioned"
                                      else ""))
        return (f"{self.dataset!r}\n"
                f"sampler {o.sampler} ({what} {sizes}), model "
                f"{type(self.model).__name__} {o.depth} layers x {o.hidden}, batch "
                f"{o.batch_size} ({self.minibatch_size} per rank), bulk {self.bulk_size}, "
                f"{self.size} rank(s), {mode}, "
                f"device {o.device}, threads: {self.threads} numba, {self.torch_threads} torch")

    def _bulks(self, n):
        k = self.bulk_size
        return [list(range(i, min(n, i + k))) for i in range(0, n, k)]

    def _steps(self, k):
        """Steps of a bulk of k minibatches: the most any rank owns."""
        D = getattr(self.sampler, "D", None)
        if D is None:
            return k
        from sampling.base import owned_batches
        return max(len(owned_batches(k, D.layout, r, self.sampler._by_process_row))
                   for r in range(self.size))

    def _features(self, ids):
        """Features of ``ids`` as a torch tensor on the device (collective when partitioned)."""
        torch = self.torch
        if self._x_all is not None:
            if isinstance(ids, np.ndarray):
                idx = torch.from_numpy(np.ascontiguousarray(ids, np.int64))
            else:
                idx = torch.from_dlpack(ids)
            return self._x_all[idx.to(self.device)]
        return torch.from_numpy(self.store.fetch(ids)).to(self.device)

    def _labels(self, ids):
        torch = self.torch
        idx = (torch.from_numpy(np.ascontiguousarray(ids, np.int64))
               if isinstance(ids, np.ndarray) else torch.from_dlpack(ids))
        return self._y_all[idx.to(self.device)]

    def _concat(self, arrays):
        if not arrays:
            return np.zeros(0, np.int64)
        if isinstance(arrays[0], np.ndarray):
            return np.concatenate(arrays)
        import cupy
        return cupy.concatenate(arrays)

    def _fetch_bulk(self, mbs):
        """Features of every minibatch's input vertices, in one (collective) fetch."""
        ins = [mb.input_nodes for mb in mbs]
        X = self._features(self._concat(ins))
        out, off = [], 0
        for a in ins:
            out.append(X[off:off + a.size])
            off += a.size
        return out

    def _allreduce_grads(self, n_seeds, loss, where):
        """Sum gradients, seed counts and losses over the ranks; divide by the total seeds.

        The loss travels in the same Allreduce, so every rank sees the same
        total and stops together (``FloatingPointError``) when it is not
        finite: NaN features or labels slipped past the checks, or the
        learning rate made the model diverge.  Training on would only print
        ``loss nan`` and exit 0.
        """
        torch = self.torch
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        if self.size == 1:
            total, total_loss = float(n_seeds), float(loss)
            self._check_loss(total_loss, where)
            if total > 0:
                for p, g in zip(self.params, grads):
                    p.grad = g / total
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
            for p in self.params:
                k = p.numel()
                p.grad = res[off:off + k].view_as(p).clone()
                off += k
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

    def _progress(self, text):
        show = self.opts.progress
        if show is None:
            show = sys.stdout.isatty()
        if show and self.rank == 0:
            sys.stdout.write("\r" + text.ljust(60))
            if not text:
                sys.stdout.write("\r")
            sys.stdout.flush()

    # -- training and evaluation --------------------------------------------------
    def train_epoch(self, epoch):
        """Collective: one epoch of bulk-sampled training; returns ``EpochStats``."""
        from sampling import epoch_batches
        torch, o = self.torch, self.opts
        t = dict.fromkeys(PHASES, 0.0)
        loss_sum = seeds = edges = 0.0
        steps = 0
        with C.counting() as moved:
            batches = epoch_batches(self.store.splits["train"], self.minibatch_size,
                                    seed=o.seed, epoch=epoch)
            # Both steer every collective of the epoch (how many bulks are
            # sampled, how many steps each trains).
            C.check_same(self.comm, "Trainer.train_epoch",
                         "(number of minibatches, bulk size)", [len(batches), self.bulk_size])
            bulks = self._bulks(len(batches))
            self.model.train()
            for bi, bulk in enumerate(bulks):
                self._progress(f"epoch {epoch + 1}: bulk {bi + 1}/{len(bulks)}")
                t0 = time.perf_counter()
                mbs = self.sampler.sample([batches[i] for i in bulk], seed=o.seed, epoch=epoch,
                                          batch_ids=bulk)
                t1 = time.perf_counter()
                t["sample"] += t1 - t0
                edges += sum(mb.num_sampled_edges for mb in mbs)
                xs = self._fetch_bulk(mbs)
                t2 = time.perf_counter()
                t["fetch"] += t2 - t1
                for j in range(self._steps(len(bulk))):
                    t0 = time.perf_counter()
                    self.optimizer.zero_grad(set_to_none=True)
                    n, step_loss = 0, 0.0
                    if j < len(mbs):
                        mb = mbs[j]
                        logits = self.model(xs[j], mb)
                        loss = torch.nn.functional.cross_entropy(
                            logits, self._labels(mb.seeds), reduction="sum")
                        loss.backward()
                        step_loss = float(loss.detach())
                        loss_sum += step_loss
                        n = mb.batch_size
                        seeds += n
                    t1 = time.perf_counter()
                    self._allreduce_grads(n, step_loss,
                                          f"epoch {epoch + 1}, bulk {bi + 1}, step {j + 1}")
                    t2 = time.perf_counter()
                    self.optimizer.step()
                    t3 = time.perf_counter()
                    t["fwd/bwd"] += (t1 - t0) + (t3 - t2)
                    t["allreduce"] += t2 - t1
                    steps += 1
            t0 = time.perf_counter()
            val = self.evaluate("val")
            t["eval"] = time.perf_counter() - t0
            self._progress("")
            nbytes = sum(moved.values())
        tot = self._reduce([loss_sum, seeds, edges, nbytes])
        tmax = self._reduce([t[k] for k in PHASES], "max")
        stats = EpochStats(epoch + 1, tot[0] / max(tot[1], 1.0), val,
                           dict(zip(PHASES, tmax.tolist())), int(tot[2]), int(tot[3]), steps)
        self.history.append(stats)
        return stats

    def evaluate(self, split):
        """Collective: accuracy on split 'val' or 'test' (or an array of vertex ids).

        The evaluation vertices are sampled like training minibatches (the
        same sampler, a fixed random stream per split, so every call sees
        the same neighbourhoods), spread over the ranks like a bulk, and
        the correct counts are summed over the ranks.
        """
        torch, o = self.torch, self.opts
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
        with torch.no_grad():
            for bulk in self._bulks(len(batches)):
                mbs = self.sampler.sample([batches[i] for i in bulk], seed=o.seed,
                                          epoch=stream, batch_ids=bulk)
                xs = self._fetch_bulk(mbs)
                for mb, x in zip(mbs, xs):
                    pred = self.model(x, mb).argmax(dim=1)
                    correct += int((pred == self._labels(mb.seeds)).sum())
                    total += mb.batch_size
        self.model.train(was_training)
        c, n = self._reduce([correct, total])
        return float(c / n) if n else float("nan")

    def fit(self, epochs=None, log=None):
        """Collective: train ``epochs`` epochs (default ``opts.epochs``), then test.

        ``log(line)`` receives the table (header, one row per epoch) on
        rank 0.  Returns the test accuracy.
        """
        epochs = self.opts.epochs if epochs is None else epochs
        start = len(self.history)
        if log and self.rank == 0:
            log(header())
        for e in range(start, start + epochs):
            stats = self.train_epoch(e)
            if log and self.rank == 0:
                log(format_row(stats))
        return self.evaluate("test")

    def parameter_checksum(self):
        """float64 sum of |parameters| and of their positions-weighted values."""
        flat = self.torch.cat([p.detach().reshape(-1).double().cpu() for p in self.params])
        w = self.torch.arange(flat.numel(), dtype=self.torch.float64) % 97 + 1
        return float(flat.abs().sum()), float((flat * w).sum())
