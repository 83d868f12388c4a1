#!/usr/bin/env python
"""spla-core benchmark: SpGEMM, extraction and row sampling against peers.

Workloads (full size; ``--scale-down N`` divides every size by N and the
R-MAT scale by log2(N)):

1. ``Q @ A`` (plus_times): A is a random 1M x 1M matrix with 16 entries per
   row (float32), Q a 100k-row selection matrix (one entry per row, random
   rows): a row gather.
2. ``A @ A`` (plus_times, float32) on R-MAT graphs: scale 18, edge factor 8
   with milder probabilities a=0.45, b=c=0.15 (262k vertices, 4.2M stored
   entries, 133M entries in A @ A), and the Graph500 probabilities
   (0.57/0.19/0.19) at scale 15, edge factor 8 (33k vertices, 0.47M stored,
   ~58M in A @ A).  With Graph500's probabilities at scale 18 the square
   holds about 1.2 billion entries (~2.9e9 multiply-adds), over the memory
   (12 GB) and time (10 minutes) budgets of this benchmark.  The products
   take seconds, so their warm-up run is a tiny product (same dtypes).
3. ``A[rows, :]`` and ``A[:, cols]`` for 100k random rows / columns of A.
4. ``sample_rows(., k=10)``: on every row of A (1M rows, 10M picks),
   uniform (structural A) and weighted; and on ``Q1 @ A`` with Q1 a 1M-row
   selection matrix, fused (lazy product, never formed) against
   materialised (``(Q1 @ A).new()`` then sample).

Peers, in the same process at the same thread count: scipy.sparse
(single-threaded whatever the setting) and python-graphblas (SuiteSparse,
``gb.ss.config['nthreads']``).  A peer that fails to import is skipped with
a message.  Every timing is the median of ``--repeats`` runs after one
warm-up run (which also compiles the numba kernels).

Usage::

    python benchmarks/bench_spla.py --threads 2 --out benchmarks/results/spla_cpu.md
    python benchmarks/bench_spla.py --scale-down 20 --out /tmp/smoke.md   # quick smoke test
"""

import os
import sys


def _threads_from_argv(argv):
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--threads="):
            return a.split("=", 1)[1]
    return "2"


# Thread counts must be fixed before numba (or any OpenMP/BLAS runtime) loads.
_T = _threads_from_argv(sys.argv[1:])
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "MKL_NUM_THREADS"):
    os.environ[_var] = _T
assert "numba" not in sys.modules

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import numpy as np  # noqa: E402
import numba  # noqa: E402

import spla  # noqa: E402
from spla.generators import random_csr, rmat, selection_matrix  # noqa: E402


# ---- infrastructure -----------------------------------------------------------

def log(msg):
    print(msg, flush=True)


def peak_rss_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def bench(fn, repeats, warmup=None):
    """(median seconds, result size) of ``repeats`` runs after one warm-up.

    The warm-up runs ``warmup`` if given (a smaller instance with the same
    dtypes: enough to compile the numba kernels when the full-size run is
    expensive), else ``fn`` itself.
    """
    r = (warmup or fn)()
    del r
    gc.collect()
    times = []
    size = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = fn()
        times.append(time.perf_counter() - t0)
        size = _size(r)
        del r
        gc.collect()
    return statistics.median(times), size


def _size(r):
    for attr in ("nnz", "nvals"):
        if hasattr(r, attr):
            return int(getattr(r, attr))
    return None


class Table:
    def __init__(self):
        self.rows = []

    def add(self, op, ours, peer=None, peer_s=None, work=None, unit=None, note=""):
        self.rows.append((op, ours, peer, peer_s, work, unit, note))
        ratio = f"{peer_s / ours:6.2f}x" if peer_s else ""
        thr = f"  {work / ours / 1e6:8.1f} M{unit}/s" if work else ""
        log(f"  {op:<46} spla {ours:8.4f}s" +
            (f" | {peer:<10} {peer_s:8.4f}s  peer/spla {ratio}" if peer_s else "") + thr)

    def markdown(self):
        out = ["| operation | spla (s) | peer | peer (s) | peer / spla | throughput | note |",
               "|---|---:|---|---:|---:|---:|---|"]
        for op, ours, peer, peer_s, work, unit, note in self.rows:
            out.append("| {} | {:.4f} | {} | {} | {} | {} | {} |".format(
                op, ours, peer or "—",
                f"{peer_s:.4f}" if peer_s else "—",
                f"{peer_s / ours:.2f}" if peer_s else "—",
                f"{work / ours / 1e6:.1f} M {unit}/s" if work else "—",
                note))
        return "\n".join(out)


# ---- peers ------------------------------------------------------------------------

