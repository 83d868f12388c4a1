#!/usr/bin/env python
"""Sampler throughput: spla's bulk samplers against torch-sparse and scipy.

    python benchmarks/bench_sampling.py [--scale 20] [--threads 2] [--bulks 1,8,16,64]
                                        [--graphs rmat,rmat-bfs,pubmed,cora]
                                        [--samplers "GraphSAGE fused,LADIES"]
                                        [--out benchmarks/results/sampling_cpu.md] [--quick]

With pyg-lib on ``PYTHONPATH`` (built from its public sources as
``../shared/peers/README.md`` says; copy the ``pyg_lib`` package of that
venv into a directory of its own and point ``PYTHONPATH`` there) it is timed
too, and a table gives GraphSAGE's time per minibatch against pyg-lib's
fastest way on every graph.

Workloads (minibatches of 1,024 distinct random seeds, the same minibatches
for every method):

* R-MAT (``spla.generators.rmat(scale, 16, seed=0)``, symmetric; ``rmat-bfs``:
  the same graph renumbered in BFS order, so that neighbours have nearby ids
  as in real graphs), PubMed's real graph (``--pubmed``) and Cora:
  GraphSAGE ``[15, 10, 5]`` fused (the default path), GraphSAGE materialised
  (ablation: ``(Q @ A).new()`` before ``sample_rows``), weighted GraphSAGE
  (random positive float32 edge values), LADIES and FastGCN with 512 vertices
  per layer (2 layers); each for every bulk size k.
* Peers in the same run: pyg-lib's ``neighbor_sample`` (NeighborLoader's
  default), torch-sparse ``neighbor_sample`` (NeighborLoader without pyg-lib)
  and ``SparseTensor.sample_adj`` (NeighborSampler), each in 1 process and in
  2 forked worker processes; a straightforward scipy GraphSAGE, one
  minibatch at a time.

Reported: SEPS (sampled edges per second; every edge of every block, for
peers every edge they return), seconds per bulk and per minibatch, the peak
RSS that sampling a bulk of 16 adds over the loaded graph (fresh subprocess,
see ``measure_rss``), ratios against the fastest torch-sparse way, the
machine's random-read limit, a per-phase timing of one GraphSAGE and one
LADIES bulk, and the allocator ablation (``measure_alloc``: fresh processes
with ``SPLA_MALLOC=reuse``, the default, and ``SPLA_MALLOC=system``, run
alternately; ``--no-alloc`` skips it).

Timing: one warm-up call per configuration, then the median of ``--repeats``
timed calls (5, or 3 with ``--quick``).  Thread counts are set before numba
and torch are imported; worker processes run 1 thread each.
"""

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from graphs import PUBMED  # noqa: E402 - benchmarks/ is on sys.path
from machine import machine_info  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

