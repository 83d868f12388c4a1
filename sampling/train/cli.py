"""The command line of the main job: value parsers, the parser, options from arguments.

Every option's parser default is None, so ``options_from_args`` can tell an
option given on the command line from one left out: it refuses options
that do not apply to the run (``--fanouts`` with a layer-wise sampler,
``--layer-sizes`` with GraphSAGE, ``--replication`` without ``--graph
partitioned``, ``--root`` without an ``ogbn-*`` dataset, ``--hidden`` with
a one-layer model, ``--feature-cache`` without ``--graph partitioned``,
``--cache-policy`` without ``--feature-cache``; ``--boundary-keep`` and
``--model`` without ``--mode bns``, and the sampler's options with it), then
lets ``TrainOptions`` fill in the defaults.  The help text states those
defaults itself.
"""

import argparse
import math
import os
import re
import sys
from dataclasses import fields

from sampling.train.launch import launcher_rank
from sampling.train.options import (BNS_MODELS, CACHE_POLICIES, MODELS, DEVICES, FEATURE_LAYOUTS,
                                    GRAPH_MODES, MODES, PARTITIONS, SAMPLERS, SPLITS, TrainOptions,
                                    SAMPLE_ON, UsageError, check_options, is_ogb_name)


def _number(parse, ok, expected):
    """An argparse type: ``parse(text)`` that must satisfy ``ok``, else one clear message."""
    def check(text):
        try:
            v = parse(text)
        except ValueError:
            v = None
        if v is None or not ok(v):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return v
    return check


_positive_int = _number(int, lambda v: v >= 1, "a positive integer")
_probability = _number(float, lambda v: 0.0 <= v < 1.0, "a number in [0, 1)")
_fraction = _number(float, lambda v: 0.0 <= v <= 1.0, "a fraction in [0, 1]")
_positive_float = _number(float, lambda v: v > 0 and math.isfinite(v), "a positive number")
_nonneg_float = _number(float, lambda v: v >= 0 and math.isfinite(v), "a number >= 0")
_nonneg_int = _number(int, lambda v: v >= 0, "an integer >= 0")


def _ints(text, expected):
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    try:
        vals = tuple(int(p) for p in parts)
    except ValueError:
        vals = ()
    if not vals:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return vals


def _fanout_list(text):
    """GraphSAGE fanouts: positive integers, or -1 for all neighbours."""
    expected = "comma-separated positive integers or -1 (all neighbours)"
    vals = _ints(text, expected)
    if any(v < 1 and v != -1 for v in vals):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return vals


def _size_list(text):
    """Layer sizes of LADIES / FastGCN: positive integers (-1 has no meaning there)."""
    vals = _ints(text, "comma-separated positive integers")
    if -1 in vals:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated positive integers, got {text!r}: -1 (all "
            "neighbours) applies to --fanouts only; a layer-wise sampler draws a fixed "
            "number of vertices per layer")
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


def _show_bytes(n):
    """1073741824 -> '1G' (the largest unit that divides n)."""
    for unit in "TGMK":
        scale = _UNITS[unit.lower()]
        if n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


_DATASETS = ("cora, citeseer, rmat:SCALE (SCALE from 1 to 30), mag:SCALE (heterogeneous), "
             "ogbn-NAME or a path to an .npz file")


def _dataset_name(text):
    key = text.strip().lower()
    if key in ("cora", "citeseer"):
        return key
    m = re.fullmatch(r"(rmat|mag):(\d+)", key)
    if m and 1 <= int(m.group(2)) <= 30:
        return key
    if re.fullmatch(r"ogbn-[a-z0-9][a-z0-9_-]*", key):
        return key
    path = os.path.expanduser(text.strip())
    if path.lower().endswith(".npz"):
        if not os.path.isfile(path):
            raise argparse.ArgumentTypeError(f"no such file: {text!r} (a dataset given by "
                                             "path must be an existing .npz file)")
        return path
    if os.path.exists(path):
        raise argparse.ArgumentTypeError(f"expected an .npz file, got {text!r}")
    raise argparse.ArgumentTypeError(f"unknown dataset {text!r}; use {_DATASETS}")


