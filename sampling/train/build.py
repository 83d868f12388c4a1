"""The pieces of a training run, built from ``TrainOptions``: one function per piece.

``Trainer`` calls these in order (collectively under MPI): the dataset and
its features, the partition, the sampler on its graph, the feature store,
the bulk size.  Each validates what it is given and raises the same error
on every rank.
"""

import numpy as np

from spla import comm as C
from spla.checks import describe, fail
from spla.exceptions import (DimensionMismatch, DTypeError, InvalidValue, LayoutError,
                             MissingDependency)
from spla.optional import require

from sampling.train.options import UsageError

#: What ``Trainer(model=...)`` must be.
MODEL_PROTOCOL = ("a torch.nn.Module called as model(x, minibatch), with x the features "
                  "of minibatch.input_nodes, that returns the logits of minibatch.seeds")


def load_dataset(opts):
    """``sampling.datasets.load(opts.dataset)`` (with ``root=opts.root`` when set)."""
    from sampling.datasets import load
    if opts.root is None:
        return load(opts.dataset)
    return load(opts.dataset, root=opts.root)


def what(x):
    """``describe`` for a received value, naming its type when it is not numpy."""
    if isinstance(x, np.ndarray) or not (hasattr(x, "shape") and hasattr(x, "dtype")):
        return describe(x)
    return (f"a {type(x).__module__}.{type(x).__name__} of shape {tuple(x.shape)} and dtype "
            f"{x.dtype}")


def features_of(ds):
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
        fail(DTypeError, "Trainer", "dataset.x", expected, what(x))
    if x.ndim != 2 or x.shape[0] != ds.num_nodes:
        fail(DimensionMismatch, "Trainer", "dataset.x", f"a 2-D array of shape (n, f) with n = "
             f"{ds.num_nodes} (one row per vertex)", describe(x))
    if x.dtype.kind != "f":
        fail(DTypeError, "Trainer", "dataset.x", expected, describe(x))
    return x


def dense_features(features):
    """The float32 feature rows the model reads: bag-of-words rows normalised (as PyG's
    ``NormalizeFeatures``), dense arrays as given."""
    import spla
    if isinstance(features, spla.Matrix):
        return spla.normalize_rows(features.astype(np.float32))
    return np.ascontiguousarray(features, dtype=np.float32)


def check_model(torch, model):
    """A ``torch.nn.Module`` with trainable parameters."""
    if not isinstance(model, torch.nn.Module):
        fail(DTypeError, "Trainer", "model", MODEL_PROTOCOL, what(model))
    if not any(p.requires_grad for p in model.parameters()):
        fail(InvalidValue, "Trainer", "model", "a module with trainable parameters",
             f"{type(model).__name__} without any")


def check_logits(torch, out, mb, num_classes, name):
    """A model's output for ``mb``: a float tensor of shape (seeds, classes)."""
    want = (mb.batch_size, num_classes)
    expected = (f"{MODEL_PROTOCOL}: a float tensor of shape (seeds, classes) = {want} "
                "for this minibatch")
    if not torch.is_tensor(out):
        fail(DTypeError, "Trainer", "model", expected,
             f"{name}(x, minibatch) -> {type(out).__name__}")
    if tuple(out.shape) != want:
        fail(DimensionMismatch, "Trainer", "model", expected,
             f"{name}(x, minibatch) -> tensor of shape {tuple(out.shape)}")
    if not out.is_floating_point():
        fail(DTypeError, "Trainer", "model", expected,
             f"{name}(x, minibatch) -> tensor of dtype {out.dtype}")


def check_cuda(torch, cupy=True):
    """``--device cuda`` needs a CUDA build of torch that sees a GPU, and cupy
    (``cupy=False``: a run that samples nothing on the GPU, ``--mode bns``)."""
    if not torch.cuda.is_available():
        raise MissingDependency("--device cuda: this PyTorch build sees no CUDA GPU; "
                                "install a CUDA build of torch or use --device cpu")
    if cupy:
        require("cupy", what="--device cuda")