BATCH_SIZE = 1024
FANOUTS = (15, 10, 5)
LAYER_SIZES = (512, 512)
GRAPH_SEED = 0
SAMPLE_SEED = 12345
PEER_BULK = 16          # minibatches per timed repeat for the peers (= our k=16)
#: Our row timed as the peers are: PEER_BULK calls of one minibatch each.
PER_CALL = "GraphSAGE fused, one per call"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=int, default=None,
                   help="R-MAT scale (2**scale vertices, edge factor 16); default 20, 14 with --quick")
    p.add_argument("--threads", type=int, default=2, help="threads of the sampling process (default 2)")
    p.add_argument("--bulks", default="1,8,16,64", help="bulk sizes k, comma separated")
    p.add_argument("--repeats", type=int, default=None, help="timed repeats (default 5, 3 with --quick)")
    p.add_argument("--workers", type=int, default=2, help="worker processes of the multi-process peers")
    p.add_argument("--max-materialised-bulk", type=int, default=16,
                   help="largest k for the materialised ablation (its memory grows ~k x 22.5 M "
                        "entries at scale 20; default 16)")
    p.add_argument("--scipy-batches", type=int, default=None,
                   help="minibatches per repeat for the scipy peer (default 16, 2 at scale >= 18, "
                        "where it forms ~22 M entries of P per minibatch)")
    p.add_argument("--out", default=None,
                   help="markdown output (default benchmarks/results/sampling_cpu.md, "
                        "sampling_cpu_quick.md with --quick)")
    p.add_argument("--quick", action="store_true", help="smoke run: scale 14, 3 repeats")
    p.add_argument("--no-cora", action="store_true", help="skip the Cora workloads")
    p.add_argument("--graphs", default="rmat,cora",
                   help="graphs, comma separated, among rmat (random ids), rmat-bfs (the same "
                        "R-MAT renumbered in BFS order: ids with locality), pubmed (the real "
                        "PubMed graph, --pubmed) and cora (default rmat,cora)")
    p.add_argument("--pubmed", default=PUBMED,
                   help="PubMed's CSR archive (../shared/data/pubmed.npz)")
    p.add_argument("--samplers", default=None,
                   help="our samplers to time, comma separated (default all: " + ", ".join(
                       ["GraphSAGE fused", "GraphSAGE materialised", "GraphSAGE weighted",
                        "LADIES", "FastGCN"]) + ")")
    p.add_argument("--no-rss", action="store_true", help="skip the peak-RSS subprocesses")
    p.add_argument("--no-alloc", action="store_true",
                   help="skip the allocator ablation (kernels.allocator against glibc's policy)")
    p.add_argument("--_rss-child", dest="rss_child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--_alloc-child", dest="alloc_child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.scale is None:
        args.scale = 14 if args.quick else 20
    if args.repeats is None:
        args.repeats = 3 if args.quick else 5
    if args.repeats < 3:
        p.error("--repeats must be >= 3 (the median of at least 3)")
    if args.scipy_batches is None:
        args.scipy_batches = 2 if args.scale >= 18 else PEER_BULK
    args.graph_list = [g.strip() for g in args.graphs.split(",") if g.strip()]
    if args.no_cora and "cora" in args.graph_list:
        args.graph_list.remove("cora")
    bad = [g for g in args.graph_list if g not in ("rmat", "rmat-bfs", "pubmed", "cora")]
    if bad or not args.graph_list:
        p.error(f"--graphs: unknown {bad} (rmat, rmat-bfs, pubmed, cora)")
    args.bulk_list = [int(x) for x in args.bulks.split(",") if x.strip()]
    if not args.bulk_list or min(args.bulk_list) < 1:
        p.error("--bulks must list positive integers")
    if args.out is None:
        name = "sampling_cpu_quick.md" if args.quick else "sampling_cpu.md"
        args.out = os.path.join(HERE, "results", name)
    return args


ARGS = parse_args()
# Thread counts before numba / torch are imported.
os.environ["NUMBA_NUM_THREADS"] = str(ARGS.threads)
os.environ.setdefault("OMP_NUM_THREADS", str(ARGS.threads))
os.environ.setdefault("MKL_NUM_THREADS", str(ARGS.threads))
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import numba  # noqa: E402
import scipy  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import spla  # noqa: E402
import sampling  # noqa: E402
import sampling.samplers.base  # noqa: E402
import sampling.samplers.graphsage  # noqa: E402
import sampling.samplers.layerwise  # noqa: E402
from sampling import FastGCN, GraphSAGE, LADIES  # noqa: E402

import peers  # noqa: E402
from graphs import bfs_renumbered, pubmed_graph  # noqa: E402

TORCH, TORCH_SPARSE, TORCH_MISSING = peers.torch_sparse_or_none()
PYG_LIB, PYG_LIB_MISSING = peers.pyg_lib_or_none()
if TORCH is not None:
    TORCH.set_num_threads(ARGS.threads)


# The ablation, GraphSAGE materialising P = Q @ A before sampling, is the
# sampler's own ``materialize=True`` option: the same code path, picks and
# block values as the fused sampler, only ``.new()`` added.


# ---------------------------------------------------------------------------
# Graphs and minibatches


def rmat_graph(scale):
    """(spla.Matrix, how it was built)."""
    try:
        from spla.generators import rmat
    except (ImportError, AttributeError):
        indptr, indices = peers.numpy_rmat(scale, 16, seed=GRAPH_SEED)
        n = indptr.size - 1
        return (spla.Matrix.from_csr(indptr, indices, None, (n, n)),
                f"peers.numpy_rmat({scale}, 16, seed={GRAPH_SEED}) (fallback: spla.generators.rmat missing)")
    return rmat(scale, 16, seed=GRAPH_SEED), f"spla.generators.rmat({scale}, 16, seed={GRAPH_SEED})"


def weights_for(A):
    """Random positive float32 edge values (seeded), for weighted GraphSAGE."""
    rng = np.random.default_rng(GRAPH_SEED + 1)
    return (rng.random(A.nnz, dtype=np.float32) * 0.999 + 0.001).astype(np.float32)


def minibatches(n, k, rep):
    """k minibatches of BATCH_SIZE distinct random seeds, keyed by (k, rep)."""
    rng = np.random.default_rng([SAMPLE_SEED, k, rep])
    b = min(BATCH_SIZE, n)
    return [rng.choice(n, b, replace=False).astype(np.int64) for _ in range(k)]


def make_sampler(name, A, W=None):
    if name == "GraphSAGE fused":
        return GraphSAGE(A, FANOUTS)
    if name == "GraphSAGE materialised":
        return GraphSAGE(A, FANOUTS, materialize=True)
    if name == "GraphSAGE weighted":
        return GraphSAGE(A.with_values(W if W is not None else weights_for(A)), FANOUTS,
                         weighted=True)
    if name == "LADIES":
        return LADIES(A, LAYER_SIZES)
    if name == "FastGCN":
        return FastGCN(A, LAYER_SIZES)
    raise ValueError(name)


OURS = ["GraphSAGE fused", "GraphSAGE materialised", "GraphSAGE weighted", "LADIES", "FastGCN"]
if ARGS.samplers:
    _asked = [x.strip() for x in ARGS.samplers.split(",") if x.strip()]
    if not _asked or any(x not in OURS for x in _asked):
        sys.exit(f"--samplers: expected names among {OURS}, got {_asked}")
    OURS = _asked
PEERS = ["torch-sparse neighbor_sample", "torch-sparse sample_adj", "scipy GraphSAGE"]


# ---------------------------------------------------------------------------
# Timing


def median(xs):
    return statistics.median(xs)


def time_ours(sampler, n, k, repeats):
    """Warm-up, then ``repeats`` timed bulks of k minibatches: a result row."""
    warm = sampler.sample(minibatches(n, k, 0), seed=SAMPLE_SEED, epoch=0)
    del warm
    times, edges = [], []
    for r in range(1, repeats + 1):
        bs = minibatches(n, k, r)
        gc.collect()
        t0 = time.perf_counter()
        mbs = sampler.sample(bs, seed=SAMPLE_SEED, epoch=r)
        dt = time.perf_counter() - t0
        edges.append(sum(mb.num_sampled_edges for mb in mbs))
        times.append(dt)
        del mbs
    return _row(times, edges, k)


def time_ours_per_call(sampler, n, calls, repeats):
    """Warm-up, then ``repeats`` timed loops of ``calls`` one-minibatch calls:
    the peers' own timing (one collection, then a call per minibatch), so
    that one minibatch per call compares like with like.  A lone call timed
    after a collection pays the cold start of an idle core on every
    minibatch, which the peers' loops pay once per repeat."""
    sampler.sample(minibatches(n, 1, 0), seed=SAMPLE_SEED, epoch=0)
    times, edges = [], []
    for r in range(1, repeats + 1):
        bs = minibatches(n, calls, r)
        gc.collect()
        t0 = time.perf_counter()
        outs = [sampler.sample([b], seed=SAMPLE_SEED, epoch=r) for b in bs]
        times.append(time.perf_counter() - t0)
        edges.append(sum(mb.num_sampled_edges for mbs in outs for mb in mbs))
        del outs
    return _row(times, edges, calls)


def _row(times, edges, k):
    seps = [e / t for e, t in zip(edges, times)]
    return dict(k=k, s_bulk=median(times), s_mb=median(times) / k, seps=median(seps),
               edges_mb=statistics.mean(edges) / k, times=times)


def time_peer_1proc(fn, graph, n, k, repeats, seed_offset=0):
    if TORCH is not None:
        TORCH.manual_seed(SAMPLE_SEED + seed_offset)
    for b in minibatches(n, k, 0):
        fn(graph, b, FANOUTS)
    times, edges = [], []
    for r in range(1, repeats + 1):
        bs = minibatches(n, k, r)
        gc.collect()
        t0 = time.perf_counter()
        outs, e = [], 0
        for b in bs:
            o, ne = fn(graph, b, FANOUTS)
            outs.append(o)
            e += ne
        dt = time.perf_counter() - t0
        times.append(dt)
        edges.append(e)
        del outs
    return _row(times, edges, k)


def time_peer_workers(pool, method, n, k, repeats):
    pool.run(method, minibatches(n, k, 0), FANOUTS)
    times, edges = [], []
    for r in range(1, repeats + 1):
        bs = minibatches(n, k, r)
        gc.collect()
        t0 = time.perf_counter()
        outs, e = pool.run(method, bs, FANOUTS)
        dt = time.perf_counter() - t0
        times.append(dt)
        edges.append(e)
        del outs
    return _row(times, edges, k)


class ScipyPeer:
    def __init__(self, A):
        self.S = sp.csr_matrix((np.ones(A.nnz, np.float32), np.asarray(A.indices),
                                np.asarray(A.indptr)), shape=A.shape)
        self.rng = np.random.default_rng(SAMPLE_SEED)

    def __call__(self, _graph, seeds, fanouts):
        return peers.scipy_graphsage(self.S, seeds, fanouts, self.rng)


# ---------------------------------------------------------------------------
# Per-phase timing by wrapping spla / sampling functions from outside


class PhaseTimer:
    """Monkeypatch functions with perf_counter wrappers; restore on exit."""

    def __init__(self):
        self.acc = {}
        self.calls = {}
        self._undo = []

    def wrap(self, obj, name, label):
        if not hasattr(obj, name):  # not on this code path (the phase stays out of the table)
            return
        orig = getattr(obj, name)
        # Restore the raw attribute (a classmethod stays a classmethod).
        raw = obj.__dict__[name] if isinstance(obj, type) and name in obj.__dict__ else orig
        acc, calls = self.acc, self.calls
        acc.setdefault(label, 0.0)
        calls.setdefault(label, 0)

        def timed(*a, **kw):
            t0 = time.perf_counter()
            try:
                return orig(*a, **kw)
            finally:
                acc[label] += time.perf_counter() - t0
                calls[label] += 1
        setattr(obj, name, timed)
        self._undo.append((obj, name, raw))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for obj, name, orig in reversed(self._undo):
            setattr(obj, name, orig)


def profile_phases(kind, A, n, k, repeats):
    """Per-phase seconds of one bulk of k (mean over ``repeats``), kernels apart.

    Phases nest: ``sample_rows`` contains its kernel, ``assemble`` contains
    ``split_blocks``; the table lists each with its share of the bulk time.
    """
    import kernels.cpu.groups
    import kernels.cpu.sample
    import kernels.cpu.spgemm
    sampler = make_sampler(kind, A)
    sampler.sample(minibatches(n, k, 0), seed=SAMPLE_SEED, epoch=0)
    totals = []
    with PhaseTimer() as pt:
        pt.wrap(sampling.samplers.base, "stack_batches", "stack_batches (input checks)")
        pt.wrap(sampling.samplers.base, "assemble", "assemble (split into MiniBatch/Block)")
        pt.wrap(spla, "split_blocks", "  split_blocks (in assemble)")
        if kind.startswith("GraphSAGE"):
            mod = sampling.samplers.graphsage
            pt.wrap(mod, "selection", "selection Q")
        else:
            mod = sampling.samplers.layerwise
            pt.wrap(spla.MxmExpr, "new", "mxm(...).new() (SpGEMM)")
            for kern in ("spgemm_gather", "spgemm", "spgemm_symbolic", "spgemm_numeric"):
                pt.wrap(kernels.cpu.spgemm, kern, f"  {kern} kernel")
            pt.wrap(mod, "extract_blockwise", "extract_blockwise")
            pt.wrap(kernels.cpu.groups, "extract_groups", "  extract_groups kernel")
            pt.wrap(mod, "normalize_rows", "normalize_rows")
            pt.wrap(mod, "reduce_rowwise", "reduce_rowwise")
            pt.wrap(spla.Matrix, "from_coo", "Matrix.from_coo")
        import kernels.cpu.hops
        import spla.hops as spla_hops
        pt.wrap(sampling.samplers.graphsage, "sample_hops", "sample_hops (every hop)")
        pt.wrap(kernels.cpu.hops, "_hop", "  fused hop kernel (uniform draws)")
        pt.wrap(spla_hops, "sample_rows", "  sample_rows (composed hops)")
        pt.wrap(spla_hops, "compact_columns_blockwise", "  compact_columns_blockwise (composed hops)")
        pt.wrap(mod, "sample_rows", "sample_rows")
        pt.wrap(kernels.cpu.sample, "sample_gather", "  sample_gather kernel (fused)")
        pt.wrap(kernels.cpu.sample, "sample_csr", "  sample_csr kernel (materialised)")
        pt.wrap(mod, "compact_columns_blockwise", "compact_columns_blockwise")
        pt.wrap(kernels.cpu.groups, "compact_groups", "  compact_groups kernel")
        for r in range(1, repeats + 1):
            bs = minibatches(n, k, r)
            gc.collect()
            t0 = time.perf_counter()
            mbs = sampler.sample(bs, seed=SAMPLE_SEED, epoch=r)
            totals.append(time.perf_counter() - t0)
            del mbs
    phases = {lab: (t / repeats, pt.calls[lab] // repeats) for lab, t in pt.acc.items()
              if pt.calls[lab]}
    top = [lab for lab in phases if not lab.startswith("  ")]
    rest = statistics.mean(totals) - sum(phases[lab][0] for lab in top)
    return statistics.mean(totals), phases, rest


def cprofile_top(kind, A, n, k, lines=12):
    import cProfile
    import io
    import pstats
    sampler = make_sampler(kind, A)
    sampler.sample(minibatches(n, k, 0), seed=SAMPLE_SEED, epoch=0)
    bs = minibatches(n, k, 1)
    pr = cProfile.Profile()
    pr.enable()
    sampler.sample(bs, seed=SAMPLE_SEED, epoch=1)
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(lines)
    out = []
    keep = False
    for line in s.getvalue().splitlines():
        if line.strip().startswith("ncalls"):
            keep = True
        if keep and line.strip():
            out.append(line.replace(ROOT + "/", "").replace(sys.prefix + "/", ""))
    return "\n".join(out)


# ---------------------------------------------------------------------------
# Random-read limit


@numba.njit(parallel=True, cache=True)
def _gather_sum(words, idx):
    s = np.int64(0)
    for i in numba.prange(idx.size):
        s += words[idx[i]]
    return s


def random_read_limit(repeats, gib=1.0, n_reads=1 << 25):
    """Random 8-byte reads per second from a ``gib`` GiB array (numba, parallel)."""
    n_words = int(gib * (1 << 30)) // 8
    words = np.arange(n_words, dtype=np.int64)
    idx = np.random.default_rng(7).integers(0, n_words, n_reads, dtype=np.int64)
    _gather_sum(words, idx[:1000])
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _gather_sum(words, idx)
        times.append(time.perf_counter() - t0)
    del words, idx
    return n_reads / median(times)


# ---------------------------------------------------------------------------
# Peak RSS of one bulk of 16, in a fresh subprocess


def _proc_status():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmHWM", "VmRSS")):
                key, val = line.split(":")
                out[key] = int(val.split()[0]) * 1024
    return out


def _child_graph(path):
    """The structural graph a parent process saved to ``path`` (.npz, CSR)."""
    with np.load(path) as d:
        indptr, indices = d["indptr"], d["indices"]
    n = indptr.size - 1
    return spla.Matrix.from_csr(indptr, indices, None, (n, n), check=False)


def rss_child(spec):
    """Body of the subprocess: load, warm up, reset the peak, sample 16, report."""
    spec = json.loads(spec)
    method, k = spec["method"], spec["k"]
    A = _child_graph(spec["graph"])
    n = A.nrows
    if method in OURS:
        sampler = make_sampler(method, A)

        def run(bs, epoch):
            return sampler.sample(bs, seed=SAMPLE_SEED, epoch=epoch)
    else:
        if method == "scipy GraphSAGE":
            g, fn = None, ScipyPeer(A)
        else:
            g = peers.TorchGraph(A.indptr, A.indices, n)
            fn = peers.PEER_FUNCS[method.split()[-1]]

        def run(bs, epoch):
            return [fn(g, b, FANOUTS) for b in bs]
    out = run(minibatches(n, k, 0), 0)           # warm-up: compile, caches, allocator
    del out
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")                              # reset VmHWM to the current RSS
    base = _proc_status()
    t0 = time.perf_counter()
    out = run(minibatches(n, k, 1), 1)            # results kept alive, as a bulk's are
    dt = time.perf_counter() - t0
    peak = _proc_status()
    print(json.dumps({"base_rss": base["VmRSS"], "peak": peak["VmHWM"],
                      "after": peak["VmRSS"], "seconds": dt}))


def measure_rss(methods, A, k, scipy_k, log):
    """Peak RSS added by sampling one bulk, per method, each in a fresh process.

    The child loads the graph (CSR from a temporary .npz), builds the sampler
    or peer structures, samples one warm-up bulk (numba compilation, cached
    prefix sums, allocator pools), frees it, then writes 5 to
    /proc/self/clear_refs (which resets VmHWM, the peak resident set, to the
    current RSS), reads VmRSS as the baseline, samples a second bulk keeping
    its results, and reads VmHWM.  Added peak = VmHWM - baseline: every
    allocation (numpy, numba NRT, torch, glibc) counts, which tracemalloc
    would miss; memory the allocator kept from the warm-up and reuses does not.
    The children run with SPLA_MALLOC=system: under spla's default policy a
    process keeps up to 1 GiB of freed memory (``kernels.allocator``), so
    the warm-up's arrays would serve the second bulk and its peak would read
    about 0.
    """
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph.npz")
        np.savez(path, indptr=np.asarray(A.indptr), indices=np.asarray(A.indices))
        env = dict(os.environ, SPLA_MALLOC="system")
        for method in methods:
            kk = scipy_k if method == "scipy GraphSAGE" else k
            spec = json.dumps({"method": method, "graph": path, "k": kk})
            cmd = [sys.executable, os.path.abspath(__file__), "--threads", str(ARGS.threads),
                   "--_rss-child", spec]
            t0 = time.perf_counter()
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0:
                log(f"  RSS {method}: failed: {p.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(p.stdout.strip().splitlines()[-1])
            r["k"] = kk
            res[method] = r
            log(f"  RSS {method} (k={kk}): +{(r['peak'] - r['base_rss']) / 2**20:.1f} MiB "
                f"over {r['base_rss'] / 2**20:.0f} MiB ({time.perf_counter() - t0:.1f} s)")
    return res


# ---------------------------------------------------------------------------
# Allocator ablation: kernels.allocator's policy against glibc's, in fresh
# subprocesses (the policy is process-wide and set when kernels is imported)

ALLOC_CASES = (("GraphSAGE fused", 1), ("GraphSAGE fused", 16), ("GraphSAGE fused", 64),
               ("LADIES", 16))
ALLOC_MINIBATCHES = 64


def alloc_child(spec):
    """Body of the subprocess: per case, a warm-up bulk, then 64 minibatches
    in bulks of k, timed, with the minor page faults they took."""
    import resource
    spec = json.loads(spec)
    A = _child_graph(spec["graph"])
    n = A.nrows
    out = []
    for method, k in spec["cases"]:
        sampler = make_sampler(method, A)
        warm = sampler.sample(minibatches(n, k, 0), seed=SAMPLE_SEED, epoch=0)
        del warm
        bulks = [minibatches(n, k, r) for r in range(1, max(1, ALLOC_MINIBATCHES // k) + 1)]
        gc.collect()
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        for r, bs in enumerate(bulks, 1):
            mbs = sampler.sample(bs, seed=SAMPLE_SEED, epoch=r)
            del mbs
        dt = time.perf_counter() - t0
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
        m = len(bulks) * k
        out.append({"method": method, "k": k, "ms_mb": dt / m * 1e3, "faults_mb": faults / m})
    print(json.dumps(out))


def measure_alloc(A, rounds, log):
    """Per case and policy, the median over ``rounds`` of fresh processes run
    alternately (reuse, system, reuse, ...), so both see the same machine."""
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "graph.npz")
        np.savez(path, indptr=np.asarray(A.indptr), indices=np.asarray(A.indices))
        spec = json.dumps({"graph": path, "cases": ALLOC_CASES})
        for r in range(rounds):
            for policy in ("reuse", "system"):
                env = dict(os.environ, SPLA_MALLOC=policy)
                cmd = [sys.executable, os.path.abspath(__file__), "--threads", str(ARGS.threads),
                       "--_alloc-child", spec]
                p = subprocess.run(cmd, capture_output=True, text=True, env=env)
                if p.returncode != 0:
                    log(f"  allocator {policy}: failed: {p.stderr.strip().splitlines()[-1:]}")
                    return {}
                for row in json.loads(p.stdout.strip().splitlines()[-1]):
                    key = (row["method"], row["k"])
                    res.setdefault(key, {}).setdefault(policy, []).append(row)
                log(f"  allocator round {r + 1} {policy}: " + ", ".join(
                    f"{m} k={k} {v[policy][-1]['ms_mb']:.2f} ms" for (m, k), v in res.items()))
    return res


# ---------------------------------------------------------------------------
# Machine description


def versions():
    v = {"python": platform.python_version(), "numpy": np.__version__,
         "scipy": scipy.__version__, "numba": numba.__version__, "spla": spla.__version__}
    if TORCH is not None:
        v["torch"] = TORCH.__version__
        v["torch_sparse"] = TORCH_SPARSE.__version__
        try:
            import torch_scatter
            v["torch_scatter"] = torch_scatter.__version__
        except ImportError:
            pass
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        v["repo commit"] = commit + (" (+ uncommitted changes)" if dirty else "")
    except OSError:
        pass
    return v


# ---------------------------------------------------------------------------
# The run


def bench_graph(label, A, args, log, with_rss):
    """All workloads on one graph: rows, setup times, RSS, phases."""
    n = A.nrows
    rows = []          # (method, procs, Row)
    setup = []         # (what, seconds)
    W = weights_for(A)
    # --- ours
    for name in OURS:
        t0 = time.perf_counter()
        s = make_sampler(name, A, W)
        setup.append((f"{name}: sampler construction", time.perf_counter() - t0))
        if name == "GraphSAGE weighted":
            t0 = time.perf_counter()
            s.sample(minibatches(n, 1, 0), seed=SAMPLE_SEED)   # prefix sums, cached on A
            setup.append(("GraphSAGE weighted: first bulk (builds the cached prefix sums)",
                          time.perf_counter() - t0))
        for k in args.bulk_list:
            if name == "GraphSAGE materialised" and k > args.max_materialised_bulk:
                continue
            r = time_ours(s, n, k, args.repeats)
            rows.append((name, f"1 x {args.threads} threads", r))
            log(f"  {label} {name} k={k}: {r['s_bulk']:.3f} s/bulk, {r['seps'] / 1e6:.2f} M SEPS")
        if name == "GraphSAGE fused":
            r = time_ours_per_call(s, n, PEER_BULK, args.repeats)
            rows.append((PER_CALL, f"1 x {args.threads} threads", r))
            log(f"  {label} {name} one per call: {r['s_mb'] * 1e3:.2f} ms/mb")
        if name == "GraphSAGE fused" and args.threads > 1:
            # Thread scaling control: the same sampler on one numba thread.
            numba.set_num_threads(1)
            try:
                for k in args.bulk_list:
                    r = time_ours(s, n, k, args.repeats)
                    rows.append((name, "1 x 1 thread", r))
                    log(f"  {label} {name} 1 thread k={k}: {r['seps'] / 1e6:.2f} M SEPS")
            finally:
                numba.set_num_threads(args.threads)
        del s
        gc.collect()
    # Ablation check: fused and materialised give the same minibatches.
    bs = minibatches(n, 2, 99)
    same = (make_sampler("GraphSAGE fused", A).sample(bs, seed=SAMPLE_SEED, epoch=7)
            == make_sampler("GraphSAGE materialised", A).sample(bs, seed=SAMPLE_SEED, epoch=7))
    # --- peers
    peer_note = None
    k = PEER_BULK
    if TORCH is not None:
        t0 = time.perf_counter()
        g = peers.TorchGraph(A.indptr, A.indices, n)
        setup.append(("torch-sparse: CSR/SparseTensor from the graph (int64)",
                      time.perf_counter() - t0))
        for method in ("neighbor_sample", "sample_adj"):
            r = time_peer_1proc(peers.PEER_FUNCS[method], g, n, k, args.repeats)
            rows.append((f"torch-sparse {method}", "1 process", r))
            log(f"  {label} torch-sparse {method} 1 proc: {r['seps'] / 1e6:.2f} M SEPS")
        t0 = time.perf_counter()
        pool = peers.WorkerPool(g, args.workers, torch_seed=SAMPLE_SEED)
        setup.append((f"torch-sparse: fork {args.workers} workers", time.perf_counter() - t0))
        try:
            for method in ("neighbor_sample", "sample_adj"):
                r = time_peer_workers(pool, method, n, k, args.repeats)
                rows.append((f"torch-sparse {method}", f"{args.workers} workers x 1 thread", r))
                log(f"  {label} torch-sparse {method} {args.workers} workers: "
                    f"{r['seps'] / 1e6:.2f} M SEPS")
        finally:
            pool.close()
        del g
    else:
        peer_note = TORCH_MISSING
        log(f"  skipping torch-sparse peers: {TORCH_MISSING}")
    if PYG_LIB is not None:
        g = peers.TorchGraph(A.indptr, A.indices, n)
        r = time_peer_1proc(peers.PEER_FUNCS["pyglib"], g, n, k, args.repeats)
        rows.append(("pyg-lib neighbor_sample", "1 process", r))
        log(f"  {label} pyg-lib 1 proc: {r['s_mb'] * 1e3:.2f} ms/mb")
        pool = peers.WorkerPool(g, args.workers, torch_seed=SAMPLE_SEED)
        try:
            r = time_peer_workers(pool, "pyglib", n, k, args.repeats)
            rows.append(("pyg-lib neighbor_sample", f"{args.workers} workers x 1 thread", r))
            log(f"  {label} pyg-lib {args.workers} workers: {r['s_mb'] * 1e3:.2f} ms/mb")
        finally:
            pool.close()
        del g
    else:
        log(f"  skipping pyg-lib: {PYG_LIB_MISSING}")
    sk = min(args.scipy_batches, PEER_BULK)
    r = time_peer_1proc(ScipyPeer(A), None, n, sk, args.repeats)
    rows.append(("scipy GraphSAGE", "1 process", r))
    log(f"  {label} scipy: {r['seps'] / 1e6:.2f} M SEPS")
    # --- RSS
    rss = {}
    if with_rss:
        methods = list(OURS)
        if TORCH is not None:
            methods += ["torch-sparse neighbor_sample", "torch-sparse sample_adj"]
        methods.append("scipy GraphSAGE")
        rss = measure_rss(methods, A, 16, sk, log)
    return {"rows": rows, "setup": setup, "rss": rss, "same": same, "peer_note": peer_note}


def fmt_seps(x):
    return f"{x / 1e6:.2f} M"


def _best_pyglib(res):
    """pyg-lib's fastest seconds per minibatch on a graph (None: not measured)."""
    ts = [r["s_mb"] for m, p, r in res["rows"] if m.startswith("pyg-lib")]
    return min(ts) if ts else None


def pyglib_summary(graphs):
    """The headline table: GraphSAGE per minibatch against pyg-lib's fastest way."""
    L = ["## GraphSAGE against pyg-lib, time per minibatch\n",
         "pyg-lib's `neighbor_sample` is what PyG's `NeighborLoader` runs by default; it is "
         "timed here in 1 process and in forked worker processes (NeighborLoader's "
         "`num_workers`), and its fastest way is the reference. Both sample the same "
         f"seeds with fanouts {list(FANOUTS)}; pyg-lib expands each vertex once into one "
         "merged subgraph, our blocks re-sample every destination of every layer (see the "
         "edges/mb column), so the comparison is time per minibatch, not SEPS.\n",
         "The last two columns compare one minibatch per call on both sides, each "
         f"timed as a loop of {PEER_BULK} calls: ours against pyg-lib in 1 process.\n",
         "| graph | ours: GraphSAGE fused, fastest k | ours ms/mb | pyg-lib fastest way | "
         "pyg-lib ms/mb | pyg-lib time / ours | ours one per call, ms/mb | "
         "pyg-lib 1 process / ours, one per call |",
         "|---|---:|---:|---|---:|---:|---:|---:|"]
    any_row = False
    for label, g in graphs.items():
        rows = g["res"]["rows"]
        ours = [(r["s_mb"], r["k"]) for m, p, r in rows
                if m == "GraphSAGE fused" and "1 thread" not in p]
        pyg = [(r["s_mb"], p) for m, p, r in rows if m.startswith("pyg-lib")]
        if not ours or not pyg:
            continue
        (o, k), (t, how) = min(ours), min(pyg)
        one = [r["s_mb"] for m, p, r in rows if m == PER_CALL]
        single = [r["s_mb"] for m, p, r in rows if m.startswith("pyg-lib") and p == "1 process"]
        tail = (f"{one[0] * 1e3:.2f} | {single[0] / one[0]:.2f}x" if one and single
                else "n/a | n/a")
        L.append(f"| {label} | {k} | {o * 1e3:.2f} | {how} | {t * 1e3:.2f} | **{t / o:.2f}x** "
                 f"| {tail} |")
        any_row = True
    if not any_row:
        L.append(f"| (not measured: {PYG_LIB_MISSING or 'no GraphSAGE row'}) | | | | | | | |")
    L.append("")
    return L


def render(args, info, vers, graphs, limit, phases, wall, load0, load1, command, alloc=None):
    L = []
    quick = args.quick
    title = "Sampler benchmark (CPU)" + (" — SMOKE RUN (--quick)" if quick else "")
    L.append(f"# {title}\n")
    if quick:
        L.append("> **Smoke run, not a measurement.** `--quick` (R-MAT scale "
                 f"{args.scale}, {args.repeats} repeats) on a machine shared with other "
                 f"jobs (load average {load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f} at start, "
                 f"{load1[0]:.2f} at the end, on {info['nproc']} cores). It shows that the script "
                 "runs end to end; its numbers are noisy and far from the full benchmark's "
                 "(a scale-14 graph fits in cache). Run the full benchmark on a quiet machine.\n")
    L.append(f"- Command: `{command}`")
    L.append(f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; "
             f"wall time {wall:.0f} s")
    L.append(f"- Machine: {info['nproc']} cores available ({info['cpu_count']} online), "
             f"{info['cpu']}, {info['ram']} RAM, Linux {info['kernel']}; load average at start "
             f"{load0[0]:.2f} / {load0[1]:.2f} / {load0[2]:.2f}, at end {load1[0]:.2f}")
    L.append("- Versions: " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    L.append(f"- Threads: sampling process NUMBA_NUM_THREADS={args.threads}, "
             f"torch.set_num_threads({args.threads}); worker processes 1 thread each "
             f"(numba threading layer: {numba.threading_layer()})")
    L.append(f"- Minibatches: {BATCH_SIZE} distinct uniformly random seeds each (all "
             "methods get the same ones); GraphSAGE fanouts "
             f"{list(FANOUTS)} (replace=False); LADIES / FastGCN {list(LAYER_SIZES)} per layer")
    L.append(f"- Timing: 1 warm-up call, then the median of {args.repeats} repeats "
             "(seconds per bulk; SEPS is the median of the per-repeat rates). Peers sample "
             f"{PEER_BULK} minibatches per repeat, one at a time (scipy: see its k); "
             "'k' is the bulk size for spla and the minibatches per repeat for peers.")
    L.append("- SEPS = sampled edges per second, counting every edge of every block (spla, "
             "scipy, `sample_adj`: each hop re-samples the previous hop's vertices) and, for "
             "`neighbor_sample`, every edge of the merged subgraph it returns (it expands each "
             "vertex once, so it samples fewer edges per minibatch: see the edges/mb column).")
    L.append("- 'vs best torch-sparse': SEPS divided by the fastest torch-sparse configuration "
             "on that graph.")
    L.append("")
    L.append(f"**Random-read limit** (numba `@njit(parallel=True)` gather of random 8-byte "
             f"words from a 1 GiB array, {args.threads} threads, indices precomputed): "
             f"**{limit / 1e6:.0f} M words/s**. Sampling an edge costs at least one such random "
             "read (the picked column index), plus one per sampled row (its indptr).")
    L.append("")
    L.extend(pyglib_summary(graphs))
    for label, g in graphs.items():
        res = g["res"]
        L.append(f"## {label}\n")
        L.append(g["desc"] + "\n")
        ts = [r["seps"] for m, p, r in res["rows"] if m.startswith("torch-sparse")]
        best = max(ts) if ts else None
        pyg = _best_pyglib(res)
        L.append("| method | processes | k | edges/mb | s/bulk | s/minibatch | SEPS | "
                 "vs best torch-sparse (SEPS) | best pyg-lib time / this time (per minibatch) |")
        L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for m, p, r in res["rows"]:
            ratio = f"{r['seps'] / best:.2f}x" if best else "n/a"
            vs_pyg = f"{pyg / r['s_mb']:.2f}x" if pyg else "n/a"
            L.append(f"| {m} | {p} | {r['k']} | {r['edges_mb']:,.0f} | {r['s_bulk']:.4f} | "
                     f"{r['s_mb'] * 1e3:.2f} ms | {fmt_seps(r['seps'])} | {ratio} | {vs_pyg} |")
        L.append("")
        L.append(f"Fused and materialised GraphSAGE return identical minibatches: "
                 f"**{res['same']}** (checked on 2 minibatches).")
        if res["peer_note"]:
            L.append(f"\ntorch-sparse peers skipped: {res['peer_note']}")
        L.append("\nOne-time costs (not in the table):\n")
        L.append("| step | seconds |")
        L.append("|---|---:|")
        for what, s in g["setup"] + res["setup"]:
            L.append(f"| {what} | {s:.3f} |")
        L.append("")
        if res["rss"]:
            L.append("Peak RSS added by sampling one bulk over the loaded graph (fresh process "
                     "per method; method below):\n")
            L.append("| method | k | RSS with graph + sampler loaded | peak added | still held after (the results) | seconds |")
            L.append("|---|---:|---:|---:|---:|---:|")
            for m, r in res["rss"].items():
                L.append(f"| {m} | {r['k']} | {r['base_rss'] / 2**20:.0f} MiB | "
                         f"{(r['peak'] - r['base_rss']) / 2**20:.1f} MiB | "
                         f"{(r['after'] - r['base_rss']) / 2**20:.1f} MiB | {r['seconds']:.2f} |")
            L.append("")
    if graphs and any(g["res"]["rss"] for g in graphs.values()):
        L.append("RSS method: " + " ".join(measure_rss.__doc__.split("\n\n")[1].split()) + "\n")
    if alloc:
        L.append(f"## Allocator: freed memory reused (`kernels.allocator`) against glibc's "
                 f"policy, R-MAT scale {args.scale}\n")
        L.append("Each round runs two fresh processes one after the other, "
                 "`SPLA_MALLOC=reuse` (the default) then `SPLA_MALLOC=system`; each times "
                 f"{ALLOC_MINIBATCHES} minibatches per case in bulks of k after a warm-up "
                 "bulk. Median over the rounds; minor page faults from `getrusage`.\n")
        L.append("| method | k | reuse ms/mb | system ms/mb | system / reuse | "
                 "reuse faults/mb | system faults/mb |")
        L.append("|---|---:|---:|---:|---:|---:|---:|")
        for (m, k), v in alloc.items():
            if set(v) != {"reuse", "system"}:
                continue
            ms = {p: median([r["ms_mb"] for r in v[p]]) for p in v}
            fl = {p: median([r["faults_mb"] for r in v[p]]) for p in v}
            L.append(f"| {m} | {k} | {ms['reuse']:.2f} | {ms['system']:.2f} | "
                     f"{ms['system'] / ms['reuse']:.2f}x | {fl['reuse']:,.0f} | "
                     f"{fl['system']:,.0f} |")
        L.append("")
    for title, (total, ph, rest), prof in phases:
        L.append(f"## Where the time goes: {title}\n")
        L.append("Measured by wrapping spla/sampling functions and kernels with "
                 "`time.perf_counter` from outside (monkeypatching; the library is unchanged); "
                 "mean over the repeats. Indented rows are contained in the row above.\n")
        L.append(f"| phase | calls/bulk | seconds | share of {total:.4f} s |")
        L.append("|---|---:|---:|---:|")
        for lab, (t, c) in ph.items():
            L.append(f"| {lab.replace('  ', '&nbsp;&nbsp;')} | {c} | {t:.4f} | {100 * t / total:.0f} % |")
        L.append(f"| rest (Python glue in the sampler) | | {rest:.4f} | {100 * rest / total:.0f} % |")
        L.append("")
        if prof:
            L.append("cProfile of one bulk (tottime):\n")
            L.append("```\n" + prof + "\n```\n")
    return "\n".join(L) + "\n"


def bench_cora(args, log, graphs):
    from sampling.datasets import load
    C = load("cora").A
    deg = np.asarray(C.row_degrees(), np.float64)
    desc = (f"`sampling.datasets.load('cora').A`: {C.nrows:,} vertices, {C.nnz:,} stored "
            f"entries, mean degree {deg.mean():.1f}. Minibatches of {BATCH_SIZE} random "
            "vertices (of all 2,708; the 140-vertex training split is too small for the "
            "batch size).")
    res = bench_graph("cora", C, args, log, False)
    graphs["Cora"] = {"res": res, "desc": desc, "setup": []}


def main(args):
    t_start = time.perf_counter()
    load0 = os.getloadavg()
    lines = []

    def log(msg):
        print(msg, flush=True)
        lines.append(msg)

    info = machine_info()
    vers = versions()
    command = "python benchmarks/bench_sampling.py " + " ".join(sys.argv[1:])
    log(f"machine: {info}")
    graphs = {}
    phases = []
    alloc = {}
    for which in args.graph_list:
        if which == "cora":
            bench_cora(args, log, graphs)
            continue
        t0 = time.perf_counter()
        if which == "pubmed":
            if not os.path.exists(args.pubmed):
                log(f"skipping pubmed: {args.pubmed} not found (--pubmed)")
                continue
            A, how = pubmed_graph(args.pubmed), f"PubMed ({os.path.basename(args.pubmed)})"
            title = "PubMed (real graph, published vertex order)"
        else:
            A, how = rmat_graph(args.scale)
            title = f"R-MAT scale {args.scale}"
            if which == "rmat-bfs":
                A = bfs_renumbered(A)
                how += ", renumbered in BFS order from its highest-degree vertex"
                title += ", BFS order"
        t_build = time.perf_counter() - t0
        deg = np.asarray(A.row_degrees(), np.float64)
        desc = (f"`{how}`: {A.nrows:,} vertices, {A.nnz:,} stored entries (symmetric, "
                f"structural), mean degree {deg.mean():.1f}, E[d²]/E[d] = "
                f"{(deg ** 2).mean() / max(deg.mean(), 1e-9):,.0f}, "
                f"{(deg == 0).mean() * 100:.0f} % isolated vertices.")
        log(desc)
        res = bench_graph(which, A, args, log, not args.no_rss and which == "rmat")
        graphs[title] = {"res": res, "desc": desc, "setup": [("graph build", t_build)]}
        if which == "rmat":
            for kind in [k for k in ("GraphSAGE fused", "LADIES") if k in OURS]:
                k = 16
                total_ph = profile_phases(kind, A, A.nrows, k, args.repeats)
                prof = cprofile_top(kind, A, A.nrows, k)
                phases.append((f"{kind}, one bulk of {k}, R-MAT scale {args.scale}", total_ph,
                               prof))
                log(f"  phases {kind}: total {total_ph[0]:.3f} s")
            alloc = {} if args.no_alloc else measure_alloc(A, 3, log)
        del A
        gc.collect()
    log("random-read limit ...")
    limit = random_read_limit(args.repeats)
    log(f"  {limit / 1e6:.0f} M words/s")
    wall = time.perf_counter() - t_start
    md = render(args, info, vers, graphs, limit, phases, wall, load0, os.getloadavg(),
                command, alloc)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(md)
    log(f"wrote {args.out} ({wall:.0f} s)")


if __name__ == "__main__":
    if ARGS.rss_child:
        rss_child(ARGS.rss_child)
    elif ARGS.alloc_child:
        alloc_child(ARGS.alloc_child)
    else:
        main(ARGS)
