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

``--mode bns`` trains the whole graph instead, partition-parallel with
random boundary-vertex sampling (BNS-GCN, ``sampling.train.bns``; ``run_bns``,
``--boundary-keep Q``, ``--model gcn|sage``, ``--partition block|metis``):
one row per epoch (loss, validation accuracy, kept boundary vertices,
megabytes sent and received, working memory, compute and communication
seconds), then the per-rank breakdown.

The pieces are importable for notebooks: ``TrainOptions``, ``Trainer``
(``train_epoch``, ``evaluate``, ``fit``), ``format_row``, ``plot_phases``.
``Trainer(opts, sampler=..., model=...)`` trains a sampler instance and a
custom ``torch.nn.Module`` (``model(x, minibatch) -> logits of the
seeds``); the thread counts it sets hold only while it works
(``using_threads``).

The package is split by job: ``options`` (``TrainOptions``, the checks
across options), ``cli`` (the command line), ``launch`` (mpiexec detection,
the communicator, thread counts), ``trainer`` (``Trainer``), ``report``
(the table and the plot) and ``job`` (``main`` and ``run``).  Under MPI a
failure on any rank ends the whole job (``spla.comm.abort_on_error``).
"""

from sampling.train.cli import build_parser, options_from_args
from sampling.train.job import main, run, run_bns
from sampling.train.launch import (default_threads, launched_by_mpiexec, launcher_rank,
                                   require_torch, set_threads, thread_counts, using_threads,
                                   world_comm)
from sampling.train.options import (DEVICES, GRAPH_MODES, PHASES, SAMPLERS, TrainOptions,
                                    UsageError, check_options)
from sampling.train.report import format_row, header, plot_phases
from sampling.train.trainer import EpochStats, Trainer

__all__ = ["main", "run", "run_bns", "Trainer", "TrainOptions", "EpochStats", "UsageError",
           "build_parser", "options_from_args", "check_options", "format_row", "header",
           "plot_phases", "launched_by_mpiexec", "launcher_rank", "world_comm",
           "default_threads", "set_threads", "thread_counts", "using_threads",
           "require_torch", "SAMPLERS", "GRAPH_MODES", "DEVICES", "PHASES"]