def _directory(text):
    path = os.path.expanduser(text)
    if os.path.exists(path) and not os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"expected a directory, got {text!r} (a file)")
    return path


# A value that starts with '-' and a digit but is not one number ("-1,5"):
# argparse would take it for an option.
_NEGATIVE_LIST = re.compile(r"-\d[\d,\s-]*")


class _Parser(argparse.ArgumentParser):
    """Errors as one line, ``error: ...``, exit status 2; ``--fanouts -1,5`` is a value."""

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        out = []
        for tok in args:
            if (out and out[-1].startswith("--") and "=" not in out[-1]
                    and _NEGATIVE_LIST.fullmatch(tok)):
                out[-1] = f"{out[-1]}={tok}"
            else:
                out.append(tok)
        return super().parse_known_args(out, namespace)

    def error(self, message):
        # Under mpiexec every rank parses the same arguments: rank 0 speaks.
        if launcher_rank() == 0:
            sys.stderr.write(f"error: {message} (see {self.prog} --help)\n")
        sys.exit(2)


def _formatter(prog):
    return argparse.HelpFormatter(prog, max_help_position=30)


def build_parser():
    """The ``argparse`` parser of the main job.

    Every default is None (left out); ``options_from_args`` fills them in
    from ``TrainOptions``, and the help text shows them.

    Examples
    --------
    >>> args = build_parser().parse_args(["--fanouts", "-1,5"])
    >>> args.fanouts, args.sampler
    ((-1, 5), None)
    """
    d = TrainOptions()
    p = _Parser(
        prog="python -m sampling.train",
        description="Bulk-sampled GNN training (GraphSAGE, LADIES, FastGCN) on spla; "
                    "data parallel under mpiexec.",
        formatter_class=_formatter, argument_default=None)
    for add, title in ((_mode_arguments, "training mode (and BNS-GCN's options)"),
                       (_data_arguments, "dataset"),
                       (_sampling_arguments, "sampler, minibatches and bulks"),
                       (_distribution_arguments, "ranks, partition, feature cache, prefetch"),
                       (_model_arguments, "model and optimizer"),
                       (_run_arguments, "seeds, threads, output")):
        add(p.add_argument_group(title), d)
    return p


def _default(value):
    return f" (default: {value})"


def _mode_arguments(p, d):
    """Options of the training mode (and BNS-GCN's options)."""
    p.add_argument("--mode", choices=MODES,
                   help="sampled: minibatch training on sampled neighbourhoods (the "
                        "options below); bns: full-graph partition-parallel training with "
                        "random boundary-vertex sampling (BNS-GCN), one part of the graph per "
                        "rank" + _default(d.mode))
    p.add_argument("--boundary-keep", type=_fraction, metavar="Q",
                   help="--mode bns only: probability of keeping each boundary vertex in an "
                        "epoch (1: exact full-graph training, 0: no boundary communication)"
                        + _default(f"{d.boundary_keep:g}"))
    p.add_argument("--model", choices=MODELS,
                   help="--mode bns: the model trained on the whole graph, gcn (the "
                        "default) or sage; a heterogeneous dataset (mag:SCALE, ogbn-mag): "
                        "rgcn (R-GCN, the default there)")


def _data_arguments(p, d):
    """Options of the dataset."""
    p.add_argument("--dataset", type=_dataset_name, metavar="NAME",
                   help="cora or citeseer (embedded), rmat:SCALE (seeded synthetic graph "
                        "with planted communities, 2**SCALE vertices), mag:SCALE (seeded "
                        "heterogeneous graph with OGB MAG's schema; trains R-GCN), "
                        "ogbn-NAME (an OGB node-property dataset, downloaded to --root; "
                        "ogbn-mag is heterogeneous) or a path to an .npz file in the "
                        "embedded graphs' format" + _default(d.dataset))
    p.add_argument("--root", type=_directory, metavar="DIR",
                   help="ogbn-* datasets only: where they are downloaded and read (default: "
                        "$SPLA_DATA, else ~/.cache/spla-sampling)")


