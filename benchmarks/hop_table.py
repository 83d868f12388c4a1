#!/usr/bin/env python
"""The GPU hops' occurrence table: group-major or vertex-major slots.

    python benchmarks/hop_table.py [--scale 20] [--bulks 16,64] [--seeds 1024]
                                   [--pubmed ../shared/data/pubmed.npz] [--gpu]
                                   [--out benchmarks/results/hop_table_cpu.md]

A fused GPU hop (``kernels.cuda.hops``) records every (minibatch, column)
occurrence of a bulk in one table: an atomic minimum per pick in its
sampling step, a read per pick in its flags step.  In a dense table the
slot of column ``v`` of minibatch ``g`` is ``g * n + v`` (group-major) or
``v * G + g`` (vertex-major, ``kernels.cuda.hop_table.TABLE_ORDER``).
The minibatches of a bulk pick the same high-degree vertices again and
again; vertex-major slots put those entries side by side.

Without a GPU this script counts, from the CPU's minibatches of bulk
GraphSAGE [15, 10, 5] (the GPU's are the same), what each order asks of
device memory per minibatch: the table accesses, the distinct 32-byte
sectors and 64-byte pieces they touch, the most accesses one 128-byte line
takes in a hop (where atomics would queue), and the sectors a 50 MiB, 16-way
LRU cache of sectors (an H100's or H200's L2, roughly) would miss when the
accesses come in the order of a hop's sampling step (every row's own
vertex, then every row's first pick, then every row's second, ...).  The
counts are properties of the samples and of a cache model, not of a
device.  With ``--gpu`` (cupy and a CUDA device) it instead times the
fused hops on R-MAT with each order, and with the table cleared for every
bulk or kept from one bulk to the next (``KEEP_SHARE``), the four
configurations alternating, and checks that the blocks are the same.
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

FANOUTS = [15, 10, 5]
ORDERS = ("group", "vertex")
#: The modelled cache: bytes, ways, and the sector it tracks.
L2_BYTES, L2_WAYS, SECTOR = 50 << 20, 16, 32


def hop_accesses(mbs):
    """Per hop, the (group, vertex) pairs of the table accesses of its sampling
    step, in the order modelled: own vertices first, then pick ``t`` of every
    row before pick ``t + 1`` of any."""
    L = len(mbs[0].blocks)
    hops = []
    for h in range(L):  # hop h fills block L - 1 - h (the seeds' block is last)
        gs, vs, ts = [], [], []
        for g, mb in enumerate(mbs):
            b = mb.blocks[L - 1 - h]
            dst, src = np.asarray(b.dst_nodes), np.asarray(b.src_nodes)
            ptr, idx = np.asarray(b.adj.indptr), np.asarray(b.adj.indices)
            t = np.arange(idx.size) - np.repeat(ptr[:-1], np.diff(ptr))
            gs.append(np.full(dst.size + idx.size, g, np.int64))
            vs.append(np.concatenate([dst, src[idx]]).astype(np.int64))
            ts.append(np.concatenate([np.full(dst.size, -1), t]))
        order = np.argsort(np.concatenate(ts), kind="stable")
        hops.append((np.concatenate(gs)[order], np.concatenate(vs)[order]))
    return hops


def slots(g, v, G, n, order):
    """Dense-table slots of the pairs, as ``kernels.cuda.hop_table`` lays them out."""
    return v * G + g if order == "vertex" else g * n + v


def _lru_misses(sectors, nsets, ways):
    import numba

    @numba.njit(cache=False)
    def run(sectors, nsets, ways):
        tags = np.full((nsets, ways), -1, np.int64)
        age = np.zeros((nsets, ways), np.int64)
        miss = 0
        for clock in range(sectors.size):
            s = sectors[clock]
            st = ((s >> 2) * 0x9E3779B1) % nsets  # sets by 128-byte line
            hit = -1
            for w in range(ways):
                if tags[st, w] == s:
                    hit = w
                    break
            if hit < 0:
                miss += 1
                hit = 0
                for w in range(1, ways):
                    if age[st, w] < age[st, hit]:
                        hit = w
                tags[st, hit] = s
            age[st, hit] = clock + 1
        return miss

    return run(sectors, nsets, ways)


def model(label, A, bulk, seeds):
    """Per order: accesses, distinct sectors and 64-byte pieces, and LRU misses,
    per minibatch."""
    from sampling import GraphSAGE
    n = A.nrows
    rng = np.random.default_rng(7)
    mbs = GraphSAGE(A, FANOUTS).sample(
        [rng.choice(n, min(seeds, n), replace=False) for _ in range(bulk)], seed=1)
    hops = hop_accesses(mbs)
    nsets = L2_BYTES // SECTOR // L2_WAYS
    found = {}
    for order in ORDERS:
        acc = sec = piece = miss = busiest = 0
        for g, v in hops:
            s = slots(g, v, bulk, n, order)
            acc += s.size
            sec += np.unique(s // (SECTOR // 8)).size
            piece += np.unique(s // 8).size
            miss += _lru_misses(s // (SECTOR // 8), nsets, L2_WAYS)
            busiest = max(busiest, int(np.unique(s // 16, return_counts=True)[1].max()))
        found[order] = [x / bulk for x in (acc, sec, piece, miss)] + [busiest]
    return label, bulk, found


def model_table(rows):
    out = ["", f"GraphSAGE {FANOUTS}, minibatches of 1,024 random seeds (PubMed: at most its "
           "vertex count); per minibatch, the three hops together; `v / g`: vertex-major over "
           "group-major.", "",
           "| graph | bulk | table accesses | 32-B sectors: group / vertex (v / g) | "
           "64-B pieces: group / vertex (v / g) | LRU misses: group / vertex (v / g) | "
           "busiest 128-B line, accesses in a hop of the bulk: group / vertex |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for label, bulk, f in rows:
        g, v = f["group"], f["vertex"]
        cells = " | ".join(f"{g[i]:,.0f} / {v[i]:,.0f} ({v[i] / g[i]:.2f}x)" for i in (1, 2, 3))
        out.append(f"| {label} | {bulk} | {g[0]:,.0f} | {cells} | {g[4]:,} / {v[4]:,} |")
    return out


#: The configurations timed on a device: (slot order, table kept between bulks).
CONFIGS = (("group", False), ("group", True), ("vertex", False), ("vertex", True))


def gpu_timing(scale, bulks, repeats=5, seeds=1024):
    """Fused hops on R-MAT with each table order, the table cleared per bulk or
    kept between bulks, the configurations alternating: ms per bulk."""
    from gpu_common import require_gpu
    cupy = require_gpu("hop_table.py --gpu")
    import kernels.cuda.hop_table as hop_table
    import sampling
    from spla.generators import rmat
    sync = cupy.cuda.Device().synchronize
    G = rmat(scale, 16, seed=0).to("cuda")
    rng = np.random.default_rng(1)
    names = [f"{o}-major, {'kept' if k else 'cleared'}" for o, k in CONFIGS]
    out = ["", f"Fused GraphSAGE {FANOUTS} on the device, R-MAT scale {scale}, {seeds:,} seeds per "
           f"minibatch; median ms per bulk of {repeats} bulks per configuration, the "
           "configurations alternating; the first is the code before the table was kept:", "",
           "| bulk | " + " | ".join(names) + " | best vs first | same blocks |",
           "|---:|" + "---:|" * len(names) + "---:|---|"]
    saved = hop_table.TABLE_ORDER, hop_table.KEEP_SHARE

    def configure(order, keep):
        hop_table.TABLE_ORDER = order
        hop_table.KEEP_SHARE = saved[1] if keep else 0.0

    try:
        for k in bulks:
            batches = [cupy.asarray(rng.choice(G.nrows, seeds, replace=False))
                       for _ in range(k)]
            s = sampling.GraphSAGE(G, FANOUTS)
            blocks = []
            for order, keep in CONFIGS:  # warm-up, and the blocks of each configuration
                configure(order, keep)
                blocks.append([b.adj.to("cpu") for mb in s.sample(batches, seed=1)
                               for b in mb.blocks])
            same = all(x.isequal(y) for other in blocks[1:] for x, y in zip(blocks[0], other))
            times = [[] for _ in CONFIGS]
            for r in range(repeats):
                for c, (order, keep) in enumerate(CONFIGS):
                    configure(order, keep)
                    sync()
                    t0 = time.perf_counter()
                    s.sample(batches, seed=1, epoch=r + 1)
                    sync()
                    times[c].append(time.perf_counter() - t0)
            ms = [float(np.median(t)) * 1e3 for t in times]
            print(f"bulk {k}: " + ", ".join(f"{n} {m:.2f} ms" for n, m in zip(names, ms))
                  + f"; same blocks {same}", flush=True)
            out.append(f"| {k} | " + " | ".join(f"{m:.2f}" for m in ms)
                       + f" | {ms[0] / min(ms):.2f}x | {same} |")
    finally:
        hop_table.TABLE_ORDER, hop_table.KEEP_SHARE = saved
    return out


def model_tables(a, bulks):
    """The model's table for R-MAT, R-MAT in BFS order and PubMed."""
    from graphs import locality_graphs
    rows = []
    for label, A in locality_graphs(a.scale, a.pubmed):
        for bulk in bulks:
            rows.append(model(label, A, bulk, a.seeds))
            print(model_table(rows[-1:])[-1], flush=True)
    return model_table(rows)


