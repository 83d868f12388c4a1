"""The training loop of BNS-GCN (``BNSTrainer``) and its per-epoch report (``BNSEpochStats``).

Per epoch: one boundary sample, one forward and backward pass of
``BNSModel`` over the rank's part, the gradients summed over the ranks by
one Allreduce, and the same Adam step on every rank; validation and test
are full-graph inference (q = 1).
"""

import math
import numbers
import sys
import time
from dataclasses import dataclass

import numpy as np

import spla
from sampling.train.bns.graph import BoundaryGraph, _as_keep, normalized_adjacency
from sampling.train.bns.halo import CommStats, _torch
from sampling.train.bns.model import (_MAX_LAYERS, KINDS, MODELS, BNSModel,
                                      _check_dropout)
from sampling.train.bns.report import bns_header, format_bns_row
from sampling.loading.inputs import as_device
from spla import comm as C
from spla.checks import as_int, as_u64, describe, fail
from spla.exceptions import DimensionMismatch, DTypeError, InvalidValue
from spla.util import row_ids


@dataclass
class BNSEpochStats:
    """One epoch of BNS training: totals and the per-rank breakdown.

    Per-rank arrays (index = rank): ``inner``, ``boundary``, ``kept``
    (boundary vertices kept this epoch), ``bytes_sent``,
    ``bytes_received`` (boundary features and gradients; the gradient
    Allreduce is ``allreduce_bytes``), ``work_bytes`` (the epoch's
    q-dependent working memory: sampled adjacency, halo rows and the
    activations kept for backward), ``peak_rss`` (the process's peak
    resident memory so far), ``compute_s`` and ``comm_s`` (the epoch's
    seconds outside and inside the exchanges and the Allreduce; waiting
    for a slower rank counts as communication).
    """

    epoch: int
    loss: float
    val_acc: float
    q: float
    inner: np.ndarray
    boundary: np.ndarray
    kept: np.ndarray
    bytes_sent: np.ndarray
    bytes_received: np.ndarray
    work_bytes: np.ndarray
    peak_rss: np.ndarray
    compute_s: np.ndarray
    comm_s: np.ndarray
    allreduce_bytes: int = 0
    eval_s: float = 0.0

    @property
    def epoch_s(self):
        """Seconds of the epoch's training step on the slowest rank (without evaluation)."""
        return float((self.compute_s + self.comm_s).max())

    @property
    def total_bytes(self):
        """Bytes of boundary features and gradients sent by all ranks."""
        return int(self.bytes_sent.sum())


def _features(torch, x, rows, dtype):
    """The features of ``rows`` as a torch tensor: sparse COO when mostly zeros.

    A ``spla.Matrix`` (bag-of-words) is row-normalised first, as PyG's
    ``NormalizeFeatures`` (and ``sampling.train.Trainer``) do.
    """
    if isinstance(x, spla.Matrix):
        X = spla.normalize_rows(spla.extract(x.astype(np.float64), rows=rows))
        if 2 * X.nnz < X.nrows * X.ncols:
            r = torch.from_numpy(np.array(row_ids(X.indptr, X.nnz), np.int64))
            c = torch.from_numpy(np.array(X.indices, np.int64))
            v = torch.from_numpy(np.array(X.values)).to(dtype)
            return torch.sparse_coo_tensor(torch.stack([r, c]), v, X.shape,
                                           is_coalesced=True, check_invariants=False)
        return torch.from_numpy(X.to_dense()).to(dtype)
    return torch.from_numpy(np.array(np.asarray(x)[rows])).to(dtype)


def _float_bits(v):
    """A float's bit pattern as an int (exact comparison of floats between ranks)."""
    return int(np.float64(v).view(np.int64))


def _peak_rss():
    """The process's peak resident memory in bytes (0 where ``resource`` is missing)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not a Unix
        return 0
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb if sys.platform == "darwin" else kb * 1024


def _check_shape(func, model, layers, hidden):
    """The model's name, depth and width, checked; returns (layers, hidden) as ints."""
    if model not in MODELS:
        fail(InvalidValue, func, "model", "'gcn' or 'sage'", repr(model))
    layers = as_int(func, "layers", layers, minimum=1)
    if layers > _MAX_LAYERS:
        fail(InvalidValue, func, "layers", f"a depth in [1, {_MAX_LAYERS}]", layers)
    return layers, as_int(func, "hidden", hidden, minimum=1)


