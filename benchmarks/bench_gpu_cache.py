#!/usr/bin/env python
"""The device feature cache: gather throughput with rows in device memory or read over PCIe.

    python benchmarks/bench_gpu_cache.py [--scale 20] [--width 256] [--repeats 5] [--out FILE]

R-MAT scale 20 (edge factor 16, seed 0), 256-wide float32 features (seeded),
ids = the ``src_nodes`` of 16 GraphSAGE [15, 10, 5] minibatches of 1,024
random seeds sampled on the GPU.  Gathers them (one ``gather`` per
minibatch) with (a) every row read from mapped host memory (a cache of 0
rows), (b) a cache of the 10 % highest-degree rows, (c) the whole matrix in
device memory (``cupy`` fancy indexing); prints GB/s of output, rows/s, hit
rate and bytes read over PCIe, the ratio (b)/(a), and whether (b) equals
(c) bit for bit.  Prints a markdown table; ``--out FILE`` appends it.
Exits 2 without a GPU.
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from gpu_common import require_gpu, timed  # noqa: E402 - after the path setup


def minibatch_ids(cupy, A, batches=16, seed=1):
    """The input vertices of ``batches`` GraphSAGE [15, 10, 5] minibatches, sampled on the GPU."""
    import sampling
    rng = np.random.default_rng(seed)
    n = A.shape[0]
    seeds = [cupy.asarray(rng.choice(n, 1024, replace=False)) for _ in range(batches)]
    mbs = sampling.GraphSAGE(A.to("cuda"), [15, 10, 5]).sample(seeds, seed=seed, epoch=0)
    return [cupy.asarray(mb.input_nodes, dtype=np.int64) for mb in mbs]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=int, default=20)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    cupy = require_gpu("bench_gpu_cache.py")
    import sampling
    from spla.generators import rmat
    sync = cupy.cuda.Device().synchronize
    A = rmat(args.scale, 16, seed=0)
    n = A.shape[0]
    X = np.random.default_rng(0).standard_normal((n, args.width), dtype=np.float32)
    ids = minibatch_ids(cupy, A)
    rows = sum(int(i.size) for i in ids)
    out_bytes = rows * args.width * 4
    caches = {"(a) cache 0, all rows over PCIe":
              sampling.DeviceFeatureCache(X, cache_rows=0, graph=A),
              "(b) 10 % degree cache": sampling.DeviceFeatureCache(X, cache_rows=0.1, graph=A)}
    full = cupy.asarray(X)
    table = [f"## Device feature cache, R-MAT scale {args.scale}, {args.width} float32 wide, "
             f"src_nodes of 16 GraphSAGE [15, 10, 5] minibatches ({rows:,} rows)\n",
             "| placement | ms | GB/s of output | M rows/s | hit rate | PCIe bytes |",
             "|---|---|---|---|---|---|"]
    times = {}
    for label, cache in caches.items():
        t = timed(lambda c=cache: [c.gather(i, check=False) for i in ids], args.repeats, sync)
        s0 = cache.stats()
        [cache.gather(i, check=False) for i in ids]
        s1 = cache.stats()
        hits = s1["hits"] - s0["hits"]
        pcie = s1["pcie_bytes"] - s0["pcie_bytes"]
        times[label] = t
        table.append(f"| {label} | {t * 1e3:.2f} | {out_bytes / t / 1e9:.1f} | "
                     f"{rows / t / 1e6:.1f} | {hits / rows:.1%} | {pcie:,} |")
    t = timed(lambda: [full[i] for i in ids], args.repeats, sync)
    table.append(f"| (c) full matrix in device memory | {t * 1e3:.2f} | "
                 f"{out_bytes / t / 1e9:.1f} | {rows / t / 1e6:.1f} | 100.0% | 0 |")
    a, b = times.values()
    cache_b = caches["(b) 10 % degree cache"]
    equal = all(bool((cache_b.gather(i, check=False) == full[i]).all()) for i in ids)
    table += ["", f"(b)/(a) throughput: {a / b:.2f}x (target >= 3x); (b) equals (c) bit for "
              f"bit: {equal}; {cache_b.describe()}", ""]
    text = "\n".join(table)
    print(text)
    if args.out:
        with open(args.out, "a") as fh:
            fh.write(text + "\n")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
