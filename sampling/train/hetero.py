"""The main job on a heterogeneous graph: R-GCN on minibatches of the labelled type.

``Trainer`` builds this path when the dataset is a ``sampling.HeteroGraph``
(``--dataset mag:SCALE``, ``ogbn-mag``): the sampler is a
``HeteroGraphSAGE`` with ``--fanouts`` for every relation, the seeds are
the labelled vertex type's (``NodeLoader`` with ``(type, ids)`` seeds: the
same epoch loop, bulks, prefetch and ranks as a homogeneous run), and the
model is ``sampling.models.RGCN``.  Under MPI every relation is distributed
(``HeteroGraph.distribute``: replicated, or 1.5D-partitioned by destination
rows in contiguous blocks, or by ``HeteroGraph.partition``'s parts of each
destination type with ``--partition metis|hash``),
the loaders fetch features from per-type stores (``HeteroFeatureStore``:
a rank holds its row block of every type, a bulk's rows of every type
come in one exchange; the epoch table's features column counts its bytes)
and the gradients are averaged as for any run.  With ``--device cuda`` the
sampling and the feature gathers stay on the host and R-GCN trains on the
GPU (the loader copies each minibatch's features and labels there).
"""

from dataclasses import dataclass, field

import numpy as np

from spla.checks import fail
from spla.exceptions import InvalidValue

from sampling.train.options import UsageError


@dataclass
class TypedSplits:
    """The labelled type's splits, in the shape the trainer reads a feature store's."""

    splits: dict = field(default_factory=dict)
    cache_fraction: float = 0.0
    replicated: bool = True
    labels: object = None


def target_type(G):
    """The vertex type the job classifies: the one type with labels.

    Examples
    --------
    >>> from sampling.datasets.mag import mag_dataset
    >>> target_type(mag_dataset(4))
    'paper'
    """
    labelled = [t for t in G.y if t in G.splits["train"]]
    if len(labelled) != 1:
        fail(InvalidValue, "Trainer", "dataset", "a heterogeneous graph with one labelled "
             "vertex type that has training vertices", f"labelled types {labelled}")
    return labelled[0]


def check_hetero_options(opts, sampler, model):
    """Options a heterogeneous run cannot take, refused with the one that is wrong."""
    wrong = [(opts.sampler != "sage", f"--sampler {opts.sampler} (use sage: layer-wise "
                                      "samplers have no heterogeneous form)"),
             (opts.features != "rows", "--features columns"),
             (opts.feature_cache > 0, "--feature-cache"),
             (opts.sample_on in ("cuda", "uva"), f"--sample-on {opts.sample_on} (the job "
                                                  "samples a heterogeneous graph on the CPU; "
                                                  "--device cuda trains R-GCN on the GPU)"),
             (sampler is not None, "a sampler instance (the trainer builds HeteroGraphSAGE)"),
             (model is not None, "a model instance (the trainer builds RGCN)")]
    for bad, what in wrong:
        if bad:
            raise UsageError(f"{what} is not supported with a heterogeneous dataset; drop it")


def is_hetero(ds):
    """Whether ``ds`` is a ``sampling.HeteroGraph`` (the R-GCN path)."""
    from sampling.datasets.hetero import HeteroGraph
    return isinstance(ds, HeteroGraph)


def homogeneous_only(opts):
    """Refuse the options that only a heterogeneous dataset takes."""
    if opts.model is not None or opts.num_bases is not None:
        what = f"--model {opts.model}" if opts.model is not None else "--num-bases"
        raise UsageError(f"{what} applies to a heterogeneous dataset (mag:SCALE, ogbn-mag); "
                         f"{opts.dataset!r} is homogeneous: drop it")


def build_hetero(trainer, ds, sampler, model):
    """Set up ``trainer`` (its graph, sampler, splits, loader and model) for ``ds``."""
    from sampling import HeteroGraphSAGE
    from sampling.models import RGCN
    t, opts = trainer, trainer.opts
    check_hetero_options(opts, sampler, model)
    target = target_type(ds)
    G = ds
    if opts.graph == "partitioned" or t.size > 1:
        layout = "1.5d" if opts.replication > 1 else "1d"
        # --partition metis|hash: every relation's rows placed by its destination
        # type's parts (HeteroGraph.partition balances every type and the
        # training vertices); ids stay the graph's, so the minibatches do not change.
        parts = None
        if opts.graph == "partitioned" and opts.partition != "block":
            parts = ds.partition(t.size // opts.replication, seed=opts.seed,
                                 method=opts.partition)
        G = ds.distribute(t.comm, layout=layout, replication=opts.replication,
                          replicate_graph=opts.graph != "partitioned", partition=parts)
    t.hetero_target, t.graph, t.partition, t._split, t.columns = target, G, None, False, False
    t.sampler = HeteroGraphSAGE(G, opts.fanouts)
    t.depth = t.sampler.num_layers
    t.num_classes = ds.num_classes
    t.store = TypedSplits({part: np.asarray(ds.split(part, target), np.int64)
                           for part in ("train", "val", "test")})
    t._x_all = None
    t.minibatch_size = -(-opts.batch_size // t.size)
    t.bulk = max(1, (opts.bulk or 16 * t.size) // t.size)
    t.bulk_size = t.bulk * t.size
    t._eval_loaders = {}
    t.train_loader = t._loader(t.store.splits["train"], shuffle=True, prefetch=opts.prefetch)
    with t._fork_rng():
        t._seed(opts.seed)  # identical initialisation on every rank
        net = RGCN(ds, opts.hidden, ds.num_classes, num_layers=t.depth,
                   num_bases=opts.num_bases, dropout=opts.dropout)
        t._save_rng()
    return net


__all__ = ["TypedSplits", "target_type", "check_hetero_options", "build_hetero", "is_hetero",
           "homogeneous_only"]
