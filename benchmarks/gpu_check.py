#!/usr/bin/env python
"""GPU check: the samplers on cupy arrays equal the CPU's, and bulk GraphSAGE speed.

    python benchmarks/gpu_check.py

On a machine with a CUDA GPU and cupy: GraphSAGE (uniform, with
replacement), LADIES and FastGCN on Cora give the same minibatches on the
GPU as on the CPU for the same seed; ``compact_columns`` works on a
4 x 2**40 matrix (nothing sized by the column count); then fused GraphSAGE
[15, 10, 5] on R-MAT scale 20 (edge factor 16, seed 0), bulks of k
minibatches of 1,024 random seeds: the median of 5 timed bulks after a
warm-up, in ms per bulk, ms per minibatch and sampled edges per second.
Exits with a message on a machine without a GPU.
"""

import sys
import time

import numpy as np

try:
    import cupy
    from numba import cuda
    if not cuda.is_available():
        raise RuntimeError("numba.cuda.is_available() is False")
except Exception as exc:  # noqa: BLE001 - no cupy, no driver, no device
    sys.exit(f"gpu_check: needs a CUDA GPU and cupy ({exc})")
import numba  # noqa: E402

import spla  # noqa: E402
import sampling  # noqa: E402
import sampling.datasets  # noqa: E402
from spla.generators import rmat  # noqa: E402


def same_minibatches(a, b):
    to_host = spla.backend.to_host
    return all(x.adj.to("cpu").isequal(y.adj.to("cpu"))
               and np.array_equal(to_host(x.src_nodes), to_host(y.src_nodes))
               for ma, mb in zip(a, b) for x, y in zip(ma.blocks, mb.blocks))


def check_equal_to_cpu(rng):
    A = sampling.datasets.load("cora").A
    Ag = A.to("cuda")
    seeds = [rng.choice(A.nrows, 64, replace=False) for _ in range(4)]
    makers = {"graphsage": lambda G: sampling.GraphSAGE(G, fanouts=[5, 5]),
              "graphsage_replace": lambda G: sampling.GraphSAGE(G, fanouts=[5, 5], replace=True),
              "ladies": lambda G: sampling.LADIES(G, layer_sizes=[64, 64]),
              "fastgcn": lambda G: sampling.FastGCN(G, layer_sizes=[64, 64])}
    ok = True
    for name, make in makers.items():
        cpu = make(A).sample(seeds, seed=3)
        gpu = make(Ag).sample([cupy.asarray(s) for s in seeds], seed=3)
        same = same_minibatches(cpu, gpu)
        ok &= same
        print(name, "GPU == CPU:", same, flush=True)
    big = spla.Matrix.from_coo([0, 1, 3], [5, 2**40 - 1, 2**39], [1.0, 2.0, 3.0],
                               shape=(4, 2**40)).to("cuda")
    C, kept = spla.compact_columns(big)
    print("compact 2**40 cols on GPU:", spla.backend.to_host(kept).tolist(), C.shape, flush=True)
    return ok


def throughput(rng, bulks=(16, 64, 256), repeats=5):
    G = rmat(20, 16, seed=0).to("cuda")
    n = G.nrows
    sync = cupy.cuda.Device().synchronize
    for k in bulks:
        batches = [cupy.asarray(rng.choice(n, 1024, replace=False)) for _ in range(k)]
        s = sampling.GraphSAGE(G, [15, 10, 5])
        mbs = s.sample(batches, seed=1, epoch=0)
        sync()
        edges = sum(int(b.adj.nnz) for mb in mbs for b in mb.blocks)
        times = []
        for r in range(repeats):
            t0 = time.perf_counter()
            s.sample(batches, seed=1, epoch=r + 1)
            sync()
            times.append(time.perf_counter() - t0)
        t = float(np.median(times))
        print(f"GPU GraphSAGE rmat20 k={k}: {t * 1e3:.1f} ms/bulk, {t / k * 1e3:.3f} "
              f"ms/minibatch, {edges / t / 1e6:.1f} M SEPS", flush=True)


def main():
    print("numba", numba.__version__, "cupy", cupy.__version__, flush=True)
    rng = np.random.default_rng(0)
    ok = check_equal_to_cpu(rng)
    throughput(rng)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
