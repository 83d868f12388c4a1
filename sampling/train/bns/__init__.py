"""BNS-GCN: partition-parallel full-graph training with random boundary-vertex sampling.

Wan et al. (MLSys 2022) train a GCN on the whole graph, each of p ranks
owning one part of the vertices (a row block of the adjacency).  The
*boundary* of a rank is the set of vertices that its rows read (columns
of its row block) but other ranks own; a layer needs their features
(forward) and sends back their gradients (backward), and that traffic
dominates time and memory.  BNS keeps each boundary vertex in an epoch
with probability ``q`` (drawn again every epoch) and drops the others; the
kept columns are scaled by ``1 / q``, so the aggregation stays unbiased.

The pieces, as spla compositions, one module each (all importable from
``sampling.train.bns``):

``graph``
    ``normalized_adjacency``, ``keep_mask``, ``BoundaryGraph``,
    ``BoundarySample``: the aggregation matrix, the boundary and its
    per-epoch sample.
``halo``
    ``exchange`` and ``CommStats``: the boundary rows to the ranks that
    read them, their gradients back.
``model``
    ``BNSModel`` and ``dropout_by_id``.
``report``
    ``bns_header``, ``format_bns_row``, ``rank_table``: the tables.
``trainer``
    ``BNSTrainer`` and ``BNSEpochStats``: the training loop.

In detail:

``normalized_adjacency(A, kind)``
    the aggregation matrix of the model (GCN's ``D^-1/2 (A + I) D^-1/2``,
    or GraphSAGE's row mean ``D^-1 A``), built once on the whole graph.
``BoundaryGraph(D)`` (collective)
    the inner/boundary structure of this rank's row block of the
    distributed aggregation matrix ``D``: its columns renumbered as
    ``[inner vertices | boundary vertices]`` (an ``extract`` over column
    ids), and the exchange plan, made with one all-to-allv of vertex ids:
    which of its inner rows each other rank reads.
``keep_mask(ids, q, seed=, epoch=)``
    the per-epoch decision, a pure function of ``(seed, epoch, global
    vertex id)`` (``spla.random.uniform``): every rank computes the same
    kept set without communicating, the owner for its rows, the reader for
    its boundary.
``BoundaryGraph.sample(q, seed=, epoch=)`` -> ``BoundarySample`` (local)
    the sampled local adjacency: an ``extract`` of the inner columns and
    the kept boundary columns, the latter rescaled by ``1 / q``; and this
    epoch's send and receive counts.
``exchange(h, sample)``
    a ``torch.autograd.Function``: forward, one all-to-allv of the kept
    boundary rows of ``h`` (this rank receives its kept boundary's rows,
    in the sample's column order); backward, the gradients of those rows go
    back to their owners (one all-to-allv) and are summed into the owners'
    rows.  ``q = 0`` sends nothing at all.
``BNSModel``
    a GCN (``sampling.models.GCNConv``) or GraphSAGE
    (``sampling.models.SAGEConv``) that runs layer by layer on a rank's
    inner rows: dropout, exchange, aggregate.
``BNSTrainer``
    the training loop: per epoch one sample, one forward and backward over
    the rank's training vertices, the gradients summed over the ranks by
    one Allreduce (every rank then takes the same Adam step), and a report
    (``BNSEpochStats``): per rank the inner, boundary and kept boundary
    vertices, bytes sent and received, the epoch's working memory and peak
    RSS, and the epoch's seconds split into compute and communication.

``q = 1`` is exact full-graph training: on any number of ranks and any
partition, the losses equal those of one process training on the whole
graph (up to float rounding; dropout masks are keyed by global vertex ids,
so they are the same too).  ``q = 0`` trains each part on its own (only the
gradients are summed).

Evaluation (validation every epoch, test at the end) is full-graph
inference: every boundary vertex kept (q = 1), outside the epoch's byte and
time counters.
"""

from sampling.train.bns.graph import (BoundaryGraph, BoundarySample, keep_mask,
                                      normalized_adjacency)
from sampling.train.bns.halo import CommStats, exchange
from sampling.train.bns.model import MODELS, KINDS, BNSModel, dropout_by_id
from sampling.train.bns.report import bns_header, format_bns_row, rank_table
from sampling.train.bns.trainer import BNSEpochStats, BNSTrainer

__all__ = ["normalized_adjacency", "keep_mask", "BoundaryGraph", "BoundarySample",
           "CommStats", "exchange", "dropout_by_id", "BNSModel", "BNSTrainer",
           "BNSEpochStats", "bns_header", "format_bns_row", "rank_table", "MODELS", "KINDS"]
