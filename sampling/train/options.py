"""The settings of a training run and the checks across options.

``TrainOptions`` is what the command line builds (``sampling.train.cli``)
and what ``Trainer`` takes; ``check_options`` refuses combinations that
cannot work together with a ``UsageError`` (printed by the main job as one
``error:`` line, exit status 2).
"""

import numbers
from dataclasses import dataclass
from typing import Optional, Tuple

SAMPLERS = ("sage", "ladies", "fastgcn")
GRAPH_MODES = ("replicated", "partitioned")
DEVICES = ("cpu", "cuda")
# Where --device cuda samples (sampling.loading.placement): auto decides
# from the sizes and the free device memory.
SAMPLE_ON = ("auto", "cpu", "cuda", "uva")
CACHE_POLICIES = ("degree", "frequency")  # those of sampling.loading.features.FeatureStore
PARTITIONS = ("block", "metis", "hash")  # spla.partition.block / metis / hashed
SPLITS = ("global", "part")  # how the training vertices are spread over the ranks
PHASES = ("sample", "fetch", "fwd/bwd", "allreduce", "eval")
MODES = ("sampled", "bns")  # minibatch training on samples / BNS-GCN full-graph training
BNS_MODELS = ("gcn", "sage")  # the models of --mode bns (sampling.train.bns.BNSModel)
HETERO_MODELS = ("rgcn",)  # the models of a heterogeneous dataset (sampling.models.RGCN)
MODELS = BNS_MODELS + HETERO_MODELS
# Epochs when none are given: full-graph training (one step per epoch) needs
# many more than minibatch training (BNS-GCN on Cora: 0.64 test accuracy
# after 20 epochs, 0.82 after 200).
DEFAULT_EPOCHS = {"sampled": 20, "bns": 200}
# rows: whole feature rows fetched for each minibatch (sampling.loading.features.FeatureStore);
# columns: P3's split by columns with a push-pull first layer (sampling.train.p3)
FEATURE_LAYOUTS = ("rows", "columns")


@dataclass
class TrainOptions:
    """Settings of a training run (the command line's options).

    The defaults reach about 0.80 test accuracy on Cora with GraphSAGE.
    ``fanouts`` (``sampler='sage'``) may hold -1 for "all neighbours";
    ``root`` is where ``ogbn-*`` datasets are downloaded (default: the
    loader's, ``$SPLA_DATA`` or ``~/.cache/spla-sampling``).
    ``partition`` ('block', 'metis' or 'hash', ``graph='partitioned'``
    only) places the graph's and the features' rows by parts
    (``spla.partition``);
    ``split`` says which vertices each rank trains and evaluates: 'global'
    (minibatches cut from one shuffle of all of them: the same minibatches
    for every rank count, layout and partition) or 'part' (DistDGL's split,
    ``sampling.samplers.batches.seeds_by_part``: each rank's from its own part
    first, so a METIS partition keeps its neighbourhoods local); default
    (None) 'part' with ``graph='partitioned'``, else 'global'.
    ``feature_cache`` (a fraction of the vertices, ``graph='partitioned'``
    only) and ``cache_policy`` ('degree' or 'frequency') set the feature
    store's hot-feature cache (``sampling.loading.features.FeatureStore``).
    ``prefetch`` bulks are sampled and fetched ahead, in a background
    thread, while the current one trains (0: synchronously).
    ``features='columns'`` trains as P3 does (``sampling.train.p3``): every rank
    holds all vertices' features for ``f / p`` of the columns, the first
    layer runs push-pull (model-parallel) and the others data-parallel;
    the minibatches and, for the same seed, the losses and parameters are
    those of ``features='rows'``.  CPU only; no ``feature_cache``.
    ``epochs`` defaults to 20 (200 with ``mode='bns'``, whose epoch is
    one full-graph step).
    ``device_memory_limit`` (bytes, ``device='cuda'``) is the device memory
    the run may use: ``sample_on='auto'`` sees it as free, and the
    ``Trainer`` holds cupy's memory pool and torch's caching allocator to it
    for the rest of the process (``sampling.loading.placement.cap_device_memory``).
    ``mode='bns'`` trains the whole graph partition-parallel instead
    (BNS-GCN, ``sampling.train.bns``): ``model`` ('gcn', the default, or 'sage'),
    ``boundary_keep`` (q in [0, 1]), ``partition``, ``layers`` (default 2),
    ``hidden``, ``dropout``, ``lr``, ``weight_decay``, ``epochs``,
    ``seed``, ``threads`` and the dataset apply; the sampler's options do
    not.  A ``Trainer``
    given a sampler instance ignores ``sampler``, ``fanouts`` and
    ``layer_sizes``; given a model, it ignores ``hidden`` and ``dropout``.

    Examples
    --------
    >>> opts = TrainOptions(sampler="ladies", layer_sizes=(128, 128), epochs=5)
    >>> opts.sizes, opts.depth
    ((128, 128), 2)
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
    partition: str = "block"
    split: Optional[str] = None
    dataset: str = "cora"
    root: Optional[str] = None
    device: str = "cpu"
    sample_on: str = "auto"
    device_memory_limit: Optional[int] = None
    epochs: Optional[int] = None  # None: DEFAULT_EPOCHS[mode]
    lr: float = 0.01
    weight_decay: float = 5e-4
    hidden: int = 64
    dropout: float = 0.5
    seed: int = 0
    threads: Optional[int] = None
    plot: Optional[str] = None
    progress: Optional[bool] = None  # None: only when stderr is a terminal
    feature_cache: float = 0.0
    cache_policy: str = "degree"
    prefetch: int = 0
    features: str = "rows"
    mode: str = "sampled"
    model: Optional[str] = None
    num_bases: Optional[int] = None
    boundary_keep: float = 1.0

    def __post_init__(self):
        if self.epochs is None:
            self.epochs = DEFAULT_EPOCHS.get(self.mode, DEFAULT_EPOCHS["sampled"])

    @property
    def sizes(self):
        """The sampler's per-layer sizes (fanouts or layer sizes), output layer first."""
        return tuple(self.fanouts if self.sampler == "sage" else self.layer_sizes)

    @property
    def depth(self):
        return len(self.sizes)


