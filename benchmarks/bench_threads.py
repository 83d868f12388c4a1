#!/usr/bin/env python
"""What a parallel region costs on each numba threading layer, and what that does to sampling.

    python benchmarks/bench_threads.py [--layers omp,tbb] [--rounds 2] [--scale 20]
                                       [--out benchmarks/results/threads_cpu.md]

Each layer runs in its own process (numba picks its layer once per
process; ``NUMBA_THREADING_LAYER``), the layers alternating ``--rounds``
times, on the default thread count.  Per process:

* a trivial ``prange`` kernel of one region, called back to back and after
  a pause of 1 ms and 10 ms of Python (median of 200 calls): the region's
  fixed cost, wake-up included;
* GraphSAGE [15, 10, 5] on PubMed (``../shared/data/pubmed.npz`` or
  ``--pubmed``), one minibatch per call, 8 and 1,024 seeds (64 calls);
* the same in bulks of 16 on R-MAT at ``--scale`` with 1,024 seeds.

ms per minibatch, the best of 3 passes.  The contended case is
``bench_contention.py --env NUMBA_THREADING_LAYER=omp`` against its default.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [ROOT, HERE]

CHILD = r"""
import json, sys, time
import numpy as np
import kernels, numba
from numba import prange
from graphs import pubmed_graph
from sampling import GraphSAGE
from spla.generators import rmat

@numba.njit(parallel=True, nogil=True)
def one_region(a):
    for i in prange(a.size):
        a[i] += 1

def region_us(pause_us):
    a = np.zeros(64)
    one_region(a)
    times = []
    for _ in range(200):
        t = time.perf_counter()
        while time.perf_counter() - t < pause_us * 1e-6:
            pass
        t = time.perf_counter()
        one_region(a)
        times.append(time.perf_counter() - t)
    return float(np.median(times)) * 1e6

def per_minibatch(A, seeds, bulk, calls=64):
    s = GraphSAGE(A, [15, 10, 5])
    rng = np.random.default_rng(0)
    batches = [rng.choice(A.nrows, seeds, replace=False) for _ in range(calls)]
    s.sample(batches[:bulk], seed=1, batch_ids=list(range(bulk)))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        for j in range(0, calls, bulk):
            s.sample(batches[j:j + bulk], seed=1, batch_ids=list(range(j, j + bulk)))
        best = min(best, (time.perf_counter() - t) / calls)
    return best * 1e3

pubmed, scale = sys.argv[1], int(sys.argv[2])
out = {"region": {p: region_us(p) for p in (0, 1000, 10000)}}
P = pubmed_graph(pubmed)
out["pubmed"] = {s: per_minibatch(P, s, 1) for s in (8, 1024)}
out["rmat"] = per_minibatch(rmat(scale, 16, seed=0), 1024, 16)
out["layer"] = numba.threading_layer()
out["threads"] = numba.get_num_threads()
print(json.dumps(out))
"""


def run_layer(layer, pubmed, scale):
    env = dict(os.environ, NUMBA_THREADING_LAYER=layer,
               PYTHONPATH=os.pathsep.join([ROOT, HERE, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", CHILD, pubmed, str(scale)], env=env,
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"bench_threads: the {layer} run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    from machine import emit_results, results_header
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", default="omp,tbb",
                   help="numba threading layers, comma separated (default omp,tbb)")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    p.add_argument("--scale", type=int, default=20, help="R-MAT scale (default 20)")
    p.add_argument("--pubmed", default=os.path.join(ROOT, "..", "shared", "data", "pubmed.npz"))
    p.add_argument("--out", default=None, help="write a results file here")
    a = p.parse_args(argv)
    layers = [x.strip() for x in a.layers.split(",") if x.strip()]
    load0, t0 = os.getloadavg(), time.perf_counter()
    rows = []
    for r in range(a.rounds):
        for layer in layers:
            res = run_layer(layer, a.pubmed, a.scale)
            reg, pm = res["region"], res["pubmed"]
            rows.append(f"| {r + 1} | {layer} (ran on {res['layer']}, {res['threads']} threads) | "
                        f"{reg['0']:.1f} | {reg['1000']:.1f} | {reg['10000']:.1f} | "
                        f"{pm['8']:.3f} | {pm['1024']:.3f} | {res['rmat']:.2f} |")
            print(rows[-1], flush=True)
    import numba
    import numpy
    cmd = "python benchmarks/bench_threads.py " + " ".join(argv if argv is not None
                                                            else sys.argv[1:])
    md = results_header("Parallel regions and sampling on each numba threading layer (CPU)",
                        cmd.strip(), time.perf_counter() - t0, load0,
                        {"python": sys.version.split()[0], "numpy": numpy.__version__,
                         "numba": numba.__version__})
    md += ["", "| round | layer | region us, back to back | after 1 ms | after 10 ms | "
           "PubMed 8 seeds, ms/mb (one per call) | PubMed 1,024 seeds | "
           f"R-MAT scale {a.scale}, bulk 16, ms/mb |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    emit_results(md + rows, a.out)


if __name__ == "__main__":
    main()
