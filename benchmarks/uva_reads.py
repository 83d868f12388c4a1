#!/usr/bin/env python
"""What a UVA hop reads over the link, and what a device cache of the graph would save.

    python benchmarks/uva_reads.py [--scale 20] [--bulk 16] [--seeds 1024]
                                   [--pubmed ../shared/data/pubmed.npz]
                                   [--out benchmarks/results/uva_reads_cpu.md]

With the graph in mapped host memory (``A.to("cuda", memory="host")``) a
GPU hop reads one column id over the host-device link per sampled edge
(the row pointer is in device memory).  This script counts those reads on
the CPU, from the minibatches themselves (the GPU's are the same), for
bulk GraphSAGE [15, 10, 5] on R-MAT (random ids), R-MAT renumbered in BFS
order and PubMed's real graph:

* **reads per minibatch**, and how many distinct 32-byte sectors and
  128-byte lines of the id array they touch *within one row visit* (what a
  row read by one warp, or through a cache, would transfer instead), with
  8-byte ids and with 4-byte ones (``Matrix.to`` keeps the stored width);
* **a device cache of whole rows** (a Quiver-style hot set for the graph
  rather than the features), filled to 5-50 % of the id array's bytes: the
  share of the reads it would serve, with rows ranked by degree and by the
  reads per byte measured on another bulk of the same size (other seeds).

No GPU is needed: the counts are properties of the samples, not of a
device.  Which of them bounds a UVA hop's time (requests, or bytes, or
neither) is for a device to measure (``bench_gpu.py --sections uva``).
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

FANOUTS = [15, 10, 5]
FRACTIONS = (0.05, 0.1, 0.2, 0.5)


def sampled_positions(A, mbs):
    """Per sampled edge: its position in A's id array and the row visit it
    belongs to (one visit = one destination row of one block)."""
    n = A.nrows
    indptr = np.asarray(A.indptr)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    # Ids ascend within a row, so (row, id) keys ascend over the array.
    keys = rows * n + np.asarray(A.indices, np.int64)
    pos, visit, base = [], [], 0
    for mb in mbs:
        for b in mb.blocks:
            dst, src = np.asarray(b.dst_nodes), np.asarray(b.src_nodes)
            counts = np.diff(np.asarray(b.adj.indptr))
            want = np.repeat(dst, counts) * n + src[np.asarray(b.adj.indices)]
            q = np.searchsorted(keys, want)
            assert np.array_equal(keys[q], want), "a sampled edge is not in A"
            pos.append(q)
            visit.append(base + np.repeat(np.arange(dst.size), counts))
            base += dst.size
    return np.concatenate(pos), np.concatenate(visit)


def pieces(pos, visit, itemsize, width):
    """Distinct ``width``-byte pieces of the id array touched per row visit."""
    per = max(width // itemsize, 1)
    span = int(pos.max(initial=0)) // per + 2
    return np.unique(visit * span + pos // per).size


def cached_share(rank, nbytes, reads):
    """Share of ``reads`` served by the rows first in ``rank``, cache filled
    to each of FRACTIONS of the id array's bytes."""
    cb = np.cumsum(nbytes[rank])
    cr = np.cumsum(reads[rank])
    return [cr[min(np.searchsorted(cb, f * cb[-1]), cb.size - 1)] / max(cr[-1], 1)
            for f in FRACTIONS]


def analyse(label, A, bulk, seeds):
    from sampling import GraphSAGE
    n = A.nrows
    s = GraphSAGE(A, FANOUTS)

    def one_bulk(rng_seed):
        rng = np.random.default_rng(rng_seed)
        mbs = s.sample([rng.choice(n, min(seeds, n), replace=False) for _ in range(bulk)],
                       seed=rng_seed)
        pos, visit = sampled_positions(A, mbs)
        rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(A.indptr)))
        return pos, visit, np.bincount(rows[pos], minlength=n)

    pos, visit, reads = one_bulk(1)
    _, _, pilot = one_bulk(2)
    itemsize = np.asarray(A.indices).dtype.itemsize
    nbytes = np.diff(np.asarray(A.indptr)) * itemsize
    by_degree = np.argsort(-nbytes, kind="stable")
    by_pilot = np.argsort(-(pilot / np.maximum(nbytes, 1)), kind="stable")
    return {"label": label, "n": n, "nnz": A.nnz, "itemsize": itemsize,
            "reads": pos.size / bulk,
            "pieces": {(size, width): pieces(pos, visit, size, width) / bulk
                       for size in (8, 4) for width in (32, 128)},
            "degree": cached_share(by_degree, nbytes, reads),
            "pilot": cached_share(by_pilot, nbytes, reads)}


def table(results, bulk, seeds):
    out = ["", f"GraphSAGE {FANOUTS}, bulks of {bulk} minibatches of {seeds:,} random seeds "
           "(PubMed: at most its vertex count); per minibatch.", "",
           "Distinct pieces of the id array touched per row visit, with 8- and 4-byte ids "
           "(and the ratio to the reads):", "",
           "| graph | vertices | entries | stored id bytes | id reads | 32-B sectors, 8-byte "
           "ids | 128-B lines, 8-byte | 32-B sectors, 4-byte | 128-B lines, 4-byte |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        cells = " | ".join(f"{v:,.0f} ({v / r['reads']:.2f}x)" for v in r["pieces"].values())
        out.append(f"| {r['label']} | {r['n']:,} | {r['nnz']:,} | {r['itemsize']} | "
                   f"{r['reads']:,.0f} | {cells} |")
    heads = " | ".join(f"{f:.0%}" for f in FRACTIONS)
    out += ["", "Share of the id reads a device cache of whole rows would serve, filled to "
            "a share of the id array's bytes, rows ranked by degree or by reads per byte "
            "measured on another bulk (other seeds):", "",
            f"| graph | ranking | {heads} |", "|---|---|" + "---:|" * len(FRACTIONS)]
    for r in results:
        for key, name in (("degree", "degree"), ("pilot", "reads per byte, another bulk")):
            out.append(f"| {r['label']} | {name} | "
                       + " | ".join(f"{v:.1%}" for v in r[key]) + " |")
    return out


def main(argv=None):
    import numba

    from graphs import PUBMED, locality_graphs
    from machine import emit_results, results_header
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=int, default=20)
    p.add_argument("--bulk", type=int, default=16)
    p.add_argument("--seeds", type=int, default=1024)
    p.add_argument("--pubmed", default=PUBMED,
                   help="PubMed's .npz ('' skips it; default: ../shared/data/pubmed.npz)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    load0, t0 = os.getloadavg(), time.perf_counter()
    results = []
    for label, A in locality_graphs(a.scale, a.pubmed):
        results.append(analyse(label, A, a.bulk, a.seeds))
        print(table(results[-1:], a.bulk, a.seeds)[-2], flush=True)
    cmd = "python benchmarks/uva_reads.py " + " ".join(sys.argv[1:] if argv is None else argv)
    md = results_header("What a UVA hop reads over the link (counted on the CPU)", cmd.strip(),
                        time.perf_counter() - t0, load0,
                        {"python": sys.version.split()[0], "numpy": np.__version__,
                         "numba": numba.__version__})
    emit_results(md + table(results, a.bulk, a.seeds), a.out)


if __name__ == "__main__":
    main()
