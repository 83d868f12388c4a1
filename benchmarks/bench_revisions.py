#!/usr/bin/env python
"""Before/after: the same sampling workload on two git revisions, in one run.

    python benchmarks/bench_revisions.py --old REV [--new REV|WORKTREE] [--scale 20]
                                         [--threads 2] [--bulks 1,16,64] [--seeds 1024]
                                         [--repeats 5]
                                         [--out benchmarks/results/revisions_cpu.md]

Each revision is checked out into a temporary git worktree (``--new`` defaults
to this working tree as it is) and measured in its own fresh process, the
two alternating repeat by repeat so that a change in machine load hits both.
Workload: the seeded R-MAT graph ``spla.generators.rmat(scale, 16, seed=0)``
(symmetric; ``--graph rmat-bfs``: renumbered in BFS order; ``--graph pubmed``:
PubMed's real graph instead), bulks of ``k`` minibatches of ``--seeds`` (1,024) distinct random
seeds (the same seeds for both), fused GraphSAGE ``[15, 10, 5]`` and LADIES ``[512,
512]``.  Reported: the median seconds per minibatch of each revision and the
ratio old/new (> 1: the new revision is faster).
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r"""
import json, os, sys, time
import numpy as np
import spla, sampling
from spla.generators import rmat
scale, k, which, seeds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[5])
graph = sys.argv[6]
if graph == "pubmed":
    z = np.load(sys.argv[7], allow_pickle=False)
    A = spla.Matrix.from_csr(z["indptr"], z["indices"], None, (z["indptr"].size - 1,) * 2)
else:
    A = rmat(scale, 16, seed=0)
if graph == "rmat-bfs":  # neighbours get nearby ids, as in real graphs
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order
    S = sp.csr_matrix((np.ones(A.nnz), np.asarray(A.indices), np.asarray(A.indptr)), A.shape)
    o = breadth_first_order(S, int(np.argmax(np.diff(S.indptr))), directed=False,
                            return_predecessors=False)
    seen = np.zeros(A.nrows, bool)
    seen[o] = True
    o = np.concatenate([o, np.flatnonzero(~seen)])
    S = S[o][:, o].tocsr()
    S.sort_indices()
    A = spla.Matrix.from_csr(S.indptr.astype(np.int64), S.indices.astype(np.int64), None, A.shape)
n = A.nrows
rng = np.random.default_rng(12345)
batches = [rng.choice(n, seeds, replace=False) for _ in range(k)]
sampler = (sampling.GraphSAGE(A, [15, 10, 5]) if which == "graphsage"
           else sampling.LADIES(A, [512, 512]))
sampler.sample(batches, seed=1, epoch=0)            # compile / warm the caches
times = []
for r in range(int(sys.argv[4])):
    t0 = time.perf_counter()
    sampler.sample(batches, seed=1, epoch=r + 1)
    times.append((time.perf_counter() - t0) / k)
print(json.dumps(times))
"""


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", required=True, help="the earlier git revision")
    p.add_argument("--new", default=None,
                   help="a later revision, or a directory (default: this working tree)")
    p.add_argument("--scale", type=int, default=20)
    p.add_argument("--graph", default="rmat", choices=("rmat", "rmat-bfs", "pubmed"),
                   help="R-MAT, R-MAT renumbered in BFS order, or PubMed's real graph")
    p.add_argument("--pubmed", default=os.path.join(ROOT, "..", "shared", "data", "pubmed.npz"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--bulks", default="1,16,64")
    p.add_argument("--samplers", default="graphsage,ladies")
    p.add_argument("--seeds", type=int, default=1024, help="seeds per minibatch")
    p.add_argument("--repeats", type=int, default=5,
                   help="timed calls per process (the median is reported)")
    p.add_argument("--rounds", type=int, default=2,
                   help="processes per revision and workload, alternating old/new")
    p.add_argument("--out", default=None, help="append a markdown table to this file")
    return p.parse_args(argv)


def checkout(rev, tmp):
    path = os.path.join(tmp, rev.replace("/", "_"))
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "-q", path, rev],
                   check=True)
    return path


def measure(path, scale, k, which, repeats, threads, seeds, graph, pubmed):
    env = dict(os.environ, PYTHONPATH=path, NUMBA_NUM_THREADS=str(threads),
               OMP_NUM_THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", CHILD, str(scale), str(k), which,
                          str(repeats), str(seeds), graph, os.path.abspath(pubmed)], cwd=path,
                         env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    args = parse_args(argv)
    bulks = [int(b) for b in args.bulks.split(",")]
    samplers = args.samplers.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"old": checkout(args.old, tmp)}
        if args.new is None:
            paths["new"] = ROOT
        elif os.path.isdir(args.new):
            paths["new"] = os.path.abspath(args.new)
        else:
            paths["new"] = checkout(args.new, tmp)
        try:
            for which in samplers:
                for k in bulks:
                    got = {"old": [], "new": []}
                    for _ in range(args.rounds):
                        for side in ("old", "new"):
                            got[side] += measure(paths[side], args.scale, k, which,
                                                 args.repeats, args.threads, args.seeds,
                                                 args.graph, args.pubmed)
                    old = statistics.median(got["old"])
                    new = statistics.median(got["new"])
                    rows.append((which, k, old, new))
                    print(f"{which:9s} k={k:3d}  old {old * 1e3:8.2f} ms/minibatch  "
                          f"new {new * 1e3:8.2f} ms/minibatch  old/new {old / new:5.2f}",
                          flush=True)
        finally:
            for side, path in paths.items():
                if path != ROOT and path.startswith(tmp):
                    subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", path],
                                   check=False)
    if args.out:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        cmd = "python benchmarks/" + os.path.basename(__file__) + " " + " ".join(
            sys.argv[1:] if argv is None else argv)
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(f"\n## {stamp}: {args.old} vs {args.new or 'working tree'}\n\n")
            f.write(f"- machine: {platform.processor() or platform.machine()}, "
                    f"{os.cpu_count()} cpus, {platform.platform()}\n")
            f.write(f"- command: `{cmd}`\n")
            graph = {"rmat": f"R-MAT scale {args.scale} (edge factor 16, seed 0)",
                     "rmat-bfs": f"R-MAT scale {args.scale} (edge factor 16, seed 0) "
                                 "renumbered in BFS order",
                     "pubmed": "PubMed's real graph"}[args.graph]
            f.write(f"- workload: {graph}, "
                    f"{args.seeds:,} seeds per minibatch, {args.threads} threads, median of "
                    f"{args.rounds} x {args.repeats} timed bulks per side\n\n")
            f.write("| sampler | k | old ms/minibatch | new ms/minibatch | old/new |\n")
            f.write("|---|---|---|---|---|\n")
            for which, k, old, new in rows:
                f.write(f"| {which} | {k} | {old * 1e3:.2f} | {new * 1e3:.2f} | "
                        f"{old / new:.2f} |\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
