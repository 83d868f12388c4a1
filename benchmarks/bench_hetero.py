#!/usr/bin/env python
"""Heterogeneous sampling: HeteroGraphSAGE against PyG's CPU hetero sampler.

    python benchmarks/bench_hetero.py [--scale 16] [--threads 2] [--batch 1024]
                                      [--fanouts 15,10] [--bulks 1,8] [--repeats 5]
                                      [--out benchmarks/results/hetero_cpu.md]

Graph: ``mag_dataset(scale).to_undirected()`` (the MAG schema with reverse
relations: 7 relations, 4 vertex types).  Seeds: minibatches of ``--batch``
distinct training papers, the same for every method.  Fanouts the same for
every relation.

* ours: ``HeteroGraphSAGE(G, fanouts).sample(bulk of k minibatches)``, time
  per minibatch = bulk time / k;
* PyG: ``torch_geometric.sampler.NeighborSampler(HeteroData, num_neighbors)
  .sample_from_nodes`` one minibatch at a time, in this process (without
  pyg-lib it runs torch-sparse's ``hetero_neighbor_sample``; torch-sparse is
  a benchmark-only peer: ``pip install --target DIR ../shared/wheels/*.whl``
  and ``PYTHONPATH=DIR``).  Skipped with a message when absent.

The two count edges differently (our blocks re-sample a vertex's
neighbours at every layer it is a destination in; PyG expands each vertex
once), so the comparison is time per minibatch of the same seeds and
fanouts.  Timing: one warm-up call, then the median of ``--repeats``.
"""

import argparse
import os
import statistics
import sys
import time


def _args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scale", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--fanouts", default="15,10")
    p.add_argument("--bulks", default="1,8")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None)
    return p.parse_args(argv)


def _median_time(fn, repeats):
    fn()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def _pyg(G, batches, fanouts, repeats):
    try:
        import torch
        import torch_geometric.typing as tgt
        from torch_geometric.data import HeteroData
        from torch_geometric.sampler import NeighborSampler, NodeSamplerInput
    except ImportError as e:  # pragma: no cover - benchmark only
        return None, f"PyG missing ({e})"
    if not (tgt.WITH_PYG_LIB or tgt.WITH_TORCH_SPARSE):
        return None, "neither pyg-lib nor torch-sparse is installed"
    import numpy as np
    data = HeteroData()
    for t, n in G.num_nodes.items():
        data[t].num_nodes = n
    for rel, A in G.relations.items():
        S = A.to_scipy().tocoo()
        data[rel].edge_index = torch.from_numpy(np.stack([S.col, S.row]).astype(np.int64))
    sampler = NeighborSampler(data, num_neighbors=list(fanouts))
    inputs = [NodeSamplerInput(input_id=None, node=torch.from_numpy(b), input_type="paper")
              for b in batches]
    edges = []

    def run():
        edges.clear()
        for inp in inputs:
            out = sampler.sample_from_nodes(inp)
            edges.append(sum(int(v.numel()) for v in out.row.values()))
    sec = _median_time(run, repeats) / len(batches)
    lib = "pyg-lib" if tgt.WITH_PYG_LIB else "torch-sparse"
    return (sec, sum(edges) / len(edges)), lib


def main(argv=None):
    a = _args(argv)
    os.environ.setdefault("NUMBA_NUM_THREADS", str(a.threads))
    import numpy as np
    import torch
    torch.set_num_threads(a.threads)
    from sampling import HeteroGraphSAGE
    from sampling.datasets.mag import mag_dataset
    fanouts = [int(f) for f in a.fanouts.split(",")]
    bulks = [int(k) for k in a.bulks.split(",")]
    G = mag_dataset(a.scale).to_undirected()
    rng = np.random.default_rng(0)
    train = rng.permutation(G.split("train", "paper"))
    k_max = max(bulks)
    batches = [np.sort(train[i * a.batch:(i + 1) * a.batch]) for i in range(k_max)]
    s = HeteroGraphSAGE(G, fanouts)
    rows = []
    for k in bulks:
        out = []

        def run():
            out.clear()
            for i in range(0, k_max, k):
                out.extend(s.sample(batches[i:i + k], node_type="paper", seed=0))
        sec = _median_time(run, a.repeats) / k_max
        edges = sum(m.num_sampled_edges for m in out) / len(out)
        rows.append((f"HeteroGraphSAGE, bulk {k}", sec, edges))
    peer, lib = _pyg(G, batches, fanouts, a.repeats)
    if peer is not None:
        rows.append((f"PyG NeighborSampler ({lib}), 1 process", *peer))
    lines = [f"# Heterogeneous sampling, mag:{a.scale} (undirected), fanouts {fanouts}, "
             f"{a.batch} paper seeds per minibatch, {k_max} minibatches, "
             f"{a.threads} threads", "",
             f"Command: `python benchmarks/bench_hetero.py {' '.join(argv or sys.argv[1:])}`  ",
             f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"load average at the end: {os.getloadavg()[0]:.1f}", "",
             "| method | ms / minibatch | sampled edges / minibatch |", "|---|---|---|"]
    lines += [f"| {n} | {1e3 * t:.2f} | {e:,.0f} |" for n, t, e in rows]
    if peer is None:
        lines.append(f"\nPyG skipped: {lib}.")
    else:
        best = min(t for n, t, _ in rows if n.startswith("Hetero"))
        lines.append(f"\nPyG time / ours (best bulk): {peer[0] / best:.2f}x")
    md = "\n".join(lines) + "\n"
    print(md)
    if a.out:
        with open(a.out, "w") as f:
            f.write(md)


if __name__ == "__main__":
    main()
