"""The main job: bulk-sampled GNN training, on one process or data parallel over MPI.

Run it with ``python -m sampling.train`` (or the console script
``spla-train``); ``--help`` lists the options, ``docs/training.rst``
explains them.  Per epoch the job

1. cuts the shuffled training vertices into minibatches
   (``epoch_batches``) and the minibatches into bulks (``--bulk K``, or as
   many as fit ``--memory-budget`` bytes per rank, ``BulkPlanner``);
2. samples each bulk in one pass (``sampler.sample``; under MPI every rank
   samples and trains its own share of the bulk's minibatches);
3. fetches the features of every minibatch's input vertices
   (``FeatureStore.fetch``: an all-to-allv within the process column when
   the features are partitioned);
4. runs forward and backward per minibatch, averages the gradients over
   the ranks with one Allreduce per step (a rank without a minibatch in a
   step contributes zeros; the average is weighted by seed counts), and
   takes an optimizer step, identical on every rank;

and prints one row of a table: loss, validation accuracy, seconds per
phase (sample, fetch, forward/backward, allreduce, eval), sampled edges per
second and megabytes moved.  The last line is ``test accuracy: <value>``.

The pieces are importable for notebooks: ``TrainOptions``, ``Trainer``
(``train_epoch``, ``evaluate``, ``fit``), ``format_row``, ``plot_phases``.
"""

import argparse
import contextlib
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field, fields
from typing import Optional, Tuple

import numpy as np

SAMPLERS = ("sage", "ladies", "fastgcn")
GRAPH_MODES = ("replicated", "partitioned")
DEVICES = ("cpu", "cuda")
PHASES = ("sample", "fetch", "fwd/bwd", "allreduce", "eval")
_EVAL_STREAM = {"val": 1 << 40, "test": (1 << 40) + 1}  # fixed epochs of the eval draws


@dataclass
class TrainOptions:
    """Settings of a training run (the command line's options).

    The defaults reach about 0.80 test accuracy on Cora with GraphSAGE.
    """

    sampler: str = "sage"
    fanouts: Tuple[int, ...] = (10, 10)
    layer_sizes: Tuple[int, ...] = (256, 256)
    layers: Optional[int] = None
    batch_size: int = 64
    bulk: Optional[int] = None
    memory_budget: int = 1 << 30
    replication: int = 1
    graph: str = "replicated"
    dataset: str = "cora"
    device: str = "cpu"
    epochs: int = 20
    lr: float = 0.01
    weight_decay: float = 5e-4
    hidden: int = 64
    dropout: float = 0.5
    seed: int = 0
    threads: Optional[int] = None
    plot: Optional[str] = None
    progress: Optional[bool] = None  # None: only when stdout is a terminal

    @property
    def sizes(self):
        """The sampler's per-layer sizes (fanouts or layer sizes), output layer first."""
        return tuple(self.fanouts if self.sampler == "sage" else self.layer_sizes)

    @property
    def depth(self):
        return len(self.sizes)


class UsageError(Exception):
    """A bad option value; main prints it as one ``error:`` line and exits 2."""


# -- command line -----------------------------------------------------------

def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _int_list(text):
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, "
                                         f"got {text!r}")
    try:
        vals = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, "
                                         f"got {text!r}")
    if any(v < 1 for v in vals):
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, "
                                         f"got {text!r}")
    return vals


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _bytes(text):
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"expected a size in bytes such as 512M or 2G, "
                                         f"got {text!r}")
    v = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive size, got {text!r}")
    return v


def _dataset_name(text):
    key = text.lower()
    if key in ("cora", "citeseer"):
        return key
    m = re.fullmatch(r"rmat:(\d+)", key)
    if m and 1 <= int(m.group(1)) <= 30:
        return key
    raise argparse.ArgumentTypeError(f"unknown dataset {text!r}; use cora, citeseer or "
                                     "rmat:SCALE (SCALE from 1 to 30)")