def _check_optimiser(func, dropout, lr, weight_decay):
    """Adam's learning rate and weight decay, and the dropout probability."""
    for arg, v, lo in (("lr", lr, False), ("weight_decay", weight_decay, True)):
        if (isinstance(v, bool) or not isinstance(v, numbers.Real)
                or not math.isfinite(v) or v < 0 or (v == 0 and not lo)):
            fail(InvalidValue, func, arg, "a finite number > 0" if not lo else
                 "a finite number >= 0", repr(v))
    _check_dropout(func, dropout)


def _check_data(func, dataset, partition, size):
    """The dataset, and the partition of its vertices into ``size`` parts."""
    for attr in ("A", "x", "y", "train_idx", "val_idx", "test_idx", "num_classes"):
        if not hasattr(dataset, attr):
            fail(DTypeError, func, "dataset", "a sampling.datasets.Dataset (graph A, "
                 "features x, labels y, splits)", describe(dataset))
    if not isinstance(partition, (str, spla.Partition)) or (
            isinstance(partition, str) and partition not in ("block", "metis", "hash")):
        fail(InvalidValue, func, "partition", "'block', 'metis', 'hash' or a "
             "spla.partition.Partition", describe(partition))
    if isinstance(partition, spla.Partition) and partition.parts != size:
        fail(InvalidValue, func, "partition", f"a partition into {size} parts "
             "(one per rank)", f"{partition.parts} parts")
    if isinstance(partition, spla.Partition) and partition.n != dataset.A.nrows:
        fail(DimensionMismatch, func, "partition", f"a partition of the dataset's "
             f"{dataset.A.nrows} vertices", f"a partition of {partition.n}")
    if dataset.A.nrows < size:
        fail(InvalidValue, func, "comm", f"at most {dataset.A.nrows} ranks (one "
             "vertex per rank at least)", f"{size} ranks")