def check_sampler(opts, comm, sampler, ds):
    """A given sampler fits the dataset, the options and the communicator."""
    from sampling import Sampler
    if not isinstance(sampler, Sampler):
        fail(DTypeError, "Trainer", "sampler", "a sampling.Sampler instance (e.g. "
             "sampling.GraphSAGE(dataset.A, [10, 10]))", describe(sampler))
    name = type(sampler).__name__
    if sampler.num_nodes != ds.num_nodes:
        fail(DimensionMismatch, "Trainer", "sampler", f"a sampler on a graph of "
             f"{ds.num_nodes} vertices (those of the dataset {ds.name})",
             f"{name} on a graph of {sampler.num_nodes} vertices")
    if opts.layers is not None and opts.layers != sampler.num_layers:
        raise UsageError(f"opts.layers is {opts.layers} but the sampler {name} samples "
                         f"{sampler.num_layers} layers; leave opts.layers unset or make "
                         "them equal")
    D = sampler.D
    if D is None:
        return
    MPI = C.mpi()
    if comm is None or comm.Compare(D.comm) not in (MPI.IDENT, MPI.CONGRUENT):
        got = ("comm=None" if comm is None else
               f"another communicator (of {comm.Get_size()} rank(s))")
        fail(LayoutError, "Trainer", "comm", f"the communicator of the sampler's "
             f"distributed graph ({name} on a DistMatrix over {D.comm.Get_size()} "
             "rank(s)): pass comm=sampler.D.comm", got)


def make_partition(opts, comm, A):
    """Collective: ``opts.partition`` of the graph into ``p / c`` parts.

    'block' and 'hash' are computed by every rank.  For 'metis', rank 0
    partitions (METIS is deterministic for a seed, but one run is cheaper
    than p) and broadcasts the part of every vertex; an error there
    (pymetis missing) raises on every rank.
    """
    import spla
    from spla.partition import Partition
    size = 1 if comm is None else comm.Get_size()
    rank = 0 if comm is None else comm.Get_rank()
    parts = size // opts.replication
    if opts.partition == "block":
        return spla.partition.block(A, parts)
    if opts.partition == "hash":
        # Seeded and cheap: every rank computes the same placement itself.
        return spla.partition.hashed(A, parts, seed=opts.seed)
    P = None
    with C.collective_checks(comm):
        if rank == 0:
            P = spla.partition.metis(A, parts, seed=opts.seed)
    if size == 1:
        return P
    part = C.bcast_int(comm, None if P is None else P.part, 0, A.nrows)
    return P if P is not None else Partition(part, parts, method="metis")


def resolve_placement(opts, comm, A, features):
    """Where ``--device cuda`` samples: 'cuda', 'uva' or 'cpu' (None: a distributed graph).

    On one process ``--sample-on`` when given, else ``choose_placement`` on
    the graph's and the (dense float32) features' bytes against the free
    device memory (capped by ``--device-memory-limit`` or
    ``$SPLA_DEVICE_MEMORY_LIMIT``).  'cpu' with ``--features columns``: P3's
    first layer reads the inputs on the host.  None with ``--device cpu``
    and with a partitioned graph, sampled on the host as always (there
    ``--sample-on cuda|uva`` is a ``UsageError``).  Under MPI with a
    replicated graph, ``--sample-on cuda`` gives every rank a copy of the
    graph on its GPU, where it samples its share of each bulk; ``auto`` and
    ``cpu`` keep the host's replicated ``DistMatrix`` (None), and ``uva``
    is refused (every rank would pin its own copy of the graph).
    """
    if opts.device != "cuda":
        return None
    size = 1 if comm is None else comm.Get_size()
    if opts.features == "columns":
        return "cpu" if opts.graph != "partitioned" and size == 1 else None
    if opts.graph == "partitioned" or (size > 1 and opts.sample_on == "uva"):
        if opts.sample_on in ("cuda", "uva"):
            why = ("a partitioned graph is sampled on the host, each rank its rows; use "
                   "--sample-on cpu or auto" if opts.graph == "partitioned" else
                   "under mpiexec every rank would pin its own copy of the graph; use "
                   "--sample-on cuda, cpu or auto")
            raise UsageError(f"--sample-on {opts.sample_on} applies to one process with "
                             f"--graph replicated ({why})")
        return None
    if size > 1:
        return "cuda" if opts.sample_on == "cuda" else None
    if opts.sample_on != "auto":
        return opts.sample_on
    from sampling.loading.placement import choose_placement, free_device_bytes
    graph = sum(int(a.nbytes) for a in (A.indptr, A.indices, A.values) if a is not None)
    feature_bytes = 4 * int(np.prod(getattr(features, "shape", (0,))))
    return choose_placement(graph, feature_bytes, free_device_bytes(opts.device_memory_limit),
                            features_on_device=True, pointer_bytes=int(A.indptr.nbytes))