def load_peers(threads):
    peers = {}
    try:
        import scipy
        import scipy.sparse  # noqa: F401
        peers["scipy"] = scipy
    except Exception as e:  # pragma: no cover - depends on the machine
        log(f"peer scipy skipped: {type(e).__name__}: {e}")
    try:
        import graphblas as gb
        gb.ss.config["nthreads"] = threads
        peers["graphblas"] = gb
    except Exception as e:  # pragma: no cover
        log(f"peer python-graphblas skipped: {type(e).__name__}: {e}")
    return peers


def to_scipy(M):
    import scipy.sparse as sp
    vals = np.ones(M.nnz, np.float32) if M.values is None else np.asarray(M.values)
    return sp.csr_matrix((vals, np.asarray(M.indices), np.asarray(M.indptr)), shape=M.shape)


def to_gb(gb, M):
    vals = 1.0 if M.values is None else np.asarray(M.values)
    G = gb.Matrix.from_csr(np.asarray(M.indptr), np.asarray(M.indices), vals,
                           dtype=gb.dtypes.FP32, nrows=M.nrows, ncols=M.ncols)
    G.wait()
    return G


def gb_new(expr):
    C = expr.new()
    C.wait()   # SuiteSparse runs in non-blocking mode: force the work
    return C


# ---- workloads ---------------------------------------------------------------------

