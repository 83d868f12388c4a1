#!/usr/bin/env python
"""LADIES and FastGCN: ours (bulk and one minibatch at a time) against a numpy/scipy reference.

    python benchmarks/bench_layerwise.py [--threads 2] [--graphs rmat,rmat-bfs,pubmed]
        [--scales 16,20] [--seeds 256,1024]
        [--minibatches 16] [--repeats 3] [--out benchmarks/results/layerwise_cpu.md]

The reference is the published algorithm, written here in plain numpy /
scipy, one minibatch per call as the authors' code runs (Zou et al. 2019,
Chen et al. 2018):

* LADIES, per layer: the squared normalised adjacency's column sums over
  the layer's destination rows (a dense vector over all n vertices) give
  ``p``; ``s`` vertices are drawn from ``p`` without replacement
  (``numpy.random.Generator.choice``), joined with the destinations, and the
  layer's adjacency is ``Â[dst, kept]`` with column ``j`` scaled by ``1 /
  p_j``, rows renormalised.
* FastGCN: ``p`` is the squared column norms of ``Â``, computed once; each
  layer draws ``s`` vertices from it the same way.

``Â = D^-1 (A + I)`` on R-MAT graphs (``spla.generators.rmat(scale, 16,
seed=0)``), the same graphs renumbered in BFS order (ids with locality, as
real graphs number them) and PubMed's real graph (``benchmarks/graphs.py``).  Equal cores: the reference runs its minibatches in ``--threads``
worker processes (a ``multiprocessing`` pool, one minibatch per task),
ours on ``--threads`` numba threads, as a bulk of ``--minibatches``
minibatches and one minibatch per call, and one minibatch per call spread
over ``--threads`` Python threads of one numba thread each (the reference's
pool, as threads: the kernels release the GIL).  Times are per minibatch: the
median over ``--repeats`` runs of the whole set after one warm-up.
Layer sizes 512, 512 (two layers).  The draws differ (ours are
counter-based and keyed), so only the time is compared; the laws are
checked in ``tests/sampling/test_sampler_distribution.py``.
"""

import argparse
import os
import sys

_T = "2"
for _i, _a in enumerate(sys.argv):
    if _a == "--threads" and _i + 1 < len(sys.argv):
        _T = sys.argv[_i + 1]
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = _T

import multiprocessing as mp  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timezone  # noqa: E402

from concurrent.futures import ThreadPoolExecutor  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from graphs import PUBMED, bfs_renumbered, pubmed_graph  # noqa: E402 - benchmarks/ on sys.path
from machine import machine_info  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

LAYERS = (512, 512)

# -- the reference (plain numpy / scipy) --------------------------------------------------

_REF = {}  # the worker processes' graph (set by _init, inherited or sent once)


def normalised(A):
    """D^-1 (A + I) as a float32 scipy CSR matrix."""
    M = (A + sp.identity(A.shape[0], dtype=np.float32, format="csr")).tocsr()
    deg = np.asarray(M.sum(axis=1)).ravel()
    return sp.diags((1.0 / deg).astype(np.float32)) @ M


def ladies_reference(Ahat, batch, sizes, rng):
    """One LADIES minibatch: a list of (dst, kept, adjacency) from the output layer in."""
    n = Ahat.shape[0]
    dst, out = np.asarray(batch), []
    for s in sizes:
        rows = Ahat[dst]
        p = np.asarray(rows.multiply(rows).sum(axis=0)).ravel()
        p = p / p.sum()
        k = min(s, int(np.count_nonzero(p)))
        picked = rng.choice(n, k, replace=False, p=p)
        kept = np.union1d(picked, dst)
        adj = rows[:, kept] @ sp.diags(1.0 / p[kept])
        out.append((dst, kept, _row_normalised(adj)))
        dst = kept
    return out