def _probability(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {text!r}")
    return v


def _positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    if not v > 0 or not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return v


def _nonneg_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    if not v >= 0 or not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return v


def _nonneg_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return v


class _Parser(argparse.ArgumentParser):
    """Errors as one line, ``error: ...``, exit status 2."""

    def error(self, message):
        # Under mpiexec every rank parses the same arguments: rank 0 speaks.
        rank = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK") or "0"
        if rank == "0":
            sys.stderr.write(f"error: {message} (see {self.prog} --help)\n")
        sys.exit(2)


def build_parser():
    """The ``argparse`` parser of the main job."""
    d = TrainOptions()
    p = _Parser(
        prog="python -m sampling.train",
        description="Bulk-sampled GNN training (GraphSAGE, LADIES, FastGCN) on spla; "
                    "data parallel under mpiexec.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--dataset", type=_dataset_name, default=d.dataset,
                   help="cora, citeseer or rmat:SCALE (seeded synthetic graph with planted "
                        "communities, 2**SCALE vertices)")
    p.add_argument("--sampler", choices=SAMPLERS, default=d.sampler,
                   help="sage trains GraphSAGE on node-wise samples; ladies and fastgcn "
                        "train a GCN on layer-wise samples")
    p.add_argument("--fanouts", type=_int_list, default=d.fanouts, metavar="F1,F2,...",
                   help="sage: neighbours per vertex and layer, output layer first; the "
                        "model has one layer per fanout")
    p.add_argument("--layer-sizes", type=_int_list, default=d.layer_sizes,
                   metavar="S1,S2,...",
                   help="ladies/fastgcn: vertices sampled per layer and minibatch, output "
                        "layer first; one model layer per size")
    p.add_argument("--layers", type=_positive_int, default=None,
                   help="model depth; must equal the number of fanouts / layer sizes "
                        "(default: that number)")
    p.add_argument("--batch-size", type=_positive_int, default=d.batch_size,
                   help="seed vertices per optimizer step, over all ranks: under mpiexec "
                        "-n P each rank trains minibatches of ceil(batch-size / P) seeds")
    bulk = p.add_mutually_exclusive_group()
    bulk.add_argument("--bulk", type=_positive_int, default=None, metavar="K",
                      help="minibatches sampled per bulk pass (over all ranks)")
    bulk.add_argument("--memory-budget", type=_bytes, default=d.memory_budget,
                      metavar="BYTES",
                      help="choose the bulk size so that sampling a bulk needs at most this "
                           "much memory per rank (e.g. 512M, 2G)")
    p.add_argument("--graph", choices=GRAPH_MODES, default=d.graph,
                   help="replicated: every rank holds the graph and the features; "
                        "partitioned: 1.5D block rows (graph and features)")
    p.add_argument("--replication", type=_positive_int, default=d.replication, metavar="C",
                   help="partitioned mode: ranks per process row of the (p/c) x c grid "
                        "(must divide the number of ranks)")
    p.add_argument("--device", choices=DEVICES, default=d.device,
                   help="where the model runs (cuda also samples on the GPU when running "
                        "on one process)")
    p.add_argument("--epochs", type=_positive_int, default=d.epochs)
    p.add_argument("--lr", type=_positive_float, default=d.lr, help="Adam learning rate")
    p.add_argument("--weight-decay", type=_nonneg_float, default=d.weight_decay)
    p.add_argument("--hidden", type=_positive_int, default=d.hidden, help="hidden width")
    p.add_argument("--dropout", type=_probability, default=d.dropout)
    p.add_argument("--seed", type=_nonneg_int, default=d.seed,
                   help="seeds the model initialisation, the shuffles and the sampling")
    p.add_argument("--threads", type=_positive_int, default=None,
                   help="numba and torch threads per process (default: numba gets "
                        "NUMBA_NUM_THREADS, else the cores divided by the ranks on this node; "
                        "torch gets 1)")
    p.add_argument("--plot", default=None, metavar="OUT.png",
                   help="write a stacked-bar plot of the phase times per epoch "
                        "(needs matplotlib)")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress line (default: only when stdout is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    return p


def options_from_args(args):
    """``TrainOptions`` from parsed arguments, with the cross-option checks."""
    names = {f.name for f in fields(TrainOptions)}
    opts = TrainOptions(**{k: v for k, v in vars(args).items() if k in names})
    check_options(opts)
    return opts


def check_options(opts):
    """Raise ``UsageError`` for settings that cannot work together."""
    if opts.sampler not in SAMPLERS:
        raise UsageError(f"unknown sampler {opts.sampler!r}; use one of {', '.join(SAMPLERS)}")
    if opts.graph not in GRAPH_MODES:
        raise UsageError(f"unknown graph mode {opts.graph!r}; use replicated or partitioned")
    if opts.device not in DEVICES:
        raise UsageError(f"unknown device {opts.device!r}; use cpu or cuda")
    what = "--fanouts" if opts.sampler == "sage" else "--layer-sizes"
    if opts.layers is not None and opts.layers != opts.depth:
        raise UsageError(f"{what} has {opts.depth} entries but the model has --layers "
                         f"{opts.layers}; give one entry per layer")
    if opts.replication != 1 and opts.graph == "replicated":
        raise UsageError("--replication applies to --graph partitioned; drop it or add "
                         "--graph partitioned")
    if opts.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError("--plot needs matplotlib; install it with `pip install "
                             "matplotlib` or drop --plot")


# -- MPI and threads --------------------------------------------------------

_LAUNCHER_VARS = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")


def launched_by_mpiexec():
    """True when this process was started by an MPI launcher."""
    return any(v in os.environ for v in _LAUNCHER_VARS)


def world_comm(need_mpi=False):
    """COMM_WORLD when running under mpiexec (or when ``need_mpi``), else None.

    A plain ``python -m sampling.train`` does not initialise MPI at all
    unless the partitioned mode asks for it.
    """
    if not (need_mpi or launched_by_mpiexec()):
        return None
    from mpi4py import MPI
    return MPI.COMM_WORLD


def default_threads():
    """Cores per rank on this node: NUMBA_NUM_THREADS if set, else cores / local ranks."""
    env = os.environ.get("NUMBA_NUM_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return int(env)
    local = os.environ.get("MPI_LOCALNRANKS") or os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE")
    local = int(local) if local and local.isdigit() and int(local) > 0 else 1
    return max(1, (os.cpu_count() or 1) // local)


def set_threads(numba_threads, torch_threads):
    """Threads of this process for the sampling kernels (numba) and for torch.

    Set explicitly: MPICH's mpiexec leaves torch with one thread, and numba
    would otherwise start one thread per core in every rank.
    """
    import torch
    torch.set_num_threads(int(torch_threads))
    try:
        import numba
        numba.set_num_threads(max(1, min(int(numba_threads), numba.config.NUMBA_NUM_THREADS)))
    except (ImportError, ValueError):  # pragma: no cover
        pass


def require_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        from spla.exceptions import MissingDependency
        raise MissingDependency("training needs PyTorch; install it with "
                                "`pip install -e \".[train]\"`") from None
    return torch


# -- the trainer --------------------------------------------------------------

class _ByteCounter(dict):
    """A byte counter that compares by identity (so nested counters stay apart)."""

    def __missing__(self, key):
        return 0

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__


@contextlib.contextmanager
def counting():
    """Like ``spla.comm.counting``, safe to nest inside another counter."""
    from spla import comm as C
    c = _ByteCounter()
    C._counters.append(c)
    try:
        yield c
    finally:
        for i, other in enumerate(C._counters):
            if other is c:
                del C._counters[i]
                break


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
        if opts.device == "cuda":
            self._check_cuda()

        ds = load(opts.dataset) if dataset is None else dataset
        self.dataset = ds
        n_train = int(ds.train_idx.size)
        if opts.batch_size > n_train:
            raise UsageError(f"--batch-size {opts.batch_size} is larger than the training set "
                             f"({n_train} vertices of {ds.name}); use at most {n_train}")
        # Row-normalised bag-of-words features (as PyG's NormalizeFeatures).
        x = spla.normalize_rows(ds.x.astype(np.float32))

        partitioned = opts.graph == "partitioned"
        distributed = partitioned or self.size > 1
        if partitioned and self.comm is None:
            self.comm = world_comm(need_mpi=True)
            self.size, self.rank = self.comm.Get_size(), self.comm.Get_rank()
        if partitioned and self.size % opts.replication:
            raise UsageError(f"--replication {opts.replication} must divide the number of "
                             f"ranks ({self.size})")
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
                                      comm=self.comm, replication=opts.replication)
        else:
            self.store = FeatureStore(x, labels=ds.y, splits=splits)
        self._x_all = None
        if self.store.replicated:
            self._x_all = torch.from_numpy(self.store.local).to(self.device)
        self._y_all = torch.from_numpy(np.asarray(ds.y, np.int64)).to(self.device)

        # --batch-size is the global batch of a step: each rank trains a
        # minibatch of ceil(batch / p) seeds per step, so a step covers about
        # the same seeds, and an epoch has about as many steps, for every p.
        self.minibatch_size = -(-opts.batch_size // self.size)
        # Bulk size: given, or as many minibatches per rank as the budget allows.
        if opts.bulk is not None:
            self.bulk_size = opts.bulk
        else:
            from sampling import BulkPlanner
            need = self.sampler.estimate_bytes(self.minibatch_size)
            if need > opts.memory_budget:
                raise UsageError(f"--memory-budget {opts.memory_budget} bytes is too small for "
                                 f"one minibatch of {self.minibatch_size} seeds (about {need} "
                                 "bytes); raise it or lower --batch-size")
            per_rank = BulkPlanner(self.sampler, opts.memory_budget).bulk_size(
                self.minibatch_size)
            self.bulk_size = per_rank * self.size

        torch.manual_seed(opts.seed)  # identical initialisation on every rank
        self.model = model_for(opts.sampler, self.store.num_features, opts.hidden,
                               ds.num_classes, opts.depth, opts.dropout).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=opts.lr,
                                          weight_decay=opts.weight_decay)
        self.params = [p for p in self.model.parameters()]
        self.history = []

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

    def _allreduce_grads(self, n_seeds):
        """Sum gradients and seed counts over the ranks; divide by the total seeds."""
        torch = self.torch
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        if self.size == 1:
            total = float(n_seeds)
            if total > 0:
                for p, g in zip(self.params, grads):
                    p.grad = g / total
            return total
        from mpi4py import MPI
        flat = torch.cat([g.reshape(-1) for g in grads] +
                         [torch.tensor([float(n_seeds)], device=grads[0].device)])
        buf = flat.detach().to("cpu", torch.float32).numpy().copy()
        out = np.empty_like(buf)
        self.comm.Allreduce(buf, out, op=MPI.SUM)
        from spla import comm as C
        C.record("train.allreduce", int(2 * buf.nbytes * (self.size - 1) / self.size))
        total = float(out[-1])
        if total > 0:
            res = torch.from_numpy(out[:-1] / total).to(self.device)
            off = 0
            for p in self.params:
                k = p.numel()
                p.grad = res[off:off + k].view_as(p).clone()
                off += k
        return total

    def _reduce(self, values, op="sum"):
        if self.size == 1:
            return np.asarray(values, np.float64)
        from mpi4py import MPI
        buf = np.asarray(values, np.float64)
        out = np.empty_like(buf)
        self.comm.Allreduce(buf, out, op=MPI.SUM if op == "sum" else MPI.MAX)
        return out

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
        with counting() as moved:
            batches = epoch_batches(self.store.splits["train"], self.minibatch_size,
                                    seed=o.seed, epoch=epoch)
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
                    n = 0
                    if j < len(mbs):
                        mb = mbs[j]
                        logits = self.model(xs[j], mb)
                        loss = torch.nn.functional.cross_entropy(
                            logits, self._labels(mb.seeds), reduction="sum")
                        loss.backward()
                        loss_sum += float(loss.detach())
                        n = mb.batch_size
                        seeds += n
                    t1 = time.perf_counter()
                    self._allreduce_grads(n)
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


# -- table and plot ------------------------------------------------------------

_COLS = [("epoch", 5), ("loss", 7), ("val acc", 7), ("sample s", 8), ("fetch s", 7),
         ("fwd/bwd s", 9), ("allreduce s", 11), ("eval s", 7), ("SEPS", 9), ("MB moved", 8)]


def header():
    """The table's header line."""
    return "  ".join(name.rjust(w) for name, w in _COLS)


def format_row(s):
    """One table row for ``EpochStats`` s."""
    t = s.times
    vals = [f"{s.epoch:d}", f"{s.loss:.4f}", f"{s.val_acc:.4f}", f"{t['sample']:.3f}",
            f"{t['fetch']:.3f}", f"{t['fwd/bwd']:.3f}", f"{t['allreduce']:.3f}",
            f"{t['eval']:.3f}", _si(s.seps), f"{s.bytes_moved / 1e6:.2f}"]
    return "  ".join(v.rjust(w) for v, (_, w) in zip(vals, _COLS))


def _si(x):
    if not math.isfinite(x):
        return "-"
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.2f}{unit}"
    return f"{x:.0f}"


def plot_phases(history, path, title=None):
    """Write a stacked-bar plot of the seconds per phase and epoch to ``path``."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from spla.exceptions import MissingDependency
        raise MissingDependency("plotting needs matplotlib; install it with "
                                "`pip install matplotlib`") from None
    epochs = [s.epoch for s in history]
    fig, ax = plt.subplots(figsize=(max(5, 0.3 * len(epochs) + 3), 3.5))
    bottom = np.zeros(len(epochs))
    for phase in PHASES:
        v = np.array([s.times[phase] for s in history])
        ax.bar(epochs, v, bottom=bottom, label=phase)
        bottom += v
    ax.set_xlabel("epoch")
    if len(epochs) <= 30:
        ax.set_xticks(epochs)
    ax.set_ylabel("seconds (slowest rank)")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8, ncol=len(PHASES), loc="upper center", bbox_to_anchor=(0.5, -0.18))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# -- main -----------------------------------------------------------------------

def run(opts, comm=None, out=None):
    """Build a Trainer, train, print the table and ``test accuracy: <value>``.

    Returns the test accuracy.
    """
    out = out or sys.stdout
    trainer = Trainer(opts, comm)
    say = (lambda line: print(line, file=out, flush=True)) if trainer.rank == 0 else None
    if say:
        say(trainer.describe())
    t0 = time.perf_counter()
    acc = trainer.fit(log=say)
    elapsed = time.perf_counter() - t0
    if opts.plot and trainer.rank == 0:
        plot_phases(trainer.history, opts.plot,
                    title=f"{opts.dataset}, {opts.sampler}, {trainer.size} rank(s)")
    if say:
        if opts.plot:
            say(f"phase plot written to {opts.plot}")
        say(f"trained {opts.epochs} epochs in {elapsed:.1f} s")
        say(f"test accuracy: {acc:.4f}")
    return acc


def main(argv=None):
    """Entry point of ``python -m sampling.train`` and ``spla-train``; returns the exit status."""
    args = build_parser().parse_args(argv)
    comm = None
    rank = 0
    try:
        opts = options_from_args(args)
        require_torch()
        comm = world_comm(need_mpi=opts.graph == "partitioned")
        rank = 0 if comm is None else comm.Get_rank()
        run(opts, comm)
        return 0
    except KeyboardInterrupt:
        if rank == 0:
            sys.stderr.write("interrupted: training stopped (Ctrl-C)\n")
            sys.stderr.flush()
        if comm is not None and comm.Get_size() > 1:
            comm.Abort(130)
        return 130
    except (UsageError, _spla_error()) as exc:
        # Collective checks raise on every rank: rank 0 speaks for all of them.
        if rank == 0:
            sys.stderr.write(f"error: {' '.join(str(exc).split())}\n")
            sys.stderr.flush()
        return 2


def _spla_error():
    from spla.exceptions import SplaError
    return SplaError


if __name__ == "__main__":
    sys.exit(main())