def _sampling_arguments(p, d):
    """Options of the sampler, minibatches and bulks."""
    p.add_argument("--sampler", choices=SAMPLERS,
                   help="sage trains GraphSAGE on node-wise samples; ladies and fastgcn "
                        "train a GCN on layer-wise samples" + _default(d.sampler))
    p.add_argument("--fanouts", type=_fanout_list, metavar="F1,F2,...",
                   help="sage only: neighbours per vertex and layer, output layer first, -1 "
                        "for all neighbours; the model has one layer per fanout"
                        + _default(",".join(map(str, d.fanouts))))
    p.add_argument("--layer-sizes", type=_size_list, metavar="S1,S2,...",
                   help="ladies/fastgcn only: vertices sampled per layer and minibatch, "
                        "output layer first; one model layer per size"
                        + _default(",".join(map(str, d.layer_sizes))))
    p.add_argument("--layers", type=_positive_int, metavar="L",
                   help="model depth, checked against the number of fanouts / layer sizes "
                        "(it must be equal); --mode bns: the depth of its model (default: "
                        "2)")
    p.add_argument("--batch-size", type=_positive_int, metavar="B",
                   help="seed vertices per optimizer step, over all ranks: under mpiexec "
                        "-n P each rank trains minibatches of ceil(B / P) seeds"
                        + _default(d.batch_size))
    bulk = p.add_mutually_exclusive_group()
    bulk.add_argument("--bulk", type=_positive_int, metavar="K",
                      help="minibatches sampled per bulk pass, over all ranks (default: as "
                           "many as --memory-budget allows)")
    bulk.add_argument("--memory-budget", type=_bytes, metavar="BYTES",
                      help="choose the bulk size so that sampling a bulk needs at most this "
                           "much memory per rank, e.g. 512M, 2G"
                           + _default(_show_bytes(d.memory_budget)))


def _distribution_arguments(p, d):
    """Options of the graph and features over the ranks, the cache, prefetch."""
    p.add_argument("--graph", choices=GRAPH_MODES,
                   help="replicated: every rank holds the graph and the features; "
                        "partitioned: 1.5D block rows (graph and features)" + _default(d.graph))
    p.add_argument("--replication", type=_positive_int, metavar="C",
                   help="--graph partitioned only: ranks per process row of the (P/C) x C "
                        "grid; C must divide the number of ranks" + _default(d.replication))
    p.add_argument("--partition", choices=PARTITIONS,
                   help="--graph partitioned or --mode bns only: how the vertices are "
                        "placed on the process rows: block (contiguous ids), metis (METIS "
                        "k-way, fewer edges between ranks; needs pymetis) or hash (a "
                        "seeded random deal, P3's); with --split global the results do not "
                        "depend on it" + _default(d.partition))
    p.add_argument("--split", choices=SPLITS,
                   help="--graph partitioned only: which vertices each rank trains and "
                        "evaluates: part (each rank's own part first, as DistDGL; local "
                        "neighbourhoods and features with --partition metis; the default) "
                        "or global (minibatches of one shuffle of all of them, the same for "
                        "any rank count and partition)")
    p.add_argument("--feature-cache", type=_fraction, metavar="FRACTION",
                   help="--graph partitioned only: every rank also keeps a copy of the "
                        "feature rows of this fraction of the vertices, the hottest ones, "
                        "and fetches only the others (0.1 = 10 %%)"
                        + _default(f"{d.feature_cache:g}, no cache"))
    p.add_argument("--cache-policy", choices=CACHE_POLICIES,
                   help="--feature-cache only: which vertices are hottest: degree (highest "
                        "degree first) or frequency (most often fetched in one pre-sampled "
                        "epoch)" + _default(d.cache_policy))
    p.add_argument("--prefetch", type=_nonneg_int, metavar="K",
                   help="sample and fetch up to K bulks ahead in a background thread while "
                        "the current bulk trains (0: one after the other; the same "
                        "minibatches and model either way)" + _default(d.prefetch))
    p.add_argument("--features", choices=FEATURE_LAYOUTS,
                   help="rows: each minibatch's feature rows are fetched to the rank that "
                        "trains it; columns: P3, every rank holds all vertices' features for "
                        "1/P of the columns and the first layer runs push-pull (partial "
                        "activations reduce-scattered), which moves hidden-width rows "
                        "instead of feature rows; the same losses either way"
                        + _default(d.features))