class UsageError(Exception):
    """A bad option value; main prints it as one ``error:`` line and exits 2.

    Raised for the same options on every rank; inside the trainer it is
    raised within ``spla.comm.collective_checks``, so every rank stops
    together.
    """


def check_options(opts, *, sizes=True):
    """Raise ``UsageError`` for settings that cannot work together.

    ``sizes=False`` skips the check of ``layers`` against the sampler's
    sizes (a ``Trainer`` given a sampler instance checks it against the
    instance instead).

    Examples
    --------
    >>> check_options(TrainOptions(root="/data"))
    Traceback (most recent call last):
    ...
    sampling.train.options.UsageError: --root applies to ogbn-* datasets (it is where they are
    downloaded); 'cora' is not one: drop --root
    """
    if opts.mode not in MODES:
        raise UsageError(f"unknown mode {opts.mode!r}; use sampled or bns")
    if opts.mode == "bns":
        _check_bns(opts)
        if opts.partition not in PARTITIONS:
            raise UsageError(f"unknown partition {opts.partition!r}; use block, metis or hash")
    else:
        _check_sampled(opts, sizes)
        _check_layout(opts)
        _check_features(opts)
    if opts.root is not None and not is_ogb_name(opts.dataset):
        raise UsageError(f"--root applies to ogbn-* datasets (it is where they are "
                         f"downloaded); {opts.dataset!r} is not one: drop --root")
    if opts.mode != "bns" and opts.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError("--plot needs matplotlib; install it with `pip install "
                             "matplotlib` or drop --plot")


def _check_sampled(opts, sizes):
    """The minibatch mode's own choices: sampler, device, depth."""
    if opts.model in BNS_MODELS or opts.boundary_keep != 1.0:
        what = f"--model {opts.model}" if opts.model in BNS_MODELS else "--boundary-keep"
        raise UsageError(f"{what} applies to --mode bns (full-graph BNS-GCN training); "
                         "drop it or add --mode bns")
    if opts.model not in (None,) + HETERO_MODELS:
        raise UsageError(f"unknown model {opts.model!r}; use rgcn (a heterogeneous dataset) "
                         "or, with --mode bns, gcn or sage")
    if opts.num_bases is not None and (isinstance(opts.num_bases, bool) or not isinstance(
            opts.num_bases, numbers.Integral) or opts.num_bases < 1):
        raise UsageError(f"--num-bases must be a positive integer; got {opts.num_bases!r}")
    if opts.sampler not in SAMPLERS:
        raise UsageError(f"unknown sampler {opts.sampler!r}; use one of {', '.join(SAMPLERS)}")
    if opts.graph not in GRAPH_MODES:
        raise UsageError(f"unknown graph mode {opts.graph!r}; use replicated or partitioned")
    if opts.device not in DEVICES:
        raise UsageError(f"unknown device {opts.device!r}; use cpu or cuda")
    _check_placement(opts)
    what = "--fanouts" if opts.sampler == "sage" else "--layer-sizes"
    if sizes and opts.layers is not None and opts.layers != opts.depth:
        raise UsageError(f"{what} has {opts.depth} entries but the model has --layers "
                         f"{opts.layers}; give one entry per layer")