def fastgcn_reference(Ahat, p, batch, sizes, rng):
    """One FastGCN minibatch (``p``: the squared column norms, normalised)."""
    n = Ahat.shape[0]
    dst, out = np.asarray(batch), []
    for s in sizes:
        k = min(s, int(np.count_nonzero(p)))
        kept = np.union1d(rng.choice(n, k, replace=False, p=p), dst)
        adj = Ahat[dst][:, kept] @ sp.diags(1.0 / p[kept])
        out.append((dst, kept, _row_normalised(adj)))
        dst = kept
    return out


def _row_normalised(M):
    d = np.asarray(M.sum(axis=1)).ravel()
    d[d == 0] = 1.0
    return sp.diags(1.0 / d) @ M


def _init(Ahat, p):
    _REF["A"], _REF["p"] = Ahat, p


def _ref_task(args):
    kind, batch, seed = args
    rng = np.random.default_rng(seed)
    if kind == "LADIES":
        return len(ladies_reference(_REF["A"], batch, LAYERS, rng))
    return len(fastgcn_reference(_REF["A"], _REF["p"], batch, LAYERS, rng))


# -- the measurements ---------------------------------------------------------------------

def median_time(fn, repeats):
    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def one_per_call_in_threads(sampler, batches, threads):
    """One minibatch per call, the calls spread over a thread pool of one numba
    thread each: the reference's worker processes, as threads (our kernels
    release the GIL).  ``batch_ids`` keeps the draws those of the bulk call."""
    return list(threads.map(lambda ib: sampler.sample([ib[1]], seed=1, batch_ids=[ib[0]]),
                            enumerate(batches)))


def layer_graphs(args):
    """(label, spla.Matrix, key of its seeds) of every graph asked for: R-MAT at each scale with
    random ids (``rmat``) and renumbered in BFS order (``rmat-bfs``: ids with
    locality, as real graphs have), and PubMed's real graph (``pubmed``)."""
    from spla.generators import rmat
    for which in args.graph_list:
        if which == "pubmed":
            if not os.path.exists(args.pubmed):
                print(f"skipping pubmed: {args.pubmed} not found (--pubmed)", flush=True)
                continue
            yield "PubMed (real graph, published ids)", pubmed_graph(args.pubmed), 0
            continue
        for scale in [int(s) for s in args.scales.split(",")]:
            A = rmat(scale, 16, seed=0)
            if which == "rmat-bfs":
                yield f"R-MAT scale {scale}, BFS order", bfs_renumbered(A), scale
            else:
                yield f"R-MAT scale {scale}", A, scale


def run(args):
    rows = []
    for label, A, key in layer_graphs(args):
        for b in [int(s) for s in args.seeds.split(",")]:
            rows += time_graph(args, label, A, b, np.random.default_rng(key * 1000 + b))
    return rows


def time_graph(args, label, A, b, rng):
    """The reference's and our times per minibatch on one graph: minibatches of
    ``b`` random seeds drawn from ``rng`` (R-MAT's in both orders from the same
    key: the same workload, numbered differently)."""
    from sampling import FastGCN, LADIES
    workers = int(args.threads)
    S = A.to_scipy().astype(np.float32)
    Ahat = normalised(S)
    sq = Ahat.multiply(Ahat)
    p = np.asarray(sq.sum(axis=0)).ravel()
    p = p / p.sum()
    batches = [rng.choice(A.nrows, b, replace=False) for _ in range(args.minibatches)]
    k = len(batches)
    rows = []
    ctx = mp.get_context("fork")
    with ctx.Pool(workers, initializer=_init, initargs=(Ahat, p)) as pool, \
            ThreadPoolExecutor(workers, initializer=numba.set_num_threads,
                               initargs=(1,)) as pool_t:
        for kind, cls in (("LADIES", LADIES), ("FastGCN", FastGCN)):
            tasks = [(kind, bt, i) for i, bt in enumerate(batches)]
            ref = median_time(lambda: pool.map(_ref_task, tasks, chunksize=1),
                              args.repeats) / k
            sampler = cls(A, list(LAYERS))
            bulk = median_time(lambda: sampler.sample(batches, seed=1), args.repeats) / k
            one = median_time(lambda: [sampler.sample([bt], seed=1, batch_ids=[i])
                                       for i, bt in enumerate(batches)],
                              args.repeats) / k
            each = median_time(lambda: one_per_call_in_threads(sampler, batches, pool_t),
                               args.repeats) / k
            rows.append(dict(graph=label, nnz=A.nnz, seeds=b, kind=kind, ref=ref,
                             bulk=bulk, one=one, each=each))
            print(f"{label}, seeds {b} {kind}: reference {1e3 * ref:.1f} ms, "
                  f"ours bulk {1e3 * bulk:.1f} ms ({ref / bulk:.1f}x), one at a time "
                  f"{1e3 * one:.1f} ms ({ref / one:.1f}x), one per call in "
                  f"{workers} threads {1e3 * each:.1f} ms ({ref / each:.1f}x)",
                  flush=True)
    return rows