def _model_arguments(p, d):
    """Options of the model and its optimizer."""
    p.add_argument("--device", choices=DEVICES,
                   help="where the model runs (cuda also samples on the GPU when running "
                        "on one process; with --mode bns each rank's model and aggregation "
                        "run on its GPU, the exchanges staged through host memory)"
                        + _default(d.device))
    p.add_argument("--sample-on", choices=SAMPLE_ON,
                   help="--device cuda, one process: where the graph is sampled: cuda "
                        "(graph in device memory), uva (graph in pinned host memory the GPU "
                        "reads), cpu (CPU sampling, inputs copied through pinned buffers "
                        "while the previous bulk trains: give --prefetch K); auto picks from "
                        "the graph's size and the free device memory.  Under mpiexec with "
                        "--graph replicated: cuda puts a copy of the graph on each rank's "
                        "GPU, auto and cpu sample on the host" + _default(d.sample_on))
    p.add_argument("--device-memory-limit", type=_positive_int, metavar="BYTES",
                   help="--device cuda: at most BYTES of device memory: --sample-on auto "
                        "sees BYTES as free, and cupy's pool and torch's allocator may each "
                        "hold at most BYTES for the rest of the process (tests a graph larger "
                        "than the GPU; also $SPLA_DEVICE_MEMORY_LIMIT)"
                        + _default("none"))
    p.add_argument("--epochs", type=_positive_int, metavar="N",
                   help="training epochs" + _default("20; 200 with --mode bns"))
    p.add_argument("--lr", type=_positive_float, metavar="LR",
                   help="Adam learning rate" + _default(d.lr))
    p.add_argument("--weight-decay", type=_nonneg_float, metavar="WD",
                   help="Adam weight decay (L2 penalty)" + _default(d.weight_decay))
    p.add_argument("--num-bases", type=_positive_int, metavar="B",
                   help="--model rgcn only: shared weight bases of R-GCN's relations "
                        "(default: one per relation, no sharing)")
    p.add_argument("--hidden", type=_positive_int, metavar="H",
                   help="hidden width of the built-in models (two layers or more)"
                        + _default(d.hidden))
    p.add_argument("--dropout", type=_probability, metavar="P",
                   help="dropout probability on the input of every layer while training"
                        + _default(d.dropout))


def _run_arguments(p, d):
    """Options of seeds, threads and what is shown."""
    p.add_argument("--seed", type=_nonneg_int, metavar="S",
                   help="seeds the model initialisation, the shuffles and the sampling"
                        + _default(d.seed))
    p.add_argument("--threads", type=_positive_int, metavar="N",
                   help="numba and torch threads per process while training (default: "
                        "numba gets NUMBA_NUM_THREADS, else the cores divided by the ranks "
                        "on this node; torch gets the same count)")
    p.add_argument("--plot", metavar="OUT.png",
                   help="write a stacked-bar plot of the phase times per epoch "
                        "(needs matplotlib)")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--progress", dest="progress", action="store_true", default=None,
                       help="show a per-minibatch progress bar on stderr, rank 0 only "
                            "(needs tqdm; default: only when stderr is a terminal)")
    shown.add_argument("--no-progress", dest="progress", action="store_false", default=None,
                       help="never show the progress bar")