def _check_placement(opts):
    """--sample-on and --device-memory-limit: GPU placements need --device cuda."""
    if opts.sample_on not in SAMPLE_ON:
        raise UsageError(f"unknown --sample-on {opts.sample_on!r}; use auto, cpu, cuda or uva")
    if opts.device == "cpu" and opts.sample_on not in ("auto", "cpu"):
        raise UsageError(f"--sample-on {opts.sample_on} needs --device cuda (with --device "
                         "cpu everything samples on the CPU); add --device cuda or drop "
                         "--sample-on")
    lim = opts.device_memory_limit
    if lim is not None and (isinstance(lim, bool) or not isinstance(lim, numbers.Integral)
                            or lim < 1):
        raise UsageError(f"--device-memory-limit must be a number of bytes >= 1; got {lim!r}")
    if lim is not None and opts.device == "cpu":
        raise UsageError("--device-memory-limit applies to --device cuda; drop it or add "
                         "--device cuda")


def _check_layout(opts):
    """Replication, partition and split: only with a partitioned graph."""
    if opts.replication != 1 and opts.graph == "replicated":
        raise UsageError("--replication applies to --graph partitioned; drop it or add "
                         "--graph partitioned")
    if opts.partition not in PARTITIONS:
        raise UsageError(f"unknown partition {opts.partition!r}; use block, metis or hash")
    if opts.split is not None and opts.split not in SPLITS:
        raise UsageError(f"unknown split {opts.split!r}; use global or part")
    if (opts.graph != "partitioned"
            and (opts.partition != "block" or opts.split not in (None, "global"))):
        what = (f"--partition {opts.partition}" if opts.partition != "block"
                else f"--split {opts.split}")
        raise UsageError(f"{what} applies to --graph partitioned (a replicated graph has no "
                         "parts); drop it or add --graph partitioned")


def _check_features(opts):
    """Feature layout, cache and prefetch."""
    if opts.features not in FEATURE_LAYOUTS:
        raise UsageError(f"unknown feature layout {opts.features!r}; use rows or columns")
    if opts.features == "columns":
        if opts.sample_on in ("cuda", "uva"):
            raise UsageError(f"--sample-on {opts.sample_on} applies to --features rows (with "
                             "--features columns the first layer reads the minibatches' "
                             "inputs on the host, where the CPU samples them); use "
                             "--sample-on cpu or auto")
        if opts.feature_cache:
            raise UsageError("--feature-cache applies to --features rows (with --features "
                             "columns every rank holds every vertex's columns: nothing is "
                             "fetched); drop one of them")
    if opts.cache_policy not in CACHE_POLICIES:
        raise UsageError(f"unknown cache policy {opts.cache_policy!r}; use degree or "
                         "frequency")
    fc = opts.feature_cache
    if isinstance(fc, bool) or not isinstance(fc, numbers.Real) or not 0 <= fc <= 1:
        raise UsageError(f"--feature-cache must be a fraction of the vertices in [0, 1]; "
                         f"got {fc!r}")
    if fc > 0 and opts.graph != "partitioned":
        raise UsageError("--feature-cache applies to --graph partitioned (replicated "
                         "features are all local already); drop it or add --graph "
                         "partitioned")
    pf = opts.prefetch
    if isinstance(pf, bool) or not isinstance(pf, numbers.Integral) or pf < 0:
        raise UsageError(f"--prefetch must be a number of bulks >= 0 (0: no background "
                         f"thread); got {pf!r}")


def _check_bns(opts):
    """The checks of ``mode='bns'``: its own options, and none of the sampler's."""
    if opts.model not in (None,) + BNS_MODELS:
        raise UsageError(f"unknown model {opts.model!r} for --mode bns; use gcn or sage")
    q = opts.boundary_keep
    if (isinstance(q, bool) or not isinstance(q, numbers.Real) or not 0 <= q <= 1):
        raise UsageError(f"--boundary-keep must be a probability in [0, 1] (the share of "
                         f"boundary vertices kept per epoch); got {q!r}")
    d = TrainOptions()
    for name in ("sampler", "fanouts", "layer_sizes", "batch_size", "bulk", "memory_budget",
                 "graph", "replication", "split", "feature_cache", "cache_policy",
                 "prefetch", "features", "plot", "num_bases", "sample_on",
                 "device_memory_limit"):
        if getattr(opts, name) != getattr(d, name):
            raise UsageError(f"--{name.replace('_', '-')} applies to --mode sampled; "
                             "--mode bns trains the whole graph (no sampler, minibatches "
                             "or feature store): drop it")


def is_ogb_name(name):
    """True for an OGB node-property dataset name (``ogbn-...``), the ones ``--root`` applies to.

    Examples
    --------
    >>> is_ogb_name("ogbn-arxiv"), is_ogb_name("cora")
    (True, False)
    """
    return isinstance(name, str) and name.lower().startswith("ogbn-")