def render(args, rows, wall, command):
    info = machine_info()
    L = ["# LADIES and FastGCN against the reference algorithm (CPU)\n",
         f"- Command: `{command}`",
         f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; wall time "
         f"{wall:.0f} s",
         f"- Machine: {info['nproc']} cores, {info['cpu']}, {info['ram']} RAM, Linux "
         f"{info['kernel']}",
         f"- Equal cores: ours on {args.threads} numba threads; the reference (numpy/scipy, "
         f"one minibatch per call) in {args.threads} worker processes; 'one per call in "
         f"{args.threads} threads': our sampler called once per minibatch from "
         f"{args.threads} Python threads of one numba thread each",
         f"- Layers {list(LAYERS)}, {args.minibatches} minibatches of random seeds per set, "
         f"median of {args.repeats} runs after a warm-up; ms per minibatch\n",
         "| graph | seeds | sampler | reference ms | ours, bulk ms | ratio | ours, one at a "
         f"time ms | ratio | ours, one per call in {args.threads} threads ms | ratio |",
         "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        L.append(f"| {r['graph']} ({r['nnz']:,} entries) | {r['seeds']} | "
                 f"{r['kind']} | {1e3 * r['ref']:.1f} | {1e3 * r['bulk']:.1f} | "
                 f"{r['ref'] / r['bulk']:.1f}x | {1e3 * r['one']:.1f} | "
                 f"{r['ref'] / r['one']:.1f}x | {1e3 * r['each']:.1f} | "
                 f"{r['ref'] / r['each']:.1f}x |")
    return "\n".join(L) + "\n"


def main(argv=None):
    from machine import write_results
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default="2")
    p.add_argument("--graphs", default="rmat,rmat-bfs,pubmed",
                   help="comma separated among rmat (random ids), rmat-bfs (the same R-MAT "
                        "renumbered in BFS order: ids with locality) and pubmed (the real "
                        "PubMed graph, --pubmed)")
    p.add_argument("--pubmed", default=PUBMED, help="PubMed's CSR archive")
    p.add_argument("--scales", default="16,20", help="R-MAT scales")
    p.add_argument("--seeds", default="256,1024")
    p.add_argument("--minibatches", type=int, default=16)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=os.path.join(HERE, "results", "layerwise_cpu.md"))
    args = p.parse_args(argv)
    args.graph_list = [g for g in args.graphs.split(",") if g]
    bad = [g for g in args.graph_list if g not in ("rmat", "rmat-bfs", "pubmed")]
    if bad:
        p.error(f"--graphs: unknown {bad} (rmat, rmat-bfs, pubmed)")
    t0 = time.perf_counter()
    rows = run(args)
    command = "python benchmarks/bench_layerwise.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    md = render(args, rows, time.perf_counter() - t0, command.strip())
    write_results(args.out, md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