def _check_given(given):
    """Refuse options given on the command line that do not apply to the run."""
    d = TrainOptions()
    bns = given.get("mode", d.mode) == "bns"
    if not bns and ("boundary_keep" in given or given.get("model") in BNS_MODELS):
        what = "--boundary-keep" if "boundary_keep" in given else f"--model {given['model']}"
        raise UsageError(f"{what} applies to --mode bns (full-graph BNS-GCN training); drop "
                         "it or add --mode bns")
    if bns:
        for name in ("sampler", "fanouts", "layer_sizes", "batch_size", "bulk",
                     "memory_budget", "graph", "replication", "split", "feature_cache",
                     "cache_policy", "prefetch", "features", "plot", "num_bases",
                     "sample_on", "device_memory_limit"):
            if name in given:
                raise UsageError(f"--{name.replace('_', '-')} applies to --mode sampled; "
                                 "--mode bns trains the whole graph (no sampler, "
                                 "minibatches or feature store): drop it")
        if "hidden" in given and given.get("layers", 2) == 1:
            raise UsageError("--hidden applies to models of two layers or more; a one-layer "
                             "model maps the features to the classes directly: drop --hidden")
    sampler = given.get("sampler", d.sampler)
    if "fanouts" in given and sampler != "sage":
        raise UsageError(f"--fanouts applies to --sampler sage; --sampler {sampler} draws "
                         "a number of vertices per layer: use --layer-sizes")
    if "layer_sizes" in given and sampler == "sage":
        raise UsageError("--layer-sizes applies to --sampler ladies and fastgcn; --sampler "
                         "sage draws neighbours per vertex: use --fanouts")
    if "replication" in given and given.get("graph", d.graph) != "partitioned":
        raise UsageError("--replication applies to --graph partitioned; drop it or add "
                         "--graph partitioned")
    for name in ("partition", "split"):
        if bns:
            break
        if name in given and given.get("graph", d.graph) != "partitioned":
            raise UsageError(f"--{name} applies to --graph partitioned (a replicated graph "
                             "has no parts); drop it or add --graph partitioned")
    if "feature_cache" in given and given.get("graph", d.graph) != "partitioned":
        raise UsageError("--feature-cache applies to --graph partitioned (replicated "
                         "features are all local already); drop it or add --graph "
                         "partitioned")
    if "cache_policy" in given and "feature_cache" not in given:
        raise UsageError("--cache-policy applies to --feature-cache; drop it or add "
                         "--feature-cache FRACTION")
    if "root" in given and not is_ogb_name(given.get("dataset", d.dataset)):
        raise UsageError(f"--root applies to ogbn-* datasets (it is where they are "
                         f"downloaded); {given.get('dataset', d.dataset)!r} is not one: drop "
                         "--root")
    if "hidden" in given and not bns:
        sizes = given.get("fanouts" if sampler == "sage" else "layer_sizes",
                          d.fanouts if sampler == "sage" else d.layer_sizes)
        if given.get("layers", len(sizes)) == 1 and len(sizes) == 1:
            raise UsageError("--hidden applies to models of two layers or more; a one-layer "
                             "model maps the features to the classes directly: drop --hidden")


def options_from_args(args):
    """``TrainOptions`` from parsed arguments, with the cross-option checks.

    Raises ``UsageError`` for an option given explicitly that does not
    apply (see the module's docstring) and for settings that cannot work
    together (``check_options``).

    Examples
    --------
    >>> opts = options_from_args(build_parser().parse_args(["--sampler", "ladies"]))
    >>> opts.sampler, opts.sizes, opts.epochs
    ('ladies', (256, 256), 20)
    >>> options_from_args(build_parser().parse_args(["--mode", "bns"])).epochs
    200
    >>> options_from_args(build_parser().parse_args(["--sampler", "ladies", "--fanouts", "5"]))
    Traceback (most recent call last):
    ...
    sampling.train.options.UsageError: --fanouts applies to --sampler sage; --sampler ladies
    draws a number of vertices per layer: use --layer-sizes
    """
    names = {f.name for f in fields(TrainOptions)}
    given = {k: v for k, v in vars(args).items() if k in names and v is not None}
    _check_given(given)
    opts = TrainOptions(**given)
    check_options(opts)
    return opts