def make_sampler(opts, comm, A, P, placement=None):
    """(graph, sampler) that ``opts`` name: the graph distributed over ``comm`` when
    partitioned or under MPI (replicated then), else where ``placement`` says
    (``resolve_placement``: device memory, mapped host memory or the host).
    Under MPI with placement 'cuda' every rank holds the graph on its GPU: a
    local graph, whose sampler the loader runs on each rank's share of a bulk."""
    import spla
    from sampling import FastGCN, GraphSAGE, LADIES
    size = 1 if comm is None else comm.Get_size()
    partitioned = opts.graph == "partitioned"
    if partitioned or (size > 1 and placement != "cuda"):
        layout = "1.5d" if opts.replication > 1 else "1d"
        G = spla.distribute(A, comm, layout=layout, replication=opts.replication,
                            replicate_graph=not partitioned, partition=P)
    else:
        if placement is None:
            placement = "cuda" if opts.device == "cuda" else "cpu"
        G = {"cuda": lambda: A.to("cuda"), "uva": lambda: A.to("cuda", memory="host"),
             "cpu": lambda: A}[placement]()
    kind = {"sage": GraphSAGE, "ladies": LADIES, "fastgcn": FastGCN}[opts.sampler]
    return G, kind(G, opts.sizes)


def sampler_kind(sampler):
    """'ladies' for the layer-wise samplers (they train a GCN), else 'sage'."""
    from sampling import FastGCN, LADIES
    return "ladies" if isinstance(sampler, (LADIES, FastGCN)) else "sage"


def make_store(opts, comm, x, ds, G, P, splits):
    """The feature store: P3's columns, 1.5D-partitioned rows (with the hot cache), or
    replicated rows."""
    import spla
    from sampling.loading.features import FeatureStore
    if opts.features == "columns":
        from sampling.train.p3 import ColumnFeatureStore
        # Collective checks inside (more ranks than columns raises everywhere).
        return ColumnFeatureStore(x, comm=comm, labels=ds.y, splits=splits,
                                  num_classes=ds.num_classes, dtype=np.float32)
    if opts.graph != "partitioned":
        return FeatureStore(x, labels=ds.y, splits=splits, num_classes=ds.num_classes)
    # --feature-cache: by degree, the store ranks the vertices of the sampler's
    # graph (a DistMatrix: one Allgatherv of row degrees); by frequency, the
    # trainer fills it from a pre-sampled epoch.
    cache = {}
    if opts.feature_cache > 0:
        cache = dict(cache=opts.feature_cache, cache_policy=opts.cache_policy,
                     cache_graph=G if opts.cache_policy == "degree" else None)
    # Features live where the graph's rows do (a METIS part's vertices and
    # their features on the same process row).
    placed = P if isinstance(G, spla.DistMatrix) and G.partition is P else None
    return FeatureStore(x, labels=ds.y, splits=splits, mode="partitioned", comm=comm,
                        replication=opts.replication, num_classes=ds.num_classes,
                        partition=placed, **cache)


def plan_bulk(opts, comm, sampler, minibatch_size, steps):
    """Minibatches per bulk on each rank: ``--bulk`` (over all ranks), or what the budget allows.

    Each rank estimates a minibatch's bytes from its own block of the graph,
    so the ranks' estimates differ when the graph is partitioned.  The bulk
    size steers every collective of an epoch: the ranks take the smallest
    of their sizes (``agree_min``), which fits every rank's budget, and a
    budget too small on any rank stops every rank.  With prefetch, an epoch
    is cut into at least ``prefetch + 1`` bulks, so there is one to train
    while the next is sampled.
    """
    from sampling import BulkPlanner
    size = 1 if comm is None else comm.Get_size()
    if opts.bulk is not None:
        return max(1, opts.bulk // size)
    with C.collective_checks(comm):
        if not callable(getattr(sampler, "estimate_bytes", None)):
            fail(InvalidValue, "Trainer", "opts.bulk", "set (minibatches per bulk): "
                 f"the sampler {type(sampler).__name__} has no estimate_bytes(batch_size), "
                 "so opts.memory_budget cannot size the bulks", None)
        need = sampler.estimate_bytes(minibatch_size)
        if need > opts.memory_budget:
            raise UsageError(f"--memory-budget {opts.memory_budget} bytes is too small for "
                             f"one minibatch of {minibatch_size} seeds (about {need} bytes "
                             "on this rank); raise it or lower --batch-size")
        per_rank = BulkPlanner(sampler, opts.memory_budget).bulk_size(minibatch_size)
    # More minibatches per bulk than an epoch has would only inflate the
    # figure the run reports.
    per_rank = min(per_rank, steps)
    if opts.prefetch:
        per_rank = min(per_rank, max(1, -(-steps // (opts.prefetch + 1))))
    return C.agree_min(comm, per_rank)


__all__ = ["MODEL_PROTOCOL", "load_dataset", "features_of", "dense_features", "check_model",
           "check_logits", "check_cuda", "check_sampler", "make_partition", "make_sampler",
           "resolve_placement", "sampler_kind",
           "make_store", "plan_bulk", "what"]