class BNSTrainer:
    """Collective: BNS-GCN training of a GCN or GraphSAGE on the whole graph over MPI.

    Every rank owns one part of the vertices (``partition``), their rows
    of the aggregation matrix and their features; an epoch is one forward
    and backward pass over the whole graph with the epoch's boundary sample
    (``BoundaryGraph.sample``), then one Allreduce of the gradients (summed
    over the ranks, divided by the number of training vertices: the mean
    cross-entropy of the whole training set) and one Adam step, the same on
    every rank.

    Parameters
    ----------
    dataset : sampling.datasets.Dataset
        Loaded on every rank (the graph, features and labels).
    comm : MPI communicator, optional
        Default COMM_WORLD (one rank without mpiexec: single-process
        full-graph training).
    model : {'gcn', 'sage'}, default 'gcn'
    boundary_keep : float in [0, 1], default 1.0
        q, the probability of keeping a boundary vertex in an epoch.
    partition : 'block', 'metis', 'hash' or spla.partition.Partition, default 'block'
        One part per rank ('metis' needs pymetis; computed on rank 0 and
        broadcast; it balances ``1 + degree`` per part, the entries of the
        rows; 'hash' is ``spla.partition.hashed`` with ``seed``).  Every
        part must be non-empty.
    hidden, layers, dropout, lr, weight_decay, seed
        Model width and depth, dropout probability, Adam settings, and the
        seed of the initialisation, dropout masks and boundary draws.
    dtype : torch dtype, default torch.float32
    device : str or torch.device, default 'cpu'
        Where this rank's model, features and aggregation run ('cuda',
        'cuda:1', ...).  The exchanges gather the rows to send on the
        device and stage them through host memory for MPI (the MPI of the
        ``mpich`` wheel is not CUDA-aware): one device-to-host and one
        host-to-device copy per exchange, of the exchanged rows only.  The
        draws (boundary sample, dropout masks) are keyed hashes, the same
        on every device (a dense input's masks are drawn on the GPU with
        cupy), so a seed gives the same samples everywhere; the losses
        agree up to floating-point rounding.

    Raises
    ------
    InvalidValue, DTypeError, DimensionMismatch
        On every rank, for a bad argument on any rank (q outside [0, 1], a
        depth < 1, a partition with other than p parts, of another number
        of vertices, or with an empty part), or settings that differ
        between the ranks.
    MissingDependency
        On every rank, when a rank's ``device`` is a GPU its PyTorch does
        not see.

    Examples
    --------
    >>> from sampling.datasets import load
    >>> t = BNSTrainer(load("rmat:7"), boundary_keep=0.5, hidden=8, dropout=0.0)
    >>> stats = t.train_epoch(0)                                       # 1 rank
    >>> stats.inner.tolist(), stats.boundary.tolist(), 0 <= t.evaluate("test") <= 1
    ([128], [0], True)
    """

    def __init__(self, dataset, comm=None, *, model="gcn", boundary_keep=1.0,
                 partition="block", hidden=64, layers=2, dropout=0.5, lr=0.01,
                 weight_decay=5e-4, seed=0, dtype=None, device="cpu"):
        func = "BNSTrainer"
        torch = _torch(func)
        comm = C.as_comm(comm, func)
        self.comm, self.rank, self.size = comm, comm.Get_rank(), comm.Get_size()
        with C.collective_checks(comm):
            self.device = as_device(func, device, torch)
            self.q = _as_keep(func, "boundary_keep", boundary_keep)
            layers, hidden = _check_shape(func, model, layers, hidden)
            self.seed = int(as_u64(func, "seed", seed))
            _check_optimiser(func, dropout, lr, weight_decay)
            _check_data(func, dataset, partition, self.size)
        # The exchanges and the Allreduce need the same settings everywhere
        # (a different q on one rank would mismatch the all-to-allv counts).
        bits = _float_bits
        C.check_same(comm, func, "(boundary_keep, seed, model, layers, hidden, dropout, lr, "
                     "weight_decay)", [bits(self.q), self.seed % (1 << 62), MODELS.index(model),
                                       layers, hidden, bits(dropout), bits(lr),
                                       bits(weight_decay)], cls=InvalidValue)
        self.model_name, self.hidden, self.layers = model, hidden, layers
        self.num_classes = int(dataset.num_classes)
        self.dtype = torch.float32 if dtype is None else dtype
        self.dataset = dataset
        self._load_part(partition)
        self._build_model(dropout, lr, weight_decay)
        self.history = []
        self._full_op = None

    def _load_part(self, partition):
        """This rank's part: the partition, its rows of the graph, features, labels and splits."""
        torch = _torch("BNSTrainer")
        dataset = self.dataset
        self.P = self._partition(dataset.A, partition)
        Ahat = normalized_adjacency(dataset.A, KINDS[self.model_name])
        D = spla.distribute(Ahat, self.comm, partition=self.P)
        self.graph = G = BoundaryGraph(D)
        dev = self.device
        self.x = _features(torch, dataset.x, G.inner, self.dtype).to(dev)
        self.y = torch.from_numpy(np.asarray(dataset.y, np.int64)[G.inner]).to(dev)
        pos = {}
        for name in ("train", "val", "test"):
            ids = np.asarray(getattr(dataset, f"{name}_idx"), np.int64)
            local = np.flatnonzero(np.isin(G.inner, ids))
            pos[name] = (torch.from_numpy(local).to(dev), int(ids.size))
        self.splits = pos

    def _build_model(self, dropout, lr, weight_decay):
        """The model (rank 0's initialisation on every rank) and its optimiser."""
        torch = _torch("BNSTrainer")
        # A private generator state: the initialisation depends on the seed
        # alone, and the caller's torch RNG is left as it was.
        with torch.random.fork_rng():
            torch.manual_seed(self.seed)
            self.model = BNSModel(self.model_name, self.x.shape[1], self.hidden,
                                  self.num_classes, self.layers, dropout).to(self.dtype)
        self._broadcast_model()
        # Moved after the broadcast, which reads the parameters on the host.
        self.model.to(self.device)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.Adam(self.params, lr=lr, weight_decay=weight_decay)

    def _partition(self, A, partition):
        if isinstance(partition, spla.Partition):
            return partition
        if partition == "block":
            return spla.partition.block(A, self.size)
        if partition == "hash":
            return spla.partition.hashed(A, self.size, seed=self.seed)
        P = None
        with C.collective_checks(self.comm):
            if self.rank == 0:
                # Balance the rows' entries (1 + degree per vertex), not the
                # vertex counts: the aggregation's work and the activations
                # follow the entries (BNS-GCN balances edges too).
                P = spla.partition.metis(A, self.size, seed=self.seed % (2 ** 31),
                                         vertex_weights=1 + A.row_degrees())
        if self.size == 1:
            return P
        part = C.bcast_int(self.comm, None if P is None else P.part, 0, A.nrows)
        return P if P is not None else spla.Partition(part, self.size, method="metis")

    def _broadcast_model(self):
        """Rank 0's initial parameters on every rank (they are equal already: one check)."""
        if self.size == 1:
            return
        torch = _torch("BNSTrainer")
        flat = torch.cat([p.detach().reshape(-1) for p in self.model.parameters()])
        buf = C.bcast_array(self.comm, flat.numpy().copy(), 0, "bns.broadcast")
        off = 0
        with torch.no_grad():
            for p in self.model.parameters():
                k = p.numel()
                p.copy_(torch.from_numpy(buf[off:off + k]).view_as(p))
                off += k

    def _full_operator(self):
        """The operator of the unsampled adjacency (q = 1), built once."""
        if self._full_op is None:
            self._full_op = self._op(self.graph.sample(1.0, seed=self.seed, epoch=0))
        return self._full_op

    def _op(self, sample):
        from sampling.models import BlockOperator
        return BlockOperator(sample.adj, normalize=False, dtype=self.dtype, device=self.device)

    def _work_bytes(self, sample):
        """Working memory of one epoch on this rank (an estimate from the shapes).

        The sampled adjacency and its transpose (CSR), the features, and per
        layer the rows ``[inner | kept boundary]`` that the aggregation reads
        (of the exchanged width, see ``BNSModel._layer``) and the layer's
        output, both kept for the backward pass.
        """
        adj = sample.adj
        total = adj.nnz * 2 * (8 + 8) + (adj.nrows + adj.ncols + 2) * 8
        x = self.x
        item = x.element_size()
        total += x.values().numel() * (16 + item) if x.is_sparse else x.numel() * item
        rows = sample.num_inner + sample.num_kept
        dims = [x.shape[1]] + [self.hidden] * (self.layers - 1) + [self.num_classes]
        for d_in, d_out in zip(dims[:-1], dims[1:]):
            total += rows * min(d_in, d_out) * item + sample.num_inner * d_out * item
        return int(total)

    def train_epoch(self, epoch, validate=True):
        """Collective: one epoch (a sample, forward, backward, Allreduce, step); ``BNSEpochStats``.

        ``validate=False`` skips the validation accuracy (``val_acc`` NaN).
        """
        torch = _torch("BNSTrainer")
        t_start = time.perf_counter()
        stats = CommStats()
        sample = self.graph.sample(self.q, seed=self.seed, epoch=epoch)
        op = self._full_operator() if self.q >= 1.0 else self._op(sample)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        idx, n_train = self.splits["train"]
        logits = self.model(self.x, self.graph, sample, op, stats)
        loss = torch.nn.functional.cross_entropy(logits[idx], self.y[idx], reduction="sum")
        (loss / n_train).backward()
        t0 = time.perf_counter()
        total_loss, ar_bytes = self._allreduce_grads(float(loss.detach()), epoch)
        t_ar = time.perf_counter() - t0
        self.optimizer.step()
        if self.device.type == "cuda":
            # The step's kernels are queued: the epoch's seconds include them.
            torch.cuda.synchronize(self.device)
        elapsed = time.perf_counter() - t_start
        comm_s = stats.seconds + t_ar
        t0 = time.perf_counter()
        val = self.evaluate("val") if validate else float("nan")
        eval_s = time.perf_counter() - t0
        row = [self.graph.num_inner, self.graph.num_boundary, sample.num_kept,
               stats.bytes_sent, stats.bytes_received, self._work_bytes(sample), _peak_rss(),
               elapsed - comm_s, comm_s, eval_s]
        # One Allgather for the report (counts below 2**53 are exact in float64).
        allr = self._gather_float(row)
        ints = allr[:, :7].astype(np.int64)
        s = BNSEpochStats(epoch + 1, total_loss / n_train, val, self.q, *ints.T,
                          compute_s=allr[:, 7], comm_s=allr[:, 8], allreduce_bytes=ar_bytes,
                          eval_s=float(allr[:, 9].max()))
        self.history.append(s)
        return s

    def _gather_float(self, values):
        v = np.asarray(values, np.float64)
        if self.size == 1:
            return v[None, :]
        out = np.empty((self.size, v.size), np.float64)
        self.comm.Allgather(v, out)
        return out

    def _allreduce_grads(self, loss, epoch):
        """Sum the gradients and the loss over the ranks; returns (total loss, bytes sent)."""
        torch = _torch("BNSTrainer")
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.params]
        if self.size == 1:
            total = loss
        else:
            # Summed on the host (MPI here is not CUDA-aware): one copy each way.
            flat = np.append(torch.cat([g.reshape(-1).double() for g in grads]).cpu().numpy(),
                             loss)
            with C.counting() as moved:
                out = C.allreduce_array(self.comm, flat, "sum", "bns.allreduce")
            total = float(out[-1])
            off = 0
            for p in self.params:
                k = p.numel()
                p.grad = (torch.from_numpy(out[off:off + k]).view_as(p)
                          .to(device=p.device, dtype=p.dtype, copy=True))
                off += k
        if not math.isfinite(total):
            with C.collective_checks(self.comm):  # the same total on every rank
                raise FloatingPointError(
                    f"BNSTrainer.train_epoch: the training loss must be finite; got {total} "
                    f"(summed over the ranks) at epoch {epoch + 1}; lower the learning rate "
                    "or check the features for NaN")
        return total, (0 if self.size == 1 else sum(moved.values()))

    def evaluate(self, split):
        """Collective: accuracy on 'train', 'val' or 'test' by full-graph inference (q = 1)."""
        torch = _torch("BNSTrainer")
        if split not in self.splits:
            with C.collective_checks(self.comm):
                fail(InvalidValue, "BNSTrainer.evaluate", "split", "'train', 'val' or "
                     "'test'", repr(split))
        full = self.graph.sample(1.0, seed=self.seed, epoch=0)
        op = self._full_operator()
        idx, n = self.splits[split]
        was = self.model.training
        self.model.eval()
        try:
            with torch.no_grad():
                pred = self.model(self.x, self.graph, full, op).argmax(dim=1)
                correct = int((pred[idx] == self.y[idx]).sum())
        finally:
            self.model.train(was)
        if self.size > 1:
            correct = int(C.allreduce_array(self.comm, np.array([correct], np.int64), "sum",
                                            None)[0])
        return correct / n if n else float("nan")

    def fit(self, epochs, log=None, validate=True):
        """Collective: train ``epochs`` epochs, then return the test accuracy.

        ``log(line)`` (rank 0) receives the table: header, one row per epoch.
        ``validate=False``: no validation accuracy per epoch.
        """
        epochs = as_int("BNSTrainer.fit", "epochs", epochs, minimum=0)
        if log and self.rank == 0:
            log(bns_header())
        start = len(self.history)
        for e in range(start, start + epochs):
            s = self.train_epoch(e, validate)
            if log and self.rank == 0:
                log(format_bns_row(s))
        return self.evaluate("test")

    def describe(self):
        """One paragraph: dataset, model, q, ranks, partition and its edge cut, device."""
        P, A = self.P, self.dataset.A
        cut = P.edge_cut(A)
        return (f"{self.dataset!r}\nBNS-GCN: model {self.model_name} {self.layers} layers x "
                f"{self.hidden}, boundary keep q = {self.q:g}, {self.size} rank(s), partition "
                f"{P.method} (edge cut {cut} of {A.nnz} entries, "
                f"{100 * cut / max(A.nnz, 1):.1f} %), on {self.device}")