def run(args):
    threads = args.threads
    N = args.scale_down
    reps = args.repeats
    n = max(1000, 1_000_000 // N)
    m = max(100, 100_000 // N)
    shrink = int(round(math.log2(N))) if N > 1 else 0
    rng = np.random.default_rng(12345)
    peers = load_peers(threads)
    table = Table()
    notes = {}

    log(f"building A: random_csr({n}, {n}, 16) float32 ...")
    t0 = time.perf_counter()
    A = random_csr(n, n, 16, seed=1)
    notes["build A"] = time.perf_counter() - t0
    Astruct = A.structure()
    q_rows = rng.integers(0, n, m)
    Q = selection_matrix(q_rows, n)
    sp_A = to_scipy(A) if "scipy" in peers else None
    gb_A = to_gb(peers["graphblas"], A) if "graphblas" in peers else None
    want = set(args.workloads.split(","))

    sections = notes.setdefault("sections", {})
    ts = time.perf_counter()
    if "spgemm" in want:
        log(f"(1) Q @ A: Q {m} x {n} selection, A {n} x {n} with 16/row")
        ours, nnz = bench(lambda: (Q @ A).new(), reps)
        if "scipy" in peers:
            sp_Q = to_scipy(Q)
            s, nnz_p = bench(lambda: sp_Q @ sp_A, reps)
            assert nnz_p == nnz, (nnz_p, nnz)
            table.add(f"Q @ A (gather {m} rows)", ours, "scipy", s, nnz, "entries")
        if "graphblas" in peers:
            gb = peers["graphblas"]
            gb_Q = to_gb(gb, Q)
            g, nnz_p = bench(lambda: gb_new(gb_Q.mxm(gb_A, gb.semiring.plus_times)), reps)
            assert nnz_p == nnz, (nnz_p, nnz)
            table.add(f"Q @ A (gather {m} rows)", ours, "graphblas", g, nnz, "entries")
        if not peers:
            table.add(f"Q @ A (gather {m} rows)", ours, work=nnz, unit="entries")
        sections["spgemm"] = time.perf_counter() - ts
        log(f"    section {sections['spgemm']:.1f}s, peak RSS so far {peak_rss_gb():.2f} GB")

    ts = time.perf_counter()

    if "aa" in want:
        for label, scale, ef, probs in (
                ("R-MAT a=.45,b=c=.15", 18 - shrink, 8, (0.45, 0.15, 0.15)),
                ("R-MAT Graph500 probs", 15 - shrink, 8, (0.57, 0.19, 0.19))):
            t0 = time.perf_counter()
            G = rmat(scale, ef, seed=7, a=probs[0], b=probs[1], c=probs[2], weighted=True)
            tg = time.perf_counter() - t0
            d = np.asarray(G.row_degrees(), dtype=np.float64)
            flops = float((d * d).sum())
            op = f"A @ A ({label}, scale {scale}, ef {ef}, nnz {G.nnz})"
            log(f"(2) {op}: built in {tg:.2f}s, {flops:.3g} multiply-adds")
            notes[f"rmat({scale}, {ef}) build"] = tg
            # Full-size products take seconds: warm up on a tiny graph.
            small = rmat(6, 4, seed=7, weighted=True)
            ours, nnz = bench(lambda: (G @ G).new(), reps, lambda: (small @ small).new())
            log(f"    A @ A holds {nnz} entries")
            done = False
            if "scipy" in peers:
                sp_G = to_scipy(G)
                sp_small = to_scipy(small)
                s, nnz_p = bench(lambda: sp_G @ sp_G, reps, lambda: sp_small @ sp_small)
                assert nnz_p == nnz, (nnz_p, nnz)
                table.add(op, ours, "scipy", s, flops, "mult-adds",
                          f"{nnz / 1e6:.1f} M entries out")
                del sp_G
                done = True
            if "graphblas" in peers:
                gb = peers["graphblas"]
                gb_G = to_gb(gb, G)
                gb_small = to_gb(gb, small)
                g, nnz_p = bench(lambda: gb_new(gb_G.mxm(gb_G, gb.semiring.plus_times)), reps,
                                 lambda: gb_new(gb_small.mxm(gb_small, gb.semiring.plus_times)))
                assert nnz_p == nnz, (nnz_p, nnz)
                table.add(op, ours, "graphblas", g, flops, "mult-adds",
                          f"{nnz / 1e6:.1f} M entries out")
                del gb_G
                done = True
            if not done:
                table.add(op, ours, work=flops, unit="mult-adds")
            del G
            gc.collect()
            sections[f"aa scale {scale}"] = time.perf_counter() - ts
            log(f"    section {sections[f'aa scale {scale}']:.1f}s, "
                f"peak RSS so far {peak_rss_gb():.2f} GB")
            ts = time.perf_counter()

    ts = time.perf_counter()

    if "extract" in want:
        rows = rng.integers(0, n, m)
        cols = rng.integers(0, n, m)
        # Distinct columns (a permutation's, a partition's) take a kernel of
        # their own (docs/design.rst); random ones repeat about 5 %.  (Own
        # generator: the later workloads draw from ``rng`` as before.)
        distinct = np.random.default_rng(11).choice(n, m, replace=False)
        log(f"(3) extraction of {m} random rows / columns of A")
        for what, ours_fn, sp_fn, gb_fn in (
                (f"A[rows, :] ({m} rows)",
                 lambda: spla.extract_rows(A, rows),
                 lambda: sp_A[rows],
                 lambda: gb_new(gb_A[rows, :])),
                (f"A[:, cols] ({m} cols)",
                 lambda: spla.extract_cols(A, cols),
                 lambda: sp_A[:, cols],
                 lambda: gb_new(gb_A[:, cols])),
                (f"A[:, cols] ({m} distinct cols)",
                 lambda: spla.extract_cols(A, distinct),
                 lambda: sp_A[:, distinct],
                 lambda: gb_new(gb_A[:, distinct]))):
            ours, nnz = bench(ours_fn, reps)
            done = False
            if "scipy" in peers:
                s, nnz_p = bench(sp_fn, reps)
                assert nnz_p == nnz, (nnz_p, nnz)
                table.add(what, ours, "scipy", s, nnz, "entries")
                done = True
            if "graphblas" in peers:
                g, nnz_p = bench(gb_fn, reps)
                assert nnz_p == nnz, (nnz_p, nnz)
                table.add(what, ours, "graphblas", g, nnz, "entries")
                done = True
            if not done:
                table.add(what, ours, work=nnz, unit="entries")
        sections["extract"] = time.perf_counter() - ts
        log(f"    section {sections['extract']:.1f}s, peak RSS so far {peak_rss_gb():.2f} GB")

    ts = time.perf_counter()

    if "sample" in want:
        k = 10
        log(f"(4) sample_rows(k={k}) on the {n} rows of A ({k * n} picks)")
        ours, picks = bench(lambda: spla.sample_rows(Astruct, k, seed=3), reps)
        table.add(f"sample_rows(A, {k}) uniform (structural A)", ours, work=picks,
                  unit="picks", note="no peer")
        ours, picks = bench(lambda: spla.sample_rows(A, k, seed=3), reps)
        table.add(f"sample_rows(A, {k}) weighted", ours, work=picks, unit="picks",
                  note="prefix sums computed in the call")
        Q1 = selection_matrix(rng.integers(0, n, n), n)
        for label, M in (("uniform", Astruct), ("weighted", A)):
            if label == "weighted":
                # One-off per-graph cost: a fresh matrix has no cached prefix.
                ours, picks = bench(lambda: spla.sample_rows(
                    Q1 @ A.with_values(A.values), k, seed=3), reps)
                table.add(f"sample_rows(Q1 @ A, {k}) weighted, fused, fresh A", ours,
                          work=picks, unit="picks", note="includes the prefix-sum build")
            fused, picks = bench(lambda: spla.sample_rows(Q1 @ M, k, seed=3), reps)
            table.add(f"sample_rows(Q1 @ A, {k}) {label}, fused", fused, work=picks,
                      unit="picks", note="weighted: prefix cached on A" if label == "weighted"
                      else "")
            mat, picks_m = bench(lambda: spla.sample_rows((Q1 @ M).new(), k, seed=3), reps)
            assert picks_m == picks
            table.add(f"sample_rows((Q1 @ A).new(), {k}) {label}, materialised", mat,
                      work=picks, unit="picks",
                      note=f"materialised / fused = {mat / fused:.1f}")
        sections["sample"] = time.perf_counter() - ts
        log(f"    section {sections['sample']:.1f}s, peak RSS so far {peak_rss_gb():.2f} GB")
    return table, notes, n, m


# ---- report --------------------------------------------------------------------------

def machine():
    info = {"nproc": os.cpu_count(),
            "usable cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["CPU"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        info["CPU"] = platform.processor() or "unknown"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    info["RAM"] = f"{int(line.split()[1]) / 2 ** 20:.1f} GiB"
                    break
    except OSError:
        pass
    try:
        info["load average at start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        pass
    return info


def versions():
    import scipy
    v = {"python": platform.python_version(), "numpy": np.__version__,
         "numba": numba.__version__, "scipy": scipy.__version__,
         "spla": spla.__version__}
    try:
        import graphblas as gb
        v["python-graphblas"] = gb.__version__
        lib = gb.ss.about["library_version"]
        v["SuiteSparse:GraphBLAS"] = ".".join(str(x) for x in lib)
    except Exception as e:
        v["python-graphblas"] = f"not available ({type(e).__name__})"
    return v


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2,
                   help="threads for numba and GraphBLAS (default 2)")
    p.add_argument("--scale-down", type=int, default=1, metavar="N",
                   help="divide every size by N (R-MAT scale by log2 N); 10 or 20 for a smoke test")
    p.add_argument("--repeats", type=int, default=3, help="timed runs per measurement (median)")
    p.add_argument("--workloads", default="spgemm,aa,extract,sample",
                   help="comma-separated subset of spgemm,aa,extract,sample")
    p.add_argument("--out", default=os.path.join(_ROOT, "benchmarks", "results", "spla_cpu.md"),
                   help="markdown results file")
    args = p.parse_args(argv)
    if args.scale_down < 1 or args.repeats < 1 or args.threads < 1:
        p.error("--scale-down, --repeats and --threads must be >= 1")
    if str(args.threads) != os.environ.get("NUMBA_NUM_THREADS"):
        p.error("--threads must be given as '--threads N' or '--threads=N'")
    log(f"spla benchmark: {args.threads} threads (numba {numba.get_num_threads()}), "
        f"scale-down {args.scale_down}, {args.repeats} repeats")
    mach = machine()
    start = datetime.datetime.now().astimezone()
    t0 = time.perf_counter()
    table, notes, n, m = run(args)
    wall = time.perf_counter() - t0
    cmd = "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, _ROOT)]
                               + (argv if argv is not None else sys.argv[1:]))
    lines = [
        "# spla core benchmark (CPU)",
        "",
        f"- date: {start.isoformat(timespec='seconds')}",
        f"- command: `{cmd}`",
        f"- threads: {args.threads} (numba and GraphBLAS; scipy.sparse is single-threaded)",
        f"- sizes: A = random {n} x {n}, 16 entries per row (float32); "
        f"Q = {m}-row selection; scale-down {args.scale_down}",
        f"- timing: median of {args.repeats} runs after one warm-up run; "
        f"total wall time {wall:.0f} s, peak RSS {peak_rss_gb():.2f} GB",
        "- machine: " + ", ".join(f"{k} {v}" for k, v in mach.items()),
        "- versions: " + ", ".join(f"{k} {v}" for k, v in versions().items()),
    ]
    if args.scale_down > 1:
        lines.append(f"- **smoke run** ({args.scale_down}x smaller than the full benchmark): "
                     "timings are not representative")
    lines += ["", "peer / spla > 1 means spla is faster. Throughput is spla's: output "
              "entries/s (SpGEMM, extraction), multiply-adds/s (A @ A) or sampled "
              "entries/s (sample_rows; target >= 50 M/s on 2 threads).", "",
              table.markdown(), "",
              "Set-up times (s, not in the table): "
              + ", ".join(f"{k} {v:.2f}" for k, v in notes.items() if k != "sections"),
              "",
              "Wall time per section (s, warm-ups, peers and set-up included): "
              + ", ".join(f"{k} {v:.1f}" for k, v in notes["sections"].items()),
              "", f"Load average at the end: "
              + " ".join(f"{x:.2f}" for x in os.getloadavg()), ""]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    log("\n".join(lines))
    log(f"written to {args.out}")


if __name__ == "__main__":
    main()
