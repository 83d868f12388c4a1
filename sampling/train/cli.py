"""The command line of the main job: value parsers, the parser, options from arguments."""

import argparse
import math
import re
import sys
from dataclasses import fields

from sampling.train.launch import launcher_rank
from sampling.train.options import (DEVICES, GRAPH_MODES, SAMPLERS, TrainOptions,
                                    check_options)


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
_positive_float = _number(float, lambda v: v > 0 and math.isfinite(v), "a positive number")
_nonneg_float = _number(float, lambda v: v >= 0 and math.isfinite(v), "a number >= 0")
_nonneg_int = _number(int, lambda v: v >= 0, "an integer >= 0")


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


class _Parser(argparse.ArgumentParser):
    """Errors as one line, ``error: ...``, exit status 2."""

    def error(self, message):
        # Under mpiexec every rank parses the same arguments: rank 0 speaks.
        if launcher_rank() == 0:
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