def main(argv=None):
    import numba

    from graphs import PUBMED
    from machine import emit_results, results_header
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", type=int, default=20)
    p.add_argument("--bulks", default="16,64", help="comma-separated bulk sizes")
    p.add_argument("--seeds", type=int, default=1024)
    p.add_argument("--pubmed", default=PUBMED,
                   help="PubMed's .npz ('' skips it; default: ../shared/data/pubmed.npz)")
    p.add_argument("--gpu", action="store_true",
                   help="time both orders on the device instead (R-MAT; bulks 16, 64, 256 "
                        "unless --bulks says)")
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    bulks = [int(b) for b in a.bulks.split(",") if b.strip()]
    load0, t0 = os.getloadavg(), time.perf_counter()
    if a.gpu:
        given = "--bulks" in (sys.argv if argv is None else argv)
        md = gpu_timing(a.scale, bulks if given else (16, 64, 256), seeds=a.seeds)
    else:
        md = model_tables(a, bulks)
    cmd = "python benchmarks/hop_table.py " + " ".join(sys.argv[1:] if argv is None else argv)
    head = results_header("The GPU hops' occurrence table: group- or vertex-major slots",
                          cmd.strip(), time.perf_counter() - t0, load0,
                          {"python": sys.version.split()[0], "numpy": np.__version__,
                           "numba": numba.__version__})
    emit_results(head + md, a.out)


if __name__ == "__main__":
    main()
